// statiformer — the kernels compiled for the mve vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <statiformer/simd/arm_mve.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::mve>;
#endif
