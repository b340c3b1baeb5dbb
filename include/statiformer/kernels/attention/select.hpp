// statiformer — attention: which variant each target runs, readable in one place (Generic's
// attention_rows_hooked asks it). The same shape as kernels/norm/select.hpp.
#pragma once

#include <statiformer/kernels/attention/cortex_m4f.hpp>
#include <statiformer/kernels/attention/helium.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::kernels_detail {

/// Attention rows on target `Tag`:
///   generic     every target: Generic's attention (streaming, spans, register blocks, tall groups);
///   cortex_m4f  Cortex-M4F/M7 (the scalar vocabulary on Arm M-profile with an FPU) and
///   helium      Cortex-M55 (mve): their attention_prefix_rows (kernels/attention/<target>.hpp)
///               for groups of rows that all attend to the same keys [0, e); it declines the group
///               sizes it does not take (cortex_m4f: 1..6 rows; helium: 2, 3, 4, 6), whose rows
///               and every other row go Generic's way.
/// `PrefixRows` is the struct that provides attention_prefix_rows, void where Generic's code runs
/// alone.
template <class Tag>
struct AttentionSelect {
  static constexpr const char* variant = "generic";
  using PrefixRows = void;
};

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
template <>
struct AttentionSelect<isa::scalar> {
  static constexpr const char* variant = "cortex_m4f";
  using PrefixRows = cortex_m4f::Attention;
};
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
template <>
struct AttentionSelect<isa::mve> {
  static constexpr const char* variant = "helium";
  using PrefixRows = helium::Attention;
};
#endif

}  // namespace stf::kernels_detail
