// statiformer — causal self-attention over a fixed-capacity key/value cache: the part of a
// decoder layer's incremental step and of a causal (GPT) layer's prefill and step that they share.
#pragma once

#include <cstdint>
#include <type_traits>

#include <statiformer/layers/attention.hpp>

namespace stf {

/// Self-attention keys and values of positions [0, Capacity). Keys are kept transposed
/// (Kᵀ, [DModel, Capacity]), as the attention kernels read them.
template <index_t Capacity, index_t DModel>
struct SelfAttentionCache {
  Tensor<DModel, Capacity> kt;
  Tensor<Capacity, DModel> v;
};

/// Keys and values of one attention in int8 (LayerOptions::int8_attention; kernels/QUANTIZATION.md,
/// "Attention"): key and value rows [Keys, DModel], head h's part of a row (columns h·head_dim ..)
/// quantized on its own with its scale at k_scale / v_scale[h·Keys + j], fixed when key j enters:
/// so prefill and steps give the same bits. A quarter of the float cache's bytes, plus the scales.
template <index_t Keys, index_t DModel, index_t NHeads>
struct Int8AttentionCache {
  static constexpr index_t keys = Keys, d_model = DModel, n_heads = NHeads, head_dim = DModel / NHeads;
  alignas(kTensorAlign) std::int8_t k[Keys * DModel];
  alignas(kTensorAlign) std::int8_t v[Keys * DModel];
  alignas(kTensorAlign) float k_scale[NHeads * Keys];  ///< [NHeads][Keys]
  alignas(kTensorAlign) float v_scale[NHeads * Keys];  ///< [NHeads][Keys]
};

/// The self-attention cache of a layer: float (Kᵀ and V), or int8 with the int8 attention.
template <index_t Capacity, index_t DModel, index_t NHeads, bool Int8Attention>
using SelfAttentionCacheOf = std::conditional_t<Int8Attention, Int8AttentionCache<Capacity, DModel, NHeads>,
                                                SelfAttentionCache<Capacity, DModel>>;

namespace detail {
/// Floats of cached_self_attention's scratch for n rows in format F: the queries (then the
/// context), the streaming attention's scratch and the int8 projections' (none in f32); with the
/// int8 attention, the queries' scales [NHeads][n] and the w8a8 attention's scratch in place of the
/// streaming one, and the int8 queries after the projections' scratch.
template <NumberFormat F = NumberFormat::f32, bool Int8Attention = false>
constexpr index_t cached_attention_floats(index_t n, index_t capacity, index_t d_model, index_t head_dim) {
  if constexpr (Int8Attention)
    return n * d_model + n * (d_model / head_dim) + attention_w8a8_scratch_floats() +
           linear_scratch_floats<F>(n, d_model) + (n * d_model + 3) / 4;
  else
    return n * d_model + attention_scratch_floats(n, capacity, head_dim) + linear_scratch_floats<F>(n, d_model);
}

/// Causal self-attention of the n rows x (positions first .. first + n - 1): appends their keys
/// and values to the cache at those positions, then row i attends to the keys [0, first + i]. out
/// may alias x (x is read only by the projections, before out is written). first + n <= Capacity
/// is the caller's contract. P: a MultiHeadAttention's Params, its linears in format Format
/// (linear_rows: each row of an int8 format is quantized on its own, so a row's bits do not depend
/// on n). One row takes attention_heads (all heads in one call); more rows go through attention_head (same bits:
/// attention_rows is n calls of attention_row). Scratch: cached_attention_floats<Format>(n, ...).
template <index_t Capacity, index_t DModel, index_t NHeads, NumberFormat Format, class AttentionParams>
void cached_self_attention(const AttentionParams& P, const float* x, index_t first, index_t n,
                           SelfAttentionCache<Capacity, DModel>& cache, MaskFill fill, float* scratch, float* out) {
  constexpr index_t head_dim = DModel / NHeads;
  float* q = scratch;                                                // [n, DModel] queries, then the heads' context
  float* p = q + n * DModel;                                         // streaming attention scratch
  float* lin = p + attention_scratch_floats(n, Capacity, head_dim);  // the int8 projections' scratch
  // the keys go through q into columns [first, first + n) of Kᵀ; keys and values in one call (w8a8:
  // the rows quantized once for both)
  linear_rows_shared<Format>(x, n, lin, P.k, q, P.v, cache.v.data + first * DModel);
  transpose(q, n, DModel, DModel, cache.kt.data + first, Capacity);
  linear_rows<Format>(P.q, x, n, q, lin);
  const index_t keys = first + n;
  if (n == 1) {  // every head of the one row in one call
    ActiveKernels::attention_heads(q, NHeads, cache.kt.data, Capacity, cache.v.data, DModel, head_dim, keys,
                                   ref::RowMask{keys, nullptr}, fill, p, q);
  } else {
    for (index_t h = 0; h < NHeads; ++h) {
      const index_t off = h * head_dim;
      attention_head(q + off, DModel, cache.kt.data + off * Capacity, Capacity, cache.v.data + off, DModel, head_dim, n,
                     keys, AttentionMask{keys, true, first, nullptr, fill}, p, q + off, DModel, nullptr);
    }
  }
  linear_rows<Format>(P.o, q, n, out, lin);
}

/// cached_self_attention over an int8 cache (LayerOptions::int8_attention): the keys' and values'
/// rows enter the cache quantized per head (scales fixed then), the queries are quantized per head,
/// and each head runs the w8a8 attention (attention_head_w8a8): the bits of MultiHeadAttention's
/// int8 attention under a causal mask. Scratch: cached_attention_floats<Format, true>(n, ...).
template <index_t Capacity, index_t DModel, index_t NHeads, NumberFormat Format, class AttentionParams>
void cached_self_attention(const AttentionParams& P, const float* x, index_t first, index_t n,
                           Int8AttentionCache<Capacity, DModel, NHeads>& cache, MaskFill fill, float* scratch,
                           float* out) {
  constexpr index_t head_dim = DModel / NHeads;
  float* q = scratch;                                 // [n, DModel] keys, values, queries, then the context
  float* s_q = q + n * DModel;                        // [NHeads][n] the queries' scales
  float* p8 = s_q + NHeads * n;                       // the w8a8 attention's scratch
  float* lin = p8 + attention_w8a8_scratch_floats();  // the int8 projections' scratch
  auto* q8 = reinterpret_cast<std::int8_t*>(lin + linear_scratch_floats<Format>(n, DModel));  // [n, DModel]
  linear_rows<Format>(P.k, x, n, q, lin);
  quantize_heads<DModel, NHeads>(q, n, cache.k + first * DModel, cache.k_scale + first, Capacity);
  linear_rows<Format>(P.v, x, n, q, lin);
  quantize_heads<DModel, NHeads>(q, n, cache.v + first * DModel, cache.v_scale + first, Capacity);
  linear_rows<Format>(P.q, x, n, q, lin);
  quantize_heads<DModel, NHeads>(q, n, q8, s_q, n);
  const index_t keys = first + n;
  for (index_t h = 0; h < NHeads; ++h) {
    const index_t off = h * head_dim;
    attention_head_w8a8(q8 + off, DModel, s_q + h * n, cache.k + off, DModel, cache.k_scale + h * Capacity,
                        cache.v + off, DModel, cache.v_scale + h * Capacity, head_dim, n, keys,
                        AttentionMask{keys, true, first, nullptr, fill}, p8, q + off, DModel);
  }
  linear_rows<Format>(P.o, q, n, out, lin);
}
}  // namespace detail

}  // namespace stf
