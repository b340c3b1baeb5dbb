// The one case list of the kernel checks (issue 22): the sizes, shapes and masks at which a kernel
// variant is compared with the reference (stf::ref) bit for bit. tests/unit/test_kernels.cpp runs
// every case on every registry variant the CPU can run; examples/firmware/kernel_check.cpp runs
// them on the Cortex-M kernels under qemu, except the attention cases beyond its buffers
// (kFirmwareMaxHeadDim, kFirmwareMaxKeys: the M55 has 512 KB of RAM). A size that reaches a new
// kernel path goes here, and both run it.
//
// Heap-free, no stdio, no test framework: constexpr arrays and functions that fill the caller's
// buffers, so that firmware can include it.
#pragma once

#include <cstdint>
#include <limits>

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>

namespace stf_cases {
using stf::index_t;

// ---- rows: dot, sum, layer norm, log_softmax, activations, add, exp, log ------------------------
/// Below, equal to, between one and two, and multiples of the 16-lane block and of the vectors
/// (LayerNorm's Cortex-M kernels take rows of 16).
inline constexpr index_t kRowLengths[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 100};
/// Rows of one layer_norm_rows call: one group of up to 16 (x86 folds the rows' sums 16 or 8 at
/// a time: 12 leaves some of a fold unused, 16 fills it); more: groups of 8 and a remainder.
inline constexpr index_t kLayerNormRowCounts[] = {12, 16, 19};

// ---- transpose: around the register tiles (8 × 8 on AVX2, 16 × 16 on AVX-512) on each side -------
inline constexpr index_t kTransposeSizes[] = {1, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 65};
inline constexpr index_t kTransposePads[] = {0, 5};

// ---- linear ---------------------------------------------------------------------------------------
/// Rows around the register tiles (MVE 3 rows, scalar 6, x86 ≤ 6; ≤ 12 for narrow outputs on
/// AVX-512, where a product of one tile calls it directly).
inline constexpr index_t kLinearRows[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
/// Inputs across the reduction blocks (kernels block k at 64 or more; Cortex-M at 128 steps).
inline constexpr index_t kLinearIns[] = {1, 2, 3, 4, 5, 8, 16, 17, 33, 64, 100, 200};
/// Outputs around the vector panels (MVE 2 × 4 lanes, scalar 4, x86 up to 8 × 16 lanes) and the
/// weight panel of kWeightPanel (64) columns.
inline constexpr index_t kLinearOuts[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 24, 33, 64, 65, 130};
/// A long reduction: several k blocks on every ISA.
inline constexpr index_t kLongIn = 2100;
inline constexpr index_t kLongRows[] = {1, 4};
inline constexpr index_t kLongOuts[] = {3, 20};
/// A reduction over several of the panel blocks of the wide x86 variants (512 steps: two and a
/// tail) by rows that take two row tiles (tile runs), within kLongIn's buffers.
inline constexpr index_t kPanelBlocksRows = 7, kPanelBlocksIn = 1100, kPanelBlocksOut = 33;

/// linear_block as FeedForward calls it: blocks of columns (panel-aligned or not) and of reduction
/// steps, each continuing the sums of the previous one.
inline constexpr index_t kBlockRows[] = {1, 2, 5, 10, 13};
inline constexpr index_t kBlockIns[] = {7, 100, 200, 300};
inline constexpr index_t kBlockOuts[] = {5, 64, 130, 200};
inline constexpr index_t kBlockColumns[] = {50, stf::kWeightPanel, 2 * stf::kWeightPanel};
/// The reduction cuts of one linear_block case: [cuts[c], cuts[c + 1]) for c < 3 (empty ones skipped).
struct Cuts {
  index_t at[4];
};
constexpr Cuts reduction_cuts(index_t in) { return {{0, in / 3, in - in / 4, in}}; }

// ---- attention ------------------------------------------------------------------------------------
/// Head dims: below and around the vectors; 64 and 80 only on the hosts.
inline constexpr index_t kHeadDims[] = {1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 64, 80};
/// Query rows per call: around the row group of 6 (kAttentionRowGroup), two groups, the tall
/// groups of AVX-512 (9, 12) and its rows in lanes (9 to 16 rows over at most as many keys: 8, 16).
inline constexpr index_t kAttentionRowCases[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 16};
/// Query rows of an int8 attention call beyond the row cases: more than x86's 64 a call
/// (kAttentionInt8CallRows), which it takes as two groups of 35; only on the hosts (Env::max_rows).
inline constexpr index_t kAttentionInt8ManyRows = 70;
/// Heads of one query row (attention_heads): around x86's groups of 6 and AVX-512's tall groups of 12.
inline constexpr index_t kAttentionHeadCounts[] = {1, 2, 3, 4, 6, 7, 8, 12, 13, 16};
/// Keys around the key blocks of 32 (kAttentionKeyBlock); 130 and 290 cross the spans of 128
/// (kAttentionScoreKeys) and run only on the hosts.
inline constexpr index_t kKeyCounts[] = {1, 2, 3, 7, 16, 17, 31, 32, 33, 40, 63, 64, 65, 70, 130, 290};
/// The firmware's buffers hold attention up to these sizes (and kAttentionRowCases' largest).
inline constexpr index_t kFirmwareMaxHeadDim = 32, kFirmwareMaxKeys = 70;

/// Masks of rows × n_keys keys, by kind.
enum class MaskKind : int {
  all,            ///< every key
  padding,        ///< the first half of the keys (key_end)
  holes,          ///< an irregular pattern of allowed keys (allow), row 1 with none
  none_by_end,    ///< every key masked: key_end = 0
  causal,         ///< row r sees keys 0..r
  causal_prefix,  ///< causal after a prefix, as queries appended to a cache: across the key blocks
  none_by_allow,  ///< every key masked: allow all zero
  torch,          ///< PyTorch's convention read in place: an attn_mask row (masked) and a key-padding mask
                  ///< with gaps (key_masked), their union, under a causal key_end; row 1 with none
  additive,       ///< an additive float mask (add): finite values and -inf, under a causal key_end
};
inline constexpr MaskKind kMaskKinds[] = {MaskKind::all,           MaskKind::padding, MaskKind::holes,
                                          MaskKind::none_by_end,   MaskKind::causal,  MaskKind::causal_prefix,
                                          MaskKind::none_by_allow, MaskKind::torch,   MaskKind::additive};
inline constexpr stf::MaskFill kMaskFills[] = {stf::MaskFill::neg_inf, stf::MaskFill::neg_1e9};

/// A key-padding mask in PyTorch's convention with gaps (keys 1, 6, 11, ... and 40..47 are padding),
/// for up to 512 keys.
inline const std::uint8_t* torch_key_padding() {
  static const auto pad = [] {
    struct {
      std::uint8_t b[512];
    } p{};
    for (index_t j = 0; j < 512; ++j) p.b[j] = static_cast<std::uint8_t>(j % 5 == 1 || (j >= 40 && j < 48));
    return p;
  }();
  return pad.b;
}

/// A row of an additive float mask for up to 512 keys: -inf at every sixth key from key 3, small
/// finite values (-1.25 to 1.25) elsewhere.
inline const float* torch_additive() {
  static const auto add = [] {
    struct {
      float f[512];
    } a{};
    for (index_t j = 0; j < 512; ++j)
      a.f[j] = j % 6 == 3 ? -std::numeric_limits<float>::infinity() : static_cast<float>((j * 7) % 11) * 0.25f - 1.25f;
    return a;
  }();
  return add.f;
}

/// Fills masks[0..rows) for `kind`; `allow` holds rows × n_keys bytes, `arrays` rows entries (a
/// row with arrays points to its own).
inline void make_masks(MaskKind kind, index_t rows, index_t n_keys, std::uint8_t* allow, stf::ref::RowMask* masks,
                       stf::ref::MaskArrays* arrays) {
  for (index_t i = 0; i < rows * n_keys; ++i)
    allow[i] = kind == MaskKind::none_by_allow ? 0 : static_cast<std::uint8_t>((i % 4 != 2) && (i % 7 != 3));
  if (kind == MaskKind::holes && rows > 1)
    for (index_t j = 0; j < n_keys; ++j) allow[n_keys + j] = 0;
  for (index_t r = 0; r < rows; ++r) {
    masks[r] = {n_keys, nullptr};
    arrays[r] = {};
    switch (kind) {
      case MaskKind::all:
        break;
      case MaskKind::padding:
        masks[r].key_end = (n_keys + 1) / 2;
        break;
      case MaskKind::holes:
      case MaskKind::none_by_allow:
        arrays[r].allow = allow + r * n_keys;
        masks[r].arrays = &arrays[r];
        break;
      case MaskKind::none_by_end:
        masks[r].key_end = 0;
        break;
      case MaskKind::causal:
        masks[r].key_end = r + 1 < n_keys ? r + 1 : n_keys;
        break;
      case MaskKind::causal_prefix:
        masks[r].key_end = n_keys > rows ? n_keys - rows + r + 1 : r + 1;
        break;
      case MaskKind::torch:
        // the complement of the holes' pattern as an attn_mask (nonzero = masked), row 1 all masked
        for (index_t j = 0; j < n_keys; ++j)
          allow[r * n_keys + j] = r == 1 ? 1 : static_cast<std::uint8_t>(1 - allow[r * n_keys + j]);
        arrays[r].masked = allow + r * n_keys;
        arrays[r].key_masked = torch_key_padding();
        masks[r].arrays = &arrays[r];
        masks[r].key_end = n_keys > rows ? n_keys - rows + r + 1 : n_keys;
        break;
      case MaskKind::additive:
        arrays[r].add = torch_additive();
        masks[r].arrays = &arrays[r];
        masks[r].key_end = n_keys > rows ? n_keys - rows + r + 1 : r + 1;
        break;
    }
  }
}

// ---- data -----------------------------------------------------------------------------------------
/// n values uniform in [-scale, scale) from seed (an LCG: the same values on every target).
inline void fill(float* v, index_t n, std::uint32_t seed, float scale = 1.0f) {
  for (index_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = (static_cast<float>(seed >> 8) / 16777216.0f - 0.5f) * 2.0f * scale;
  }
}

/// n int8 values uniform in [-127, 127] from seed (int8 weights; -128 is never stored).
inline void fill_i8(std::int8_t* v, index_t n, std::uint32_t seed) {
  for (index_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<std::int8_t>(static_cast<int>((seed >> 8) % 255u) - 127);
  }
}

// ---- int8 (kernels/QUANTIZATION.md): linear_w8a8 at kLinearRows × kLinearIns × kLinearOuts, the long
// reduction above, special rows, and the reduction near the int32 limit --------------------------------
/// Rows of the special-rows case: a plain row, zeros, a NaN, +inf, -inf, ties (x · 127/a = k + 1/2),
/// huge values, one negative constant, a row whose largest value is last, a row below
/// kMinQuantizedMax (zeros, scale 0) and one at it (kept; denormals among its values).
inline constexpr index_t kQuantSpecialRows = 11;
/// Their reductions: 11 is three quads (a loop unrolled by four quads entered at its second).
inline constexpr index_t kQuantSpecialIns[] = {5, 11, 64, 67};
inline constexpr index_t kQuantSpecialOuts[] = {17, 70};
/// The reduction near the int32 limit (hosts only: its buffers are ~0.8 MB): constant rows ±1 against
/// weights ±127, so |acc| = 127² · in = 2147479576 with in = ref::kMaxQuantizedIn.
inline constexpr index_t kQuantLimitRows = 2, kQuantLimitOuts = 17;
/// Rows of linear_w8a8 around its groups of quantized rows (kQuantizedRowGroup, 24; 48 on x86's
/// AVX512-VNNI path), at in kQuantGroupIn and out 17 (or three linears of 5, 7 and 3), in buffers of
/// their own (every runner, the firmware too: the Cortex-M4F/M7 kernel keeps expanded weights after
/// the first group's rows).
inline constexpr index_t kQuantGroupRows[] = {23, 24, 25, 31, 32, 47, 48, 49, 50, 97};
inline constexpr index_t kQuantGroupIn = 33, kQuantGroupOuts = 17;

/// Largest value of a list (for buffer sizes).
template <index_t N>
constexpr index_t largest(const index_t (&list)[N]) {
  index_t m = 0;
  for (index_t v : list) m = v > m ? v : m;
  return m;
}

}  // namespace stf_cases
