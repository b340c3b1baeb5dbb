// statiformer — reference kernels: the oracle for every optimized variant. Never optimize these.
//
// Declared here, defined once in src/kernels/reference.cpp, written as plain loops that spell out
// the canonical order of kernels/api.hpp (products accumulated in sequence over k; vector sums on
// 16 lanes with zero padding and halves folding). Shape-erased
// (pointers + runtime dims), so flash does not grow with every model shape.
#pragma once

#include <statiformer/kernels/api.hpp>

namespace stf::ref {

/// dot(a, b) over n elements in the canonical 16-lane order.
float dot(const float* a, const float* b, index_t n) noexcept;
/// sum of x over n elements in the canonical 16-lane order.
float sum(const float* x, index_t n) noexcept;

/// y[r, o] = act(Σ_k x[r, k] · w[k, o] + bias[o]), the sum accumulated in sequence over k with
/// fma from +0 (x: [rows, in], w: [in, out], the transpose of PyTorch's weight, stored in column
/// panels: w[k, o] at weight_index(in, out, k, o); bias may be null). y must not alias x.
void linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out, float* y,
            Fuse act = Fuse::none) noexcept;

/// Element-wise ReLU or exact GELU (x/2 · erfc(-x/√2)) in place.
void activation(Activation a, float* x, index_t n) noexcept;

/// y[i] += x[i]
void add(float* y, const float* x, index_t n) noexcept;

/// dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols; dst must not overlap src.
void transpose(const float* src, index_t rows, index_t cols, index_t ld_src, float* dst, index_t ld_dst) noexcept;

/// LayerNorm of one row of n values; y may alias x.
///   torch:     ((x - mean) · 1/sqrt(var_biased + eps)) · gain + bias
///   annotated: (gain · (x - mean)) / (std_unbiased + eps) + bias
void layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind, float eps,
                    float* y) noexcept;

/// log_softmax of one row in place: (x - max) - log(sum(exp(x - max))).
void log_softmax_row(float* x, index_t n) noexcept;

/// Scaled dot-product attention of one query row against n_keys keys of one head, streaming.
///   q: [head_dim]; keys transposed: element d of key j at kt[d * kt_stride + j]; value j at
///   v + j * v_stride; out: [head_dim], may alias q; p: scratch of
///   attention_scratch_floats(1, n_keys, head_dim).
/// Keys go in blocks of kAttentionKeyBlock from key 0. In each block that has an allowed key: the
/// scores of the allowed keys, (Σ_d q[d] · k_j[d], in sequence over d with fma) / √head_dim, and
/// their maximum bm; the running maximum m' = max(m, bm); what came before is rescaled by
/// c = exp(m - m'): l = l·c, out = out·c; the block's weights p_j = exp(s_j - m') (0 for masked
/// keys), l = l + (their canonical 16-lane sum), and out[d] = fma(p_j, v_j[d], out[d]) over the
/// allowed keys in order. At the end out = out / l. Masked keys are never read. With an additive
/// mask (RowMask::add) an allowed key's score is (Σ_d q[d] · k_j[d]) / √head_dim + add[j].
/// A row whose every key is masked: with MaskFill::neg_1e9, uniform weights 1/n_keys over all keys
/// (what PyTorch computes with masked_fill(-1e9)); with MaskFill::neg_inf, output 0 (PyTorch
/// would produce NaN). Never NaN from the mask alone.
void attention_row(const float* q, const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                   index_t head_dim, index_t n_keys, RowMask mask, MaskFill fill, float* p, float* out) noexcept;

/// attention_row for each of the n_heads heads of one query row (see Kernels::attention_heads).
void attention_heads(const float* q, index_t n_heads, const float* kt, index_t kt_stride, const float* v,
                     index_t v_stride, index_t head_dim, index_t n_keys, RowMask mask, MaskFill fill, float* p,
                     float* out) noexcept;

/// attention_row for n_rows query rows (see Kernels::attention_rows).
void attention_rows(const float* q, index_t q_stride, index_t n_rows, const float* kt, index_t kt_stride,
                    const float* v, index_t v_stride, index_t head_dim, index_t n_keys, const RowMask* masks,
                    MaskFill fill, float* p, float* out, index_t out_stride) noexcept;

/// One query row with its attention weights, softmax in two passes over the whole row.
///   p: [n_keys]; on return the attention weights of the row (0 for masked keys).
/// Scores as in attention_row; then exp(s_j - max) for all keys (0 for masked), their canonical
/// sum, p_j / sum, and out[d] = Σ p_j · v_j[d] over the allowed keys in order (fma from +0).
/// A fully masked row: weights 1/n_keys (neg_1e9) or 0 (neg_inf), and out as attention_row's.
void attention_row_weights(const float* q, const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                           index_t head_dim, index_t n_keys, RowMask mask, MaskFill fill, float* p,
                           float* out) noexcept;

/// attention_row_weights for n_rows query rows: row r's weights at weights + r·n_keys.
void attention_rows_weights(const float* q, index_t q_stride, index_t n_rows, const float* kt, index_t kt_stride,
                            const float* v, index_t v_stride, index_t head_dim, index_t n_keys, const RowMask* masks,
                            MaskFill fill, float* weights, float* out, index_t out_stride) noexcept;

// ---- int8 (kernels/QUANTIZATION.md: the scheme, every rounding and saturation) --------------

/// Quantizes one row of k values to int8 with its own scale: a = max |x[i]|, q[i] =
/// clamp(round_half_even(x[i] · (127 / a)), -127, 127); returns s = a / 127. A row whose a is below
/// kMinQuantizedMax (a row of zeros among them) gives q = 0 and s = 0; a row holding a NaN or an
/// infinity gives q = 0 and s = NaN (its outputs are NaN). Rounding is the current rounding mode's,
/// which must be the default (to nearest, ties to even).
float quantize_row(const float* x, index_t k, std::int8_t* q) noexcept;

/// acc[r, o] = Σ_k qx[r, k] · qw[k, o] in int32 (exact, so in any order). qx: [rows, in];
/// qw: int8 [in, out] in k-quads (qweight_index); in ≤ kMaxQuantizedIn.
void product_i8(const std::int8_t* qx, index_t rows, index_t in, const std::int8_t* qw, index_t out,
                std::int32_t* acc) noexcept;

/// The longest reduction of an int8 product whose int32 sum cannot overflow: 127² · in < 2³¹.
inline constexpr index_t kMaxQuantizedIn = 133144;

/// w8a8 linear: each row of x quantized (quantize_row, into q_row: [in]), product_i8, then
/// y[r, o] = fma(float(acc), s_x[r] · s_w[o], bias[o]) (float(acc) · (s_x[r] · s_w[o]) without a
/// bias), then the activation, as the float linear applies it. A row whose s_x is NaN is NaN.
void linear_w8a8(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w, const float* bias,
                 index_t out, float* y, std::int8_t* q_row, Fuse act = Fuse::none) noexcept;

/// w8a32 linear: acc = Σ_k x[r, k] · float(qw[k, o]) in sequence over k with fma from +0 (the float
/// product's canonical order over the exactly converted weights), then y[r, o] =
/// fma(acc, s_w[o], bias[o]) (acc · s_w[o] without a bias), then the activation.
void linear_w8a32(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w, const float* bias,
                  index_t out, float* y, Fuse act = Fuse::none) noexcept;

/// w8a8 attention of one query row against n_keys keys of one head (kernels/QUANTIZATION.md,
/// "Attention"): q int8 [head_dim] with its scale s_q (a row quantized by quantize_row); key j int8
/// at k + j·k_stride with scale s_k[j]; value j int8 at v + j·v_stride with scale s_v[j]; out float
/// [head_dim]; p: attention_w8a8_scratch_floats() floats of scratch.
/// The blocks, masks, running maximum and sum of attention_row, with
///   score_j = (float(Σ_d q[d] · k_j[d]) · (s_q · s_k[j])) / √head_dim  [+ add[j]]
/// (the int32 sum exact in any order), the block's weights p_j = exp(score_j - m') (0 for masked
/// keys) summed into l as floats, then w_j = p_j · s_v[j] quantized as one row of the block's nb keys
/// (quantize_row: q_w, s_b) and out[d] = fma(float(Σ_j q_w[j] · v_j[d]), s_b, out[d]) over the
/// block's allowed keys (an int32 sum). At the end out = out / l. Keys from the row's key end on
/// are never read (a variant may read the values of masked keys below it: their weight is 0). A
/// row whose every key is masked: out[d] = Σ_j fma(w, float(v_j[d]) · s_v[j], ·) over all keys in
/// order from +0 with w = 1/n_keys (MaskFill::neg_1e9), or 0 (neg_inf).
void attention_row_w8a8(const std::int8_t* q, float s_q, const std::int8_t* k, index_t k_stride, const float* s_k,
                        const std::int8_t* v, index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                        RowMask mask, MaskFill fill, float* p, float* out) noexcept;

/// attention_row_w8a8 for n_rows query rows: row r's q at q + r·q_stride with scale s_q[r], its
/// output at out + r·out_stride.
void attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows, const std::int8_t* k,
                         index_t k_stride, const float* s_k, const std::int8_t* v, index_t v_stride, const float* s_v,
                         index_t head_dim, index_t n_keys, const RowMask* masks, MaskFill fill, float* p, float* out,
                         index_t out_stride) noexcept;

/// Element-wise exp, log, GELU (the simd/math.hpp functions, one lane at a time).
void exp(const float* x, float* y, index_t n) noexcept;
void log(const float* x, float* y, index_t n) noexcept;
void gelu(const float* x, float* y, index_t n) noexcept;

}  // namespace stf::ref
