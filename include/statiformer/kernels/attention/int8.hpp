// statiformer — attention, generic, part: the int8 number format (kernels/QUANTIZATION.md,
// "Attention"). The w8a8 attention of every target, and the fallback of a target's own (its
// AttentionInt8Select::Rows, which may decline a call): Q·Kᵀ and P·V as int32 sums of int8 rows,
// the softmax float as the float path's (the same blocks, running maximum, canonical sums and exp),
// the block's weights times the values' scales quantized per query row and block. The bits are
// ref::attention_row_w8a8's.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/select.hpp>
#include <statiformer/kernels/attention/x86_int8.hpp>
#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/product/int8.hpp>

namespace stf::kernels_detail::generic {

template <class Tag>
struct AttentionInt8 : Elementwise<Tag> {
  using Elementwise<Tag>::exp_shifted;
  using Elementwise<Tag>::sum;
  /// Dimensions of one pass of P·V's int32 sums (held in an array on the stack).
  static constexpr index_t kValueChunk = 64;

  /// Σ_d a[d] · b[d] in int32 (exact: |a·b| ≤ 127², head_dim ≤ ref::kMaxQuantizedIn).
  static std::int32_t dot_i8(const std::int8_t* a, const std::int8_t* b, index_t n) {
    std::int32_t acc = 0;
    for (index_t d = 0; d < n; ++d) acc += static_cast<std::int32_t>(a[d]) * static_cast<std::int32_t>(b[d]);
    return acc;
  }

  /// The target's own w8a8 attention where the selection names one, or void.
  using Rows = typename AttentionInt8Select<Tag>::Rows;

  /// Kernels::attention_rows_w8a8 (kernels/api.hpp): the target's own where it takes the call, else
  /// ref::attention_row_w8a8 per row.
  static void attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows,
                                  const std::int8_t* k, index_t k_stride, const float* s_k, const std::int8_t* v,
                                  index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                                  const ref::RowMask* masks, MaskFill fill, float* p, float* out, index_t out_stride) {
    if constexpr (!std::is_void_v<Rows>)
      if (Rows::attention_rows_w8a8(q, q_stride, s_q, n_rows, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys,
                                    masks, fill, p, out, out_stride))
        return;
    for (index_t r = 0; r < n_rows; ++r)
      row(q + r * q_stride, s_q[r], k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks[r], fill, p,
          out + r * out_stride);
  }

  static void row(const std::int8_t* q, float s_q, const std::int8_t* k, index_t k_stride, const float* s_k,
                  const std::int8_t* v, index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                  ref::RowMask mask, MaskFill fill, float* p, float* out) {
    const float scale = std::sqrt(static_cast<float>(head_dim));
    const float* add = mask.additive();
    auto* qw = reinterpret_cast<std::int8_t*>(p + kAttentionKeyBlock);
    for (index_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
    bool seen = false;
    float m = 0.0f, l = 0.0f;
    for (index_t kb = 0; kb < n_keys; kb += kAttentionKeyBlock) {
      const index_t nb = n_keys - kb < kAttentionKeyBlock ? n_keys - kb : kAttentionKeyBlock;
      // 1. the scores of the block's allowed keys, and their maximum
      bool any = false;
      float bm = 0.0f;
      for (index_t i = 0; i < nb; ++i) {
        if (!mask.allows(kb + i)) continue;
        const std::int32_t acc = dot_i8(q, k + (kb + i) * k_stride, head_dim);
        p[i] = (static_cast<float>(acc) * (s_q * s_k[kb + i])) / scale;
        if (add) p[i] = p[i] + add[kb + i];
        bm = (!any || p[i] > bm) ? p[i] : bm;
        any = true;
      }
      if (!any) continue;
      // 2. what came before, to the new maximum
      const float m_new = (seen && m > bm) ? m : bm;
      if (seen) {
        float c = m - m_new;
        exp_shifted(&c, &c, 1, 0.0f);
        l = l * c;
        for (index_t d = 0; d < head_dim; ++d) out[d] = out[d] * c;
      }
      // 3. the weights (masked keys: 0), their canonical sum, times the values' scales, quantized
      for (index_t i = 0; i < nb; ++i)
        if (!mask.allows(kb + i)) p[i] = m_new;  // (a defined value: exp(0), replaced by 0 below)
      exp_shifted(p, p, nb, m_new);
      for (index_t i = 0; i < nb; ++i)
        if (!mask.allows(kb + i)) p[i] = 0.0f;
      l = seen ? l + sum(p, nb) : sum(p, nb);
      for (index_t i = 0; i < nb; ++i) p[i] = mask.allows(kb + i) ? p[i] * s_v[kb + i] : 0.0f;
      const float s_b = ProductInt8<Tag>::quantize_row(p, nb, qw, false);
      // 4. their int32 sums with the values, scaled into the running output: key by key over a
      // chunk of dimensions (contiguous values; a masked key's weight is 0, so the sums need no
      // test, and the keys from the row's key end on are not read)
      const index_t n_read = mask.key_end - kb < nb ? mask.key_end - kb : nb;
      for (index_t d0 = 0; d0 < head_dim; d0 += kValueChunk) {
        const index_t nd = head_dim - d0 < kValueChunk ? head_dim - d0 : kValueChunk;
        std::int32_t acc[kValueChunk];
        for (index_t d = 0; d < nd; ++d) acc[d] = 0;
        for (index_t i = 0; i < n_read; ++i) {
          const std::int32_t w = qw[i];
          if (w == 0) continue;
          const std::int8_t* vi = v + (kb + i) * v_stride + d0;
          for (index_t d = 0; d < nd; ++d) acc[d] += w * static_cast<std::int32_t>(vi[d]);
        }
        for (index_t d = 0; d < nd; ++d) out[d0 + d] = std::fma(static_cast<float>(acc[d]), s_b, out[d0 + d]);
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
        for (index_t j = 0; j < n_keys; ++j) acc = std::fma(w, static_cast<float>(v[j * v_stride + d]) * s_v[j], acc);
      out[d] = acc;
    }
  }
};

}  // namespace stf::kernels_detail::generic
