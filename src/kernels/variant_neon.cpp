// statiformer — the kernels compiled for the neon vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
// Everything this file instantiates that is not distinct per tag (the vocabularies, simd/math.hpp)
// is in the inline namespace variant_neon (simd/isa.hpp), so no other object defines it.
#define STF_VARIANT_NAMESPACE variant_neon
#if defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
#include <type_traits>

#include <statiformer/simd/arm_neon.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::neon>;
// (the macro was defined before the first include, or this would name another namespace)
static_assert(std::is_same_v<stf::isa::Vocabulary<stf::isa::neon>, stf::isa::variant_neon::Vocabulary<stf::isa::neon>>);
#endif
