// statiformer — log_softmax: which variant each target runs, readable in one place. The same shape
// as kernels/norm/select.hpp.
#pragma once

#include <statiformer/simd/isa.hpp>

namespace stf::kernels_detail {

/// log_softmax of a row on target `Tag`: generic on every target (kernels/softmax/generic.hpp),
/// its exp the one ElementwiseSelect names (Cortex-M4F/M7: the vocabulary's exp_kernel).
template <class Tag>
struct SoftmaxSelect {
  static constexpr const char* variant = "generic";
};

}  // namespace stf::kernels_detail
