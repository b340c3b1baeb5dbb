// statiformer — the kernels compiled for the scalar vocabulary (see kernels/generic.hpp); this file is
// built with that instruction set's flags only.
#include <statiformer/simd/scalar.hpp>

#include <statiformer/kernels/generic.hpp>

template struct stf::Kernels<stf::isa::scalar>;
