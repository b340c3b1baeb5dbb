// statiformer — reference kernels, compiled once (shape-erased) with pinned floating-point flags
// (-ffp-contract=off: no contraction of a*b+c into an fma the source does not spell).
#include <statiformer/kernels/reference.hpp>

namespace stf::ref {

float dot(const float* a, const float* b, index_t n) noexcept {
  float acc = 0.0f;
  for (index_t i = 0; i < n; ++i) acc = math::fma(a[i], b[i], acc);
  return acc;
}

void linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out,
            float* y) noexcept {
  for (index_t r = 0; r < rows; ++r) {
    for (index_t o = 0; o < out; ++o) {
      const float acc = dot(x + r * in, w + o * in, in);
      y[r * out + o] = bias ? acc + bias[o] : acc;
    }
  }
}

void relu(float* x, index_t n) noexcept {
  for (index_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void gelu(float* x, index_t n) noexcept {
  constexpr float kInvSqrt2 = 0.70710678118654752440f;
  for (index_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + math::erf(x[i] * kInvSqrt2));
}

void activation(Activation a, float* x, index_t n) noexcept {
  if (a == Activation::relu)
    relu(x, n);
  else
    gelu(x, n);
}

void add(float* y, const float* x, index_t n) noexcept {
  for (index_t i = 0; i < n; ++i) y[i] += x[i];
}

void layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind, float eps,
                    float* y) noexcept {
  float sum = 0.0f;
  for (index_t i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float ss = 0.0f;
  for (index_t i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    ss = math::fma(d, d, ss);
  }
  if (kind == LayerNormKind::torch) {
    const float inv = 1.0f / math::sqrt(ss / static_cast<float>(n) + eps);
    for (index_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * gain[i] + bias[i];
  } else {
    const float denom = math::sqrt(ss / static_cast<float>(n - 1)) + eps;
    for (index_t i = 0; i < n; ++i) y[i] = gain[i] * (x[i] - mean) / denom + bias[i];
  }
}

void log_softmax_row(float* x, index_t n) noexcept {
  float m = x[0];
  for (index_t i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  float sum = 0.0f;
  for (index_t i = 0; i < n; ++i) sum += math::exp(x[i] - m);
  const float lse = math::log(sum);
  for (index_t i = 0; i < n; ++i) x[i] = (x[i] - m) - lse;
}

void attention_row(const float* q, const float* k, const float* v, index_t kv_stride, index_t head_dim, index_t n_keys,
                   RowMask mask, MaskFill fill, float* p, float* out) noexcept {
  const float scale = math::sqrt(static_cast<float>(head_dim));
  auto allowed = [&](index_t j) { return j < mask.key_end && (!mask.allow || mask.allow[j] != 0); };

  // 1. scores of the allowed keys, and their maximum
  bool any = false;
  float m = 0.0f;
  for (index_t j = 0; j < n_keys; ++j) {
    if (!allowed(j)) {
      p[j] = 0.0f;
      continue;
    }
    p[j] = dot(q, k + j * kv_stride, head_dim) / scale;
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
        for (index_t j = 0; j < n_keys; ++j) acc = math::fma(w, v[j * kv_stride + d], acc);
      out[d] = acc;
    }
    return;
  }
  // 3. softmax over the allowed keys
  float sum = 0.0f;
  for (index_t j = 0; j < n_keys; ++j) {
    if (!allowed(j)) continue;
    p[j] = math::exp(p[j] - m);
    sum += p[j];
  }
  for (index_t j = 0; j < n_keys; ++j)
    if (allowed(j)) p[j] /= sum;
  // 4. weighted sum of the allowed values
  for (index_t d = 0; d < head_dim; ++d) {
    float acc = 0.0f;
    for (index_t j = 0; j < n_keys; ++j)
      if (allowed(j)) acc = math::fma(p[j], v[j * kv_stride + d], acc);
    out[d] = acc;
  }
}

}  // namespace stf::ref
