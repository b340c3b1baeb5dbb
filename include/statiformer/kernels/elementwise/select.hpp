// statiformer — element-wise maps and row arithmetic: which variant each target runs, readable in
// one place (the generic div_map, exp_shifted and add ask it). The same shape as
// kernels/norm/select.hpp.
#pragma once

#include <statiformer/kernels/elementwise/cortex_m4f.hpp>
#include <statiformer/kernels/elementwise/helium.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::kernels_detail {

/// Element-wise operations on target `Tag`:
///   generic     every target: the generic maps on the vocabulary;
///   cortex_m4f  Cortex-M4F/M7 (the scalar vocabulary on Arm M-profile with an FPU): div_n
///               (y = x / d) and add_n (y += x);
///   helium      Cortex-M55 (mve): exp_shifted (y = exp(x - m)) and add_n.
/// Each alias is the struct (kernels/elementwise/<variant>.hpp) that provides that entry point,
/// void where the generic code runs.
template <class Tag>
struct ElementwiseSelect {
  static constexpr const char* variant = "generic";
  using Div = void;         ///< div_n(x, y, n, d)
  using ExpShifted = void;  ///< exp_shifted(x, y, n, m)
  using Add = void;         ///< add_n(y, x, n)
  /// Whether exp (of maps, softmax, attention) is the vocabulary's exp_kernel instead of
  /// simd/math.hpp's exp: the same operations, in assembly.
  static constexpr bool exp_kernel = false;
};

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
template <>
struct ElementwiseSelect<isa::scalar> {
  static constexpr const char* variant = "cortex_m4f";
  using Div = cortex_m4f::Elementwise;
  using ExpShifted = void;
  using Add = cortex_m4f::Elementwise;
  static constexpr bool exp_kernel = true;  // (simd/scalar.hpp)
};
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
template <>
struct ElementwiseSelect<isa::mve> {
  static constexpr const char* variant = "helium";
  using Div = void;
  using ExpShifted = helium::Elementwise;
  using Add = helium::Elementwise;
  static constexpr bool exp_kernel = false;
};
#endif

}  // namespace stf::kernels_detail
