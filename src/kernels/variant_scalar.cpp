// statiformer — the kernels compiled for the scalar vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
// Everything this file instantiates that is not distinct per tag (the vocabularies, simd/math.hpp)
// is in the inline namespace variant_scalar (simd/isa.hpp), so no other object defines it.
// The Cortex-M assembly kernels need an optimizing build: at -O0 GCC 12 cannot give their asm
// statements the registers they take ("'asm' operand has impossible constraints"). CMake builds
// put -O2 on these sources in Debug (CMakeLists.txt); a build of its own must give -O1 or more.
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && !defined(__OPTIMIZE__)
#error \
    "statiformer: compile src/kernels/variant_*.cpp with -O1 or higher (-Og, -Os, -O2, -O3) on Cortex-M: at -O0 GCC cannot allocate the registers of the assembly kernels"
#endif
#define STF_VARIANT_NAMESPACE variant_scalar
#include <type_traits>

#include <statiformer/simd/scalar.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::scalar>;
// (the macro was defined before the first include, or this would name another namespace)
static_assert(
    std::is_same_v<stf::isa::Vocabulary<stf::isa::scalar>, stf::isa::variant_scalar::Vocabulary<stf::isa::scalar>>);
