// statiformer — causal self-attention over a fixed-capacity key/value cache: the part of a
// decoder layer's incremental step and of a causal (GPT) layer's prefill and step that they share.
#pragma once

#include <statiformer/layers/attention.hpp>

namespace stf {

/// Self-attention keys and values of positions [0, Capacity). Keys are kept transposed
/// (Kᵀ, [DModel, Capacity]), as the attention kernels read them.
template <index_t Capacity, index_t DModel>
struct SelfAttentionCache {
  Tensor<DModel, Capacity> kt;
  Tensor<Capacity, DModel> v;
};

namespace detail {
/// Floats of cached_self_attention's scratch for n rows in format F: the queries (then the
/// context), the streaming attention's scratch and the int8 projections' (none in f32).
template <NumberFormat F = NumberFormat::f32>
constexpr index_t cached_attention_floats(index_t n, index_t capacity, index_t d_model, index_t head_dim) {
  return n * d_model + attention_scratch_floats(n, capacity, head_dim) + linear_scratch_floats<F>(n, d_model);
}

/// Causal self-attention of the n rows x (positions first .. first + n - 1): appends their keys
/// and values to the cache at those positions, then row i attends to the keys [0, first + i]. out
/// may alias x (x is read only by the projections, before out is written). first + n <= Capacity
/// is the caller's contract. P: a MultiHeadAttention's Params, its linears in format Format
/// (linear_rows: each row of an int8 format is quantized on its own, so a row's bits do not depend
/// on n). One row takes the single-row kernel; more rows go through attention_head (same bits:
/// attention_rows is n calls of attention_row). Scratch: cached_attention_floats<Format>(n, ...).
template <index_t Capacity, index_t DModel, index_t NHeads, NumberFormat Format, class AttentionParams>
void cached_self_attention(const AttentionParams& P, const float* x, index_t first, index_t n,
                           SelfAttentionCache<Capacity, DModel>& cache, MaskFill fill, float* scratch, float* out) {
  constexpr index_t head_dim = DModel / NHeads;
  float* q = scratch;                                                // [n, DModel] queries, then the heads' context
  float* p = q + n * DModel;                                         // streaming attention scratch
  float* lin = p + attention_scratch_floats(n, Capacity, head_dim);  // the int8 projections' scratch
  // the keys go through q into columns [first, first + n) of Kᵀ
  linear_rows<Format>(P.k, x, n, q, lin);
  transpose(q, n, DModel, DModel, cache.kt.data + first, Capacity);
  linear_rows<Format>(P.v, x, n, cache.v.data + first * DModel, lin);
  linear_rows<Format>(P.q, x, n, q, lin);
  const index_t keys = first + n;
  for (index_t h = 0; h < NHeads; ++h) {
    const index_t off = h * head_dim;
    if (n == 1)
      ActiveKernels::attention_row(q + off, cache.kt.data + off * Capacity, Capacity, cache.v.data + off, DModel,
                                   head_dim, keys, ref::RowMask{keys, nullptr}, fill, p, q + off);
    else
      attention_head(q + off, DModel, cache.kt.data + off * Capacity, Capacity, cache.v.data + off, DModel, head_dim, n,
                     keys, AttentionMask{keys, true, first, nullptr, fill}, p, q + off, DModel, nullptr);
  }
  linear_rows<Format>(P.o, q, n, out, lin);
}
}  // namespace detail

}  // namespace stf
