// statiformer — the kernels compiled for the scalar vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
// Everything this file instantiates that is not distinct per tag (the vocabularies, simd/math.hpp)
// is in the inline namespace variant_scalar (simd/isa.hpp), so no other object defines it.
#define STF_VARIANT_NAMESPACE variant_scalar
#include <type_traits>

#include <statiformer/simd/scalar.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::scalar>;
// (the macro was defined before the first include, or this would name another namespace)
static_assert(
    std::is_same_v<stf::isa::Vocabulary<stf::isa::scalar>, stf::isa::variant_scalar::Vocabulary<stf::isa::scalar>>);
