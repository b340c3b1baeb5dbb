// statiformer — attention with one key block in registers, and tall row groups, for vocabularies
// of 8 or more lanes (x86 AVX2, AVX-512). See kernels/README.md and ARCHITECTURE.md (glossary).
#pragma once

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/wide_spans.hpp>

namespace stf::kernels_detail::generic {

/// Attention of a group whose keys are one block of at most kRegisterBlockVecs score vectors per
/// row (x86): the scores stay in registers from their product through the softmax step; and
/// the tall row groups of AVX-512 (kTallRowGroup rows of a short head over few keys).
template <class Tag>
struct AttentionRegisterBlock : AttentionSpans<Tag> {
  using AttentionSpans<Tag>::kScoreBlocks;
  using AttentionSpans<Tag>::span_values;
  using typename AttentionStreaming<Tag>::ScoreScale;
  using typename AttentionStreaming<Tag>::GroupKeys;
  using AttentionStreaming<Tag>::kTallRowGroup;
  using AttentionStreaming<Tag>::kTallHeadVecs;
  using AttentionStreaming<Tag>::kBlockVecs;
  using AttentionStreaming<Tag>::block_exps;
  using AttentionStreaming<Tag>::group_keys;
  using typename Elementwise<Tag>::I;
  using typename Elementwise<Tag>::V;
  using Elementwise<Tag>::L;
  using Elementwise<Tag>::kSub;
  using Elementwise<Tag>::sub_count;

  /// Score vectors per row a group holds in registers (kRows × 2 accumulators and 2 vectors of
  /// Kᵀ: 14 of AVX2's 16 registers): a whole key block on AVX-512, up to 16 keys on AVX2, whose
  /// block is four vectors. Groups over at most this many keys' vectors take
  /// attention_group_block, the others the spans through memory (a decoding step's heads over up to a
  /// whole block take it on AVX2 too, a few at a time: Attention::wide_head_groups).
  static constexpr index_t kRegisterBlockVecs = kBlockVecs < 2 ? kBlockVecs : 2;

  /// attention_group_spans for a group of R rows (prefix masks, every key_end >= 1) whose keys are
  /// one block of n_scored <= NB·L keys: the scores stay in registers from their product through
  /// the softmax step (stream_group_prefix's operations for a first block: division, maximum,
  /// exp(s - max) over the allowed keys, the canonical sum), and only the weights go to memory
  /// (a buffer of its own, at most a few KB of stack, so that tall groups need no more scratch)
  /// for the values' tiles. The queries are read before any output is written (they may alias).
  /// Heads: the rows are the heads of one query row (attention_heads): row r's keys are Kᵀ's rows
  /// from r·head_dim on and its values v + r·head_dim; else every row shares kt and v.
  template <index_t R, index_t NB, bool Heads = false>
  static void attention_group_block(const float* q, index_t q_stride, const float* kt, index_t kt_stride,
                                    const float* v, index_t v_stride, index_t head_dim, index_t n_scored,
                                    const ref::RowMask* mg, const ScoreScale& vscale, float* og, index_t out_stride) {
    constexpr index_t ps = NB * L;  // weights' row stride
    alignas(64) float p[R * ps];
    const index_t tail = n_scored - (NB - 1) * L;  // keys in the last score vector
    V s[R][NB];
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t b = 0; b < NB; ++b) s[r][b] = I::zero();
    }
    auto load_keys = [&](const float* kk, V* kv) {
#pragma GCC unroll 16
      for (index_t b = 0; b < NB; ++b)
        kv[b] = (b + 1 == NB && tail != L) ? I::load_partial(kk + b * L, tail) : I::load(kk + b * L);
    };
    const float* kk = kt;
    const index_t kt_row = Heads ? head_dim * kt_stride : 0;  // (row r's Kᵀ: kt + r·kt_row)
    for (index_t k = 0; k < head_dim; ++k, kk += kt_stride) {
      V kv[NB];
      if constexpr (!Heads) load_keys(kk, kv);
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
        if constexpr (Heads) load_keys(kk + r * kt_row, kv);
        const float x = q[r * q_stride + k];
#pragma GCC unroll 16
        for (index_t b = 0; b < NB; ++b) s[r][b] = I::fma_n(x, kv[b], s[r][b]);
      }
    }
    static constexpr float kLane[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const V lane = I::load(kLane);
    const V ninf = I::set1(-INFINITY);
    float l[R];
    index_t e[R];
    // in stages over the rows (as stream_group_prefix), so that the rows' dependent chains
    // (division, maximum, exp, sum) run side by side: divisions and vector maxima, horizontal
    // maxima, exponentials, canonical sums
    V vm[R];
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
      const index_t key_end = mg[r].key_end;
      e[r] = key_end < n_scored ? key_end : n_scored;  // >= 1
      vm[r] = ninf;
#pragma GCC unroll 16
      for (index_t b = 0; b < NB; ++b) {
        const index_t c = sub_count(e[r], b);
        // (lanes past the allowed keys -inf, as load_partial_or fills them: -inf / scale is -inf,
        // set after the division of the allowed lanes, whose lanes only are divided where a
        // narrower division is cheaper)
        if (c == L)  // (a whole vector: every lane allowed)
          s[r][b] = vscale.divide(s[r][b]);
        else
          s[r][b] =
              c ? I::select_gt(I::set1(static_cast<float>(c)), lane, vscale.divide_first(s[r][b], c), ninf) : ninf;
        if (c) vm[r] = I::max(s[r][b], vm[r]);
      }
    }
    // A tall group's horizontal maxima and canonical sums folded across its rows (the
    // vocabulary's reduce_max_rows and reduce16_rows: the same bits as a row's reduce_max and
    // reduce16, in half the shuffles; rows past R fold -inf and zeros)
    constexpr bool kFoldRows = R > kAttentionRowGroup;
    if constexpr (kFoldRows) {
      static_assert(R <= I::reduce_rows && kSub == 1);
      V pad[I::reduce_rows];
      alignas(64) float mx[I::reduce_rows];
#pragma GCC unroll 16
      for (index_t r = 0; r < I::reduce_rows; ++r) pad[r] = r < R ? vm[r] : ninf;
      I::reduce_max_rows(pad, mx);
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) vm[r] = I::set1(mx[r]);
    } else {
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) vm[r] = I::set1(I::reduce_max(vm[r]));
    }
    V acc[R][kSub];
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r)
      AttentionStreaming<Tag>::template block_exps<NB, true>(s[r], e[r], vm[r], p + r * ps, acc[r]);  // (p: NB vectors)
    if constexpr (kFoldRows) {
      V pad[I::reduce_rows];
#pragma GCC unroll 16
      for (index_t r = 0; r < I::reduce_rows; ++r) pad[r] = r < R ? acc[r][0] : I::zero();
      alignas(64) float sums[I::reduce_rows];
      I::reduce16_rows(pad, sums);
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) l[r] = sums[r];
    } else {
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) l[r] = I::reduce16(acc[r]);
    }
    float ones[kScoreBlocks][kTallRowGroup];
    for (index_t r = 0; r < R; ++r) ones[0][r] = 1.0f;  // (a first block rescales nothing)
    if constexpr (R > kAttentionRowGroup)
      AttentionSpans<Tag>::template span_values_inline<true, Heads>(p, ps, R, e, v, v_stride, head_dim, ones, true, l,
                                                                    og, out_stride, Heads ? head_dim : 0);
    else
      AttentionSpans<Tag>::template span_values<false, Heads>(p, ps, R, e, v, v_stride, head_dim, ones, true, l, og,
                                                              out_stride, Heads ? head_dim : 0);
  }

  /// attention_group_block for Lowest to R rows and nb <= kRegisterBlockVecs score vectors (tall
  /// groups, more than kAttentionRowGroup rows: TallNB, their own instantiations for one and for
  /// two score vectors, so that the short keys' tall groups keep their code as it was).
  template <index_t R, index_t Lowest = 1, bool Heads = false, index_t TallNB = 1>
  static void group_block_rows(index_t nr, index_t nb, const float* q, index_t q_stride, const float* kt,
                               index_t kt_stride, const float* v, index_t v_stride, index_t head_dim, index_t n_scored,
                               const ref::RowMask* mg, const ScoreScale& vscale, float* og, index_t out_stride) {
    if constexpr (R > Lowest) {
      if (nr < R)
        return group_block_rows<R - 1, Lowest, Heads, TallNB>(nr, nb, q, q_stride, kt, kt_stride, v, v_stride, head_dim,
                                                              n_scored, mg, vscale, og, out_stride);
    }
    if constexpr (R > kAttentionRowGroup)
      attention_group_block<R, TallNB, Heads>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, n_scored, mg, vscale,
                                              og, out_stride);
    else if (nb == 1)
      attention_group_block<R, 1, Heads>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, n_scored, mg, vscale, og,
                                         out_stride);
    else
      attention_group_block<R, kRegisterBlockVecs, Heads>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, n_scored,
                                                          mg, vscale, og, out_stride);
  }

  /// The first nt rows (kAttentionRowGroup < nt <= kTallRowGroup) as one tall group, when they qualify:
  /// prefix masks with a key each, at most kRegisterBlockVecs·L keys scored, head_dim <=
  /// kTallHeadVecs·L. Returns whether it took them.
  [[gnu::noinline]] static bool tall_group(const float* q, index_t q_stride, index_t nt, const float* kt,
                                           index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                           index_t n_keys, const ref::RowMask* mg, float scale, float* og,
                                           index_t out_stride) {
    if (head_dim > kTallHeadVecs * L) return false;
    const GroupKeys g = group_keys(mg, nt, n_keys);
    if (!g.prefixes || !g.every_key || g.n_scored > kRegisterBlockVecs * L) return false;
    if (g.n_scored > L) {
      tall_group_two(q, q_stride, nt, kt, kt_stride, v, v_stride, head_dim, g.n_scored, mg, scale, og, out_stride);
      return true;
    }
    const ScoreScale vscale(scale);
    group_block_rows<kTallRowGroup, kAttentionRowGroup + 1>(nt, 1, q, q_stride, kt, kt_stride, v, v_stride, head_dim,
                                                            g.n_scored, mg, vscale, og, out_stride);
    return true;
  }

  /// tall_group over two score vectors per row (L < n_scored <= 2·L keys): its own function, so that
  /// the one-vector tall groups' code stays as it was.
  [[gnu::noinline]] static void tall_group_two(const float* q, index_t q_stride, index_t nt, const float* kt,
                                               index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                               index_t n_scored, const ref::RowMask* mg, float scale, float* og,
                                               index_t out_stride) {
    const ScoreScale vscale(scale);
    group_block_rows<kTallRowGroup, kAttentionRowGroup + 1, false, kRegisterBlockVecs>(
        nt, kRegisterBlockVecs, q, q_stride, kt, kt_stride, v, v_stride, head_dim, n_scored, mg, vscale, og,
        out_stride);
  }
};

}  // namespace stf::kernels_detail::generic
