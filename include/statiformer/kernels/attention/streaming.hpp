// statiformer — attention, the streaming steps every target runs (online softmax over key blocks of
// kAttentionKeyBlock keys). See kernels/README.md and ARCHITECTURE.md (glossary).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/select.hpp>
#include <statiformer/kernels/product/generic.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/scalar.hpp>

namespace stf::kernels_detail::generic {

/// The steps of streaming attention (see ref::attention_row) that every target runs: one key block
/// of a row (stream_block) or of a group of prefix-masked rows (stream_group_prefix) turned into
/// weights with an online softmax (running maximum m, sum l, rescaled outputs), and the products
/// of weights with values.
template <class Tag>
struct AttentionStreaming : Product<Tag> {
  using Product<Tag>::gemm_plain;
  using typename Elementwise<Tag>::I;
  using typename Elementwise<Tag>::V;
  using Elementwise<Tag>::L;
  using Elementwise<Tag>::kSub;
  using Elementwise<Tag>::sub_count;
  using Elementwise<Tag>::sum;
  using Elementwise<Tag>::max_of;
  using Elementwise<Tag>::div_map;
  using Elementwise<Tag>::exp_shifted;
  using Elementwise<Tag>::exp_nonpositive;
  using Elementwise<Tag>::map;
  using Elementwise<Tag>::add;

  /// Rows of one group on 32-register vocabularies (AVX-512) when its scores are at most two vectors
  /// per row (at most 2·L keys) and its outputs at most kTallHeadVecs vectors: two groups' worth. Short
  /// heads over few keys are chains of dependent steps with little work each (products over a
  /// short reduction, a division, horizontal maxima and sums, exp); in one group the rows' chains
  /// run side by side instead of one group's after the other's.
  static constexpr index_t kTallRowGroup = AttentionSelect<Tag>::tall ? 2 * kAttentionRowGroup : kAttentionRowGroup;
  static constexpr index_t kTallHeadVecs = 2;

  static bool allowed(const ref::RowMask& mask, index_t j) { return mask.allows(j); }

  /// A streaming row's running sum l and outputs o rescaled from the maximum m to m_new:
  /// multiplied by exp(m - m_new). Skipped when the maximum did not move: exp(0) is exactly 1, so
  /// the products would change no bit.
  /// o: nullable (the caller multiplies the outputs by the returned factor itself, 1 when skipped).
  static float rescale(float m, float m_new, float& l, float* o, index_t head_dim) {
    if (m_new == m) return 1.0f;
    using S = isa::Vocabulary<isa::scalar>;
    const float c = simd_math::exp<S>(m - m_new);
    l = l * c;
    if (o) {
      const V vc = I::set1(c);
      map(o, o, head_dim, [&](V v) { return I::mul(v, vc); });
    }
    return c;
  }

  /// One block of a streaming row: turns its raw scores s[0, nb) (keys kb + i) into weights
  /// exp(s/scale - m') (0 for masked keys), updating the running maximum m, sum l and the output
  /// o (rescaled by exp(m - m')). Returns the end of the allowed prefix (prefix masks) or nb, and
  /// 0 when the block has no allowed key (then nothing changed).
  static index_t stream_block(float* s, index_t kb, index_t nb, const ref::RowMask& mask, float scale, bool& seen,
                              float& m, float& l, float* o, index_t head_dim) {
    index_t cnt = nb;  // keys [0, cnt) of the block may be allowed
    float bm;
    if (mask.prefix()) {
      cnt = mask.key_end > kb ? (mask.key_end - kb < nb ? mask.key_end - kb : nb) : 0;
      if (cnt == 0) return 0;
      div_map(s, s, cnt, scale);
      bm = max_of(s, cnt);
    } else {
      bool any = false;
      bm = 0.0f;
      const float* add = mask.additive();
      for (index_t i = 0; i < nb; ++i) {
        if (!allowed(mask, kb + i)) {
          s[i] = -INFINITY;
          continue;
        }
        s[i] = s[i] / scale;
        if (add) s[i] = s[i] + add[kb + i];
        bm = (!any || s[i] > bm) ? s[i] : bm;
        any = true;
      }
      if (!any) return 0;
    }
    const float m_new = (seen && m > bm) ? m : bm;
    if (seen) rescale(m, m_new, l, o, head_dim);
    exp_shifted(s, s, cnt, m_new);  // masked: exp(-inf) = 0
    for (index_t i = cnt; i < nb; ++i) s[i] = 0.0f;
    const float bsum = sum(s, nb);
    l = seen ? l + bsum : bsum;
    m = m_new;
    seen = true;
    return mask.prefix() ? cnt : nb;
  }

  /// Score vectors per key block.
  static constexpr index_t kBlockVecs = kAttentionKeyBlock / L;
  /// A block's weights: exp(x - m) of its first cnt keys (vectors x[0, NB), m in every lane of
  /// vmn), stored to w[0, cnt), and their canonical sum.
  template <index_t NB, bool WholeVectors = false>
  [[gnu::always_inline]] static float block_weights(const V* x, index_t cnt, V vmn, float* w) {
    V acc[kSub];
    block_exps<NB, WholeVectors>(x, cnt, vmn, w, acc);
    return I::reduce16(acc);
  }
  /// block_weights before its canonical sum: the weights stored, their 16-lane partial sums in acc.
  /// WholeVectors: w has room for NB whole vectors, and a partial one is stored whole, its lanes
  /// past cnt +0 (a masked store to memory is slow on AMD's cores).
  template <index_t NB, bool WholeVectors = false>
  [[gnu::always_inline]] static void block_exps(const V* x, index_t cnt, V vmn, float* w, V* acc) {
#pragma GCC unroll 16
    for (index_t j = 0; j < kSub; ++j) acc[j] = I::zero();
#pragma GCC unroll 16
    for (index_t b = 0; b < NB; ++b) {
      const index_t c = sub_count(cnt, b);
      if (!c) break;
      V e;
      if (c == L) {  // (a whole vector: nothing to mask, the same values)
        e = exp_nonpositive(I::sub(x[b], vmn));
        I::store(w + b * L, e);
      } else {
        e = I::keep_first(exp_nonpositive(I::keep_first(I::sub(x[b], vmn), c)), c);
        if constexpr (WholeVectors)
          I::store(w + b * L, e);
        else
          I::store_partial(w + b * L, e, c);
      }
      acc[b % kSub] = I::add(acc[b % kSub], e);
    }
  }
  /// The scores' divisor √head_dim: x / scale, computed as x · (1 / scale) when scale is a power
  /// of two (both are the rounding of the same real number, so the bits are the same), since a
  /// vector division takes several times an fma's throughput.
  struct ScoreScale {
    V scale, inverse;
    bool power_of_two;
    explicit ScoreScale(float s) : scale(I::set1(s)), inverse(I::set1(1.0f / s)) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &s, sizeof bits);
      power_of_two = s >= 1.0f && s <= 0x1p100f && (bits & 0x007fffffu) == 0;  // (1/s normal too)
    }
    V divide(V x) const { return power_of_two ? I::mul(x, inverse) : I::div(x, scale); }
    /// divide in the first n lanes, the others unspecified (the vocabulary's div_first: x86).
    V divide_first(V x, index_t n) const { return power_of_two ? I::mul(x, inverse) : I::div_first(x, scale, n); }
  };
  /// stream_block for the rows of a group whose masks are prefixes (allowed keys [0, key_end)),
  /// in stages over all the rows (divisions and maxima, then rescaling, then exponentials and
  /// sums): each row's chain of dependent operations is long (division, maximum, exp, canonical
  /// sum) and short of work, so the rows' chains run side by side instead of one after the other.
  /// On vocabularies wide enough that a block is a few vectors. The same operations on the same
  /// values as stream_block: lanes past the allowed keys are -inf for the maximum and +0 after the
  /// exponential (what stream_block writes there; computed as exp(0) masked to +0, since
  /// exp(-inf)'s subnormal intermediates cost a microcode assist per vector on x86), and adding
  /// those zeros to the non-negative canonical sum changes nothing. The allowed lanes' s - m' are
  /// <= 0 (or NaN), so their exp takes exp_nonpositive's steps. end[r]: allowed keys of row r in
  /// the block.
  /// og null: the outputs are not rescaled; factor[r] receives row r's factor instead (1 if none).
  /// WholeVectors: bs is a multiple of L, and a row's last weight vector is stored whole
  /// (block_exps').
  /// (Always inlined, as attention_group_spans: GCC inlined both into attention_groups by a margin that
  /// moved with unrelated code of the translation unit. With kernels/attention/x86_lanes.hpp included,
  /// even not instantiated, both went out of line and the decoding step 64×64×64×4×128, whose attention
  /// runs through them, took 13 % longer (bench/ab/ab.sh); pinned, it took what it did before.)
  template <bool WholeVectors = false>
  [[gnu::always_inline]] static inline void stream_group_prefix(float* p, index_t bs, index_t nr, index_t kb,
                                                                index_t nb, const ref::RowMask* mg,
                                                                const ScoreScale& vscale, bool* seen, float* m,
                                                                float* l, float* og, index_t out_stride,
                                                                index_t head_dim, index_t* end,
                                                                float* factor = nullptr) {
    const V ninf = I::set1(-INFINITY);
    V x[kAttentionRowGroup][kBlockVecs];
    float m_new[kAttentionRowGroup];
    for (index_t r = 0; r < nr; ++r) {
      const index_t key_end = mg[r].key_end;
      const index_t cnt = key_end > kb ? (key_end - kb < nb ? key_end - kb : nb) : 0;
      end[r] = cnt;
      const float* s = p + r * bs;
      V vm = ninf;
#pragma GCC unroll 16
      for (index_t i = 0; i < kBlockVecs; ++i) {
        const index_t c = sub_count(cnt, i);
        if (c == L)  // (a whole vector: nothing to fill)
          x[r][i] = vscale.divide(I::load(s + i * L));
        else
          x[r][i] = c ? vscale.divide(I::load_partial_or(s + i * L, c, -INFINITY)) : ninf;
        if (c) vm = I::max(x[r][i], vm);
      }
      const float bm = cnt ? I::reduce_max(vm) : 0.0f;
      m_new[r] = (seen[r] && m[r] > bm) ? m[r] : bm;
    }
    for (index_t r = 0; r < nr; ++r) {
      const float c =
          end[r] && seen[r] ? rescale(m[r], m_new[r], l[r], og ? og + r * out_stride : nullptr, head_dim) : 1.0f;
      if (factor) factor[r] = c;
    }
    for (index_t r = 0; r < nr; ++r) {
      const index_t cnt = end[r];
      if (!cnt) continue;
      float* s = p + r * bs;
      const float bsum = block_weights<kBlockVecs, WholeVectors>(x[r], cnt, I::set1(m_new[r]), s);
      l[r] = seen[r] ? l[r] + bsum : bsum;
      m[r] = m_new[r];
      seen[r] = true;
    }
  }

  /// What the masks of a group of nr rows ask: keys scored (the largest allowed end, at most
  /// n_keys), whether every mask is a prefix (no array), and whether every row has a key.
  struct GroupKeys {
    index_t n_scored;
    bool prefixes, every_key;
  };
  static GroupKeys group_keys(const ref::RowMask* mg, index_t nr, index_t n_keys) {
    GroupKeys g{0, true, true};
    for (index_t r = 0; r < nr; ++r) {
      const index_t e = mg[r].key_end < n_keys ? mg[r].key_end : n_keys;
      g.n_scored = e > g.n_scored ? e : g.n_scored;
      g.prefixes = g.prefixes && mg[r].prefix();
      g.every_key = g.every_key && mg[r].key_end > 0;
    }
    return g;
  }

  /// out[r, :] = Σ_{j < end[r]} p[r, j] · v[j] for nr rows, in key order (accumulate: continuing
  /// from out; else from +0, and every end[r] >= 1): the keys every row has as one register-tiled
  /// product, then each row's remaining keys continue its own sums.
  static void weighted_values_prefix(const float* p, index_t p_stride, index_t nr, const index_t* end, const float* v,
                                     index_t v_stride, index_t head_dim, float* out, index_t out_stride,
                                     bool accumulate) {
    index_t e_min = std::numeric_limits<index_t>::max();  // (nr >= 1)
    for (index_t r = 0; r < nr; ++r) e_min = end[r] < e_min ? end[r] : e_min;
    if (e_min) gemm_plain(p, p_stride, nr, e_min, v, v_stride, head_dim, out, out_stride, accumulate);
    for (index_t r = 0; r < nr; ++r)
      if (end[r] > e_min)
        gemm_plain(p + r * p_stride + e_min, p_stride, 1, end[r] - e_min, v + e_min * v_stride, v_stride, head_dim,
                   out + r * out_stride, out_stride, true);
  }

  /// out[d] = fma(p_j, v_j[d], out[d]) over the keys use(j) accepts, in key order, lane-wise over d
  /// (continuing from out's values); uniform: every key's weight is p[0]. For masks with holes
  /// and fully masked rows: prefix masks go through gemm.
  template <class Use>
  static void weighted_values_acc(const float* p, const float* v, index_t v_stride, index_t head_dim, index_t n_keys,
                                  Use use, float* out, bool uniform = false) {
    for (index_t d = 0; d < head_dim; d += L) {
      const index_t c = head_dim - d < L ? head_dim - d : L;
      V acc = I::load_partial(out + d, c);
      for (index_t j = 0; j < n_keys; ++j)
        if (use(j)) acc = I::fma_n(uniform ? p[0] : p[j], I::load_partial(v + j * v_stride + d, c), acc);
      I::store_partial(out + d, acc, c);
    }
  }
};

}  // namespace stf::kernels_detail::generic
