// statiformer — attention over spans of kAttentionScoreKeys keys, for vocabularies of 8 or more
// lanes (x86 AVX2, AVX-512). See kernels/README.md and ARCHITECTURE.md (glossary).
#pragma once

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/streaming.hpp>

namespace stf::kernels_detail::generic {

/// Attention over spans of up to kAttentionScoreKeys keys (vocabularies of 8+ lanes: x86): a group
/// of prefix-masked rows scores a whole span in one product with Kᵀ, runs the key blocks' softmax
/// steps over it keeping their rescale factors, and applies them in one product with the values.
/// The operations of stream_block, per output in the same order.
template <class Tag>
struct AttentionSpans : AttentionStreaming<Tag> {
  using typename AttentionStreaming<Tag>::ScoreScale;
  using AttentionStreaming<Tag>::kTallRowGroup;
  using AttentionStreaming<Tag>::kTallHeadVecs;
  using AttentionStreaming<Tag>::stream_group_prefix;
  using AttentionStreaming<Tag>::kBlockVecs;
  using typename Product<Tag>::TileArgs;
  using Product<Tag>::kRows;
  using Product<Tag>::kVecs;
  using Product<Tag>::tile_rows;
  using typename Elementwise<Tag>::I;
  using typename Elementwise<Tag>::V;
  using Elementwise<Tag>::L;
  using Elementwise<Tag>::div_map;

  static constexpr index_t kScoreBlocks = kAttentionScoreKeys / kAttentionKeyBlock;

  /// What the values' tiles of a group need: row r's weights p + r·ps (key 0 of the span at
  /// index 0), the keys [0, keys) every row has, the factor c[b][r] each row's outputs are
  /// multiplied by before block b (1 where nothing is rescaled: x·1 = x exactly), and l: when not
  /// null, the outputs are divided by l[r] before they are stored (the last span). v_row: row r's
  /// values are at v + r·v_row (the heads of one query row, attention_heads; 0: shared).
  struct ValuesArgs {
    const float* p;
    index_t ps, keys;
    const float* v;
    index_t v_stride;
    float* o;
    index_t o_stride, tail;
    const float (*c)[kTallRowGroup];
    bool from_zero;
    const float* l;
    index_t v_row = 0;
  };

  /// o[r, :] = (o[r, :] or +0), then per block b: o[r, :] *= c[b][r], and o[r, :] = fma(p[r, j],
  /// v[j, :], o[r, :]) for its keys j in order; R rows × NV vectors of outputs in registers.
  /// RowValues: each row's own values (a.v_row apart), else one load of v[j, :] for every row.
  template <index_t R, index_t NV, bool RowValues = false>
  static void values_tile(const ValuesArgs& a) {
    constexpr index_t B = kAttentionKeyBlock;
    auto load_at = [&](const float* ptr, index_t i) {
      return (i + 1 == NV && a.tail != L) ? I::load_partial(ptr + i * L, a.tail) : I::load(ptr + i * L);
    };
    V acc[R][NV];
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i) acc[r][i] = a.from_zero ? I::zero() : load_at(a.o + r * a.o_stride, i);
    }
    for (index_t kb = 0; kb < a.keys; kb += B) {
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
        const V c = I::set1(a.c[kb / B][r]);
#pragma GCC unroll 16
        for (index_t i = 0; i < NV; ++i) acc[r][i] = I::mul(acc[r][i], c);
      }
      const index_t k1 = a.keys - kb < B ? a.keys : kb + B;
      const float* vk = a.v + kb * a.v_stride;
      for (index_t k = kb; k < k1; ++k, vk += a.v_stride) {
        V wv[NV];
        if constexpr (!RowValues) {
#pragma GCC unroll 16
          for (index_t i = 0; i < NV; ++i) wv[i] = load_at(vk, i);
        }
#pragma GCC unroll 16
        for (index_t r = 0; r < R; ++r) {
          const float pr = a.p[r * a.ps + k];
          if constexpr (RowValues) {
#pragma GCC unroll 16
            for (index_t i = 0; i < NV; ++i) wv[i] = load_at(vk + r * a.v_row, i);
          }
#pragma GCC unroll 16
          for (index_t i = 0; i < NV; ++i) acc[r][i] = I::fma_n(pr, wv[i], acc[r][i]);
        }
      }
    }
    if (a.l) {
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
        const V lv = I::set1(a.l[r]);
#pragma GCC unroll 16
        for (index_t i = 0; i < NV; ++i)  // (a partial vector: the vocabulary's division of its lanes)
          acc[r][i] = (i + 1 == NV && a.tail != L) ? I::div_first(acc[r][i], lv, a.tail) : I::div(acc[r][i], lv);
      }
    }
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i) {
        if (i + 1 == NV && a.tail != L)
          I::store_partial(a.o + r * a.o_stride + i * L, acc[r][i], a.tail);
        else
          I::store(a.o + r * a.o_stride + i * L, acc[r][i]);
      }
    }
  }

  template <index_t R, index_t NV, bool RowValues = false>
  static void values_nv(index_t nv, const ValuesArgs& a) {
    if constexpr (NV > 1) {
      if (nv < NV) return values_nv<R, NV - 1, RowValues>(nv, a);
    }
    values_tile<R, NV, RowValues>(a);
  }

  /// Lowest to R rows (a tall group's, more than kAttentionRowGroup: at most kTallHeadVecs vectors).
  template <index_t R, index_t Lowest = 1, bool RowValues = false>
  static void values_rows(index_t rows, index_t nv, const ValuesArgs& a) {
    if constexpr (R > Lowest) {
      if (rows < R) return values_rows<R - 1, Lowest, RowValues>(rows, nv, a);
    }
    values_nv<R, (R > kAttentionRowGroup ? kTallHeadVecs : kVecs), RowValues>(nv, a);
  }

  /// p[r, j] = Σ_k q[r, k] · kt[k, j] for the nr <= kRows rows of a group and n keys: gemm's
  /// tiles over the whole reduction, without product's blocking and dispatch (a group's
  /// products are small and many; blocking the reduction would not change a bit).
  static void scores_tiles(const float* q, index_t q_stride, index_t nr, index_t head_dim, const float* kt,
                           index_t kt_stride, index_t n, float* p, index_t ps) {
    for (index_t o0 = 0; o0 < n; o0 += kVecs * L) {
      const index_t width = n - o0 < kVecs * L ? n - o0 : kVecs * L;
      const index_t nv = (width + L - 1) / L;
      const TileArgs a{q,    q_stride, 0,         head_dim, kt + o0, kt_stride, p + o0, ps, width - (nv - 1) * L,
                       true, nullptr,  Fuse::none};
      Product<Tag>::template tile_rows<kRows>(nr, nv, a);
    }
  }

  /// Score registers of a block of heads (AVX2: 12 of its 16; on AVX-512 a head's chunk is at most a key
  /// block, two vectors, so up to 12 of its 32): their keys are the FMAs' memory operands (each head
  /// reads its own), so only the scores and a query element take registers.
  static constexpr index_t kWideHeadScores = 12;

  /// scores_tiles for the heads of one query row (attention_heads), whose keys are their own:
  /// p[r, j] = Σ_k q[r·head_dim + k] · kt[(r·head_dim + k)·kt_stride + j] for the nr <=
  /// kAttentionRowGroup heads and n keys, in chunks of kWideHeadScores / R vectors per head:
  /// the same fma from +0 over k in order, scores_tiles' operations. ps, the rows' stride, is a
  /// multiple of L: the last vector is stored whole (no masked store).
  template <index_t R>
  static void head_scores(index_t nr, const float* q, index_t head_dim, const float* kt, index_t kt_stride, index_t n,
                          float* p, index_t ps) {
    if constexpr (R > 1) {
      if (nr < R) return head_scores<R - 1>(nr, q, head_dim, kt, kt_stride, n, p, ps);
    }
    constexpr index_t NB = kWideHeadScores / R < kBlockVecs ? kWideHeadScores / R : kBlockVecs;
    for (index_t j0 = 0; j0 < n; j0 += NB * L) {
      const index_t w = n - j0 < NB * L ? n - j0 : NB * L;
      head_scores_nb<R, NB>((w + L - 1) / L, q, head_dim, kt + j0, kt_stride, w, p + j0, ps);
    }
  }
  /// head_scores over one chunk of n keys in nb <= NB vectors.
  template <index_t R, index_t NB>
  static void head_scores_nb(index_t nb, const float* q, index_t head_dim, const float* kt, index_t kt_stride,
                             index_t n, float* p, index_t ps) {
    if constexpr (NB > 1) {
      if (nb < NB) return head_scores_nb<R, NB - 1>(nb, q, head_dim, kt, kt_stride, n, p, ps);
    }
    const index_t tail = n - (NB - 1) * L;  // keys in the last vector
    V s[R][NB];
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t b = 0; b < NB; ++b) s[r][b] = I::zero();
    }
    const index_t kt_row = head_dim * kt_stride;  // (head r's Kᵀ: kt + r·kt_row)
    const float* kk = kt;
    for (index_t k = 0; k < head_dim; ++k, kk += kt_stride) {
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
        const float x = q[r * head_dim + k];
        const float* kr = kk + r * kt_row;
#pragma GCC unroll 16
        for (index_t b = 0; b < NB; ++b)
          s[r][b] = I::fma_n(x, (b + 1 == NB && tail != L) ? I::load_partial(kr + b * L, tail) : I::load(kr + b * L),
                             s[r][b]);
      }
    }
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t b = 0; b < NB; ++b) I::store(p + r * ps + b * L, s[r][b]);  // (whole: ps a multiple of L)
    }
  }

  /// attention_rows for a group of nr rows whose masks are prefixes with at least one key each:
  /// per span of up to kAttentionScoreKeys keys, the group's scores are one product with Kᵀ, the
  /// blocks' softmax steps run over them (stream_group_prefix, the factors of the rescaling kept
  /// instead of applied), and one product with the values applies the factors at the block
  /// boundaries and, in the last span, the division by the sums: the operations of stream_block,
  /// per output in the same order, with fewer passes over the outputs and longer products.
  /// Heads: the rows are the heads of one query row (attention_heads; q_stride head_dim): row r's
  /// keys are Kᵀ's rows from r·head_dim on and its values v + r·head_dim (head_scores); ps is a
  /// multiple of L then, and the weights' last vector is stored whole (stream_group_prefix's
  /// WholeVectors: no masked store). (Always inlined: see stream_group_prefix.)
  template <bool Heads = false>
  [[gnu::always_inline]] static inline void attention_group_spans(const float* q, index_t q_stride, index_t nr,
                                                                  const float* kt, index_t kt_stride, const float* v,
                                                                  index_t v_stride, index_t head_dim, index_t n_scored,
                                                                  const ref::RowMask* mg, const ScoreScale& vscale,
                                                                  float* p, index_t ps, float* qc, float* og,
                                                                  index_t out_stride) {
    constexpr index_t B = kAttentionKeyBlock, W = kAttentionScoreKeys;
    // With one span the queries are read once, by its scores' product, before any output is
    // written: no copies then (the outputs may alias the queries).
    const float* qs = q;
    index_t qs_stride = q_stride;
    if (n_scored > W) {
      for (index_t r = 0; r < nr; ++r)
        for (index_t d = 0; d < head_dim; ++d) qc[r * head_dim + d] = q[r * q_stride + d];
      qs = qc;
      qs_stride = head_dim;
    }
    bool seen[kAttentionRowGroup] = {};
    float m[kAttentionRowGroup] = {}, l[kAttentionRowGroup] = {};
    for (index_t s0 = 0; s0 < n_scored; s0 += W) {
      const index_t ns = n_scored - s0 < W ? n_scored - s0 : W;
      if constexpr (Heads)
        head_scores<kAttentionRowGroup>(nr, qs, head_dim, kt + s0, kt_stride, ns, p, ps);
      else
        scores_tiles(qs, qs_stride, nr, head_dim, kt + s0, kt_stride, ns, p, ps);
      float c[kScoreBlocks][kTallRowGroup];  // block b's rescale factor of row r
      for (index_t b = 0; b * B < ns; ++b) {
        const index_t kb = s0 + b * B, nb = ns - b * B < B ? ns - b * B : B;
        index_t end[kAttentionRowGroup];
        AttentionStreaming<Tag>::template stream_group_prefix<Heads>(p + b * B, ps, nr, kb, nb, mg, vscale, seen, m, l,
                                                                     nullptr, out_stride, head_dim, end, c[b]);
      }
      // keys of the span row r has: [0, e[r]) (zeros past nr: GCC 12 cannot see that nr >= 1 once
      // span_values is inlined here, and warns)
      index_t e[kAttentionRowGroup] = {};
      for (index_t r = 0; r < nr; ++r) {
        const index_t key_end = mg[r].key_end;
        e[r] = key_end > s0 ? (key_end - s0 < ns ? key_end - s0 : ns) : 0;
      }
      const bool last = s0 + ns >= n_scored;
      span_values<false, Heads>(p, ps, nr, e, v + s0 * v_stride, v_stride, head_dim, c, s0 == 0, last ? l : nullptr, og,
                                out_stride, Heads ? head_dim : 0);
    }
  }

  /// The values' part of a span: row r's outputs og + r·out_stride continue (from +0 when
  /// from_zero) over its keys [0, e[r]) of the span (weights p + r·ps, values vs), with the
  /// factors c[b][r] at the block boundaries, and are divided by l[r] when l is not null (the last
  /// span). The keys every row has as register tiles, then each row's own keys past them.
  /// Tall: a tall group's rows (more than kAttentionRowGroup, at most kTallHeadVecs vectors); its
  /// own instantiation, which keeps the tall tiles out of the other groups' code.
  /// RowValues: row r's values at vs + r·v_row (the heads of one query row), else shared.
  template <bool Tall = false, bool RowValues = false>
  static void span_values(const float* p, index_t ps, index_t nr, const index_t* e, const float* vs, index_t v_stride,
                          index_t head_dim, const float (*c)[kTallRowGroup], bool from_zero, const float* l, float* og,
                          index_t out_stride, index_t v_row = 0) {
    span_values_inline<Tall, RowValues>(p, ps, nr, e, vs, v_stride, head_dim, c, from_zero, l, og, out_stride, v_row);
  }
  /// span_values inlined into its caller (a tall group's register block: out of line, the call and
  /// its arguments cost a short group a few percent).
  template <bool Tall, bool RowValues>
  [[gnu::always_inline]] static inline void span_values_inline(const float* p, index_t ps, index_t nr, const index_t* e,
                                                               const float* vs, index_t v_stride, index_t head_dim,
                                                               const float (*c)[kTallRowGroup], bool from_zero,
                                                               const float* l, float* og, index_t out_stride,
                                                               index_t v_row) {
    constexpr index_t B = kAttentionKeyBlock;
    index_t e_min = e[0], e_max = e[0];
    for (index_t r = 1; r < nr; ++r) {
      e_min = e[r] < e_min ? e[r] : e_min;
      e_max = e[r] > e_max ? e[r] : e_max;
    }
    for (index_t d0 = 0; d0 < head_dim; d0 += kVecs * L) {
      const index_t width = head_dim - d0 < kVecs * L ? head_dim - d0 : kVecs * L;
      const index_t nv = (width + L - 1) / L;
      const ValuesArgs a{p,
                         ps,
                         e_min,
                         vs + d0,
                         v_stride,
                         og + d0,
                         out_stride,
                         width - (nv - 1) * L,
                         c,
                         from_zero,
                         e_min == e_max ? l : nullptr,
                         v_row};
      if constexpr (Tall)
        values_rows<kTallRowGroup, kAttentionRowGroup + 1, RowValues>(nr, nv, a);
      else
        values_rows<kAttentionRowGroup, 1, RowValues>(nr, nv, a);
    }
    if (e_min == e_max) return;
    // each row's keys past e_min continue its own sums, with the factors of the blocks they start
    for (index_t r = 0; r < nr; ++r) {
      float* o = og + r * out_stride;
      const float* vr = vs + r * v_row;
      for (index_t d = 0; e[r] > e_min && d < head_dim; d += L) {
        const index_t w = head_dim - d < L ? head_dim - d : L;
        V acc = I::load_partial(o + d, w);
        for (index_t j = e_min; j < e[r]; ++j) {
          if (j % B == 0) acc = I::mul(acc, I::set1(c[j / B][r]));
          acc = I::fma_n(p[r * ps + j], I::load_partial(vr + j * v_stride + d, w), acc);
        }
        I::store_partial(o + d, acc, w);
      }
      if (l) div_map(o, o, head_dim, l[r]);
    }
  }
};

}  // namespace stf::kernels_detail::generic
