// statiformer — attention: which variant each target runs, readable in one place (the generic
// attention_rows asks it). The same shape as kernels/norm/select.hpp.
#pragma once

#include <statiformer/kernels/attention/cortex_m4f.hpp>
#include <statiformer/kernels/attention/cortex_m4f_int8.hpp>
#include <statiformer/kernels/attention/helium.hpp>
#include <statiformer/kernels/attention/helium_int8.hpp>
#include <statiformer/kernels/attention/neon_int8.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::kernels_detail {

/// Attention rows on target `Tag`:
///   generic     every target: the generic attention (attention/generic.hpp, which picks a
///               strategy per group of rows) streaming over key blocks (attention/streaming.hpp);
///   x86         AVX2 and AVX-512 (8 and 16 lanes): the generic attention with the wide-vector
///               strategies: one key block in registers (attention/register_block.hpp), spans of
///               kAttentionScoreKeys keys (attention/wide_spans.hpp), groups staged over their
///               rows; on AVX-512 also tall row groups (two row groups as one: kTallRowGroup)
///               rows in lanes (9 to 16 rows of a short head over at most as many keys:
///               attention/x86_lanes.hpp), and the softmax steps in lanes over key blocks (16 rows
///               of 16 to 64 dimensions attending to the same keys: attention/x86_lane_blocks.hpp);
///   cortex_m4f  Cortex-M4F/M7 (the scalar vocabulary on Arm M-profile with an FPU) and
///   helium      Cortex-M55 (mve): their attention_prefix_rows (kernels/attention/<target>.hpp)
///               for groups of rows that all attend to the same keys [0, e); it declines the group
///               sizes it does not take (cortex_m4f: 1..6 rows; helium: 2, 3, 4, 6), whose rows
///               and every other row go the generic way.
/// `PrefixRows` is the struct that provides attention_prefix_rows, void where the generic code
/// runs alone; `wide` and `tall` turn on the x86 strategies; `LaneRows` (AVX-512: x86::AttentionLanes<avx512>,
/// kernels/attention/x86_lanes.hpp) provides attention_lane_rows, which takes the calls of 9 to 16
/// rows of a short head over at most as many keys, with the rows across the lanes (void elsewhere);
/// `LaneBlocks` (AVX-512: x86::AttentionLaneBlocks<avx512>, kernels/attention/x86_lane_blocks.hpp)
/// provides attention_lane_blocks, which takes the calls of 16 rows of 16 to 64 dimensions that attend
/// to the same keys (more than 16), their softmax steps with the rows across the lanes (void elsewhere).
template <class Tag>
struct AttentionSelect {
  static constexpr const char* variant = "generic";
  using PrefixRows = void;
  using LaneRows = void;
  using LaneBlocks = void;
  static constexpr bool wide = false;  ///< register blocks, spans, staged groups
  static constexpr bool tall = false;  ///< tall row groups (needs wide)
};

#if defined(__x86_64__)
namespace x86 {
/// AVX-512's rows in lanes (kernels/attention/x86_lanes.hpp; defined only where AVX-512F is enabled:
/// the avx512 variant's translation unit).
template <class Tag>
struct AttentionLanes;
/// AVX-512's softmax steps with the rows in lanes over key blocks (kernels/attention/x86_lane_blocks.hpp;
/// likewise).
template <class Tag>
struct AttentionLaneBlocks;
}  // namespace x86
#endif

template <>
struct AttentionSelect<isa::avx2> {
  static constexpr const char* variant = "x86";
  using PrefixRows = void;
  using LaneRows = void;
  using LaneBlocks = void;
  static constexpr bool wide = true;
  static constexpr bool tall = false;
};

template <>
struct AttentionSelect<isa::avx512> {
  static constexpr const char* variant = "x86";
  using PrefixRows = void;
#if defined(__x86_64__)
  using LaneRows = x86::AttentionLanes<isa::avx512>;
  using LaneBlocks = x86::AttentionLaneBlocks<isa::avx512>;
#else
  using LaneRows = void;
  using LaneBlocks = void;
#endif
  static constexpr bool wide = true;
  static constexpr bool tall = true;  // (32 vector registers)
};

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
template <>
struct AttentionSelect<isa::scalar> {
  static constexpr const char* variant = "cortex_m4f";
  using PrefixRows = cortex_m4f::Attention;
  using LaneRows = void;
  using LaneBlocks = void;
  static constexpr bool wide = false;
  static constexpr bool tall = false;
};
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
template <>
struct AttentionSelect<isa::mve> {
  static constexpr const char* variant = "helium";
  using PrefixRows = helium::Attention;
  using LaneRows = void;
  using LaneBlocks = void;
  static constexpr bool wide = false;
  static constexpr bool tall = false;
};
#endif

// ---- the int8 attention (kernels/QUANTIZATION.md), a second number format of the operation ------

#if defined(__x86_64__)
namespace x86 {
/// The x86 w8a8 attention (kernels/attention/x86_int8.hpp; defined only where AVX2 + FMA are
/// enabled: the avx2 and avx512 variants' translation units).
template <class Tag>
struct AttentionInt8;
}  // namespace x86
#endif

/// The w8a8 attention (Kernels::attention_rows_w8a8, quantize_rows) on target `Tag`:
///   int8_generic  every target: kernels/attention/int8.hpp (generic::AttentionInt8), int32 sums in
///                 plain loops, the softmax on the vocabulary; what a target's own declines;
///   int8_x86      avx2, avx512: rows sharing each key block's K and V (repacked in quads), vpdpbusd
///                 (AVX-VNNI, AVX512-VNNI on ymm) where the CPU has it, else vpmaddwd
///                 (kernels/attention/x86_int8.hpp; head_dim ≤ 256);
///   int8_cortex_m4f  Cortex-M4F/M7 (the scalar vocabulary on Arm M-profile with an FPU and the DSP
///                 extension; the M55's scalar variant too): kernels/attention/cortex_m4f_int8.hpp,
///                 sxtb16 + smlad (head_dim a multiple of 4, at most 64; others go the generic way);
///   int8_helium   Cortex-M55 (mve): kernels/attention/helium_int8.hpp (helium::AttentionInt8), groups
///                 of up to 6 rows with prefix masks (vmladav.s8 for Q·Kᵀ and over transposed values);
///   int8_neon     neon (aarch64; armv7 with NEON and VFPv4): kernels/attention/neon_int8.hpp
///                 (neon::AttentionInt8), the call's rows sharing each key block's K and V: `sdot` where
///                 the build has the dot product extension (__ARM_FEATURE_DOTPROD), else smull + smlal +
///                 sadalp for Q·Kᵀ and smlal by lane for P·V (head_dim a multiple of 8, at most 256).
/// `Rows` is the struct that provides the target's attention_rows_w8a8 (same arguments; it returns
/// false to decline a call, which the generic code then runs), void where the generic code runs alone.
template <class Tag>
struct AttentionInt8Select {
  static constexpr const char* variant = "int8_generic";
  using Rows = void;
};

#if defined(__x86_64__)
template <>
struct AttentionInt8Select<isa::avx2> {
  static constexpr const char* variant = "int8_x86";
  using Rows = x86::AttentionInt8<isa::avx2>;
};
template <>
struct AttentionInt8Select<isa::avx512> {
  static constexpr const char* variant = "int8_x86";
  using Rows = x86::AttentionInt8<isa::avx512>;
};
#endif

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && defined(__ARM_FEATURE_DSP)
template <>
struct AttentionInt8Select<isa::scalar> {
  static constexpr const char* variant = "int8_cortex_m4f";
  using Rows = cortex_m4f::AttentionInt8<isa::scalar>;
};
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
template <>
struct AttentionInt8Select<isa::mve> {
  static constexpr const char* variant = "int8_helium";
  using Rows = helium::AttentionInt8;
};
#endif

#if defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
template <>
struct AttentionInt8Select<isa::neon> {
  static constexpr const char* variant = "int8_neon";
#if defined(__ARM_FEATURE_DOTPROD)
  using Rows = neon::AttentionInt8<isa::neon, true>;
#else
  using Rows = neon::AttentionInt8<isa::neon, false>;
#endif
};
#endif

}  // namespace stf::kernels_detail
