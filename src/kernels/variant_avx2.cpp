// statiformer — the kernels compiled for the avx2 vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
// Everything this file instantiates that is not distinct per tag (the vocabularies, simd/math.hpp)
// is in the inline namespace variant_avx2 (simd/isa.hpp), so no other object defines it.
#define STF_VARIANT_NAMESPACE variant_avx2
#if defined(__x86_64__)
#include <type_traits>

#include <statiformer/simd/x86_avx2.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::avx2>;
// (the macro was defined before the first include, or this would name another namespace)
static_assert(std::is_same_v<stf::isa::Vocabulary<stf::isa::avx2>, stf::isa::variant_avx2::Vocabulary<stf::isa::avx2>>);
#endif
