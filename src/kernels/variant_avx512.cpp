// statiformer — the kernels compiled for the avx512 vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
// Everything this file instantiates that is not distinct per tag (the vocabularies, simd/math.hpp)
// is in the inline namespace variant_avx512 (simd/isa.hpp), so no other object defines it.
#define STF_VARIANT_NAMESPACE variant_avx512
#if defined(__x86_64__)
// GCC 12's avx512fintrin.h builds results from _mm512_undefined_*(), which GCC 12 then reports as
// used uninitialized (GCC bug 105593); the warning is about the header, not this code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <type_traits>

#include <statiformer/simd/x86_avx512.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::avx512>;
// (the macro was defined before the first include, or this would name another namespace)
static_assert(
    std::is_same_v<stf::isa::Vocabulary<stf::isa::avx512>, stf::isa::variant_avx512::Vocabulary<stf::isa::avx512>>);
#endif
