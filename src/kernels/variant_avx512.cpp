// statiformer — the kernels compiled for the avx512 vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
#if defined(__x86_64__)
// GCC 12's avx512fintrin.h builds results from _mm512_undefined_*(), which GCC 12 then reports as
// used uninitialized (GCC bug 105593); the warning is about the header, not this code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <statiformer/simd/x86_avx512.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::avx512>;
#endif
