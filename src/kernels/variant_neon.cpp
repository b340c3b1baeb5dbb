// statiformer — the kernels compiled for the neon vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
#if defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
#include <statiformer/simd/arm_neon.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::neon>;
#endif
