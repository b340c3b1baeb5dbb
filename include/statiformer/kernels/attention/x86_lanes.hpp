// statiformer — attention, x86 (AVX-512), part: rows in lanes. A call's 9 to 16 query rows of a short
// head (head_dim 8 or 16) over at most as many keys as rows (prefix masks with a key each), with the
// rows across the 16 lanes instead of the keys: every step of a row is then a lane of a vertical
// operation, for all the rows at once, and the cost does not grow with the rows up to 16 (the tall
// groups' row form, kernels/attention/register_block.hpp, costs a fixed amount per row: ~14 ns at
// 10 rows × 10 keys × 8 dims on Sapphire Rapids).
//  - Q is transposed in registers (two rows a vector, three rounds of shuffles per 8 columns), so
//    lane i < 8 holds row 2i and lane 8 + i row 2i + 1;
//  - the scores of key k: fma(q[·, d], k[d, k], s) over d from +0 (the query a vector across the
//    rows, the key's element broadcast: the same operands as the row form's fma_n), then / √head_dim
//    by the row form's ScoreScale;
//  - the maximum of each row's allowed scores: max(s, -inf) per key (a NaN score drops out, as the
//    row form's max(s, vm) drops it), then maxima across the keys in any order (no NaN is left, and
//    the sign of a zero maximum does not change s - m);
//  - exp_nonpositive(s - m) on the allowed lanes, +0 elsewhere (block_exps' steps);
//  - the canonical sum as vertical additions with reduce16's operands: lane j of a row's vector is
//    key j (at most 16 keys: one vector), folded i + (i+8), +4, +2, +1;
//  - P·V: fma(p[·, k], v[k, d], o) over the row's allowed keys in order from +0, then o / l; over the
//    keys every row allows (all of them without a mask) unmasked, which in those rows' lanes is the
//    same operation (the lanes past the rows are not stored; the masked form cost ~10 % of the call
//    at 10 rows × 10 keys × two heads of 8 on Zen 4), masked past them.
// A layer's heads of the same rows come in one call (Kernels::attention_rows_heads): heads of 8 dimensions
// go two at a time, one head a stage behind the other (head 1's scores beside head 0's exponentials, its
// exponentials beside head 0's P·V), so that one head's dependent chains (a key's 8 fmas, the exp, the
// sums) and its waits for a maximum fill the other's. Where every row attends to the same keys the layer
// passes one mask (one_mask) and no row's is compared. The keys'
// elements are only broadcast, so they come from Kᵀ or from K's rows alike (key_stride): a self-attention
// layer passes its K rows (Kernels::attention_lane_rows_heads) and transposes K only where this declines.
// AVX-512F instructions only (the avx512 variant is compiled with -mavx512f alone). Compiles to nothing
// unless AVX-512F is enabled (the avx512 variant's file).
#pragma once

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/streaming.hpp>
#include <statiformer/kernels/reference.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/x86_avx512.hpp>

namespace stf::kernels_detail::x86 {

/// AttentionSelect<avx512>::LaneRows: attention_lane_rows for the calls it takes. (Tag: avx512, which
/// names its symbols as the variant's, so that no other object defines them.)
template <class Tag>
struct AttentionLanes {
  static_assert(std::is_same_v<Tag, isa::avx512>);
  using I = isa::Vocabulary<Tag>;
  using V = __m512;
  static constexpr index_t kMaxRows = I::lanes;  ///< a vector of rows

  /// Whether the lanes take nr rows of head_dim over n scored keys: api.hpp's attention_lanes_take,
  /// the rule the layers also cut their calls by. Measured on Sapphire Rapids (ns, the row form as
  /// attention_rows runs it, tall groups of at most 12 rows / the lanes):
  /// head_dim 8, 10 keys: 7 rows 106/110, 9 rows 132/127, 10 rows 144/129, 12 rows 174/132, 16 rows
  /// 254/140; 16 keys: 11 rows 163/176, 12 rows 185/174, 16 rows 267/184; 32 keys, 16 rows 454/331;
  /// head_dim 16, 10 keys: 12 rows 200/211, 13 rows 255/205; 16 keys, 16 rows 289/273; 32 keys,
  /// 16 rows 423/427.
  static constexpr bool takes(index_t nr, index_t head_dim, index_t n) { return attention_lanes_take(nr, head_dim, n); }

  /// attention_rows for nr rows (9..kMaxRows) of head_dim 8 or 16 whose masks are prefixes
  /// with at least one key, where `takes` says so for the keys scored (so at most kMaxRows of them);
  /// returns false (nothing written) for any other call. n_heads: attention_rows_heads' heads of those
  /// rows (head h at column h·head_dim of q, v and og, row h·head_dim of kt), two at a time at head_dim 8.
  /// The keys: element d of key j at kt[d·kt_stride + j·key_stride] (Kᵀ: key_stride 1; K's rows: kt_stride 1,
  /// key_stride their stride; Kernels::attention_lane_rows_heads). one_mask: mg[0] is every row's mask (mg
  /// holds that one). (Inlined into its callers, the generic attention's entry points: a call less
  /// between the layer and lanes, whose arguments past the sixth go through the stack at every call;
  /// the encoder layer at 10×16×2×32 ~1 % faster, bench/ab/ab.sh on Zen 5.)
  [[gnu::always_inline]] static inline bool attention_lane_rows(const float* q, index_t q_stride, index_t nr,
                                                                const float* kt, index_t kt_stride, const float* v,
                                                                index_t v_stride, index_t head_dim, index_t n_keys,
                                                                const ref::RowMask* mg, float* og, index_t out_stride,
                                                                index_t n_heads = 1, index_t key_stride = 1,
                                                                bool one_mask = false) {
    if (!takes(nr, head_dim, 1)) return false;
    index_t n = 0, n_all = n_keys;
    alignas(64) std::int32_t ends[16] = {};  // ends[lane_of(r)]: row r's allowed keys (0 in the lanes past nr)
    const std::int32_t* end = ends;          // null: every row's are n_all
    // one prefix for every row (no mask, a padding mask): lanes builds the rows' ends in a register, instead
    // of loading them from ends (a vector load of ten scalar stores waits until they reach the cache: 1.4 %
    // of the encoder layer at 10×16×2×32, Zen 4)
    index_t other = 0;
    if (!one_mask)
      for (index_t r = 1; r < nr; ++r) other |= (mg[r].key_end != mg[0].key_end) | !mg[r].prefix();
    if (!other) {
      const index_t e = mg[0].key_end < n_keys ? mg[0].key_end : n_keys;
      if (!mg[0].prefix() || e == 0 || !takes(nr, head_dim, e)) return false;
      n = n_all = e;
      end = nullptr;
    } else {
      for (index_t r = 0; r < nr; ++r) {  // (declined at the first row past the keys it takes)
        const index_t e = mg[r].key_end < n_keys ? mg[r].key_end : n_keys;
        if (!mg[r].prefix() || e == 0 || !takes(nr, head_dim, e)) return false;
        n = e > n ? e : n;
        n_all = e < n_all ? e : n_all;
        ends[lane_of(r)] = static_cast<std::int32_t>(e);
      }
    }
    const float scale = std::sqrt(static_cast<float>(head_dim));
    index_t h = 0;
    if (head_dim == 8) {
      for (; h + 2 <= n_heads; h += 2) {
        const index_t off = h * 8;
        lanes<8, 2>(q + off, q_stride, nr, kt + off * kt_stride, kt_stride, key_stride, v + off, v_stride, n, n_all,
                    end, scale, og + off, out_stride);
      }
    }
    for (; h < n_heads; ++h) {
      const index_t off = h * head_dim;
      if (head_dim == 8)
        lanes<8>(q + off, q_stride, nr, kt + off * kt_stride, kt_stride, key_stride, v + off, v_stride, n, n_all, end,
                 scale, og + off, out_stride);
      else
        lanes<16>(q + off, q_stride, nr, kt + off * kt_stride, kt_stride, key_stride, v + off, v_stride, n, n_all, end,
                  scale, og + off, out_stride);
    }
    return true;
  }

  /// The lane of row r: rows 0, 2, ..., 14 in lanes 0..7, rows 1, 3, ..., 15 in lanes 8..15 (the order
  /// the transposes below leave them in).
  static constexpr index_t lane_of(index_t r) { return (r & 1) * 8 + r / 2; }

  /// z[j] = [row 2j | row 2j + 1] (8 floats each) → t[c]: column c of the 16 rows in lane_of order;
  /// and back (the same shuffles map t to z).
  [[gnu::always_inline]] static inline void transpose8(const V* z, V* t) {
    V b[8];
    I::transpose_quarters4(z[0], z[1], z[2], z[3], b);
    I::transpose_quarters4(z[4], z[5], z[6], z[7], b + 4);
    // (b[i], b[i + 4]: quarters of column i, i + 4 of the even rows 0-6, 8-14 and the odd rows) then
    // the quarters: column i (lo) and i + 4 (hi) of the even rows in lanes 0-7, of the odd in 8-15
    const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    const __m512i hi = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      t[i] = _mm512_permutex2var_ps(b[i], lo, b[i + 4]);
      t[i + 4] = _mm512_permutex2var_ps(b[i], hi, b[i + 4]);
    }
  }

  /// Which lanes (rows) allow key k: those whose end is past it.
  [[gnu::always_inline]] static inline __mmask16 allowed(__m512i ends, index_t k) {
    return _mm512_cmpgt_epi32_mask(ends, _mm512_set1_epi32(static_cast<std::int32_t>(k)));
  }

  /// The call, n (1..kMaxRows) keys scored, n_all (<= n) of them allowed by every row, ends[lane_of(r)] row r's
  /// allowed keys (0 in the lanes past nr), or ends null where every row allows n_all.
  /// NH heads (1, or 2 of 8 dimensions; the rows and masks shared): head h's queries, values and outputs from
  /// column h·HD of q, v and og, its keys from row h·HD of kt. Each head takes the same steps (below, as
  /// functions of h: the same bits whatever the order of the heads); one head runs them in turn, two heads
  /// of 8 skewed by a stage, so that each stage of one head has the other's work beside it: head 0's scores;
  /// head 1's scores with head 0's exponentials; head 1's exponentials with head 0's P·V; head 1's P·V.
  /// (Both heads' steps side by side, stage by stage, waited at each stage for both heads' maxima or
  /// sums: the call at 10 rows × 10 keys took 140 ns where the skewed order takes 128, Zen 5.)
  template <int HD, int NH = 1>
  [[gnu::noinline]] static void lanes(const float* q, index_t q_stride, index_t nr, const float* kt, index_t kt_stride,
                                      index_t key_stride, const float* v, index_t v_stride, index_t n, index_t n_all,
                                      const std::int32_t* ends, float scale, float* og, index_t out_stride) {
    static_assert(NH == 1 || (NH == 2 && HD == 8));
    const auto rows = static_cast<__mmask16>(((1u << ((nr + 1) / 2)) - 1) | (((1u << (nr / 2)) - 1) << 8));
    const __m512i end =
        ends ? _mm512_load_si512(ends) : _mm512_maskz_set1_epi32(rows, static_cast<std::int32_t>(n_all));
    alignas(64) float sb[NH][16 * 16];  // head h's key k's scores, then its weights, at sb[h] + 16·k
    const typename generic::AttentionStreaming<Tag>::ScoreScale vscale(scale);  // (the row form's division)
    const V ninf = I::set1(-INFINITY);
    V qt[NH][HD], m0[NH], m1[NH], vm[NH], l[NH], o[NH][HD];
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) {
#pragma GCC unroll 2
      for (int c = 0; c < HD; c += 8) {
        V z[8];
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          const index_t r = 2 * j;
          const float* qh = q + h * HD + c;
          const __m256 a = r < nr ? _mm256_loadu_ps(qh + r * q_stride) : _mm256_setzero_ps();
          const __m256 b = r + 1 < nr ? _mm256_loadu_ps(qh + (r + 1) * q_stride) : _mm256_setzero_ps();
          z[j] =
              _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(a)), _mm256_castps_pd(b), 1));
        }
        transpose8(z, qt[h] + c);
      }
      m0[h] = m1[h] = ninf;
#pragma GCC unroll 16
      for (int d = 0; d < HD; ++d) o[h][d] = I::zero();
    }
    // head h's key k: its scores stored, their maximum over the allowed lanes taken (two chains, keys
    // alternating)
    const auto score = [&](int h, index_t k) [[gnu::always_inline]] {
      const __mmask16 a = allowed(end, k);
      const float* kh = kt + h * HD * kt_stride + k * key_stride;
      V s = I::zero();
#pragma GCC unroll 16
      for (int d = 0; d < HD; ++d) s = _mm512_fmadd_ps(qt[h][d], I::set1(kh[d * kt_stride]), s);
      s = vscale.divide(s);
      I::store(sb[h] + 16 * k, s);
      const V sk = _mm512_mask_max_ps(ninf, a, s, ninf);
      if (k & 1)
        m1[h] = I::max(m1[h], sk);
      else
        m0[h] = I::max(m0[h], sk);
    };
    // head h's maximum, from its two chains
    const auto maximum = [&](int h) [[gnu::always_inline]] { vm[h] = I::max(m0[h], m1[h]); };
    const auto scores = [&](int h) [[gnu::always_inline]] {
      for (index_t k = 0; k < n; ++k) score(h, k);
      maximum(h);
    };
    // head h's key k: its weights exp(s - m) on the allowed lanes, +0 elsewhere
    const auto weights = [&](int h, index_t k) [[gnu::always_inline]] {
      const __mmask16 a = allowed(end, k);
      const V x = _mm512_maskz_sub_ps(a, I::load(sb[h] + 16 * k), vm[h]);
      I::store(sb[h] + 16 * k, _mm512_maskz_mov_ps(a, simd_math::exp_nonpositive<I>(x)));
    };
    // head h's canonical sum of its weights (the keys past n: +0, zero-masked loads; a loop of stores of
    // zeros there became a call of memset, around which GCC saved and restored the live vector registers)
    const auto weight_or_zero = [&](int h, index_t k) [[gnu::always_inline]] {
      return _mm512_maskz_load_ps(static_cast<__mmask16>(k < n ? 0xFFFF : 0), sb[h] + 16 * k);
    };
    const auto sum = [&](int h) [[gnu::always_inline]] {
      V t[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) t[i] = I::add(weight_or_zero(h, i), weight_or_zero(h, i + 8));
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) t[i] = I::add(t[i], t[i + 4]);
#pragma GCC unroll 2
      for (int i = 0; i < 2; ++i) t[i] = I::add(t[i], t[i + 2]);
      l[h] = I::add(t[0], t[1]);
    };
    // head h's key k in P·V, masked by the rows' ends or not (a key every row allows)
    const auto value = [&]<bool Masked>(int h, index_t k) [[gnu::always_inline]] {
      const __mmask16 a = allowed(end, k);
      const V p = I::load(sb[h] + 16 * k);
      const float* vk = v + k * v_stride + h * HD;
#pragma GCC unroll 16
      for (int d = 0; d < HD; ++d)
        o[h][d] = Masked ? _mm512_mask3_fmadd_ps(p, I::set1(vk[d]), o[h][d], a) : I::fma(p, I::set1(vk[d]), o[h][d]);
    };
    // head h's outputs o / l, transposed back to rows
    const auto finish = [&](int h) [[gnu::always_inline]] {
#pragma GCC unroll 16
      for (int d = 0; d < HD; ++d) o[h][d] = I::div(o[h][d], l[h]);
#pragma GCC unroll 2
      for (int c = 0; c < HD; c += 8) {
        V z[8];
        transpose8(o[h] + c, z);
        float* oh = og + h * HD + c;
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          const index_t r = 2 * j;
          if (r < nr) _mm256_storeu_ps(oh + r * out_stride, _mm512_castps512_ps256(z[j]));
          if (r + 1 < nr)
            _mm256_storeu_ps(oh + (r + 1) * out_stride,
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(z[j]), 1)));
        }
      }
    };
    if constexpr (NH == 1) {
      scores(0);
      for (index_t k = 0; k < n; ++k) weights(0, k);
      sum(0);
      for (index_t k = 0; k < n_all; ++k) value.template operator()<false>(0, k);
      for (index_t k = n_all; k < n; ++k) value.template operator()<true>(0, k);
      finish(0);
    } else {
      scores(0);
      for (index_t k = 0; k < n; ++k) {
        score(1, k);
        weights(0, k);
      }
      maximum(1);
      sum(0);
      for (index_t k = 0; k < n_all; ++k) {
        weights(1, k);
        value.template operator()<false>(0, k);
      }
      for (index_t k = n_all; k < n; ++k) {
        weights(1, k);
        value.template operator()<true>(0, k);
      }
      sum(1);
      finish(0);
      // (the one-head path's two loops, written out: as a lambda of h called here, the encoder layer at
      // 10×16×2×32 took 3-4 % longer, bench/ab/ab.sh on Zen 5)
      for (index_t k = 0; k < n_all; ++k) value.template operator()<false>(1, k);
      for (index_t k = n_all; k < n; ++k) value.template operator()<true>(1, k);
      finish(1);
    }
  }
};

}  // namespace stf::kernels_detail::x86

#endif
