// statiformer — scaled dot-product attention and multi-head attention.
#pragma once

#include <cstdint>
#include <cstring>
#include <new>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/transpose/select.hpp>
#include <statiformer/layers/linear.hpp>
#include <statiformer/layers/params.hpp>

namespace stf {

/// Which keys each query may attend to. Everything here is runtime data of one forward call. The
/// masked set is the union of what each field masks (PyTorch combines attn_mask and
/// key_padding_mask so); the arrays are read in place by the kernels, never copied into scores.
struct AttentionMask {
  index_t valid_keys = 0;  ///< key padding: keys at positions >= valid_keys are masked
  bool causal = false;     ///< key j is masked for query i when j > i + causal_offset
  index_t causal_offset = 0;
  const std::uint8_t* allow = nullptr;  ///< optional [SeqQ, SeqK] mask, 1 = attend, 0 = masked (BoolMask)
  MaskFill fill = MaskFill::neg_inf;
  /// optional [SeqQ, SeqK] mask in PyTorch's convention: nonzero (True) = masked (TorchBoolMask)
  const std::uint8_t* masked = nullptr;
  /// optional [SeqK] key-padding mask in PyTorch's convention: nonzero (True) = padding, masked
  /// for every query (KeyPaddingMask); gaps allowed
  const std::uint8_t* key_padding = nullptr;
  /// optional [SeqQ, SeqK] additive float mask (PyTorch's float attn_mask): added to the scaled
  /// scores before the softmax; -inf masks the key (TorchFloatMask)
  const float* additive = nullptr;

  static constexpr AttentionMask padding(index_t valid_keys, MaskFill fill = MaskFill::neg_inf) {
    return {valid_keys, false, 0, nullptr, fill};
  }
  static constexpr AttentionMask causal_mask(index_t valid_keys, MaskFill fill = MaskFill::neg_inf) {
    return {valid_keys, true, 0, nullptr, fill};
  }

  /// Whether some array is read (else every row is a prefix of the keys).
  constexpr bool has_arrays() const { return allow || masked || key_padding || additive; }
  /// Whether every query row allows the same prefix of the keys (no causality, no arrays): row 0's
  /// mask is every row's.
  constexpr bool one_prefix() const { return !causal && !has_arrays(); }

  /// The end of query row `query`'s allowed keys over seq_k keys (valid keys, causal).
  constexpr index_t key_end(index_t query, index_t seq_k) const {
    index_t end = valid_keys < seq_k ? valid_keys : seq_k;
    if (causal && query + causal_offset + 1 < end) end = query + causal_offset + 1;
    return end;
  }
  /// Query row `query`'s arrays over seq_k keys (where has_arrays()).
  constexpr ref::MaskArrays arrays(index_t query, index_t seq_k) const {
    return {allow ? allow + query * seq_k : nullptr, masked ? masked + query * seq_k : nullptr, key_padding,
            additive ? additive + query * seq_k : nullptr};
  }
};

/// A boolean attention mask in statiformer's first convention, with its shape in the type:
/// allow[i * SeqK + j] = 1 lets query i attend to key j (the complement of PyTorch's bool
/// attn_mask: to copy a PyTorch mask use TorchBoolMask). Converting it for a layer of another
/// [SeqQ, SeqK] is a compile error.
template <index_t SeqQ, index_t SeqK>
struct BoolMask {
  std::uint8_t allow[SeqQ * SeqK];
};

/// PyTorch's boolean attn_mask (nn.MultiheadAttention's attn_mask, nn.TransformerEncoderLayer's
/// src_mask, the decoder's tgt_mask / memory_mask): masked[i * SeqK + j] = 1 (True) forbids query
/// i to attend to key j. The field's name says the convention; it is a distinct type from
/// BoolMask, so one is never taken for the other.
template <index_t SeqQ, index_t SeqK>
struct TorchBoolMask {
  std::uint8_t masked[SeqQ * SeqK];
};

/// PyTorch's float attn_mask: add[i * SeqK + j] is added to the score of query i and key j (after
/// the division by √head_dim, before the softmax); -inf masks the key. Only the general attention
/// path reads it (the variants' prefix fast paths decline such rows).
template <index_t SeqQ, index_t SeqK>
struct TorchFloatMask {
  float add[SeqQ * SeqK];
};

/// PyTorch's key_padding_mask [SeqK]: pad[j] = 1 (True) masks key j for every query. Any keys,
/// not only trailing ones.
template <index_t SeqK>
struct KeyPaddingMask {
  std::uint8_t pad[SeqK];
};

/// The AttentionMask of a boolean mask, checked against the attention's [SeqQ, SeqK].
template <index_t SeqQ, index_t SeqK, index_t MaskRows, index_t MaskCols>
constexpr AttentionMask bool_mask(const BoolMask<MaskRows, MaskCols>& m, MaskFill fill = MaskFill::neg_inf) {
  static_assert(check::mask_shape<MaskRows, MaskCols, SeqQ, SeqK>());
  return {SeqK, false, 0, m.allow, fill};
}

/// The masks nn.MultiheadAttention takes, for an attention of [SeqQ, SeqK] (all optional,
/// combined as the union of their masked sets): attn_mask (True = masked) and/or float_mask (a
/// float attn_mask, added to the scores), key_padding_mask (True = padding), is_causal (key j
/// masked for query i when j > i, as nn.Transformer.generate_square_subsequent_mask's mask), and
/// trailing padding as a length (keys >= valid_keys masked).
template <index_t SeqQ, index_t SeqK>
struct TorchMasks {
  const TorchBoolMask<SeqQ, SeqK>* attn_mask = nullptr;
  const KeyPaddingMask<SeqK>* key_padding_mask = nullptr;
  bool is_causal = false;
  index_t valid_keys = SeqK;
  /// PyTorch's attn_mask as floats (added to the scores), with or instead of the bool one
  const TorchFloatMask<SeqQ, SeqK>* float_mask = nullptr;

  constexpr AttentionMask attention(MaskFill fill = MaskFill::neg_inf) const {
    AttentionMask m{valid_keys, is_causal, 0, nullptr, fill};
    m.masked = attn_mask ? attn_mask->masked : nullptr;
    m.key_padding = key_padding_mask ? key_padding_mask->pad : nullptr;
    m.additive = float_mask ? float_mask->add : nullptr;
    return m;
  }
};

/// The AttentionMask of PyTorch-convention masks for an attention of [SeqQ, SeqK] (masks of
/// another shape do not compile).
template <index_t SeqQ, index_t SeqK>
constexpr AttentionMask torch_mask(const TorchMasks<SeqQ, SeqK>& m, MaskFill fill = MaskFill::neg_inf) {
  return m.attention(fill);
}

namespace detail {
/// Keys [rows, cols] into Kᵀ [cols, rows] (dst[c·ld_dst + r] = src[r·ld_src + c]), the layout the
/// attention kernels read. Small ones here, inline: with the layer's sizes known at compile time
/// the loop is cheaper than a call (10 × 16: 4% of the encoder layer's time went into the call),
/// except where the variant's register tiles cover the whole matrix (x86: 16 × 32 keys as two
/// 16 × 16 tiles on AVX-512: the encoder layer at (16, 32, 4, 64) 5% faster), or where the variant
/// has a whole transpose of its own for 4 rows or more (Cortex-M55: gathers, 10 × 16 in 3 panels).
inline void transpose(const float* src, index_t rows, index_t cols, index_t ld_src, float* dst, index_t ld_dst) {
  constexpr bool tiles = kernels_detail::TransposeSelect<isa::active>::register_tiles;
  constexpr bool whole = !std::is_void_v<typename kernels_detail::TransposeSelect<isa::active>::Whole>;
  if (whole ? rows < 4 : (rows < 32 || cols < 32) && !(tiles && rows % 16 == 0 && cols % 16 == 0)) {
    for (index_t r = 0; r < rows; ++r)
      for (index_t c = 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
    return;
  }
  ActiveKernels::transpose(src, rows, cols, ld_src, dst, ld_dst);
}

/// Room for the MaskArrays of one kernel call's rows, without their members' default initialization:
/// row_masks constructs the ones it uses, where the mask has arrays (a prefix mask, the common case,
/// then costs no stores; a layer whose run was not inlined into its caller zeroed the whole array
/// for every call, 360 instructions a forward of EncoderLayer<16, 32, 4, 64> on AVX2).
template <index_t Rows = kAttentionCallRows>
struct MaskArraysRoom {
  alignas(ref::MaskArrays) unsigned char bytes[Rows * sizeof(ref::MaskArrays)];
  void* at(index_t r) { return bytes + r * sizeof(ref::MaskArrays); }
};

/// The RowMasks of query rows [i, i + n) over seq_k keys (their MaskArrays constructed in room,
/// where the mask has arrays).
template <index_t Rows>
inline void row_masks(const AttentionMask& mask, index_t i, index_t n, index_t seq_k, ref::RowMask* rows,
                      MaskArraysRoom<Rows>& room) {
  for (index_t r = 0; r < n; ++r) rows[r] = {mask.key_end(i + r, seq_k), nullptr};
  if (mask.has_arrays())
    for (index_t r = 0; r < n; ++r) rows[r].arrays = ::new (room.at(r)) ref::MaskArrays(mask.arrays(i + r, seq_k));
}

/// One kernel call of attention_head: query rows [i, i + n) under their row masks `rows` (weights: the
/// head's [seq_q, seq_k], or null).
inline void attention_call(const float* q, index_t q_stride, const float* kt, index_t kt_stride, const float* v,
                           index_t v_stride, index_t head_dim, index_t i, index_t n, index_t seq_k,
                           const ref::RowMask* rows, MaskFill fill, float* p, float* out, index_t out_stride,
                           float* weights) {
  if (weights)
    ActiveKernels::attention_rows_weights(q + i * q_stride, q_stride, n, kt, kt_stride, v, v_stride, head_dim, seq_k,
                                          rows, fill, weights + i * seq_k, out + i * out_stride, out_stride);
  else
    ActiveKernels::attention_rows(q + i * q_stride, q_stride, n, kt, kt_stride, v, v_stride, head_dim, seq_k, rows,
                                  fill, p, out + i * out_stride, out_stride);
}
/// Scaled dot-product attention of one head over all query rows (shape-erased),
/// attention_call_rows(seq_q, seq_k, head_dim) rows per kernel call (attention_prefix_call_rows where every row
/// attends to the same keys). q rows at q + i*q_stride; keys transposed (element
/// d of key j at kt[d*kt_stride + j]); value rows at v + j*v_stride; out rows at out + i*out_stride (may alias q).
/// Without weights it streams over key blocks (p: attention_scratch_floats(seq_q, seq_k, head_dim) floats); with
/// weights (nullable, [seq_q, seq_k]) it keeps whole score rows there instead.
inline void attention_head(const float* q, index_t q_stride, const float* kt, index_t kt_stride, const float* v,
                           index_t v_stride, index_t head_dim, index_t seq_q, index_t seq_k, const AttentionMask& mask,
                           float* p, float* out, index_t out_stride, float* weights) {
  const index_t call_rows = mask.causal || mask.has_arrays()
                                ? attention_call_rows(seq_q, seq_k, head_dim)
                                : attention_prefix_call_rows(seq_q, seq_k, head_dim, mask.key_end(0, seq_k));
  for (index_t i = 0; i < seq_q; i += call_rows) {
    const index_t n = seq_q - i < call_rows ? seq_q - i : call_rows;
    ref::RowMask rows[kAttentionMaxCallRows];
    MaskArraysRoom<kAttentionMaxCallRows> arrays;
    row_masks(mask, i, n, seq_k, rows, arrays);
    attention_call(q, q_stride, kt, kt_stride, v, v_stride, head_dim, i, n, seq_k, rows, mask.fill, p, out, out_stride,
                   weights);
  }
}
/// Every head of seq_q rows (at most kAttentionMaxCallRows) through the active variant's rows in lanes
/// from K's rows (k, row stride k_stride; head h's from column h·head_dim), where they take the call
/// (Kernels::attention_lane_rows_heads): returns false, nothing written, where they do not.
inline bool attention_lane_heads(const float* q, index_t q_stride, const float* k, index_t k_stride, const float* v,
                                 index_t v_stride, index_t head_dim, index_t n_heads, index_t seq_q, index_t seq_k,
                                 const AttentionMask& mask, float* out, index_t out_stride) {
  ref::RowMask rows[kAttentionMaxCallRows];
  MaskArraysRoom<kAttentionMaxCallRows> arrays;
  const bool one_mask = mask.one_prefix();  // (then row 0's mask alone)
  row_masks(mask, 0, one_mask ? 1 : seq_q, seq_k, rows, arrays);
  return ActiveKernels::attention_lane_rows_heads(q, q_stride, seq_q, n_heads, k, k_stride, v, v_stride, head_dim,
                                                  seq_k, rows, one_mask, out, out_stride);
}
/// attention_head of n_heads heads where one kernel call takes all seq_q rows of a head
/// (attention_call_rows(seq_q, seq_k, head_dim) >= seq_q): head h's queries, keys and values from
/// column h·head_dim of q and v and row h·head_dim of kt on, its outputs from column h·head_dim of out,
/// its weights (where not null) [seq_q, seq_k] after head h − 1's. The row masks, the same for every
/// head, are built once for all of them (10×16×2×32: the encoder layer 4-9 % faster on Zen 4 than with
/// attention_head per head, ab.sh), and without weights every head goes to one kernel call
/// (attention_rows_heads: AVX-512's rows in lanes run two heads side by side).
inline void attention_heads_one_call(const float* q, index_t q_stride, const float* kt, index_t kt_stride,
                                     const float* v, index_t v_stride, index_t head_dim, index_t n_heads, index_t seq_q,
                                     index_t seq_k, const AttentionMask& mask, float* p, float* out, index_t out_stride,
                                     float* weights) {
  ref::RowMask rows[kAttentionMaxCallRows];
  MaskArraysRoom<kAttentionMaxCallRows> arrays;
  row_masks(mask, 0, seq_q, seq_k, rows, arrays);
  if (!weights) {
    ActiveKernels::attention_rows_heads(q, q_stride, seq_q, n_heads, kt, kt_stride, v, v_stride, head_dim, seq_k, rows,
                                        mask.fill, p, out, out_stride);
    return;
  }
  for (index_t h = 0; h < n_heads; ++h) {
    const index_t off = h * head_dim;
    attention_call(q + off, q_stride, kt + off * kt_stride, kt_stride, v + off, v_stride, head_dim, 0, seq_q, seq_k,
                   rows, mask.fill, p, out + off, out_stride, weights + h * seq_q * seq_k);
  }
}
/// The w8a8 attention of one head over all query rows (kernels/QUANTIZATION.md): int8 query rows
/// at q + i·q_stride (scales s_q[i]), int8 key and value rows (k + j·k_stride, v + j·v_stride; scales
/// s_k[j], s_v[j]), attention_w8a8_call_rows(seq_q) rows per kernel call, the masks as attention_head
/// gives them. p: attention_w8a8_scratch_floats() floats.
inline void attention_head_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, const std::int8_t* k,
                                index_t k_stride, const float* s_k, const std::int8_t* v, index_t v_stride,
                                const float* s_v, index_t head_dim, index_t seq_q, index_t seq_k,
                                const AttentionMask& mask, float* p, float* out, index_t out_stride) {
  const index_t call_rows = attention_w8a8_call_rows(seq_q);
  for (index_t i = 0; i < seq_q; i += call_rows) {
    const index_t n = seq_q - i < call_rows ? seq_q - i : call_rows;
    ref::RowMask rows[kAttentionInt8CallRows];
    MaskArraysRoom<kAttentionInt8CallRows> arrays;
    row_masks(mask, i, n, seq_k, rows, arrays);
    ActiveKernels::attention_rows_w8a8(q + i * q_stride, q_stride, s_q + i, n, k, k_stride, s_k, v, v_stride, s_v,
                                       head_dim, seq_k, rows, mask.fill, p, out + i * out_stride, out_stride);
  }
}
/// Quantizes rows [rows, DModel] (row stride DModel) head by head (ActiveKernels::quantize_rows over
/// head_dim values): int8 rows at q (stride DModel), head h's scale of row r at s[h·s_stride + r].
template <index_t DModel, index_t NHeads>
void quantize_heads(const float* x, index_t rows, std::int8_t* q, float* s, index_t s_stride) {
  constexpr index_t head_dim = DModel / NHeads;
  for (index_t h = 0; h < NHeads; ++h)
    ActiveKernels::quantize_rows(x + h * head_dim, DModel, rows, head_dim, q + h * head_dim, DModel, s + h * s_stride);
}
}  // namespace detail

/// softmax(Q Kᵀ / √HeadDim, masked) V for one head: Q [SeqQ, HeadDim], K and V [SeqK, HeadDim].
template <index_t SeqQ, index_t SeqK, index_t HeadDim>
struct ScaledDotProductAttention {
  static_assert(check::layer_dims_positive<SeqQ, HeadDim>());
  static_assert(check::layer_dims_positive<SeqK, HeadDim>());
  /// Kᵀ [HeadDim, SeqK] and the streaming attention's scratch (one block of scores per row of a
  /// group, never [SeqQ, SeqK]).
  static constexpr index_t scratch_floats = HeadDim * SeqK + attention_scratch_floats(SeqQ, SeqK, HeadDim);
  /// What a whole [SeqQ, SeqK] score buffer would take instead (reported next to scratch_floats).
  static constexpr index_t score_matrix_floats = SeqQ * SeqK;

  /// The AttentionMask of a boolean [SeqQ, SeqK] mask (another shape does not compile).
  template <index_t R, index_t C>
  static constexpr AttentionMask mask(const BoolMask<R, C>& m, MaskFill fill = MaskFill::neg_inf) {
    return bool_mask<SeqQ, SeqK>(m, fill);
  }

  /// weights: optional [SeqQ, SeqK] output of the attention weights.
  static Status forward(CMat<SeqQ, HeadDim> q, CMat<SeqK, HeadDim> k, CMat<SeqK, HeadDim> v, Mat<SeqQ, HeadDim> out,
                        const AttentionMask& mask, float* scratch, float* weights = nullptr) {
    if (mask.valid_keys == 0 || mask.valid_keys > SeqK) return Status::invalid_length;
    float* kt = scratch;
    detail::transpose(k.data, SeqK, HeadDim, HeadDim, kt, SeqK);
    detail::attention_head(q.data, HeadDim, kt, SeqK, v.data, HeadDim, HeadDim, SeqQ, SeqK, mask, kt + HeadDim * SeqK,
                           out.data, HeadDim, weights);
    return Status::ok;
  }
};

/// Multi-head attention with separate Q/K/V/O projections, as PyTorch's nn.MultiheadAttention
/// (its packed in_proj binds through `bind_packed`). Self-attention passes the same tensor as
/// query and key/value; cross-attention a key/value source of another length SeqK.
/// Format: the number format of the four projections (NumberFormat). Int8Attention (w8a8 only): the
/// attention in int8 too (kernels/QUANTIZATION.md): Q, K and V rows quantized per head and row, Q·Kᵀ
/// and P·V as int32 sums, the softmax float; a call that asks for the attention weights runs the
/// float attention instead (the int8 one keeps no row of scores). Otherwise the attention is float.
template <index_t SeqQ, index_t SeqK, index_t DModel, index_t NHeads, bool HasBias = true,
          NumberFormat Format = NumberFormat::f32, bool Int8Attention = false>
struct MultiHeadAttention {
  static_assert(check::int8_attention_format<Int8Attention, Format == NumberFormat::w8a8>());
  static_assert(check::dmodel_divisible_by_nheads<DModel, NHeads>());
  static_assert(check::layer_dims_positive<SeqQ, DModel>());
  static_assert(check::layer_dims_positive<SeqK, DModel>());

  static constexpr index_t seq_q = SeqQ, seq_k = SeqK, d_model = DModel, n_heads = NHeads;
  static constexpr index_t head_dim = DModel / NHeads;
  static constexpr NumberFormat format = Format;
  static constexpr const char* name = "MultiHeadAttention";

  struct Params {
    using Linear = LinearParamsOf<DModel, DModel, HasBias, Format>;
    Linear q, k, v, o;
    static constexpr index_t param_count = 4 * Linear::param_count;
    static constexpr index_t param_bytes = 4 * param_bytes_of<Linear>();

    template <class F>
    void visit(F&& f, const Name& prefix) {
      q.visit(f, prefix / "q");
      k.visit(f, prefix / "k");
      v.visit(f, prefix / "v");
      o.visit(f, prefix / "o");
    }
    /// Binds nn.MultiheadAttention's packed in_proj_weight [3·DModel, DModel] (rows: q, k, v) as
    /// exported: each [DModel, DModel] block stored transposed in column panels (as LinearParams),
    /// q's then k's then v's; and
    /// in_proj_bias [3·DModel]. out_proj binds to `o` as usual.
    void bind_packed(CMat<3 * DModel, DModel> in_proj_weight,
                     CVec<3 * DModel> in_proj_bias = {}) requires(!is_int8(Format)) {
      q.weight = CMat<DModel, DModel>(in_proj_weight.data);
      k.weight = CMat<DModel, DModel>(in_proj_weight.data + DModel * DModel);
      v.weight = CMat<DModel, DModel>(in_proj_weight.data + 2 * DModel * DModel);
      if constexpr (HasBias) {
        q.bias = CVec<DModel>(in_proj_bias.data);
        k.bias = CVec<DModel>(in_proj_bias.data + DModel);
        v.bias = CVec<DModel>(in_proj_bias.data + 2 * DModel);
      }
    }
  };

  /// Q [SeqQ, D] (later overwritten by the heads' context), Kᵀ [D, SeqK], V [SeqK, D] (rows
  /// v_stride apart: attention_value_stride), and the streaming attention's scratch (one block of
  /// scores per row of a group).
  static constexpr index_t attention_floats = attention_scratch_floats(SeqQ, SeqK, DModel / NHeads);
  static constexpr index_t v_stride = attention_value_stride(DModel);  ///< V's row stride
  /// The int8 projections' scratch (none in f32), after the attention's.
  static constexpr index_t linear_floats = linear_scratch_floats<Format>(SeqQ > SeqK ? SeqQ : SeqK, DModel);
  /// w8a8's int8 attention: Q, K and V as int8 rows, one scale per head and row, the kernel's scratch.
  static constexpr bool int8_attention = Int8Attention;
  static constexpr index_t int8_attention_floats =
      int8_attention
          ? ((SeqQ + 2 * SeqK) * DModel + 3) / 4 + (SeqQ + 2 * SeqK) * NHeads + attention_w8a8_scratch_floats()
          : 0;
  static constexpr index_t scratch_floats =
      SeqQ * DModel + SeqK * DModel + SeqK * v_stride + attention_floats + linear_floats + int8_attention_floats;
  /// What a whole [SeqQ, SeqK] score buffer per head would take instead.
  static constexpr index_t score_matrix_floats = SeqQ * SeqK;

  Params params;

  /// The AttentionMask of a boolean [SeqQ, SeqK] mask (another shape does not compile).
  template <index_t R, index_t C>
  static constexpr AttentionMask mask(const BoolMask<R, C>& m, MaskFill fill = MaskFill::neg_inf) {
    return bool_mask<SeqQ, SeqK>(m, fill);
  }

  /// y = MHA(xq, xkv). weights: optional [NHeads, SeqQ, SeqK] output (per head, not averaged).
  /// y may alias xq or xkv: both are read only by the Q/K/V projections, before y is written.
  template <class XQ, class XKV, class Y>
  Status forward(const XQ& xq, const XKV& xkv, Y&& y, const AttentionMask& mask, float* scratch,
                 float* weights = nullptr) const {
    static_assert(check::input_seq_len<rows_of<XQ>, SeqQ>());
    static_assert(check::input_dmodel<cols_of<XQ>, DModel>());
    static_assert(check::input_seq_len<rows_of<XKV>, SeqK>());
    static_assert(check::input_dmodel<cols_of<XKV>, DModel>());
    static_assert(check::input_seq_len<rows_of<Y>, SeqQ>());
    static_assert(check::input_dmodel<cols_of<Y>, DModel>());
    if (mask.valid_keys == 0 || mask.valid_keys > SeqK) return Status::invalid_length;
    run(data_of(xq), data_of(xkv), mask, scratch, data_of(y), weights);
    return Status::ok;
  }

  /// y = MHA(xq, xkv) under PyTorch-convention masks, as nn.MultiheadAttention's attn_mask (bool,
  /// True = masked), key_padding_mask (True = padding) and is_causal take them, e.g.
  /// `mha.forward(x, x, y, {.key_padding_mask = &pad, .is_causal = true}, scratch)`.
  template <class XQ, class XKV, class Y>
  Status forward(const XQ& xq, const XKV& xkv, Y&& y, const TorchMasks<SeqQ, SeqK>& masks, float* scratch,
                 float* weights = nullptr, MaskFill fill = MaskFill::neg_inf) const {
    return forward(xq, xkv, static_cast<Y&&>(y), masks.attention(fill), scratch, weights);
  }

  /// Shape-erased body, also used by the layers that own their buffers.
  void run(const float* xq, const float* xkv, const AttentionMask& mask, float* scratch, float* y,
           float* weights = nullptr) const {
    float* qb = scratch;
    float* kt = qb + SeqQ * DModel;
    float* vb = kt + SeqK * DModel;
    float* p = vb + SeqK * v_stride;
    const auto& P = params;
    if constexpr (int8_attention) {
      if (!weights) {
        run_int8_attention(xq, xkv, mask, y, qb, kt, vb);
        return;
      }
    }
    if constexpr (is_int8(Format)) {
      float* lq = p + attention_floats;
      project_int8(xq, xkv, y, qb, kt, vb, lq);
      if constexpr (v_stride != DModel)  // rows DModel apart to v_stride apart, the last one first
        for (index_t j = SeqK; j-- > 1;) std::memmove(vb + j * v_stride, vb + j * DModel, DModel * sizeof(float));
      heads(qb, kt, vb, mask, p, weights);
      linear_rows<Format>(P.o, qb, SeqQ, y, lq);
    } else {
      run_f32(xq, xkv, mask, y, weights, qb, kt, vb, p);
    }
  }

 private:
  /// The int8 formats' Q, K and V projections (into qb, Kᵀ in kt, vb with rows DModel apart), sharing
  /// one quantization of their input where the buffers allow. Out of line: inside run() it made
  /// run() too large to inline into the layers, whose `weights == nullptr` then no longer removed
  /// the weights kernel (attention_rows_weights, 4.4 KB on the M4F).
  [[gnu::noinline]] void project_int8(const float* xq, const float* xkv, float* y, float* qb, float* kt, float* vb,
                                      float* lq) const {
    const auto& P = params;
    if constexpr (SeqK <= SeqQ) {
      // a self-attention whose output is not its input: Q, K and V in one call (w8a8: their input
      // quantized once), K's rows through y (written only by the output projection) into Kᵀ; else
      // K and V in one call, K's rows through qb (free until Q)
      const bool qkv = SeqQ == SeqK && xq == xkv && !detail::overlaps(y, SeqQ * DModel, xq, SeqQ * DModel);
      float* kr = qkv ? y : qb;
      if (qkv)
        linear_rows_shared<Format>(xq, SeqQ, lq, P.q, qb, P.k, kr, P.v, vb);
      else
        linear_rows_shared<Format>(xkv, SeqK, lq, P.k, kr, P.v, vb);
      detail::transpose(kr, SeqK, DModel, DModel, kt, SeqK);  // (one inline transpose)
      if (!qkv) linear_rows<Format>(P.q, xq, SeqQ, qb, lq);
    } else {
      linear_rows<Format>(P.q, xq, SeqQ, qb, lq);
      linear_rows<Format>(P.k, xkv, SeqK, vb, lq);
      detail::transpose(vb, SeqK, DModel, DModel, kt, SeqK);
      linear_rows<Format>(P.v, xkv, SeqK, vb, lq);
    }
  }

  void run_f32(const float* xq, const float* xkv, const AttentionMask& mask, float* y, float* weights, float* qb,
               float* kt, float* vb, float* p) const {
    const auto& P = params;
    if constexpr (kSharedLinearTiles) {
      if (SeqQ == SeqK && xq == xkv && !detail::overlaps(y, SeqQ * DModel, xq, SeqQ * DModel)) {
        // a self-attention whose output is not its input, where the variant may share the projections'
        // register tiles: Q, K and V in one call, K's rows through y (written only by the output
        // projection) into Kᵀ
        const F32Linear qkv[3] = {{P.q.weight.data, P.q.bias_or_null(), DModel, qb, DModel},
                                  {P.k.weight.data, P.k.bias_or_null(), DModel, y, DModel},
                                  {P.v.weight.data, P.v.bias_or_null(), DModel, vb, v_stride}};
        ActiveKernels::linears(xq, SeqQ, DModel, qkv, 3);
        // the rows in lanes read K's rows, no Kᵀ (where they may take every head's rows in one call);
        // else, or where they decline, Kᵀ for the heads
        bool done = false;
        if constexpr (kAttentionLaneRows >= SeqQ && attention_lanes_take(SeqQ, head_dim, SeqK)) {
          if (!weights)
            done = detail::attention_lane_heads(qb, DModel, y, DModel, vb, v_stride, head_dim, NHeads, SeqQ, SeqK, mask,
                                                qb, DModel);
        }
        if (!done) {
          detail::transpose(y, SeqK, DModel, DModel, kt, SeqK);
          heads(qb, kt, vb, mask, p, weights);
        }
        ActiveKernels::linear(qb, SeqQ, DModel, P.o.weight.data, P.o.bias_or_null(), DModel, y);
        return;
      }
    }
    ActiveKernels::linear(xq, SeqQ, DModel, P.q.weight.data, P.q.bias_or_null(), DModel, qb);
    // K goes through vb (free until V) into Kᵀ
    ActiveKernels::linear(xkv, SeqK, DModel, P.k.weight.data, P.k.bias_or_null(), DModel, vb);
    detail::transpose(vb, SeqK, DModel, DModel, kt, SeqK);
    if constexpr (v_stride == DModel)  // (the same call as linear_block's below: linear passes these arguments)
      ActiveKernels::linear(xkv, SeqK, DModel, P.v.weight.data, P.v.bias_or_null(), DModel, vb);
    else
      ActiveKernels::linear_block(xkv, DModel, SeqK, DModel, {P.v.weight.data, DModel, DModel}, DModel, vb, v_stride,
                                  P.v.bias_or_null(), false);
    heads(qb, kt, vb, mask, p, weights);
    ActiveKernels::linear(qb, SeqQ, DModel, P.o.weight.data, P.o.bias_or_null(), DModel, y);
  }

  /// w8a8 with the int8 attention: the projections' float rows (K rows in kt's room, V rows DModel
  /// apart in vb's), each head's rows quantized, the int8 attention into qb, the output projection.
  void run_int8_attention(const float* xq, const float* xkv, const AttentionMask& mask, float* y, float* qb, float* kr,
                          float* vr) const {
    const auto& P = params;
    float* lq = vr + SeqK * v_stride + attention_floats;
    if (SeqQ == SeqK && xq == xkv) {  // a self-attention: Q, K and V in one call (their input quantized once)
      linear_rows_shared<Format>(xq, SeqQ, lq, P.q, qb, P.k, kr, P.v, vr);
    } else {
      linear_rows<Format>(P.q, xq, SeqQ, qb, lq);
      linear_rows_shared<Format>(xkv, SeqK, lq, P.k, kr, P.v, vr);
    }
    auto* q8 = reinterpret_cast<std::int8_t*>(lq + linear_floats);
    std::int8_t* k8 = q8 + SeqQ * DModel;
    std::int8_t* v8 = k8 + SeqK * DModel;
    float* s_q = lq + linear_floats + ((SeqQ + 2 * SeqK) * DModel + 3) / 4;  // [NHeads][SeqQ]
    float* s_k = s_q + NHeads * SeqQ;                                        // [NHeads][SeqK]
    float* s_v = s_k + NHeads * SeqK;
    float* p8 = s_v + NHeads * SeqK;
    detail::quantize_heads<DModel, NHeads>(qb, SeqQ, q8, s_q, SeqQ);
    detail::quantize_heads<DModel, NHeads>(kr, SeqK, k8, s_k, SeqK);
    detail::quantize_heads<DModel, NHeads>(vr, SeqK, v8, s_v, SeqK);
    for (index_t h = 0; h < NHeads; ++h) {
      const index_t off = h * head_dim;
      detail::attention_head_w8a8(q8 + off, DModel, s_q + h * SeqQ, k8 + off, DModel, s_k + h * SeqK, v8 + off, DModel,
                                  s_v + h * SeqK, head_dim, SeqQ, SeqK, mask, p8, qb + off, DModel);
    }
    linear_rows<Format>(P.o, qb, SeqQ, y, lq);
  }

  /// Every head's attention; the context of head h overwrites its own query slice (read before
  /// written, row by row).
  static void heads(float* qb, const float* kt, const float* vb, const AttentionMask& mask, float* p, float* weights) {
    if constexpr (attention_call_rows(SeqQ, SeqK, head_dim) >= SeqQ) {  // (one call a head: the masks built once)
      static_assert(SeqQ <= kAttentionMaxCallRows);                     // (attention_heads_one_call's masks)
      detail::attention_heads_one_call(qb, DModel, kt, SeqK, vb, v_stride, head_dim, NHeads, SeqQ, SeqK, mask, p, qb,
                                       DModel, weights);
    } else {
      for (index_t h = 0; h < NHeads; ++h) {
        const index_t off = h * head_dim;
        detail::attention_head(qb + off, DModel, kt + off * SeqK, SeqK, vb + off, v_stride, head_dim, SeqQ, SeqK, mask,
                               p, qb + off, DModel, weights ? weights + h * SeqQ * SeqK : nullptr);
      }
    }
  }
};

}  // namespace stf
