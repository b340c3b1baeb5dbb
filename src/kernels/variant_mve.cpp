// statiformer — the kernels compiled for the mve vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
// Everything this file instantiates that is not distinct per tag (the vocabularies, simd/math.hpp)
// is in the inline namespace variant_mve (simd/isa.hpp), so no other object defines it.
#define STF_VARIANT_NAMESPACE variant_mve
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <type_traits>

#include <statiformer/simd/arm_mve.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::mve>;
// (the macro was defined before the first include, or this would name another namespace)
static_assert(std::is_same_v<stf::isa::Vocabulary<stf::isa::mve>, stf::isa::variant_mve::Vocabulary<stf::isa::mve>>);
#endif
