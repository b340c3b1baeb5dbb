// statiformer — the kernels compiled for the avx2 vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
#if defined(__x86_64__)
#include <statiformer/simd/x86_avx2.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::avx2>;
#endif
