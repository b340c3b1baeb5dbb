// statiformer — attention, x86 (AVX-512), part: the softmax steps with the rows in lanes, over key
// blocks. A call's 16 query rows of a head of 16 to 64 dimensions (a multiple of 16), all attending to
// the same keys [0, e), e > 16 (no mask, or one prefix for every row): the scores and the online
// softmax's steps have the rows across the 16 lanes, so that a row's maximum, sum and rescale factor
// are lanes of vertical operations, for the 16 rows at once, instead of horizontal reductions, scalar
// exponentials and branches row by row (the row form, kernels/attention/wide_spans.hpp); the products
// with the values keep the row form (the weights, key-major, are its broadcast operands).
//  - Qᵀ by the vocabulary's 16 × 16 transposes (lane r: row r), kept in scratch on the stack;
//  - the scores of key j: fma(qᵀ[d], k[d, j], s) over d from +0 (the key's element broadcast: the
//    row form's operands), then / √head_dim by the row form's ScoreScale;
//  - per block of kAttentionKeyBlock keys: the block's maximum max(s, m) over its keys in order
//    from -inf (a NaN score drops out, as in the row form), m' = max(m, bm) (m > bm ? m : bm), the
//    factor exp(m - m') where m' differs from m (else 1: x·1 = x, the row form's skip), l·c;
//    exp_nonpositive(s - m') (block_exps' steps); the block's canonical sum as vertical additions
//    with reduce16's operands (key i + key 16 + i, then folds 8, 4, 2, 1), l + sum;
//  - P·V in the row form per span of kAttentionScoreKeys keys: the outputs times each block's
//    factor at its start, fma(p[r, k], v[k, :], o) over the keys in order (from +0 in the first
//    span), and o / l in the last: values_tile's operations.
// The operations of stream_block per row and output, in the same order: the same bits as the row
// form (the kernel checks compare both with the reference). AVX-512F instructions only. Compiles to
// nothing unless AVX-512F is enabled (the avx512 variant's file).
#pragma once

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

#include <cmath>
#include <type_traits>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/streaming.hpp>
#include <statiformer/kernels/reference.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/x86_avx512.hpp>

namespace stf::kernels_detail::x86 {

/// AttentionSelect<avx512>::LaneBlocks: attention_lane_blocks for the calls it takes.
template <class Tag>
struct AttentionLaneBlocks {
  static_assert(std::is_same_v<Tag, isa::avx512>);
  using I = isa::Vocabulary<Tag>;
  using V = __m512;
  static constexpr index_t kRows = I::lanes;  ///< a vector of rows
  static constexpr index_t B = kAttentionKeyBlock, W = kAttentionScoreKeys;
  static constexpr index_t kBlocks = W / B;

  /// Whether the lanes take nr rows of head_dim over n keys (api.hpp's attention_lane_blocks_take).
  static constexpr bool takes(index_t nr, index_t head_dim, index_t n) {
    return attention_lane_blocks_take(nr, head_dim, n);
  }

  /// attention_rows for kRows rows whose masks are one prefix [0, e) where `takes` says so for e keys
  /// (over n_keys scored); returns false (nothing written) for any other call.
  [[gnu::noinline]] static bool attention_lane_blocks(const float* q, index_t q_stride, index_t nr, const float* kt,
                                                      index_t kt_stride, const float* v, index_t v_stride,
                                                      index_t head_dim, index_t n_keys, const ref::RowMask* mg,
                                                      float* og, index_t out_stride) {
    if (nr != kRows || !mg[0].prefix()) return false;
    for (index_t r = 1; r < nr; ++r)
      if (!mg[r].prefix() || mg[r].key_end != mg[0].key_end) return false;
    const index_t e = mg[0].key_end < n_keys ? mg[0].key_end : n_keys;
    if (!takes(nr, head_dim, e)) return false;
    switch (head_dim / 16) {
      case 1:
        run<1>(q, q_stride, kt, kt_stride, v, v_stride, e, og, out_stride);
        break;
      case 2:
        run<2>(q, q_stride, kt, kt_stride, v, v_stride, e, og, out_stride);
        break;
      case 3:
        run<3>(q, q_stride, kt, kt_stride, v, v_stride, e, og, out_stride);
        break;
      default:
        run<4>(q, q_stride, kt, kt_stride, v, v_stride, e, og, out_stride);
        break;
    }
    return true;
  }

  /// The call for head_dim 16·NQ over e keys.
  template <int NQ>
  static void run(const float* q, index_t q_stride, const float* kt, index_t kt_stride, const float* v,
                  index_t v_stride, index_t e, float* og, index_t out_stride) {
    constexpr index_t hd = 16 * NQ;
    alignas(64) float qt[hd * 16];      // qt[d·16 + r]: element d of row r
    alignas(64) float pt[W * 16];       // the span's weights, key-major: pt[k·16 + r]
    alignas(64) float cf[kBlocks][16];  // block b's factor of row r
    alignas(64) float ls[16];           // the sums, for the last span's division
#pragma GCC unroll 4
    for (int c = 0; c < NQ; ++c) I::transpose_tile(q + c * 16, q_stride, qt + c * 16 * 16, 16);
    const typename generic::AttentionStreaming<Tag>::ScoreScale vscale(std::sqrt(static_cast<float>(hd)));
    const V ninf = I::set1(-INFINITY), one = I::set1(1.0f);
    V m = ninf, l = I::zero();
    bool seen = false;
    for (index_t s0 = 0; s0 < e; s0 += W) {
      const index_t ns = e - s0 < W ? e - s0 : W;
      for (index_t b = 0; b * B < ns; ++b) {
        const index_t kb = b * B, nb = ns - kb < B ? ns - kb : B;
        float* pb = pt + kb * 16;
        scores<hd>(qt, kt + s0 + kb, kt_stride, nb < 16 ? nb : 16, vscale, pb);
        if (nb > 16) scores<hd>(qt, kt + s0 + kb + 16, kt_stride, nb - 16, vscale, pb + 16 * 16);
        V vm = ninf;
        for (index_t j = 0; j < nb; ++j) vm = _mm512_max_ps(I::load(pb + j * 16), vm);
        V c = one;
        V m_new = vm;
        if (seen) {
          m_new = _mm512_max_ps(m, vm);  // (m > bm ? m : bm)
          const __mmask16 moved = _mm512_cmp_ps_mask(m_new, m, _CMP_NEQ_UQ);
          c = _mm512_mask_mov_ps(one, moved, simd_math::exp_inline<I>(_mm512_sub_ps(m, m_new)));
          l = _mm512_mul_ps(l, c);
        }
        I::store(cf[b], c);
        // the weights, and their canonical sum: a[i] = (+0 + key i) + (key 16 + i), folded 8, 4, 2, 1 (as
        // block_exps; without the +0, the same value since a weight is never -0, the layer at 25×64×4×128 timed
        // 1.009 of this, the others 0.994-1.001: ab.sh, session 56)
        V a[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) {
          V w0 = I::zero(), w1 = I::zero();
          if (static_cast<index_t>(i) < nb) {
            w0 = simd_math::exp_nonpositive<I>(_mm512_sub_ps(I::load(pb + i * 16), m_new));
            I::store(pb + i * 16, w0);
          }
          if (static_cast<index_t>(16 + i) < nb) {
            w1 = simd_math::exp_nonpositive<I>(_mm512_sub_ps(I::load(pb + (16 + i) * 16), m_new));
            I::store(pb + (16 + i) * 16, w1);
          }
          a[i] = _mm512_add_ps(_mm512_add_ps(I::zero(), w0), w1);
        }
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) a[i] = _mm512_add_ps(a[i], a[i + 8]);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) a[i] = _mm512_add_ps(a[i], a[i + 4]);
#pragma GCC unroll 2
        for (int i = 0; i < 2; ++i) a[i] = _mm512_add_ps(a[i], a[i + 2]);
        const V bsum = _mm512_add_ps(a[0], a[1]);
        l = seen ? _mm512_add_ps(l, bsum) : bsum;
        m = m_new;
        seen = true;
      }
      const bool last = s0 + ns >= e;
      if (last) I::store(ls, l);
      values<NQ>(pt, ns, v + s0 * v_stride, v_stride, cf, s0 == 0, last ? ls : nullptr, og, out_stride);
    }
  }

  /// The scaled scores of n (1..16) keys from kt (key j at kt + j, element d at kt + d·kt_stride + j) for
  /// the 16 rows of qt, stored key-major to p (p + j·16).
  template <index_t HD>
  [[gnu::always_inline]] static inline void scores(const float* qt, const float* kt, index_t kt_stride, index_t n,
                                                   const typename generic::AttentionStreaming<Tag>::ScoreScale& vscale,
                                                   float* p) {
    if (n == 16) return scores_n<HD, 16>(qt, kt, kt_stride, vscale, p);
    scores_tail<HD, 15>(n, qt, kt, kt_stride, vscale, p);
  }
  template <index_t HD, int N>
  static void scores_tail(index_t n, const float* qt, const float* kt, index_t kt_stride,
                          const typename generic::AttentionStreaming<Tag>::ScoreScale& vscale, float* p) {
    if constexpr (N > 1) {
      if (n < N) return scores_tail<HD, N - 1>(n, qt, kt, kt_stride, vscale, p);
    }
    scores_n<HD, N>(qt, kt, kt_stride, vscale, p);
  }
  template <index_t HD, int N>
  [[gnu::always_inline]] static inline void scores_n(
      const float* qt, const float* kt, index_t kt_stride,
      const typename generic::AttentionStreaming<Tag>::ScoreScale& vscale, float* p) {
    V s[N];
#pragma GCC unroll 16
    for (int j = 0; j < N; ++j) s[j] = I::zero();
    const float* kd = kt;
    for (index_t d = 0; d < HD; ++d, kd += kt_stride) {
      const V qd = I::load(qt + d * 16);
#pragma GCC unroll 16
      for (int j = 0; j < N; ++j) s[j] = I::fma(qd, I::set1(kd[j]), s[j]);
    }
#pragma GCC unroll 16
    for (int j = 0; j < N; ++j) I::store(p + j * 16, vscale.divide(s[j]));
  }

  /// P·V of a span of n keys for the 16 rows (row form): rows in tiles of R (NV·R accumulators).
  template <int NQ>
  static void values(const float* pt, index_t n, const float* v, index_t v_stride, const float (*cf)[16],
                     bool from_zero, const float* ls, float* og, index_t out_stride) {
    // (16 or 8 rows a tile, 4 at 64 dimensions: 16 accumulators. At 32 dimensions tiles of 12 + 4 rows
    // made the encoder layer at 128×256×8×1024 0.8 % slower than 8 + 8, ab.sh; at 64, 6 + 6 + 4 timed the same)
    constexpr int R = NQ == 1 ? 16 : (NQ == 4 ? 4 : 8);
#pragma GCC unroll 1
    for (int r0 = 0; r0 < 16; r0 += R) values_tile<R, NQ>(r0, pt, n, v, v_stride, cf, from_zero, ls, og, out_stride);
  }
  template <int R, int NV>
  static void values_tile(int r0, const float* pt, index_t n, const float* v, index_t v_stride, const float (*cf)[16],
                          bool from_zero, const float* ls, float* og, index_t out_stride) {
    V acc[R][NV];
    float* o = og + r0 * out_stride;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int i = 0; i < NV; ++i) acc[r][i] = from_zero ? I::zero() : I::load(o + r * out_stride + i * 16);
    }
    for (index_t kb = 0; kb < n; kb += B) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const V c = I::set1(cf[kb / B][r0 + r]);
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) acc[r][i] = I::mul(acc[r][i], c);
      }
      const index_t k1 = n - kb < B ? n : kb + B;
      const float* vk = v + kb * v_stride;
      for (index_t k = kb; k < k1; ++k, vk += v_stride) {
        V wv[NV];
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) wv[i] = I::load(vk + i * 16);
        const float* pk = pt + k * 16 + r0;
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
          for (int i = 0; i < NV; ++i) acc[r][i] = I::fma_n(pk[r], wv[i], acc[r][i]);
        }
      }
    }
    if (ls) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const V lv = I::set1(ls[r0 + r]);
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) acc[r][i] = I::div(acc[r][i], lv);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int i = 0; i < NV; ++i) I::store(o + r * out_stride + i * 16, acc[r][i]);
    }
  }
};

}  // namespace stf::kernels_detail::x86

#endif
