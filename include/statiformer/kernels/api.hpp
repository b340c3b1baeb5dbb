// statiformer — the kernel interface: one set of shape-erased operations, implemented once as
// templates over the SIMD vocabulary (kernels/generic.hpp) and compiled once per instruction set
// (src/kernels/variant_<isa>.cpp). `Kernels<isa::active>` is what layers call; the naive reference
// (kernels/reference.hpp) is the oracle every variant must equal bit for bit.
//
// Canonical order (what makes the bits independent of the vector width):
//  - every output of a matrix product (linear, Q·Kᵀ, P·V) is accumulated in sequence over the
//    reduction index with fma, starting from +0: acc = fma(a_k, b_k, acc) for k = 0, 1, ...
//    Vectors run across outputs (weights are stored [In, Out] in column panels, keys as Kᵀ),
//    never across k;
//  - a sum or dot product of one vector (softmax and LayerNorm statistics) runs on 16 lanes:
//    element k goes to lane k mod 16, the input is zero-padded to a multiple of 16, each lane
//    accumulates in sequence, and the 16 lanes are folded in halves: i + (i+8), then +4, +2, +1;
//  - exp, log and GELU are simd/math.hpp's, built from single IEEE operations;
//  - a bias is added after the dot product, an activation applied after the bias.
//
// Variant naming: Kernels<isa::TAG>::op — TAG in {scalar, avx2, avx512, neon, mve}, plus
// Kernels<isa::dispatch>, which forwards to one of the x86 ones (below).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include <statiformer/config.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf {

/// The size-first selection of the kernels (firmware: less flash, a few more instructions), on
/// when the kernels are compiled with STF_KERNELS_SIZE_FIRST=1 (the CMake option of that name puts
/// it on the library and its consumers) or for size (-Os: __OPTIMIZE_SIZE__). It changes which
/// code runs, never the bits: where the vocabulary has one lane and an assembly tile of four
/// columns (Cortex-M4F/M7), the products' outputs short of four go one column at a time and GELU
/// is a pass after the tile (kernels/product/generic.hpp); where a 16-lane block is 4 or more
/// vectors (one or four lanes: Cortex-M4F/M7/M55, NEON, scalar), the canonical reductions are
/// loops over them (kernels/elementwise/generic.hpp). Off: the speed-first selection.
#if defined(__OPTIMIZE_SIZE__) || (defined(STF_KERNELS_SIZE_FIRST) && STF_KERNELS_SIZE_FIRST)
inline constexpr bool kKernelsSizeFirst = true;
#else
inline constexpr bool kKernelsSizeFirst = false;
#endif

/// Keys attention scores at a time: it streams over blocks of this many keys with an online
/// softmax (a running maximum and sum), so no row of scores is ever held whole. Fixed, like the
/// lane count: the blocks are part of the canonical order.
inline constexpr index_t kAttentionKeyBlock = 32;

/// Query rows one attention_rows call processes together (their scores share the K loads, their
/// outputs the V loads): six, the row count of the register tiles on x86 and Cortex-M.
inline constexpr index_t kAttentionRowGroup = 6;
/// Whether the active variant runs AVX-512's kernels: avx512, and the run-time dispatching variant of
/// x86-64 builds without -march, which runs them on the CPUs that have AVX-512 (and AVX2's or the
/// scalar ones on the others). The one test behind the layers' choices that follow AVX-512's kernels
/// (kAttentionCallRows, kAttentionLaneRows, kSharedLinearTiles; with avx2, kAttentionInt8CallRows).
inline constexpr bool kActiveRunsAvx512 =
    std::is_same_v<isa::active, isa::avx512> || std::is_same_v<isa::active, isa::dispatch>;

/// Query rows a layer passes to one attention_rows call: two groups where the active variant may
/// take them as one (AVX-512, whose 32 registers hold a tall group of a short head over few keys;
/// and the run-time dispatching variant of x86-64 builds without -march, which runs AVX-512 on the
/// CPUs that have it and two groups one after the other on the others), else one group (no larger
/// array of row masks on small targets' stacks). The scratch is one group's either way
/// (attention_scratch_floats), and the bits are the same.
inline constexpr index_t kAttentionCallRows = kActiveRunsAvx512 ? 2 * kAttentionRowGroup : kAttentionRowGroup;
/// Query rows a layer passes to one attention_rows_w8a8 call (the int8 attention,
/// kernels/QUANTIZATION.md): 64 where the active variant is x86's (avx2, avx512, and the dispatching
/// one), whose int8 attention packs each key block's K and V once for all the rows it is given, so
/// that 64 rows share a packing twelve did before (its stack holds their scores of a block, 8 KB);
/// elsewhere kAttentionCallRows. The layer splits seq_q rows into calls as evenly as they go
/// (attention_w8a8_call_rows). Rows are independent: the same bits either way.
inline constexpr index_t kAttentionInt8CallRows =
    kActiveRunsAvx512 || std::is_same_v<isa::active, isa::avx2> ? 64 : kAttentionCallRows;
/// Query rows of each attention_rows_w8a8 call over seq_q rows (the last takes what is left):
/// kAttentionInt8CallRows, where that is kAttentionCallRows (the other targets' row groups, as
/// before); on x86 at most 64, as even as the calls go (100 rows as 50 + 50, not 64 + 36).
constexpr index_t attention_w8a8_call_rows(index_t seq_q) {
  const index_t calls = (seq_q + kAttentionInt8CallRows - 1) / kAttentionInt8CallRows;
  return kAttentionInt8CallRows == kAttentionCallRows || calls <= 1 ? kAttentionInt8CallRows
                                                                    : (seq_q + calls - 1) / calls;
}
/// Query rows of a layer's first attention_rows call over seq_q rows attending to seq_k keys, and
/// of each call after it (the last takes what is left): kAttentionCallRows, except where the
/// active variant takes tall groups (kAttentionCallRows > kAttentionRowGroup), the keys fit one of
/// them (one key block: two AVX-512 vectors) and the rows are two calls of which the second would
/// be short: then halves, so that both calls are tall groups (16 rows as 8 + 8 rather than a tall 12
/// and a group of 4). Rows are independent: the same bits either way.
constexpr index_t attention_call_rows(index_t seq_q, index_t seq_k) {
  if (kAttentionCallRows > kAttentionRowGroup && seq_k <= kAttentionKeyBlock && seq_q >= 2 * kAttentionRowGroup + 2 &&
      seq_q <= 2 * kAttentionCallRows)
    return (seq_q + 1) / 2;
  return kAttentionCallRows;
}
/// Query rows the active variant may take in one attention_rows call with the rows across the
/// lanes: a vector of them where it is AVX-512's (avx512, and the dispatching variant, which runs it on
/// the CPUs that have it; kernels/attention/x86_lanes.hpp), else none.
inline constexpr index_t kAttentionLaneRows = kActiveRunsAvx512 ? 16 : 0;
/// Whether AVX-512's rows in lanes take a call of `rows` query rows of head_dim over n keys scored:
/// 9 to 16 rows, head_dim 8 or 16, and at least as many rows as keys (3 more at head_dim 16). Their
/// cost grows with the keys and not with the rows, the row form's with the rows (see x86_lanes.hpp
/// for the measured costs). The kernel decides by it, and the layers cut their calls by it.
constexpr bool attention_lanes_take(index_t rows, index_t head_dim, index_t n) {
  return rows >= 9 && rows <= 16 && (head_dim == 8 || head_dim == 16) && n + (head_dim == 16 ? 3 : 0) <= rows;
}
/// Whether AVX-512's softmax steps with the rows in lanes over key blocks take a call of `rows` query
/// rows of head_dim over n keys (kernels/attention/x86_lane_blocks.hpp): a vector of rows (16), head_dim
/// a multiple of 16 up to 64, more keys than the rows in lanes take (over 16). The kernel decides by it,
/// and the layers cut their calls by it.
constexpr bool attention_lane_blocks_take(index_t rows, index_t head_dim, index_t n) {
  return rows == 16 && head_dim % 16 == 0 && head_dim >= 16 && head_dim <= 64 && n > 16;
}
/// The most rows of any call attention_call_rows gives (the layers' arrays of row masks).
inline constexpr index_t kAttentionMaxCallRows =
    kAttentionLaneRows > kAttentionCallRows ? kAttentionLaneRows : kAttentionCallRows;
/// attention_call_rows, and where the active variant has rows in lanes (kAttentionLaneRows) and
/// they take all seq_q rows of head_dim over seq_k keys in one call (attention_lanes_take), seq_q:
/// one call instead of tall groups (16 rows over 16 keys of 8 dimensions: 184 ns instead of 8 + 8
/// rows' 238 on Sapphire Rapids).
constexpr index_t attention_call_rows(index_t seq_q, index_t seq_k, index_t head_dim) {
  if (kAttentionLaneRows >= seq_q && attention_lanes_take(seq_q, head_dim, seq_k)) return seq_q;
  return attention_call_rows(seq_q, seq_k);
}
/// attention_call_rows(seq_q, seq_k, head_dim) where every query row attends to the same keys [0, e)
/// (no mask, or key padding alone): a vector of rows (kAttentionLaneRows) where the active variant's
/// softmax steps in lanes over key blocks take such calls (attention_lane_blocks_take), so that every
/// call but the last is theirs. (Elsewhere, and under masks whose rows differ, they would decline,
/// and a 16-row call would run as a tall group of 12 and a group of 4.)
constexpr index_t attention_prefix_call_rows(index_t seq_q, index_t seq_k, index_t head_dim, index_t e) {
  if (kAttentionLaneRows && seq_q >= kAttentionLaneRows && attention_lane_blocks_take(kAttentionLaneRows, head_dim, e))
    return kAttentionLaneRows;
  return attention_call_rows(seq_q, seq_k, head_dim);
}
/// Whether the layers pass a self-attention's Q, K and V projections to one Kernels::linears call: where
/// the active variant may share their register tiles (AVX-512, and the dispatching variant, which runs it
/// on the CPUs that have it); elsewhere three linear calls, as that call would make them, and no loop of
/// them in small targets' flash. The same bits either way.
inline constexpr bool kSharedLinearTiles = kActiveRunsAvx512;
/// Keys whose scores a group of rows may hold at once (a multiple of kAttentionKeyBlock): the
/// variants with wide vectors compute them in one product and run the blocks' softmax steps over
/// them before one product with the values. Still O(block) scratch, whatever the sequence length.
inline constexpr index_t kAttentionScoreKeys = 4 * kAttentionKeyBlock;

/// Scratch floats of one streaming attention call over n_rows query rows (at most
/// kAttentionRowGroup at a time), n_keys keys and head_dim: up to kAttentionScoreKeys scores and a
/// copy of the query per row.
constexpr index_t attention_scratch_floats(index_t n_rows, index_t n_keys, index_t head_dim) {
  const index_t rows = n_rows < kAttentionRowGroup ? n_rows : kAttentionRowGroup;
  return rows * ((n_keys < kAttentionScoreKeys ? n_keys : kAttentionScoreKeys) + head_dim);
}

/// Row stride (floats) of a layer's value buffer [SeqK, d_model]: d_model, plus one 64-byte line
/// when rows d_model floats apart would be a multiple of 512 bytes apart. The values' products
/// read one head's slice of every row (a few lines each) once per group of query rows, and rows a
/// multiple of 512 bytes apart fall into at most 8 of an L1's 64 sets (1 KiB apart: 4), too few
/// ways for a head's values over a hundred keys: each group would reload them from L2. (Measured
/// on AVX-512: the values' loop of a 6-row group over 128 keys of a 256-wide buffer, 10.8 cycles
/// per key, 8.5 with the line of padding; MultiHeadAttention<128, 128, 256, 8> 2.5% faster.)
constexpr index_t attention_value_stride(index_t d_model) { return d_model % 128 == 0 ? d_model + 16 : d_model; }

/// A block of a panel-stored weight Wᵀ [in_total, out_total] (see kWeightPanel): rows from k0,
/// columns from o0. Products over a block of the reduction (k0 > 0) continue from partial sums.
struct WeightBlock {
  const float* w;
  index_t in_total, out_total;
  index_t k0 = 0, o0 = 0;

  /// Column o of the block (column o0 + o of the weight): the address of its element at row k0,
  /// the row stride `ld` of its panel, and the number `run` of columns from o on in that panel.
  [[gnu::always_inline]] const float* column(index_t o, index_t& ld, index_t& run) const {
    const index_t c = o0 + o;
    const index_t p0 = c / kWeightPanel * kWeightPanel;
    ld = out_total - p0 < kWeightPanel ? out_total - p0 : kWeightPanel;  // the panel's width
    run = p0 + ld - c;
    return w + weight_index(in_total, out_total, k0, c);
  }
};

/// The smallest max |x| a quantized row keeps (2⁻¹⁰⁰; ref::quantize_row): below it the row
/// quantizes to zeros with scale 0. From it on, 127 / a is finite (it overflows below 127 / FLT_MAX
/// ≈ 2⁻¹²¹), a denormal x gives |x · (127 / a)| < 2⁻¹⁹, so q = 0 whether or not a target flushes
/// denormals (Helium does), and the epilogue's s_x · s_w stays normal for every weight scale from
/// 2⁻¹⁹ on (so a flushing target's products keep the reference's bits there). Such rows' values
/// (< 7.9·10⁻³¹) are far below every product's rounding error.
inline constexpr float kMinQuantizedMax = 0x1p-100f;
/// Rows a w8a8 linear (Kernels::linear_w8a8) quantizes at a time: its scratch holds them, and each
/// weight panel is read once per group (kernels/product/int8.hpp, x86_int8.hpp; x86's AVX512-VNNI
/// path quantizes twice as many at a time, int8 elements in the room of int16 ones).
inline constexpr index_t kQuantizedRowGroup = 24;

/// Elements of one quantized row in a w8a8 linear's scratch: in, rounded up to 16.
constexpr index_t quantized_row_stride(index_t in) { return (in + 15) / 16 * 16; }

/// Bytes of one w8a8 linear's scratch beyond its quantized rows where it multiplies several rows:
/// on a microcontroller, four outputs' int8 weights expanded into int16 pairs (8 · quantized_row_stride(in)
/// bytes), which the Cortex-M4F/M7 kernel multiplies with every pair of rows of a group
/// (kernels/product/cortex_m4f_int8.hpp); elsewhere none.
constexpr index_t linear_w8a8_expanded_bytes(index_t rows, index_t in) {
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
  return rows >= 2 ? 8 * quantized_row_stride(in) : 0;
#else
  static_cast<void>(rows), static_cast<void>(in);
  return 0;
#endif
}

/// Bytes of the scratch of one linear_w8a8 call over `rows` rows of `in` inputs: up to
/// kQuantizedRowGroup quantized rows of two bytes an element (int8, or int16 for the kernels that
/// multiply int16 pairs), 4 bytes of room to start them at a word (Cortex-M's ldrd), and
/// linear_w8a8_expanded_bytes.
constexpr index_t linear_w8a8_scratch_bytes(index_t rows, index_t in) {
  return (rows < kQuantizedRowGroup ? rows : kQuantizedRowGroup) * quantized_row_stride(in) * 2 + 4 +
         linear_w8a8_expanded_bytes(rows, in);
}

/// Reduction rows of one weight panel a w8a32 linear (Kernels::linear_w8a32) converts to float at a
/// time, into its scratch (kernels/product/int8.hpp). The chunks compose in the float product's
/// canonical order, so this size changes no bit: 32 (4 KB of scratch, with kW8A32ChunkWidth) on a microcontroller, 128
/// (32 KB) elsewhere, where longer chunks keep the product's tiles busy (AVX-512, 128×512→2048:
/// 0.97× the float linear's speed with 128, 0.75× with 32).
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
inline constexpr index_t kW8A32ChunkK = 32;
#else
inline constexpr index_t kW8A32ChunkK = 128;
#endif

/// Outputs of a weight panel a w8a32 linear converts at a time, with kW8A32ChunkK reduction rows:
/// half a panel (32; 4 KB of scratch, so the demo's w8a32 model keeps the demo's 24 KB RAM budget)
/// on a microcontroller, the whole panel elsewhere. Each output's sums are its own column's, so
/// this changes no bit either.
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
inline constexpr index_t kW8A32ChunkWidth = kWeightPanel / 2;
#else
inline constexpr index_t kW8A32ChunkWidth = kWeightPanel;
#endif

/// Floats of the scratch of one linear_w8a32 call over `in` inputs: one chunk of a weight panel.
constexpr index_t linear_w8a32_scratch_floats(index_t in) {
  return (in < kW8A32ChunkK ? in : kW8A32ChunkK) * kW8A32ChunkWidth;
}

/// Floats of the scratch of one w8a8 attention call (Kernels::attention_rows_w8a8,
/// ref::attention_row_w8a8): one block of scores, and its quantized weights (kAttentionKeyBlock
/// bytes).
constexpr index_t attention_w8a8_scratch_floats() { return kAttentionKeyBlock + kAttentionKeyBlock / 4; }

/// Activation fused into a linear layer's output. The GELUs come last: `act >= Fuse::gelu` tests for
/// either (kernels/product/: one branch, as many as before the tanh GELU on the paths without one).
enum class Fuse : std::uint8_t { none, relu, gelu, gelu_tanh };
constexpr Fuse fuse(Activation a) {
  return a == Activation::relu ? Fuse::relu : (a == Activation::gelu ? Fuse::gelu : Fuse::gelu_tanh);
}
/// The activation a fused epilogue applies (act != Fuse::none): for the kernels that run it as a
/// pass over their stored outputs.
constexpr Activation activation_of(Fuse act) {
  return act == Fuse::relu ? Activation::relu : (act == Fuse::gelu ? Activation::gelu : Activation::gelu_tanh);
}

/// One linear of a float call over shared input rows (Kernels::linears): what linear_block takes besides
/// the input, for a whole weight (WeightBlock{w, in, out}) without accumulation or activation.
struct F32Linear {
  const float* w;     ///< Wᵀ [in, out] in column panels (kWeightPanel)
  const float* bias;  ///< [out], or null
  index_t out;
  float* y;  ///< [rows, out], row stride ldy
  index_t ldy;
};

/// One linear of a w8a8 call over shared input rows (Kernels::linears_w8a8): what linear_w8a8 takes
/// besides the input and the scratch.
struct W8a8Linear {
  const std::int8_t* qw;  ///< Wᵀ [in, out] in k-quads and panels (qweight_index)
  const float* s_w;       ///< [out] per-output scales
  const float* bias;      ///< [out], or null
  index_t out;
  float* y;  ///< [rows, out]
  Fuse act = Fuse::none;
};

namespace ref {
/// The arrays a query row's mask reads, in place, besides its key end (RowMask::arrays): allow is
/// statiformer's BoolMask convention (nonzero = attend); masked and key_masked are PyTorch's
/// (nonzero = masked): a row of an attn_mask and a key_padding_mask (the masked set is the union,
/// as PyTorch combines them). add: a row of an additive float mask (PyTorch's float attn_mask):
/// the score of an allowed key j is (q·k_j) / √head_dim + add[j], in that order, before the
/// softmax; a key whose add[j] is -inf is masked (never read, as the others: a row of -inf is a
/// fully masked row). Each is nullable.
struct MaskArrays {
  const std::uint8_t* allow = nullptr;
  const std::uint8_t* masked = nullptr;
  const std::uint8_t* key_masked = nullptr;
  const float* add = nullptr;

  // (always inline: an out-of-line copy in a kernel variant's object is a weak symbol outside the
  // variant's namespace, which the linker may keep for a program built with other flags; ARCHITECTURE.md)
  [[gnu::always_inline]] constexpr bool allows(index_t j) const {
    return (!allow || allow[j] != 0) && (!masked || masked[j] == 0) && (!key_masked || key_masked[j] == 0) &&
           (!add || add[j] != -std::numeric_limits<float>::infinity());
  }
};

/// Which keys one query row may attend to: key j is allowed iff j < key_end and, where the row
/// has arrays, arrays->allows(j). A row without arrays is a prefix [0, key_end): the variants'
/// fast paths take only those. Two words, as the fast paths' test is one pointer (the Cortex-M
/// attention builds and tests one per row of every call).
struct RowMask {
  index_t key_end;
  const MaskArrays* arrays = nullptr;

  /// Whether the allowed keys are the prefix [0, key_end) with nothing added (no array to read).
  constexpr bool prefix() const { return !arrays; }
  /// Whether key j is allowed.
  [[gnu::always_inline]] constexpr bool allows(index_t j) const {
    return j < key_end && (!arrays || arrays->allows(j));
  }
  /// The row of an additive float mask, or null.
  constexpr const float* additive() const { return arrays ? arrays->add : nullptr; }
};
}  // namespace ref

template <class Tag>
struct Kernels {
  /// y[r, o] = act(Σ_k x[r, k] · w[k, o] + bias[o]) for x [rows, in] and w [in, out] (the
  /// transpose of PyTorch's [out, in], in column panels: see kWeightPanel; exporters store it so),
  /// bias nullable. y must not alias x.
  static void linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out, float* y,
                     Fuse act = Fuse::none) noexcept;
  /// linear over a block of a weight: y[r, o] (row stride ldy) for o < out, summing
  /// x[r, k] · Wᵀ[w.k0 + k, w.o0 + o] over k < in (x row stride ldx). accumulate: continue each
  /// sum from the value in y, exactly as if the block's reduction steps had followed the earlier
  /// ones (so blocks over the reduction compose into the same bits as one linear). The bias is
  /// added and act applied after this block's steps (pass them with the last block only).
  static void linear_block(const float* x, index_t ldx, index_t rows, index_t in, WeightBlock w, index_t out, float* y,
                           index_t ldy, const float* bias, bool accumulate, Fuse act = Fuse::none) noexcept;
  /// `count` linears over the same input x [rows, in] (row stride in): each y gets the bits of its own
  /// linear_block(x, in, rows, in, {w, in, out}, out, y, ldy, bias, false) call (Q, K and V of a
  /// self-attention). Where every linear is one vector of the variant wide and the rows fit one column of
  /// register tiles (AVX-512 at d_model 16), their outputs share the tiles: each x
  /// loaded once for all of them. No y may alias x or another y.
  static void linears(const float* x, index_t rows, index_t in, const F32Linear* linears, index_t count) noexcept;
  /// w8a8 linear (kernels/QUANTIZATION.md): each row of x [rows, in] quantized to int8 with its own
  /// scale at run time, the int32 product with the int8 weight qw (Wᵀ [in, out] in k-quads and
  /// panels: qweight_index) and its per-output scales s_w [out], then y[r, o] =
  /// fma(float(acc), s_x[r] · s_w[o], bias[o]) and act: the bits of ref::linear_w8a8. in ≤
  /// ref::kMaxQuantizedIn. scratch: linear_w8a8_scratch_bytes(rows, in) bytes, any alignment.
  static void linear_w8a8(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w,
                          const float* bias, index_t out, float* y, std::int8_t* scratch,
                          Fuse act = Fuse::none) noexcept;
  /// linear_w8a8 of `count` linears over the same input rows, each row group quantized once for all
  /// of them (Q, K and V of a self-attention; K and V of a cross-attention): every y gets the bits
  /// of its own linear_w8a8 call. No y may alias x or another y. scratch as linear_w8a8's.
  static void linears_w8a8(const float* x, index_t rows, index_t in, const W8a8Linear* linears, index_t count,
                           std::int8_t* scratch) noexcept;
  /// w8a32 linear (kernels/QUANTIZATION.md): x [rows, in] stays float; the int8 weight qw (Wᵀ
  /// [in, out] in k-quads and panels: qweight_index) is converted to float (exactly), kW8A32ChunkK
  /// reduction rows of one panel at a time, and multiplied by this variant's float product
  /// (linear_block, the canonical order over k from +0), then y[r, o] = fma(acc, s_w[o], bias[o])
  /// (acc · s_w[o] without a bias) and act: the bits of ref::linear_w8a32. y must not alias x.
  /// scratch: linear_w8a32_scratch_floats(in) floats.
  static void linear_w8a32(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w,
                           const float* bias, index_t out, float* y, float* scratch, Fuse act = Fuse::none) noexcept;
  /// Quantizes `rows` rows of k values (row r at x + r·ldx) each with its own scale, as
  /// ref::quantize_row: exactly k bytes at q + r·ldq (nothing past them), the scale at s[r].
  static void quantize_rows(const float* x, index_t ldx, index_t rows, index_t k, std::int8_t* q, index_t ldq,
                            float* s) noexcept;
  /// w8a8 attention (kernels/QUANTIZATION.md): ref::attention_row_w8a8 for n_rows query rows, row r
  /// at q + r·q_stride with scale s_q[r], its output at out + r·out_stride; key and value j at
  /// k + j·k_stride and v + j·v_stride with scales s_k[j], s_v[j]. p: attention_w8a8_scratch_floats().
  static void attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows,
                                  const std::int8_t* k, index_t k_stride, const float* s_k, const std::int8_t* v,
                                  index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                                  const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                  index_t out_stride) noexcept;
  /// One query row of scaled dot-product attention over n_keys keys of one head, keys given
  /// transposed, streaming over key blocks (see ref::attention_row for the contract); p: scratch
  /// of attention_scratch_floats(1, n_keys, head_dim).
  static void attention_row(const float* q, const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                            index_t head_dim, index_t n_keys, ref::RowMask mask, MaskFill fill, float* p,
                            float* out) noexcept;
  /// The n_heads heads of one query row (a decoding step): head h is attention_row of q + h·head_dim
  /// over Kᵀ's rows from h·head_dim on (kt + h·head_dim·kt_stride) and the values v + h·head_dim,
  /// into out + h·head_dim (out may alias q); p as attention_row's. Same bits as n_heads calls of
  /// attention_row.
  static void attention_heads(const float* q, index_t n_heads, const float* kt, index_t kt_stride, const float* v,
                              index_t v_stride, index_t head_dim, index_t n_keys, ref::RowMask mask, MaskFill fill,
                              float* p, float* out) noexcept;
  /// attention_row for n_rows query rows: row r reads q + r·q_stride with masks[r] and writes
  /// out + r·out_stride (which may alias its own query row); p: scratch of
  /// attention_scratch_floats(n_rows, n_keys, head_dim). Same bits as n_rows calls of
  /// attention_row.
  static void attention_rows(const float* q, index_t q_stride, index_t n_rows, const float* kt, index_t kt_stride,
                             const float* v, index_t v_stride, index_t head_dim, index_t n_keys,
                             const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                             index_t out_stride) noexcept;
  /// attention_rows for n_heads heads of the same query rows and masks: head h's rows at q + h·head_dim,
  /// its keys transposed from kt + h·head_dim·kt_stride, its values at v + h·head_dim, its outputs at
  /// out + h·head_dim (strides as attention_rows'; out may alias q, each head's outputs its own queries).
  /// Same bits as n_heads calls of attention_rows, head after head. (AVX-512's rows in lanes run two heads
  /// of 8 dimensions at a time, one a stage behind the other; kernels/attention/x86_lanes.hpp.)
  static void attention_rows_heads(const float* q, index_t q_stride, index_t n_rows, index_t n_heads, const float* kt,
                                   index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                   index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                   index_t out_stride) noexcept;
  /// attention_rows_heads from K's rows (head h's key j at k + j·k_stride + h·head_dim) instead of Kᵀ,
  /// where the variant's rows in lanes take the call (AVX-512, kernels/attention/x86_lanes.hpp: 9 to 16
  /// rows, attention_lanes_take, prefix masks each with a key): returns false, nothing written, for any
  /// other call and on the variants without them (then the caller transposes K for attention_rows_heads).
  /// The lanes only broadcast the keys' elements, so they need no Kᵀ (a layer's transpose of K took 2.3 %
  /// of the encoder layer at 10×16×2×32). Same bits as attention_rows_heads. one_mask: masks[0] is every
  /// row's mask and masks holds only that one (a mask without causality or arrays: the layer builds no row
  /// masks, and the lanes compare none; 10×16×2×32, Zen 5: the encoder layer ~3 % faster).
  static bool attention_lane_rows_heads(const float* q, index_t q_stride, index_t n_rows, index_t n_heads,
                                        const float* k, index_t k_stride, const float* v, index_t v_stride,
                                        index_t head_dim, index_t n_keys, const ref::RowMask* masks, bool one_mask,
                                        float* out, index_t out_stride) noexcept;
  /// attention_rows that also returns the attention weights: weights [n_rows, n_keys] (row r at
  /// weights + r·n_keys) hold the whole score rows, softmax in two passes (see
  /// ref::attention_row_weights); the outputs may differ from the streaming ones in the last bits.
  static void attention_rows_weights(const float* q, index_t q_stride, index_t n_rows, const float* kt,
                                     index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                     index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* weights,
                                     float* out, index_t out_stride) noexcept;
  static void layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind,
                             float eps, float* y) noexcept;
  /// layer_norm_row over `rows` rows of n values (row stride n; y may alias x).
  static void layer_norm_rows(const float* x, index_t rows, const float* gain, const float* bias, index_t n,
                              LayerNormKind kind, float eps, float* y) noexcept;
  /// y = layer_norm_rows(a + x) (a residual step of a post-norm layer): the sums a[i] + x[i] (add's
  /// operands) of rows·n values, then their LayerNorm into y, which may alias a or x. Where a is not y,
  /// afterwards it holds the sums, or its own values where the variant keeps the sums out of it (x86,
  /// two rows or more).
  static void add_layer_norm_rows(float* a, const float* x, index_t rows, const float* gain, const float* bias,
                                  index_t n, LayerNormKind kind, float eps, float* y) noexcept;
  static void log_softmax_row(float* x, index_t n) noexcept;
  static void activation(Activation a, float* x, index_t n) noexcept;
  static void add(float* y, const float* x, index_t n) noexcept;
  /// dst[c, r] = src[r, c] for r < rows, c < cols (row strides ld_src and ld_dst); dst must not
  /// overlap src. (Kᵀ for the attention: a copy, the same bits on every variant.)
  static void transpose(const float* src, index_t rows, index_t cols, index_t ld_src, float* dst,
                        index_t ld_dst) noexcept;
  static float dot(const float* a, const float* b, index_t n) noexcept;
  static float sum(const float* x, index_t n) noexcept;
  static void exp(const float* x, float* y, index_t n) noexcept;
  static void log(const float* x, float* y, index_t n) noexcept;
  static void gelu(const float* x, float* y, index_t n) noexcept;
  /// Whether the CPU running this can execute this variant.
  static bool supported() noexcept;
  static const char* name() noexcept;
};

#if defined(__x86_64__)
// Kernels<isa::dispatch> is no instantiation of kernels/generic.hpp: each entry point forwards to
// the variant chosen once per process (simd/dispatch.hpp), defined as an explicit specialization in
// src/kernels/variant_dispatch.cpp and declared here, where every caller sees it.
template <>
void Kernels<isa::dispatch>::linear(const float*, index_t, index_t, const float*, const float*, index_t, float*,
                                    Fuse) noexcept;
template <>
void Kernels<isa::dispatch>::linear_block(const float*, index_t, index_t, index_t, WeightBlock, index_t, float*,
                                          index_t, const float*, bool, Fuse) noexcept;
template <>
void Kernels<isa::dispatch>::linears(const float*, index_t, index_t, const F32Linear*, index_t) noexcept;
template <>
void Kernels<isa::dispatch>::linear_w8a8(const float*, index_t, index_t, const std::int8_t*, const float*, const float*,
                                         index_t, float*, std::int8_t*, Fuse) noexcept;
template <>
void Kernels<isa::dispatch>::linears_w8a8(const float*, index_t, index_t, const W8a8Linear*, index_t,
                                          std::int8_t*) noexcept;
template <>
void Kernels<isa::dispatch>::linear_w8a32(const float*, index_t, index_t, const std::int8_t*, const float*,
                                          const float*, index_t, float*, float*, Fuse) noexcept;
template <>
void Kernels<isa::dispatch>::quantize_rows(const float*, index_t, index_t, index_t, std::int8_t*, index_t,
                                           float*) noexcept;
template <>
void Kernels<isa::dispatch>::attention_rows_w8a8(const std::int8_t*, index_t, const float*, index_t, const std::int8_t*,
                                                 index_t, const float*, const std::int8_t*, index_t, const float*,
                                                 index_t, index_t, const ref::RowMask*, MaskFill, float*, float*,
                                                 index_t) noexcept;
template <>
void Kernels<isa::dispatch>::attention_row(const float*, const float*, index_t, const float*, index_t, index_t, index_t,
                                           ref::RowMask, MaskFill, float*, float*) noexcept;
template <>
void Kernels<isa::dispatch>::attention_heads(const float*, index_t, const float*, index_t, const float*, index_t,
                                             index_t, index_t, ref::RowMask, MaskFill, float*, float*) noexcept;
template <>
void Kernels<isa::dispatch>::attention_rows(const float*, index_t, index_t, const float*, index_t, const float*,
                                            index_t, index_t, index_t, const ref::RowMask*, MaskFill, float*, float*,
                                            index_t) noexcept;
template <>
void Kernels<isa::dispatch>::attention_rows_heads(const float*, index_t, index_t, index_t, const float*, index_t,
                                                  const float*, index_t, index_t, index_t, const ref::RowMask*,
                                                  MaskFill, float*, float*, index_t) noexcept;
template <>
bool Kernels<isa::dispatch>::attention_lane_rows_heads(const float*, index_t, index_t, index_t, const float*, index_t,
                                                       const float*, index_t, index_t, index_t, const ref::RowMask*,
                                                       bool, float*, index_t) noexcept;
template <>
void Kernels<isa::dispatch>::attention_rows_weights(const float*, index_t, index_t, const float*, index_t, const float*,
                                                    index_t, index_t, index_t, const ref::RowMask*, MaskFill, float*,
                                                    float*, index_t) noexcept;
template <>
void Kernels<isa::dispatch>::layer_norm_row(const float*, const float*, const float*, index_t, LayerNormKind, float,
                                            float*) noexcept;
template <>
void Kernels<isa::dispatch>::layer_norm_rows(const float*, index_t, const float*, const float*, index_t, LayerNormKind,
                                             float, float*) noexcept;
template <>
void Kernels<isa::dispatch>::add_layer_norm_rows(float*, const float*, index_t, const float*, const float*, index_t,
                                                 LayerNormKind, float, float*) noexcept;
template <>
void Kernels<isa::dispatch>::log_softmax_row(float*, index_t) noexcept;
template <>
void Kernels<isa::dispatch>::activation(Activation, float*, index_t) noexcept;
template <>
void Kernels<isa::dispatch>::add(float*, const float*, index_t) noexcept;
template <>
void Kernels<isa::dispatch>::transpose(const float*, index_t, index_t, index_t, float*, index_t) noexcept;
template <>
float Kernels<isa::dispatch>::dot(const float*, const float*, index_t) noexcept;
template <>
float Kernels<isa::dispatch>::sum(const float*, index_t) noexcept;
template <>
void Kernels<isa::dispatch>::exp(const float*, float*, index_t) noexcept;
template <>
void Kernels<isa::dispatch>::log(const float*, float*, index_t) noexcept;
template <>
void Kernels<isa::dispatch>::gelu(const float*, float*, index_t) noexcept;
/// Always true: the dispatching variant runs only what the CPU can run.
template <>
bool Kernels<isa::dispatch>::supported() noexcept;
/// The name of the variant it runs: "avx512", "avx2" or "scalar".
template <>
const char* Kernels<isa::dispatch>::name() noexcept;
#endif

namespace kernels_detail {
/// The size of the next part when rem items (rows of a product, heads) are cut into as few parts of
/// at most `most` as they take, as even as they go, the larger first: 32 by 6 as 6 6 5 5 5 5, not
/// 6 6 6 6 6 2 (nor 6 6 6 6 4 4). Call it again with what is left.
constexpr index_t even_part(index_t rem, index_t most) {
  const index_t parts = (rem + most - 1) / most;
  return (rem + parts - 1) / parts;
}
/// even_part's whole cut of `total` items, computed once (two divisions) for loops that would
/// otherwise divide per part (a product's row tiles: a 64-bit division's latency before every tile):
/// the first `big_count` parts have `big` items, the others big - 1, so part i is `(*this)[i]`.
struct EvenParts {
  index_t parts = 0, big = 0, big_count = 0;
  constexpr EvenParts(index_t total, index_t most) {
    if (total == 0) return;
    parts = (total + most - 1) / most;
    big = (total + parts - 1) / parts;
    big_count = total - (big - 1) * parts;
  }
  constexpr index_t operator[](index_t i) const { return i < big_count ? big : big - 1; }
};
}  // namespace kernels_detail

/// The variant layers call: the best one the compile flags allow, or on x86-64 without -march the
/// dispatching one (isa::active, simd/isa.hpp).
using ActiveKernels = Kernels<isa::active>;

}  // namespace stf
