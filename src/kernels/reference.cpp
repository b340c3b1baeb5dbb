// statiformer — reference kernels, compiled once (shape-erased) with pinned floating-point flags
// (-ffp-contract=off: no contraction of a*b+c into an fma the source does not spell). Plain loops
// that spell out the canonical order of kernels/api.hpp; the oracle for every variant.
#include <statiformer/kernels/reference.hpp>

#include <cmath>
#include <limits>

#include <statiformer/simd/math.hpp>
#include <statiformer/simd/scalar.hpp>

namespace stf::ref {
namespace {
using S = isa::Vocabulary<isa::scalar>;
constexpr index_t kLanes = 16;

float exp1(float x) { return simd_math::exp<S>(x); }
float log1(float x) { return simd_math::log<S>(x); }
float gelu1(float x) { return simd_math::gelu<S>(x); }
float gelu_tanh1(float x) { return simd_math::gelu_tanh<S>(x); }

/// Folds 16 lane accumulators in halves: i + (i+8), then +4, +2, +1.
float fold16(const float* lane) { return S::reduce16(lane); }
}  // namespace

float dot(const float* a, const float* b, index_t n) noexcept {
  float lane[kLanes] = {};
  const index_t padded = (n + kLanes - 1) / kLanes * kLanes;
  for (index_t k = 0; k < padded; ++k) {
    const float ak = k < n ? a[k] : 0.0f, bk = k < n ? b[k] : 0.0f;  // zero padding
    lane[k % kLanes] = std::fma(ak, bk, lane[k % kLanes]);
  }
  return fold16(lane);
}

float sum(const float* x, index_t n) noexcept {
  float lane[kLanes] = {};
  const index_t padded = (n + kLanes - 1) / kLanes * kLanes;
  for (index_t k = 0; k < padded; ++k) lane[k % kLanes] += k < n ? x[k] : 0.0f;
  return fold16(lane);
}

void linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out, float* y,
            Fuse act) noexcept {
  for (index_t r = 0; r < rows; ++r) {
    for (index_t o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (index_t k = 0; k < in; ++k) acc = std::fma(x[r * in + k], w[weight_index(in, out, k, o)], acc);
      y[r * out + o] = bias ? acc + bias[o] : acc;
    }
    if (act == Fuse::relu) activation(Activation::relu, y + r * out, out);
    if (act == Fuse::gelu) activation(Activation::gelu, y + r * out, out);
    if (act == Fuse::gelu_tanh) activation(Activation::gelu_tanh, y + r * out, out);
  }
}

float quantize_row(const float* x, index_t k, std::int8_t* q) noexcept {
  float a = 0.0f;
  bool finite = true;
  for (index_t i = 0; i < k; ++i) {
    const float ax = std::fabs(x[i]);
    if (!(ax <= std::numeric_limits<float>::max())) finite = false;  // NaN or infinity
    if (ax > a) a = ax;
  }
  if (!finite || a < kMinQuantizedMax) {  // (a row of zeros among them)
    for (index_t i = 0; i < k; ++i) q[i] = 0;
    return finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  }
  const float inv = 127.0f / a;
  for (index_t i = 0; i < k; ++i) {
    float v = std::nearbyint(x[i] * inv);  // ties to even in the default rounding mode
    if (v > 127.0f) v = 127.0f;
    if (v < -127.0f) v = -127.0f;
    q[i] = static_cast<std::int8_t>(v);
  }
  return a / 127.0f;
}

void product_i8(const std::int8_t* qx, index_t rows, index_t in, const std::int8_t* qw, index_t out,
                std::int32_t* acc) noexcept {
  for (index_t r = 0; r < rows; ++r)
    for (index_t o = 0; o < out; ++o) {
      std::int32_t sum = 0;
      for (index_t k = 0; k < in; ++k)
        sum += std::int32_t{qx[r * in + k]} * std::int32_t{qw[qweight_index(in, out, k, o)]};
      acc[r * out + o] = sum;
    }
}

void linear_w8a8(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w, const float* bias,
                 index_t out, float* y, std::int8_t* q_row, Fuse act) noexcept {
  for (index_t r = 0; r < rows; ++r) {
    const float s_x = quantize_row(x + r * in, in, q_row);
    float* yr = y + r * out;
    for (index_t o = 0; o < out; ++o) {
      std::int32_t sum = 0;
      for (index_t k = 0; k < in; ++k) sum += std::int32_t{q_row[k]} * std::int32_t{qw[qweight_index(in, out, k, o)]};
      const float scale = s_x * s_w[o];
      const float t = static_cast<float>(sum);
      yr[o] = bias ? std::fma(t, scale, bias[o]) : t * scale;
    }
    if (act == Fuse::relu) activation(Activation::relu, yr, out);
    if (act == Fuse::gelu) activation(Activation::gelu, yr, out);
    if (act == Fuse::gelu_tanh) activation(Activation::gelu_tanh, yr, out);
  }
}

void linear_w8a32(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w, const float* bias,
                  index_t out, float* y, Fuse act) noexcept {
  for (index_t r = 0; r < rows; ++r) {
    float* yr = y + r * out;
    for (index_t o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (index_t k = 0; k < in; ++k)
        acc = std::fma(x[r * in + k], static_cast<float>(qw[qweight_index(in, out, k, o)]), acc);
      yr[o] = bias ? std::fma(acc, s_w[o], bias[o]) : acc * s_w[o];
    }
    if (act == Fuse::relu) activation(Activation::relu, yr, out);
    if (act == Fuse::gelu) activation(Activation::gelu, yr, out);
    if (act == Fuse::gelu_tanh) activation(Activation::gelu_tanh, yr, out);
  }
}

void activation(Activation a, float* x, index_t n) noexcept {
  for (index_t i = 0; i < n; ++i)
    x[i] =
        a == Activation::relu ? (x[i] > 0.0f ? x[i] : 0.0f) : (a == Activation::gelu ? gelu1(x[i]) : gelu_tanh1(x[i]));
}

void add(float* y, const float* x, index_t n) noexcept {
  for (index_t i = 0; i < n; ++i) y[i] += x[i];
}

void transpose(const float* src, index_t rows, index_t cols, index_t ld_src, float* dst, index_t ld_dst) noexcept {
  for (index_t r = 0; r < rows; ++r)
    for (index_t c = 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
}

void layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind, float eps,
                    float* y) noexcept {
  const float mean = sum(x, n) / static_cast<float>(n);
  // sum of squared deviations, canonical order, padded lanes contribute exactly 0
  float lane[kLanes] = {};
  const index_t padded = (n + kLanes - 1) / kLanes * kLanes;
  for (index_t k = 0; k < padded; ++k) {
    const float d = k < n ? x[k] - mean : 0.0f;
    lane[k % kLanes] = std::fma(d, d, lane[k % kLanes]);
  }
  const float ss = fold16(lane);
  if (kind == LayerNormKind::torch) {
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    for (index_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * gain[i] + bias[i];
  } else {
    const float denom = std::sqrt(ss / static_cast<float>(n - 1)) + eps;
    for (index_t i = 0; i < n; ++i) y[i] = gain[i] * (x[i] - mean) / denom + bias[i];
  }
}

void log_softmax_row(float* x, index_t n) noexcept {
  float m = x[0];
  for (index_t i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  float lane[kLanes] = {};
  const index_t padded = (n + kLanes - 1) / kLanes * kLanes;
  for (index_t k = 0; k < padded; ++k) lane[k % kLanes] += k < n ? exp1(x[k] - m) : 0.0f;
  const float lse = log1(fold16(lane));
  for (index_t i = 0; i < n; ++i) x[i] = (x[i] - m) - lse;
}

void attention_row_weights(const float* q, const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                           index_t head_dim, index_t n_keys, RowMask mask, MaskFill fill, float* p,
                           float* out) noexcept {
  const float scale = std::sqrt(static_cast<float>(head_dim));
  auto allowed = [&](index_t j) { return mask.allows(j); };
  const float* add = mask.additive();

  // 1. scores of the allowed keys (masked: -inf), and their maximum
  bool any = false;
  float m = 0.0f;
  for (index_t j = 0; j < n_keys; ++j) {
    if (!allowed(j)) {
      p[j] = -INFINITY;
      continue;
    }
    float score = 0.0f;
    for (index_t d = 0; d < head_dim; ++d) score = std::fma(q[d], kt[d * kt_stride + j], score);
    p[j] = score / scale;
    if (add) p[j] = p[j] + add[j];  // an additive mask, after the scaling
    m = (!any || p[j] > m) ? p[j] : m;
    any = true;
  }
  // 2. fully masked row: the documented convention
  if (!any) {
    const float w = fill == MaskFill::neg_1e9 ? 1.0f / static_cast<float>(n_keys) : 0.0f;
    for (index_t j = 0; j < n_keys; ++j) p[j] = w;
    for (index_t d = 0; d < head_dim; ++d) {
      float acc = 0.0f;
      if (w != 0.0f)
        for (index_t j = 0; j < n_keys; ++j) acc = std::fma(w, v[j * v_stride + d], acc);
      out[d] = acc;
    }
    return;
  }
  // 3. softmax: exp(s - max) (exactly 0 for masked keys), canonical sum, division
  for (index_t j = 0; j < n_keys; ++j) p[j] = exp1(p[j] - m);
  const float total = sum(p, n_keys);
  for (index_t j = 0; j < n_keys; ++j) p[j] = p[j] / total;
  // 4. weighted sum of the allowed values, in key order
  for (index_t d = 0; d < head_dim; ++d) {
    float acc = 0.0f;
    for (index_t j = 0; j < n_keys; ++j)
      if (allowed(j)) acc = std::fma(p[j], v[j * v_stride + d], acc);
    out[d] = acc;
  }
}

void attention_rows_weights(const float* q, index_t q_stride, index_t n_rows, const float* kt, index_t kt_stride,
                            const float* v, index_t v_stride, index_t head_dim, index_t n_keys, const RowMask* masks,
                            MaskFill fill, float* weights, float* out, index_t out_stride) noexcept {
  for (index_t r = 0; r < n_rows; ++r)
    attention_row_weights(q + r * q_stride, kt, kt_stride, v, v_stride, head_dim, n_keys, masks[r], fill,
                          weights + r * n_keys, out + r * out_stride);
}

void attention_row(const float* q, const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                   index_t head_dim, index_t n_keys, RowMask mask, MaskFill fill, float* p, float* out) noexcept {
  const float scale = std::sqrt(static_cast<float>(head_dim));
  auto allowed = [&](index_t j) { return mask.allows(j); };
  const float* add = mask.additive();
  const index_t block = n_keys < kAttentionKeyBlock ? n_keys : kAttentionKeyBlock;
  float* qc = p + block;  // the query, since out may alias it
  for (index_t d = 0; d < head_dim; ++d) qc[d] = q[d];
  for (index_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  bool seen = false;  // out holds Σ p_j · v_j, m the running maximum, l the running sum
  float m = 0.0f, l = 0.0f;
  for (index_t kb = 0; kb < n_keys; kb += kAttentionKeyBlock) {
    const index_t nb = n_keys - kb < kAttentionKeyBlock ? n_keys - kb : kAttentionKeyBlock;
    // 1. the block's scores of allowed keys, and their maximum
    bool any = false;
    float bm = 0.0f;
    for (index_t i = 0; i < nb; ++i) {
      if (!allowed(kb + i)) continue;
      float s = 0.0f;
      for (index_t d = 0; d < head_dim; ++d) s = std::fma(qc[d], kt[d * kt_stride + kb + i], s);
      p[i] = s / scale;
      if (add) p[i] = p[i] + add[kb + i];  // an additive mask, after the scaling
      bm = (!any || p[i] > bm) ? p[i] : bm;
      any = true;
    }
    if (!any) continue;
    // 2. rescale what came before to the new maximum
    const float m_new = (seen && m > bm) ? m : bm;
    if (seen) {
      const float c = exp1(m - m_new);
      l = l * c;
      for (index_t d = 0; d < head_dim; ++d) out[d] = out[d] * c;
    }
    // 3. the block's weights, their canonical sum, and its values in key order
    for (index_t i = 0; i < nb; ++i) p[i] = allowed(kb + i) ? exp1(p[i] - m_new) : 0.0f;
    l = seen ? l + sum(p, nb) : sum(p, nb);
    for (index_t d = 0; d < head_dim; ++d) {
      float acc = out[d];
      for (index_t i = 0; i < nb; ++i)
        if (allowed(kb + i)) acc = std::fma(p[i], v[(kb + i) * v_stride + d], acc);
      out[d] = acc;
    }
    m = m_new;
    seen = true;
  }
  if (seen) {
    for (index_t d = 0; d < head_dim; ++d) out[d] = out[d] / l;
    return;
  }
  // every key masked: the documented convention
  const float w = fill == MaskFill::neg_1e9 ? 1.0f / static_cast<float>(n_keys) : 0.0f;
  for (index_t d = 0; d < head_dim; ++d) {
    float acc = 0.0f;
    if (w != 0.0f)
      for (index_t j = 0; j < n_keys; ++j) acc = std::fma(w, v[j * v_stride + d], acc);
    out[d] = acc;
  }
}

void attention_heads(const float* q, index_t n_heads, const float* kt, index_t kt_stride, const float* v,
                     index_t v_stride, index_t head_dim, index_t n_keys, RowMask mask, MaskFill fill, float* p,
                     float* out) noexcept {
  for (index_t h = 0; h < n_heads; ++h) {
    const index_t off = h * head_dim;
    attention_row(q + off, kt + off * kt_stride, kt_stride, v + off, v_stride, head_dim, n_keys, mask, fill, p,
                  out + off);
  }
}

void attention_rows(const float* q, index_t q_stride, index_t n_rows, const float* kt, index_t kt_stride,
                    const float* v, index_t v_stride, index_t head_dim, index_t n_keys, const RowMask* masks,
                    MaskFill fill, float* p, float* out, index_t out_stride) noexcept {
  for (index_t r = 0; r < n_rows; ++r)
    attention_row(q + r * q_stride, kt, kt_stride, v, v_stride, head_dim, n_keys, masks[r], fill, p,
                  out + r * out_stride);
}

void attention_row_w8a8(const std::int8_t* q, float s_q, const std::int8_t* k, index_t k_stride, const float* s_k,
                        const std::int8_t* v, index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                        RowMask mask, MaskFill fill, float* p, float* out) noexcept {
  const float scale = std::sqrt(static_cast<float>(head_dim));
  auto allowed = [&](index_t j) { return mask.allows(j); };
  const float* add = mask.additive();
  auto* qw = reinterpret_cast<std::int8_t*>(p + kAttentionKeyBlock);  // the block's quantized weights
  for (index_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  bool seen = false;
  float m = 0.0f, l = 0.0f;
  for (index_t kb = 0; kb < n_keys; kb += kAttentionKeyBlock) {
    const index_t nb = n_keys - kb < kAttentionKeyBlock ? n_keys - kb : kAttentionKeyBlock;
    bool any = false;
    float bm = 0.0f;
    for (index_t i = 0; i < nb; ++i) {
      if (!allowed(kb + i)) continue;
      std::int32_t acc = 0;
      for (index_t d = 0; d < head_dim; ++d)
        acc += static_cast<std::int32_t>(q[d]) * static_cast<std::int32_t>(k[(kb + i) * k_stride + d]);
      p[i] = (static_cast<float>(acc) * (s_q * s_k[kb + i])) / scale;
      if (add) p[i] = p[i] + add[kb + i];
      bm = (!any || p[i] > bm) ? p[i] : bm;
      any = true;
    }
    if (!any) continue;
    const float m_new = (seen && m > bm) ? m : bm;
    if (seen) {
      const float c = exp1(m - m_new);
      l = l * c;
      for (index_t d = 0; d < head_dim; ++d) out[d] = out[d] * c;
    }
    for (index_t i = 0; i < nb; ++i) p[i] = allowed(kb + i) ? exp1(p[i] - m_new) : 0.0f;
    l = seen ? l + sum(p, nb) : sum(p, nb);
    for (index_t i = 0; i < nb; ++i) p[i] = allowed(kb + i) ? p[i] * s_v[kb + i] : 0.0f;
    const float s_b = quantize_row(p, nb, qw);
    for (index_t d = 0; d < head_dim; ++d) {
      std::int32_t acc = 0;
      for (index_t i = 0; i < nb; ++i)
        if (allowed(kb + i))
          acc += static_cast<std::int32_t>(qw[i]) * static_cast<std::int32_t>(v[(kb + i) * v_stride + d]);
      out[d] = std::fma(static_cast<float>(acc), s_b, out[d]);
    }
    m = m_new;
    seen = true;
  }
  if (seen) {
    for (index_t d = 0; d < head_dim; ++d) out[d] = out[d] / l;
    return;
  }
  const float w = fill == MaskFill::neg_1e9 ? 1.0f / static_cast<float>(n_keys) : 0.0f;
  for (index_t d = 0; d < head_dim; ++d) {
    float acc = 0.0f;
    if (w != 0.0f)
      for (index_t j = 0; j < n_keys; ++j) acc = std::fma(w, static_cast<float>(v[j * v_stride + d]) * s_v[j], acc);
    out[d] = acc;
  }
}

void attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows, const std::int8_t* k,
                         index_t k_stride, const float* s_k, const std::int8_t* v, index_t v_stride, const float* s_v,
                         index_t head_dim, index_t n_keys, const RowMask* masks, MaskFill fill, float* p, float* out,
                         index_t out_stride) noexcept {
  for (index_t r = 0; r < n_rows; ++r)
    attention_row_w8a8(q + r * q_stride, s_q[r], k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks[r], fill,
                       p, out + r * out_stride);
}

void exp(const float* x, float* y, index_t n) noexcept {
  for (index_t i = 0; i < n; ++i) y[i] = exp1(x[i]);
}
void log(const float* x, float* y, index_t n) noexcept {
  for (index_t i = 0; i < n; ++i) y[i] = log1(x[i]);
}
void gelu(const float* x, float* y, index_t n) noexcept {
  for (index_t i = 0; i < n; ++i) y[i] = gelu1(x[i]);
}

}  // namespace stf::ref
