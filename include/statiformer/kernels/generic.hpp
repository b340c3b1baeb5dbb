// statiformer — every kernel, written once on the SIMD vocabulary I = isa::Vocabulary<Tag>, in the
// canonical order of kernels/api.hpp. Included only by src/kernels/variant_<isa>.cpp, each compiled
// with its ISA's flags; layers see only kernels/api.hpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <statiformer/kernels/api.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/scalar.hpp>

// The targets' kernels (kernels/<op>/<target>.hpp; each compiles to nothing where its target's
// instructions are not enabled). Each operation's select.hpp includes its own; they come first here,
// in this order, on purpose (product, elementwise, norm, attention, each block on its own so that
// clang-format keeps it): it is the order these kernels had inside the vocabularies, and GCC's
// inlining breaks ties by declaration order (alphabetical order: the same instruction counts, but
// 1,080 B more .text on the M55, tile_nv instantiated differently).
#include <statiformer/kernels/product/cortex_m4f.hpp>
//
#include <statiformer/kernels/elementwise/cortex_m4f.hpp>
//
#include <statiformer/kernels/norm/cortex_m4f.hpp>
//
#include <statiformer/kernels/attention/cortex_m4f.hpp>
//
#include <statiformer/kernels/product/helium.hpp>
//
#include <statiformer/kernels/elementwise/helium.hpp>
//
#include <statiformer/kernels/norm/helium.hpp>
//
#include <statiformer/kernels/attention/helium.hpp>
// which variant of each operation each target runs (Generic asks them)
#include <statiformer/kernels/attention/select.hpp>
#include <statiformer/kernels/elementwise/select.hpp>
#include <statiformer/kernels/norm/select.hpp>
#include <statiformer/kernels/product/select.hpp>

// Register tiles only stay in registers when their small constant loops are fully unrolled:
// those loops carry `#pragma GCC unroll 16`.

namespace stf::kernels_detail {

template <class Tag>
struct Generic {
  using I = isa::Vocabulary<Tag>;
  /// The target's own kernels for some operations, as each operation's selection names them
  /// (kernels/<op>/select.hpp): a struct, or void where Generic's vocabulary code runs.
  using Tile4 = typename ProductSelect<Tag>::Tile4;
  using RowTile = typename ProductSelect<Tag>::RowTile;
  using Panels = typename ProductSelect<Tag>::Panels;
  using PrefixRows = typename AttentionSelect<Tag>::PrefixRows;
  using Div = typename ElementwiseSelect<Tag>::Div;
  using ExpShifted = typename ElementwiseSelect<Tag>::ExpShifted;
  using Add = typename ElementwiseSelect<Tag>::Add;
  using V = typename I::V;
  static constexpr index_t L = I::lanes;
  static constexpr index_t kSub = 16 / L;  ///< vectors per 16-lane block
  static_assert(16 % L == 0, "a vector must hold a divisor of 16 lanes");

  /// Lanes of sub-vector s of a block that holds `count` valid elements.
  static constexpr index_t sub_count(index_t count, index_t s) {
    return count > s * L ? (count - s * L < L ? count - s * L : L) : 0;
  }

  // ---- reductions in the canonical order ------------------------------------------------------
  /// The canonical 16-lane reduction of f(element) over x[0, n): the transformed value of lane
  /// vector s of each block, with `c` valid lanes, is combined into acc[s] by `step`; padding lanes
  /// must leave f's value 0 (f receives c to mask them). Then the lanes are folded.
  template <class F, class Step>
  static float reduce_lanes(const float* x, index_t n, F f, Step step) {
    V acc[kSub];
#pragma GCC unroll 16
    for (index_t s = 0; s < kSub; ++s) acc[s] = I::zero();
    index_t k = 0;
    for (; k + 16 <= n; k += 16) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) acc[s] = step(acc[s], f(I::load(x + k + s * L), L));
    }
    if (k < n) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) {
        const index_t c = sub_count(n - k, s);
        acc[s] = step(acc[s], f(I::load_partial(x + k + s * L, c), c));
      }
    }
    return I::reduce16(acc);
  }

  static float dot(const float* a, const float* b, index_t n) {
    V acc[kSub];
#pragma GCC unroll 16
    for (index_t s = 0; s < kSub; ++s) acc[s] = I::zero();
    index_t k = 0;
    for (; k + 16 <= n; k += 16) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) acc[s] = I::fma(I::load(a + k + s * L), I::load(b + k + s * L), acc[s]);
    }
    if (k < n) {
#pragma GCC unroll 16
      for (index_t s = 0; s < kSub; ++s) {
        const index_t c = sub_count(n - k, s);
        acc[s] = I::fma(I::load_partial(a + k + s * L, c), I::load_partial(b + k + s * L, c), acc[s]);
      }
    }
    return I::reduce16(acc);
  }

  static float sum(const float* x, index_t n) {
    return reduce_lanes(
        x, n, [](V v, index_t) { return v; }, [](V acc, V v) { return I::add(acc, v); });
  }

  // ---- element-wise ------------------------------------------------------------------------------
  /// y[i] = x[i] / d, i < n (y may be x): the target's loop where it has one (Cortex-M4F/M7:
  /// kernels/elementwise/cortex_m4f.hpp).
  static void div_map(const float* x, float* y, index_t n, float d) {
    if constexpr (!std::is_void_v<Div>) {
      Div::div_n(x, y, n, d);
    } else {
      const V vd = I::set1(d);
      map(x, y, n, [&](V v) { return I::div(v, vd); });
    }
  }
  /// y[i] = exp(x[i] - m), i < n (the softmax's weights; y may be x): the target's loop where
  /// it has one (kernels/elementwise/helium.hpp), the same operations.
  static void exp_shifted(const float* x, float* y, index_t n, float m) {
    if constexpr (!std::is_void_v<ExpShifted>) {
      ExpShifted::exp_shifted(x, y, n, m);
    } else {
      const V vm = I::set1(m);
      map(x, y, n, [&](V v) { return exp_v(I::sub(v, vm)); });
    }
  }

  /// simd_math::exp, or the vocabulary's kernel of the same operations where it has one (Cortex-M
  /// scalar: simd/scalar.hpp; not simd_math's own hook, which the reference would take too).
  /// Inlined on wide vocabularies (x86: a call spills every live vector register).
  [[gnu::always_inline]] static V exp_v(V x) {
    if constexpr (requires { I::exp_kernel(x); })
      return I::exp_kernel(x);
    else if constexpr (L >= 8)
      return simd_math::exp_inline<I>(x);
    else
      return simd_math::exp<I>(x);
  }

  /// exp_v for x <= 0 or NaN (a softmax's s - max): simd_math::exp_nonpositive, the same bits
  /// with fewer steps, where no vocabulary kernel takes it.
  [[gnu::always_inline]] static V exp_nonpositive(V x) {
    if constexpr (requires { I::exp_kernel(x); })
      return I::exp_kernel(x);
    else
      return simd_math::exp_nonpositive<I>(x);
  }

  template <class F>
  static void map(const float* x, float* y, index_t n, F f) {
    index_t i = 0;
    for (; i + L <= n; i += L) I::store(y + i, f(I::load(x + i)));
    if (i < n) I::store_partial(y + i, f(I::load_partial(x + i, n - i)), n - i);
  }

  /// y[i] = f(a[i], b[i], c[i]) vector by vector.
  template <class F>
  static void map3(const float* a, const float* b, const float* c, float* y, index_t n, F f) {
    index_t i = 0;
    for (; i + L <= n; i += L) I::store(y + i, f(I::load(a + i), I::load(b + i), I::load(c + i)));
    if (i < n)
      I::store_partial(
          y + i, f(I::load_partial(a + i, n - i), I::load_partial(b + i, n - i), I::load_partial(c + i, n - i)), n - i);
  }

  static void activation(Activation a, float* x, index_t n) {
    if (a == Activation::relu)
      map(x, x, n, [](V v) { return simd_math::relu<I>(v); });
    else
      map(x, x, n, [](V v) { return simd_math::gelu<I>(v); });
  }

  static void add(float* y, const float* x, index_t n) {
    if constexpr (!std::is_void_v<Add>) return Add::add_n(y, x, n);  // Cortex-M
    index_t i = 0;
    for (; i + L <= n; i += L) I::store(y + i, I::add(I::load(y + i), I::load(x + i)));
    if (i < n) I::store_partial(y + i, I::add(I::load_partial(y + i, n - i), I::load_partial(x + i, n - i)), n - i);
  }

  // ---- transpose ----------------------------------------------------------------------------------
  /// The rows [r0, r1) and columns [c0, c1) of a transpose, element by element in 16 × 16 blocks
  /// (the writes of a block's column stay within a few cache lines).
  static void transpose_elements(const float* src, index_t r0, index_t r1, index_t c0, index_t c1, index_t ld_src,
                                 float* dst, index_t ld_dst) {
    constexpr index_t T = 16;
    for (index_t rb = r0; rb < r1; rb += T) {
      const index_t re = r1 - rb < T ? r1 : rb + T;
      for (index_t cb = c0; cb < c1; cb += T) {
        const index_t ce = c1 - cb < T ? c1 : cb + T;
        for (index_t c = cb; c < ce; ++c)
          for (index_t r = rb; r < re; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
      }
    }
  }
  /// dst[c, r] = src[r, c]: L × L tiles transposed in registers where the vocabulary has them
  /// (transpose_tile), the edges element by element.
  static void transpose(const float* src, index_t rows, index_t cols, index_t ld_src, float* dst, index_t ld_dst) {
    if constexpr (requires { I::transpose_tile(src, ld_src, dst, ld_dst); }) {
      const index_t rt = rows / L * L, ct = cols / L * L;
      for (index_t r = 0; r < rt; r += L)
        for (index_t c = 0; c < ct; c += L)
          I::transpose_tile(src + r * ld_src + c, ld_src, dst + c * ld_dst + r, ld_dst);
      transpose_elements(src, 0, rows, ct, cols, ld_src, dst, ld_dst);  // the last columns, every row
      transpose_elements(src, rt, rows, 0, ct, ld_src, dst, ld_dst);    // the last rows, the other columns
    } else {
      transpose_elements(src, 0, rows, 0, cols, ld_src, dst, ld_dst);
    }
  }

  // ---- matrix product: register tiles of R rows × NV vectors of outputs --------------------------
  // Every output is accumulated in sequence over the reduction index with fma, starting from +0:
  // acc = fma(x[r, k], w[k, o], acc) for k = 0, 1, ...; vectors run across outputs, so no lane
  // ever needs a horizontal reduction and the bits do not depend on the vector width. Blocking the
  // reduction (k) only parks an accumulator in y between blocks, which keeps its exact value.

  /// a·b + acc with a scalar a: the vocabulary's vector-by-scalar fma where it has one.
  static V fma_scalar(float a, V b, V acc) {
    if constexpr (requires { I::fma_n(a, b, acc); })
      return I::fma_n(a, b, acc);
    else
      return I::fma(I::set1(a), b, acc);
  }

  /// The i-th of a tile's NV vectors at p: the last holds `tail` lanes when Partial.
  template <index_t NV, bool Partial>
  [[gnu::always_inline]] static inline V tile_vector(const float* p, index_t i, index_t tail) {
    return (Partial && i + 1 == NV) ? I::load_partial(p + i * L, tail) : I::load(p + i * L);
  }

  /// One reduction step of a tile: acc[r][i] = fma(x[r, k], w[k, i-th vector], acc[r][i]).
  template <index_t R, index_t NV, bool Partial>
  [[gnu::always_inline]] static inline void tile_step(V (&acc)[R][NV], const float* xk, index_t ldx, const float* wk,
                                                      index_t tail) {
    V wv[NV];
    // (only with 5 or more rows: GCC 12 spills smaller tiles around the asm's fixed registers)
    if constexpr (R >= 5 && NV == 4 && !Partial && requires(V v) { I::load4(wk, v, v, v, v); })
      I::load4(wk, wv[0], wv[1], wv[2], wv[3]);
    else {
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i) wv[i] = tile_vector<NV, Partial>(wk, i, tail);
    }
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
      const float xr = xk[r * ldx];
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i) acc[r][i] = fma_scalar(xr, wv[i], acc[r][i]);
    }
  }

  /// Accumulates y[r, o] += Σ_{k in [k0, k1)} x[r, k] · w[k, o] for an R × (NV vectors) tile, the
  /// last vector holding `tail` valid lanes when Partial. `first`: start from +0 instead of y.
  /// `bias` (nullable) is added and `act` applied after the last block.
  template <index_t R, index_t NV, bool Partial>
  static void tile(const float* x, index_t ldx, index_t k0, index_t k1, const float* w, index_t ldw, float* y,
                   index_t ldy, index_t tail, bool first, const float* bias, Fuse act, const char* pf = nullptr,
                   const char* pf_end = nullptr) {
    // A target's own kernel for tiles of several rows, in the same order per output (MVE:
    // vectors across the rows, see kernels/product/helium.hpp); bias and activation as below.
    if constexpr (R >= 2 && !std::is_void_v<RowTile>) {
      return row_tile(x, ldx, R, k0, k1, w, ldw, y, ldy, (NV - 1) * L + (Partial ? tail : L), first, bias, act);
    }
    // Cortex-M4F/M7's full-width scalar tile in assembly (kernels/product/cortex_m4f.hpp), ReLU
    // fused
    if constexpr (NV == 4 && !Partial && !std::is_void_v<Tile4>) {
      if (act != Fuse::gelu) return Tile4::tile4(x, ldx, R, k0, k1, w, ldw, y, ldy, first, bias, act == Fuse::relu);
    }
    V acc[R][NV];
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i) acc[r][i] = first ? I::zero() : tile_vector<NV, Partial>(y + r * ldy, i, tail);
    }
    const float* xk = x + k0;
    const float* wk = w + k0 * ldw;
    index_t k = k0;
    if constexpr (kPrefetchWeights) {
      // the caller's next weight block (see kPrefetchWeights), one line per reduction step
      const index_t lines = static_cast<index_t>(pf_end - pf) / 64;
      const index_t kp = k0 + (lines < k1 - k0 ? lines : k1 - k0);
      for (; k < kp; ++k, ++xk, wk += ldw, pf += 64) {
        __builtin_prefetch(pf, 0, 2);
        tile_step<R, NV, Partial>(acc, xk, ldx, wk, tail);
      }
    }
    for (; k < k1; ++k, ++xk, wk += ldw) tile_step<R, NV, Partial>(acc, xk, ldx, wk, tail);
    if (bias) {
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i) {
        const V b = tile_vector<NV, Partial>(bias, i, tail);
#pragma GCC unroll 16
        for (index_t r = 0; r < R; ++r) acc[r][i] = I::add(acc[r][i], b);
      }
    }
    if (act == Fuse::relu) {
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
        for (index_t i = 0; i < NV; ++i) acc[r][i] = simd_math::relu<I>(acc[r][i]);
      }
    } else if (act == Fuse::gelu) {
      // (unrolled like every loop over acc: a runtime index would keep acc in memory)
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
        for (index_t i = 0; i < NV; ++i) acc[r][i] = simd_math::gelu<I>(acc[r][i]);
      }
    }
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i) {
        if (Partial && i + 1 == NV)
          I::store_partial(y + r * ldy + i * L, acc[r][i], tail);
        else
          I::store(y + r * ldy + i * L, acc[r][i]);
      }
    }
  }

  // the fused activations as types: one instantiation of a target's row_tile each
  // (fusion: what a target's assembly may fuse itself, see kernels/product/helium.hpp)
  struct Identity {
    static constexpr isa::Fusion fusion = isa::Fusion::none;
    V operator()(V v) const { return v; }
  };
  struct Relu {
    static constexpr isa::Fusion fusion = isa::Fusion::relu;
    V operator()(V v) const { return simd_math::relu<I>(v); }
  };
  struct Gelu {
    static constexpr isa::Fusion fusion = isa::Fusion::other;
    V operator()(V v) const { return simd_math::gelu<I>(v); }
  };
  static void row_tile(const float* x, index_t ldx, index_t rows, index_t k0, index_t k1, const float* w, index_t ldw,
                       float* y, index_t ldy, index_t width, bool first, const float* bias, Fuse act) {
    if (act == Fuse::relu)
      RowTile::row_tile(x, ldx, rows, k0, k1, w, ldw, y, ldy, width, first, bias, Relu{});
    else if (act == Fuse::gelu)
      RowTile::row_tile(x, ldx, rows, k0, k1, w, ldw, y, ldy, width, first, bias, Gelu{});
    else
      RowTile::row_tile(x, ldx, rows, k0, k1, w, ldw, y, ldy, width, first, bias, Identity{});
  }

  static constexpr index_t kRows = I::gemm_rows, kVecs = I::gemm_vecs;
  /// Vectors per tile for a single row (a matrix-vector product): more, since no row shares them.
  static constexpr index_t kGemvVecs = [] {
    if constexpr (requires { I::gemv_vecs; })
      return I::gemv_vecs;
    else
      return I::gemm_vecs;
  }();
  static constexpr index_t kMaxVecs = kGemvVecs > kVecs ? kGemvVecs : kVecs;

  struct TileArgs {
    const float* x;
    index_t ldx, k0, k1;
    const float* w;
    index_t ldw;
    float* y;
    index_t ldy, tail;
    bool first;
    const float* bias;
    Fuse act;
    const char* pf = nullptr;  ///< lines to prefetch during the tile, one per reduction step
    const char* pf_end = nullptr;
  };

  template <index_t R, index_t NV>
  static void tile_nv(index_t nv, const TileArgs& a) {
    if constexpr (NV > 1) {
      if (nv < NV) return tile_nv<R, NV - 1>(nv, a);
    }
    if (a.tail == L)
      tile<R, NV, false>(a.x, a.ldx, a.k0, a.k1, a.w, a.ldw, a.y, a.ldy, a.tail, a.first, a.bias, a.act, a.pf,
                         a.pf_end);
    else
      tile<R, NV, true>(a.x, a.ldx, a.k0, a.k1, a.w, a.ldw, a.y, a.ldy, a.tail, a.first, a.bias, a.act, a.pf, a.pf_end);
  }

  /// Rows of a tile at most kVecs / 2 vectors wide: twice kRows where the registers hold twice
  /// the accumulators (32-register vocabularies). A narrow product's rows then share one tile:
  /// more independent sums in flight over a short reduction, and fewer calls.
  static constexpr index_t kTallRows = L >= 16 && kVecs % 2 == 0 ? 2 * kRows : kRows;

  template <index_t R>
  static void tall_rows(index_t rows, index_t nv, const TileArgs& a) {
    if constexpr (R > kRows + 1) {
      if (rows < R) return tall_rows<R - 1>(rows, nv, a);
    }
    tile_nv<R, kVecs / 2>(nv, a);
  }

  template <index_t R>
  static void tile_rows(index_t rows, index_t nv, const TileArgs& a) {
    if constexpr (kTallRows > kRows) {
      if (R == kRows && rows > kRows) return tall_rows<kTallRows>(rows, nv, a);
    }
    if constexpr (R > 1) {
      if (rows < R) return tile_rows<R - 1>(rows, nv, a);
    }
    if constexpr (R == 1)
      tile_nv<1, kGemvVecs>(nv, a);  // (single-row tiles come only from single-row products)
    else
      tile_nv<R, kVecs>(nv, a);
  }

  /// tile_rows<kRows> as one function for product's two paths (inlined twice, its dispatch tree
  /// grew the translation unit past GCC's inlining budget for the attention kernels)
  [[gnu::noinline]] static void product_tile(index_t rows, index_t nv, const TileArgs& a) {
    tile_rows<kRows>(rows, nv, a);
  }

  /// Where the w[k, o] of a product live: a plain matrix (w + k·ld + o) or a block of a
  /// panel-stored weight (kernels/api.hpp, kWeightPanel).
  struct WeightAt {
    const float* w;
    index_t ld;         ///< plain: row stride
    WeightBlock block;  ///< panels
    bool panels;

    static WeightAt plain(const float* w, index_t ld) { return {w, ld, {}, false}; }
    static WeightAt panel_block(WeightBlock b) { return {nullptr, 0, b, true}; }

    /// The address of w[0, o], the row stride `ld_o` of column o and the number `run` of columns
    /// from o on that share it (to the end of o's panel).
    const float* column(index_t o, index_t& ld_o, index_t& run) const {
      if (!panels) {
        ld_o = ld;
        run = ~index_t{0} >> 1;
        return w + o;
      }
      return block.column(o, ld_o, run);
    }
  };

  /// Software prefetch of the next weight block (wide-vector x86 variants: their tiles consume a
  /// block faster than the hardware prefetchers bring it from L3). Each row tile issues its share
  /// inside its reduction loop, one line per step: issued as a burst between tiles, the prefetches
  /// waited for fill buffers and cost 3-4% of a product's time (perf: 3.4% of samples on them).
  static constexpr bool kPrefetchWeights = L >= 8;
  /// Whether a product that is one register tile (rows, outputs and reduction each one block)
  /// calls that tile directly, without product's blocking loops (x86: their set-up is a third of
  /// a small product's time). Elsewhere product's code stays as it was (Cortex-M flash).
  static constexpr bool kOneTileShortcut = L >= 8;

  /// The reduction steps of one cache block of a product whose tiles are panel floats wide:
  /// a [kc, panel] block of w stays in L1 while every row passes.
  static constexpr index_t block_steps(index_t panel, index_t in) {
    constexpr index_t kBlockBytes = 32 * 1024;
    index_t kc = kBlockBytes / (panel * sizeof(float));
    kc = kc < 16 ? 16 : kc;
    // and at most 128 steps: in a plain matrix a panel's rows are ld floats apart, which for a
    // power-of-two ld maps them all to few cache sets; 128 rows of a narrow panel still fit L2's
    // ways there
    kc = kc > 128 ? 128 : kc;
    return in <= kc + kc / 2 ? in : kc;
  }

  /// Rows per register tile of a product nv vectors wide.
  static constexpr index_t tile_height(index_t nv) { return nv * 2 <= kVecs ? kTallRows : kRows; }

  /// y[r, o] = Σ_k x[r, k] · w[k, o] (+ bias[o]) for x [rows, in] (row stride ldx), w [in, out]
  /// (see WeightAt), y [rows, out] (row stride ldy). y must not alias x or w.
  /// accumulate: continue from the values in y (the same sequence as if k had started earlier).
  /// act: applied after the bias.
  static void product(const float* x, index_t ldx, index_t rows, index_t in, const WeightAt& w, index_t out, float* y,
                      index_t ldy, const float* bias, bool accumulate, Fuse act) {
    if constexpr (kOneTileShortcut) {
      // the same tile product_blocked would call, with the same arguments
      const index_t nv = (out + L - 1) / L;
      if (rows > 1 && nv <= kVecs && rows <= tile_height(nv) && block_steps(kVecs * L, in) == in) {
        index_t ldw = 0, run = 0;
        const float* wo = w.column(0, ldw, run);
        if (run >= out) {
          const TileArgs a{x, ldx, 0, in, wo, ldw, y, ldy, out - (nv - 1) * L, !accumulate, bias, act};
          return product_tile(rows, nv, a);
        }
      }
    }
    product_blocked(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act);
  }

  // (noclone: its tiles are inlined, and a constant-propagated copy would double them in flash)
  [[gnu::noclone]] static void product_blocked(const float* x, index_t ldx, index_t rows, index_t in, const WeightAt& w,
                                               index_t out, float* y, index_t ldy, const float* bias, bool accumulate,
                                               Fuse act) {
    const index_t panel = (rows == 1 ? kGemvVecs : kVecs) * L;
    const index_t kc = block_steps(panel, in);
    for (index_t k0 = 0; k0 < in; k0 += kc) {
      const index_t k1 = in - k0 < kc ? in : k0 + kc;
      const bool first = k0 == 0 && !accumulate, last = k1 == in;
      for (index_t o0 = 0; o0 < out;) {
        index_t ldw = 0, run = 0;
        const float* wo = w.column(o0, ldw, run);
        index_t width = out - o0 < panel ? out - o0 : panel;
        width = width < run ? width : run;
        const index_t nv = (width + L - 1) / L;
        TileArgs a{x,
                   ldx,
                   k0,
                   k1,
                   wo,
                   ldw,
                   y + o0,
                   ldy,
                   width - (nv - 1) * L,
                   first,
                   last && bias ? bias + o0 : nullptr,
                   last ? act : Fuse::none};
        // The next weight block, brought towards L2 a few lines per row tile while this one runs
        // (panel-stored weights: a block is contiguous; from L3 its first tile would stall); the
        // tiles issue them (tile's pf).
        const char* next = nullptr;
        index_t next_lines = 0, per_tile = 0;
        if constexpr (kPrefetchWeights) {
          if (w.panels && rows > kRows) {
            index_t nld = 0, nrun = 0;
            const bool more_cols = o0 + width < out;
            const index_t nk0 = more_cols ? k0 : k1;
            if (nk0 < in) {
              const index_t nk1 = in - nk0 < kc ? in : nk0 + kc;
              next = reinterpret_cast<const char*>(w.column(more_cols ? o0 + width : 0, nld, nrun) + nk0 * nld);
              next_lines = ((nk1 - nk0) * nld * sizeof(float) + 63) / 64;
              const index_t tiles = (rows + kRows - 1) / kRows;
              per_tile = (next_lines + tiles - 1) / tiles;
            }
          }
        }
        const index_t tr = tile_height(nv);
        for (index_t r = 0; r < rows;) {
          // the last rows, when more than one tile but not a multiple, go as two even tiles (a
          // thin remainder tile reuses each weight load too little)
          const index_t rem = rows - r;
          const index_t n = rem <= tr ? rem : (rem < 2 * tr ? (rem + 1) / 2 : tr);
          a.x = x + r * ldx;
          a.y = y + r * ldy + o0;
          if constexpr (kPrefetchWeights) {
            // (at most one line per reduction step of the tile)
            index_t cnt = per_tile < next_lines ? per_tile : next_lines;
            cnt = cnt < k1 - k0 ? cnt : k1 - k0;
            a.pf = next;
            a.pf_end = next + cnt * 64;
            next += cnt * 64;
            next_lines -= cnt;
          }
          if constexpr (kOneTileShortcut)
            product_tile(n, nv, a);
          else
            tile_rows<kRows>(n, nv, a);
          r += n;
        }
        o0 += width;
      }
    }
  }

  /// product with a plain w [in, out] of row stride ldw.
  static void gemm(const float* x, index_t ldx, index_t rows, index_t in, const float* w, index_t ldw, index_t out,
                   float* y, index_t ldy, const float* bias, bool accumulate = false, Fuse act = Fuse::none) {
    product(x, ldx, rows, in, WeightAt::plain(w, ldw), out, y, ldy, bias, accumulate, act);
  }

  static void linear_block(const float* x, index_t ldx, index_t rows, index_t in, WeightBlock w, index_t out, float* y,
                           index_t ldy, const float* bias, bool accumulate, Fuse act) {
    // a target's own walk over its row tiles where it has one (kernels/product/<target>.hpp, the
    // same tiles without product's dispatch); false: not taken there
    if constexpr (!std::is_void_v<Panels>) {
      if (Panels::linear_panels(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act, Identity{}, Relu{})) return;
    }
    product(x, ldx, rows, in, WeightAt::panel_block(w), out, y, ldy, bias, accumulate, act);
  }

  static void linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out, float* y,
                     Fuse act) {
    linear_block(x, in, rows, in, WeightBlock{w, in, out}, out, y, out, bias, false, act);
  }

  // ---- normalization and softmax -------------------------------------------------------------
  /// LayerNorm of `rows` rows of n values (row stride n; y may alias x), in groups of rows taken
  /// stage by stage (means, then squared deviations, then the normalization): a row's statistics
  /// are two dependent reductions followed by a square root and a division, and the rows' chains
  /// overlap when they are not run one after the other. Up to 16 rows are one group on x86 (10 rows
  /// of 16 as 8 + 2 took 12% longer), more go 8 at a time.
  static void layer_norm_rows(const float* x, index_t rows, const float* gain, const float* bias, index_t n,
                              LayerNormKind kind, float eps, float* y) {
    // the same operations in the target's own code for whole 16-lane blocks where the selection
    // (kernels/norm/select.hpp) names one, row by row (in-order cores gain nothing from staging)
    using Row16 = typename NormSelect<Tag>::Row16;
    if constexpr (!std::is_void_v<Row16>) {
      if (kind == LayerNormKind::torch && n && n % 16 == 0) {
        for (index_t r = 0; r < rows; ++r) Row16::layer_norm16(x + r * n, gain, bias, n, eps, y + r * n);
        return;
      }
    }
    // (16 on the wide x86 variants only: elsewhere the arrays would only take stack)
    constexpr index_t G = L >= 8 ? 16 : 8;
    const index_t group = rows <= G ? G : 8;  // (long rows: 8 at a time stay in L1 between the stages)
    for (index_t r0 = 0; r0 < rows; r0 += group) {
      const index_t g = rows - r0 < group ? rows - r0 : group;
      const float* xg = x + r0 * n;
      float* yg = y + r0 * n;
      float mean[G], scale[G];
      for (index_t r = 0; r < g; ++r) mean[r] = sum(xg + r * n, n) / static_cast<float>(n);
      for (index_t r = 0; r < g; ++r) {
        const V vmean = I::set1(mean[r]);
        const float ss = reduce_lanes(
            xg + r * n, n, [&](V v, index_t c) { return I::keep_first(I::sub(v, vmean), c); },
            [](V acc, V d) { return I::fma(d, d, acc); });
        scale[r] = kind == LayerNormKind::torch ? 1.0f / std::sqrt(ss / static_cast<float>(n) + eps)
                                                : std::sqrt(ss / static_cast<float>(n - 1)) + eps;
      }
      for (index_t r = 0; r < g; ++r) {
        const float* xr = xg + r * n;
        float* yr = yg + r * n;
        const V vmean = I::set1(mean[r]);
        const V vs = I::set1(scale[r]);
        if (kind == LayerNormKind::torch)
          map3(xr, gain, bias, yr, n,
               [&](V xv, V gv, V bv) { return I::add(I::mul(I::mul(I::sub(xv, vmean), vs), gv), bv); });
        else
          map3(xr, gain, bias, yr, n,
               [&](V xv, V gv, V bv) { return I::add(I::div(I::mul(gv, I::sub(xv, vmean)), vs), bv); });
      }
    }
  }

  static void layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind,
                             float eps, float* y) {
    layer_norm_rows(x, 1, gain, bias, n, kind, eps, y);
  }

  /// The maximum of x[0, n), n >= 1 (for finite values the order of comparisons does not matter).
  static float max_of(const float* x, index_t n) {
    V vm = I::load_partial_or(x, n < L ? n : L, x[0]);
    index_t i = L;
    for (; i + L <= n; i += L) vm = I::max(I::load(x + i), vm);
    if (i < n) vm = I::max(I::load_partial_or(x + i, n - i, x[0]), vm);
    return I::reduce_max(vm);
  }

  static void log_softmax_row(float* x, index_t n) {
    const float m = max_of(x, n);
    const V vm = I::set1(m);
    const float total = reduce_lanes(
        x, n, [&](V v, index_t c) { return I::keep_first(exp_v(I::sub(v, vm)), c); },
        [](V acc, V e) { return I::add(acc, e); });
    using S = isa::Vocabulary<isa::scalar>;
    const V lse = I::set1(simd_math::log<S>(total));
    map(x, x, n, [&](V v) { return I::sub(I::sub(v, vm), lse); });
  }

  // ---- attention ------------------------------------------------------------------------------
  static bool allowed(const ref::RowMask& mask, index_t j) {
    return j < mask.key_end && (!mask.allow || mask.allow[j] != 0);
  }

  /// Turns one row of raw scores into attention weights in place: masked keys -inf, allowed ones
  /// divided by scale, then exp(s - max) (0 for masked), the canonical sum, and the division.
  /// Returns false, leaving the row unnormalized, when every key is masked.
  static bool softmax_scores(float* p, index_t n_keys, const ref::RowMask& mask, float scale) {
    if (!mask.allow) {  // the allowed keys are the prefix [0, e): the same operations, vectorized
      const index_t e = mask.key_end < n_keys ? mask.key_end : n_keys;
      if (e == 0) {
        for (index_t j = 0; j < n_keys; ++j) p[j] = -INFINITY;
        return false;
      }
      div_map(p, p, e, scale);
      exp_shifted(p, p, e, max_of(p, e));
      for (index_t j = e; j < n_keys; ++j) p[j] = 0.0f;  // exp(-inf - max)
      div_map(p, p, e, sum(p, n_keys));
      return true;
    }
    bool any = false;
    float m = 0.0f;
    for (index_t j = 0; j < n_keys; ++j) {
      if (!allowed(mask, j)) {
        p[j] = -INFINITY;
        continue;
      }
      p[j] = p[j] / scale;
      m = (!any || p[j] > m) ? p[j] : m;
      any = true;
    }
    if (!any) return false;
    exp_shifted(p, p, n_keys, m);
    div_map(p, p, n_keys, sum(p, n_keys));
    return true;
  }

  static constexpr index_t kAttentionRows = kAttentionRowGroup;
  /// Rows of one group on 32-register vocabularies (AVX-512) when its scores are one vector per
  /// row (at most L keys) and its outputs at most kTallHeadVecs vectors: two groups' worth. Short
  /// heads over few keys are chains of dependent steps with little work each (products over a
  /// short reduction, a division, horizontal maxima and sums, exp); in one group the rows' chains
  /// run side by side instead of one group's after the other's.
  static constexpr index_t kTallGroup = L >= 16 ? 2 * kAttentionRows : kAttentionRows;
  static constexpr index_t kTallHeadVecs = 2;

  /// attention_rows with the weights (two passes over whole score rows; row r: q + r·q_stride,
  /// masks[r], weights p + r·n_keys, output out + r·out_stride, which may alias its query row): the
  /// scores of a group of rows are one register-tiled product with Kᵀ, and so are their values.
  static void attention_rows_weights(const float* q, index_t q_stride, index_t n_rows, const float* kt,
                                     index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                     index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                     index_t out_stride) {
    const float scale = std::sqrt(static_cast<float>(head_dim));
    for (index_t r0 = 0; r0 < n_rows; r0 += kAttentionRows) {
      const index_t nr = n_rows - r0 < kAttentionRows ? n_rows - r0 : kAttentionRows;
      float* pg = p + r0 * n_keys;
      // keys at or past every row's key_end are masked for the whole group: no scores needed
      const GroupKeys g = group_keys(masks + r0, nr, n_keys);
      if (g.n_scored) gemm(q + r0 * q_stride, q_stride, nr, head_dim, kt, kt_stride, g.n_scored, pg, n_keys, nullptr);
      bool all_any = true;
      bool any[kAttentionRows];
      for (index_t r = 0; r < nr; ++r)
        all_any &= any[r] = softmax_scores(pg + r * n_keys, n_keys, masks[r0 + r], scale);
      if (all_any && g.prefixes) {  // every row attends to a non-empty prefix of the keys
        index_t end[kAttentionRows];
        for (index_t r = 0; r < nr; ++r) end[r] = masks[r0 + r].key_end < n_keys ? masks[r0 + r].key_end : n_keys;
        weighted_values_prefix(pg, n_keys, nr, end, v, v_stride, head_dim, out + r0 * out_stride, out_stride, false);
        continue;
      }
      for (index_t r = 0; r < nr; ++r) {
        float* pr = pg + r * n_keys;
        float* o = out + (r0 + r) * out_stride;
        for (index_t d = 0; d < head_dim; ++d) o[d] = 0.0f;
        if (any[r]) {
          const ref::RowMask& mask = masks[r0 + r];
          weighted_values_acc(
              pr, v, v_stride, head_dim, n_keys, [&](index_t j) { return allowed(mask, j); }, o);
        } else {  // every key masked: the documented convention
          const float w = fill == MaskFill::neg_1e9 ? 1.0f / static_cast<float>(n_keys) : 0.0f;
          for (index_t j = 0; j < n_keys; ++j) pr[j] = w;
          weighted_values_acc(
              pr, v, v_stride, head_dim, n_keys, [&](index_t) { return w != 0.0f; }, o);
        }
      }
    }
  }

  static void attention_row(const float* q, const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                            index_t head_dim, index_t n_keys, ref::RowMask mask, MaskFill fill, float* p, float* out) {
    attention_rows(q, head_dim, 1, kt, kt_stride, v, v_stride, head_dim, n_keys, &mask, fill, p, out, head_dim);
  }

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
    if (!mask.allow) {
      cnt = mask.key_end > kb ? (mask.key_end - kb < nb ? mask.key_end - kb : nb) : 0;
      if (cnt == 0) return 0;
      div_map(s, s, cnt, scale);
      bm = max_of(s, cnt);
    } else {
      bool any = false;
      bm = 0.0f;
      for (index_t i = 0; i < nb; ++i) {
        if (!allowed(mask, kb + i)) {
          s[i] = -INFINITY;
          continue;
        }
        s[i] = s[i] / scale;
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
    return mask.allow ? nb : cnt;
  }

  /// Score vectors per key block.
  static constexpr index_t kBlockVecs = kAttentionKeyBlock / L;
  /// A block's weights: exp(x - m) of its first cnt keys (vectors x[0, NB), m in every lane of
  /// vmn), stored to w[0, cnt), and their canonical sum.
  template <index_t NB>
  [[gnu::always_inline]] static float block_weights(const V* x, index_t cnt, V vmn, float* w) {
    V acc[kSub];
    block_exps<NB>(x, cnt, vmn, w, acc);
    return I::reduce16(acc);
  }
  /// block_weights before its canonical sum: the weights stored, their 16-lane partial sums in acc.
  template <index_t NB>
  [[gnu::always_inline]] static void block_exps(const V* x, index_t cnt, V vmn, float* w, V* acc) {
#pragma GCC unroll 16
    for (index_t j = 0; j < kSub; ++j) acc[j] = I::zero();
#pragma GCC unroll 16
    for (index_t b = 0; b < NB; ++b) {
      const index_t c = sub_count(cnt, b);
      if (!c) break;
      const V e = I::keep_first(exp_nonpositive(I::keep_first(I::sub(x[b], vmn), c)), c);
      I::store_partial(w + b * L, e, c);
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
  static void stream_group_prefix(float* p, index_t bs, index_t nr, index_t kb, index_t nb, const ref::RowMask* mg,
                                  const ScoreScale& vscale, bool* seen, float* m, float* l, float* og,
                                  index_t out_stride, index_t head_dim, index_t* end, float* factor = nullptr) {
    const V ninf = I::set1(-INFINITY);
    V x[kAttentionRows][kBlockVecs];
    float m_new[kAttentionRows];
    for (index_t r = 0; r < nr; ++r) {
      const index_t key_end = mg[r].key_end;
      const index_t cnt = key_end > kb ? (key_end - kb < nb ? key_end - kb : nb) : 0;
      end[r] = cnt;
      const float* s = p + r * bs;
      V vm = ninf;
#pragma GCC unroll 16
      for (index_t i = 0; i < kBlockVecs; ++i) {
        const index_t c = sub_count(cnt, i);
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
      const float bsum = block_weights<kBlockVecs>(x[r], cnt, I::set1(m_new[r]), s);
      l[r] = seen[r] ? l[r] + bsum : bsum;
      m[r] = m_new[r];
      seen[r] = true;
    }
  }

  // ---- attention over up to kAttentionScoreKeys keys at a time (vocabularies of 8+ lanes) ------
  static constexpr index_t kScoreBlocks = kAttentionScoreKeys / kAttentionKeyBlock;

  /// What the values' tiles of a group need: row r's weights p + r·ps (key 0 of the span at
  /// index 0), the keys [0, keys) every row has, the factor c[b][r] each row's outputs are
  /// multiplied by before block b (1 where nothing is rescaled: x·1 = x exactly), and l: when not
  /// null, the outputs are divided by l[r] before they are stored (the last span).
  struct ValuesArgs {
    const float* p;
    index_t ps, keys;
    const float* v;
    index_t v_stride;
    float* o;
    index_t o_stride, tail;
    const float (*c)[kTallGroup];
    bool from_zero;
    const float* l;
  };

  /// o[r, :] = (o[r, :] or +0), then per block b: o[r, :] *= c[b][r], and o[r, :] = fma(p[r, j],
  /// v[j, :], o[r, :]) for its keys j in order; R rows × NV vectors of outputs in registers.
  template <index_t R, index_t NV>
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
#pragma GCC unroll 16
        for (index_t i = 0; i < NV; ++i) wv[i] = load_at(vk, i);
#pragma GCC unroll 16
        for (index_t r = 0; r < R; ++r) {
          const float pr = a.p[r * a.ps + k];
#pragma GCC unroll 16
          for (index_t i = 0; i < NV; ++i) acc[r][i] = fma_scalar(pr, wv[i], acc[r][i]);
        }
      }
    }
    if (a.l) {
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
        const V lv = I::set1(a.l[r]);
#pragma GCC unroll 16
        for (index_t i = 0; i < NV; ++i) acc[r][i] = I::div(acc[r][i], lv);
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

  template <index_t R, index_t NV>
  static void values_nv(index_t nv, const ValuesArgs& a) {
    if constexpr (NV > 1) {
      if (nv < NV) return values_nv<R, NV - 1>(nv, a);
    }
    values_tile<R, NV>(a);
  }

  /// Lowest to R rows (a tall group's, more than kAttentionRows: at most kTallHeadVecs vectors).
  template <index_t R, index_t Lowest = 1>
  static void values_rows(index_t rows, index_t nv, const ValuesArgs& a) {
    if constexpr (R > Lowest) {
      if (rows < R) return values_rows<R - 1, Lowest>(rows, nv, a);
    }
    values_nv<R, (R > kAttentionRows ? kTallHeadVecs : kVecs)>(nv, a);
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
      tile_rows<kRows>(nr, nv, a);
    }
  }

  /// attention_rows for a group of nr rows whose masks are prefixes with at least one key each:
  /// per span of up to kAttentionScoreKeys keys, the group's scores are one product with Kᵀ, the
  /// blocks' softmax steps run over them (stream_group_prefix, the factors of the rescaling kept
  /// instead of applied), and one product with the values applies the factors at the block
  /// boundaries and, in the last span, the division by the sums: the operations of stream_block,
  /// per output in the same order, with fewer passes over the outputs and longer products.
  static void attention_group_spans(const float* q, index_t q_stride, index_t nr, const float* kt, index_t kt_stride,
                                    const float* v, index_t v_stride, index_t head_dim, index_t n_scored,
                                    const ref::RowMask* mg, const ScoreScale& vscale, float* p, index_t ps, float* qc,
                                    float* og, index_t out_stride) {
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
    bool seen[kAttentionRows] = {};
    float m[kAttentionRows] = {}, l[kAttentionRows] = {};
    for (index_t s0 = 0; s0 < n_scored; s0 += W) {
      const index_t ns = n_scored - s0 < W ? n_scored - s0 : W;
      scores_tiles(qs, qs_stride, nr, head_dim, kt + s0, kt_stride, ns, p, ps);
      float c[kScoreBlocks][kTallGroup];  // block b's rescale factor of row r
      for (index_t b = 0; b * B < ns; ++b) {
        const index_t kb = s0 + b * B, nb = ns - b * B < B ? ns - b * B : B;
        index_t end[kAttentionRows];
        stream_group_prefix(p + b * B, ps, nr, kb, nb, mg, vscale, seen, m, l, nullptr, out_stride, head_dim, end,
                            c[b]);
      }
      // keys of the span row r has: [0, e[r])
      index_t e[kAttentionRows];
      for (index_t r = 0; r < nr; ++r) {
        const index_t key_end = mg[r].key_end;
        e[r] = key_end > s0 ? (key_end - s0 < ns ? key_end - s0 : ns) : 0;
      }
      const bool last = s0 + ns >= n_scored;
      span_values(p, ps, nr, e, v + s0 * v_stride, v_stride, head_dim, c, s0 == 0, last ? l : nullptr, og, out_stride);
    }
  }

  /// The values' part of a span: row r's outputs og + r·out_stride continue (from +0 when
  /// from_zero) over its keys [0, e[r]) of the span (weights p + r·ps, values vs), with the
  /// factors c[b][r] at the block boundaries, and are divided by l[r] when l is not null (the last
  /// span). The keys every row has as register tiles, then each row's own keys past them.
  /// Tall: a tall group's rows (more than kAttentionRows, at most kTallHeadVecs vectors); its
  /// own instantiation, which keeps the tall tiles out of the other groups' code.
  template <bool Tall = false>
  static void span_values(const float* p, index_t ps, index_t nr, const index_t* e, const float* vs, index_t v_stride,
                          index_t head_dim, const float (*c)[kTallGroup], bool from_zero, const float* l, float* og,
                          index_t out_stride) {
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
                         e_min == e_max ? l : nullptr};
      if constexpr (Tall)
        values_rows<kTallGroup, kAttentionRows + 1>(nr, nv, a);
      else
        values_rows<kAttentionRows>(nr, nv, a);
    }
    if (e_min == e_max) return;
    // each row's keys past e_min continue its own sums, with the factors of the blocks they start
    for (index_t r = 0; r < nr; ++r) {
      float* o = og + r * out_stride;
      for (index_t d = 0; e[r] > e_min && d < head_dim; d += L) {
        const index_t w = head_dim - d < L ? head_dim - d : L;
        V acc = I::load_partial(o + d, w);
        for (index_t j = e_min; j < e[r]; ++j) {
          if (j % B == 0) acc = I::mul(acc, I::set1(c[j / B][r]));
          acc = fma_scalar(p[r * ps + j], I::load_partial(vs + j * v_stride + d, w), acc);
        }
        I::store_partial(o + d, acc, w);
      }
      if (l) div_map(o, o, head_dim, l[r]);
    }
  }

  // ---- one key block in registers (at most two score vectors per row) -------------------------
  /// Score vectors per row a group holds in registers (kRows × 2 accumulators and 2 vectors of
  /// Kᵀ: 14 of AVX2's 16 registers): a whole key block on AVX-512, up to 16 keys on AVX2, whose
  /// block is four vectors. Groups over at most this many keys' vectors take
  /// attention_group_block, the others the spans through memory.
  static constexpr index_t kRegisterBlockVecs = kBlockVecs < 2 ? kBlockVecs : 2;

  /// attention_group_spans for a group of R rows (prefix masks, every key_end >= 1) whose keys are
  /// one block of n_scored <= NB·L keys: the scores stay in registers from their product through
  /// the softmax step (stream_group_prefix's operations for a first block: division, maximum,
  /// exp(s - max) over the allowed keys, the canonical sum), and only the weights go to memory
  /// (a buffer of its own, at most a few KB of stack, so that tall groups need no more scratch)
  /// for the values' tiles. The queries are read before any output is written (they may alias).
  template <index_t R, index_t NB>
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
    const float* kk = kt;
    for (index_t k = 0; k < head_dim; ++k, kk += kt_stride) {
      V kv[NB];
#pragma GCC unroll 16
      for (index_t b = 0; b < NB; ++b)
        kv[b] = (b + 1 == NB && tail != L) ? I::load_partial(kk + b * L, tail) : I::load(kk + b * L);
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
        const float x = q[r * q_stride + k];
#pragma GCC unroll 16
        for (index_t b = 0; b < NB; ++b) s[r][b] = fma_scalar(x, kv[b], s[r][b]);
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
        // (lanes past the allowed keys -inf, as load_partial_or fills them)
        s[r][b] = c ? vscale.divide(I::select_gt(I::set1(static_cast<float>(c)), lane, s[r][b], ninf)) : ninf;
        if (c) vm[r] = I::max(s[r][b], vm[r]);
      }
    }
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) vm[r] = I::set1(I::reduce_max(vm[r]));
    V acc[R][kSub];
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) block_exps<NB>(s[r], e[r], vm[r], p + r * ps, acc[r]);
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) l[r] = I::reduce16(acc[r]);
    float ones[kScoreBlocks][kTallGroup];
    for (index_t r = 0; r < R; ++r) ones[0][r] = 1.0f;  // (a first block rescales nothing)
    span_values<(R > kAttentionRows)>(p, ps, R, e, v, v_stride, head_dim, ones, true, l, og, out_stride);
  }

  /// attention_group_block for Lowest to R rows and nb <= kRegisterBlockVecs score vectors (tall
  /// groups, more than kAttentionRows rows: one).
  template <index_t R, index_t Lowest = 1>
  static void group_block_rows(index_t nr, index_t nb, const float* q, index_t q_stride, const float* kt,
                               index_t kt_stride, const float* v, index_t v_stride, index_t head_dim, index_t n_scored,
                               const ref::RowMask* mg, const ScoreScale& vscale, float* og, index_t out_stride) {
    if constexpr (R > Lowest) {
      if (nr < R)
        return group_block_rows<R - 1, Lowest>(nr, nb, q, q_stride, kt, kt_stride, v, v_stride, head_dim, n_scored, mg,
                                               vscale, og, out_stride);
    }
    if constexpr (R > kAttentionRows)
      attention_group_block<R, 1>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, n_scored, mg, vscale, og,
                                  out_stride);
    else if (nb == 1)
      attention_group_block<R, 1>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, n_scored, mg, vscale, og,
                                  out_stride);
    else
      attention_group_block<R, kRegisterBlockVecs>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, n_scored, mg,
                                                   vscale, og, out_stride);
  }

  /// What the masks of a group of nr rows ask: keys scored (the largest allowed end, at most
  /// n_keys), whether every mask is a prefix (no allow array), and whether every row has a key.
  struct GroupKeys {
    index_t n_scored;
    bool prefixes, every_key;
  };
  static GroupKeys group_keys(const ref::RowMask* mg, index_t nr, index_t n_keys) {
    GroupKeys g{0, true, true};
    for (index_t r = 0; r < nr; ++r) {
      const index_t e = mg[r].key_end < n_keys ? mg[r].key_end : n_keys;
      g.n_scored = e > g.n_scored ? e : g.n_scored;
      g.prefixes = g.prefixes && !mg[r].allow;
      g.every_key = g.every_key && mg[r].key_end > 0;
    }
    return g;
  }

  /// The first nt rows (kAttentionRows < nt <= kTallGroup) as one tall group, when they qualify:
  /// prefix masks with a key each, at most L keys scored, head_dim <= kTallHeadVecs·L. Returns
  /// whether it took them.
  [[gnu::noinline]] static bool tall_group(const float* q, index_t q_stride, index_t nt, const float* kt,
                                           index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                           index_t n_keys, const ref::RowMask* mg, float scale, float* og,
                                           index_t out_stride) {
    if (head_dim > kTallHeadVecs * L) return false;
    const GroupKeys g = group_keys(mg, nt, n_keys);
    if (!g.prefixes || !g.every_key || g.n_scored > L) return false;
    const ScoreScale vscale(scale);
    group_block_rows<kTallGroup, kAttentionRows + 1>(nt, 1, q, q_stride, kt, kt_stride, v, v_stride, head_dim,
                                                     g.n_scored, mg, vscale, og, out_stride);
    return true;
  }

  /// attention_rows (Kernels::attention_rows calls it), through a target's own kernel where it
  /// has one for groups whose rows all attend to the same keys [0, e), e >= 1 (Cortex-M:
  /// kernels/attention/<target>.hpp, the same operations per row; it declines group sizes it does
  /// not take),
  /// then attention_rows for the rows left. (Outside attention_rows: its set-up would run first.)
  static void attention_rows_hooked(const float* q, index_t q_stride, index_t n_rows, const float* kt,
                                    index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                    index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                    index_t out_stride) {
    index_t r0 = 0;
    if constexpr (!std::is_void_v<PrefixRows>) {
      // (the same key_end in every mask; ends past n_keys that differ go the general way)
      const index_t key_end = n_rows == 0 ? 0 : masks[0].key_end;
      bool same = key_end > 0 && n_keys > 0;
      for (index_t r = 0; same && r < n_rows; ++r) same = !masks[r].allow && masks[r].key_end == key_end;
      if (same) {
        const index_t e = key_end < n_keys ? key_end : n_keys;
        const float scale = std::sqrt(static_cast<float>(head_dim));
        for (; r0 < n_rows; r0 += kAttentionRows) {
          const index_t nr = n_rows - r0 < kAttentionRows ? n_rows - r0 : kAttentionRows;
          if (!PrefixRows::attention_prefix_rows(q + r0 * q_stride, q_stride, nr, kt, kt_stride, v, v_stride, head_dim,
                                                 e, scale, p, out + r0 * out_stride, out_stride))
            break;
        }
        if (r0 >= n_rows) return;
      }
    }
    if constexpr (kTallGroup > kAttentionRows) {
      // (before attention_rows: a tall group skips its set-up)
      for (index_t nt = 0; r0 < n_rows; r0 += nt) {
        nt = n_rows - r0 < kTallGroup ? n_rows - r0 : kTallGroup;
        if (nt <= kAttentionRows ||
            !tall_group(q + r0 * q_stride, q_stride, nt, kt, kt_stride, v, v_stride, head_dim, n_keys, masks + r0,
                        std::sqrt(static_cast<float>(head_dim)), out + r0 * out_stride, out_stride))
          attention_rows(q + r0 * q_stride, q_stride, nt, kt, kt_stride, v, v_stride, head_dim, n_keys, masks + r0,
                         fill, p, out + r0 * out_stride, out_stride);
      }
      return;
    }
    attention_rows(q + r0 * q_stride, q_stride, n_rows - r0, kt, kt_stride, v, v_stride, head_dim, n_keys, masks + r0,
                   fill, p, out + r0 * out_stride, out_stride);
  }

  /// Streaming attention over groups of rows (see ref::attention_row): per key block, the
  /// group's scores are one register-tiled product with Kᵀ and its values another, accumulated
  /// into the outputs.
  static void attention_rows(const float* q, index_t q_stride, index_t n_rows, const float* kt, index_t kt_stride,
                             const float* v, index_t v_stride, index_t head_dim, index_t n_keys,
                             const ref::RowMask* masks, MaskFill fill, float* p, float* out, index_t out_stride) {
    constexpr index_t B = kAttentionKeyBlock;
    const float scale = std::sqrt(static_cast<float>(head_dim));
    const ScoreScale vscale(scale);
    const index_t bs = n_keys < B ? n_keys : B;  // score row stride
    const index_t g = n_rows < kAttentionRows ? n_rows : kAttentionRows;
    float* qc = p + g * bs;  // copies of the group's queries: the outputs may alias them
    const index_t ps = n_keys < kAttentionScoreKeys ? n_keys : kAttentionScoreKeys;  // (spans' row stride)
    for (index_t r0 = 0; r0 < n_rows; r0 += kAttentionRows) {
      const index_t nr = n_rows - r0 < kAttentionRows ? n_rows - r0 : kAttentionRows;
      const ref::RowMask* mg = masks + r0;
      float* og = out + r0 * out_stride;
      const auto [n_scored, prefixes, every_key] = group_keys(mg, nr, n_keys);
      if constexpr (L >= 8) {
        if (prefixes && every_key && n_scored <= kRegisterBlockVecs * L) {
          group_block_rows<kAttentionRows>(nr, (n_scored + L - 1) / L, q + r0 * q_stride, q_stride, kt, kt_stride, v,
                                           v_stride, head_dim, n_scored, mg, vscale, og, out_stride);
          continue;
        }
        if (prefixes && every_key) {
          attention_group_spans(q + r0 * q_stride, q_stride, nr, kt, kt_stride, v, v_stride, head_dim, n_scored, mg,
                                vscale, p, ps, p + g * ps, og, out_stride);
          continue;
        }
      }
      // With one key block the queries are read once, by its scores' product, before any output
      // is written (the first block rescales nothing): no copies then, and the outputs are zeroed
      // only where the values' products accumulate into them.
      const bool one_block = n_scored <= B;
      auto zero_outputs = [&] {
        for (index_t r = 0; r < nr; ++r)
          for (index_t d = 0; d < head_dim; ++d) og[r * out_stride + d] = 0.0f;
      };
      if (!one_block) {
        for (index_t r = 0; r < nr; ++r) {
          const float* qr = q + (r0 + r) * q_stride;
          for (index_t d = 0; d < head_dim; ++d) qc[r * head_dim + d] = qr[d];
        }
      }
      if (!one_block || n_scored == 0) zero_outputs();
      bool seen[kAttentionRows] = {};
      float m[kAttentionRows] = {}, l[kAttentionRows] = {};
      for (index_t kb = 0; kb < n_scored; kb += B) {
        const index_t nb = n_scored - kb < B ? n_scored - kb : B;
        if (one_block)
          gemm(q + r0 * q_stride, q_stride, nr, head_dim, kt + kb, kt_stride, nb, p, bs, nullptr);
        else
          gemm(qc, head_dim, nr, head_dim, kt + kb, kt_stride, nb, p, bs, nullptr);
        index_t end[kAttentionRows];  // allowed keys of row r in this block: [0, end[r])
        if (L >= 8 && prefixes)
          stream_group_prefix(p, bs, nr, kb, nb, mg, vscale, seen, m, l, og, out_stride, head_dim, end);
        else
          for (index_t r = 0; r < nr; ++r)
            end[r] = stream_block(p + r * bs, kb, nb, mg[r], scale, seen[r], m[r], l[r], og + r * out_stride, head_dim);
        bool every_row = true;  // every row has an allowed key in this block
        for (index_t r = 0; r < nr; ++r) every_row = every_row && end[r];
        const float* vb = v + kb * v_stride;
        if (one_block && prefixes && every_row) {  // from +0, as from zeroed outputs
          weighted_values_prefix(p, bs, nr, end, vb, v_stride, head_dim, og, out_stride, false);
          continue;
        }
        if (one_block) zero_outputs();
        if (prefixes) {
          weighted_values_prefix(p, bs, nr, end, vb, v_stride, head_dim, og, out_stride, true);
        } else {
          for (index_t r = 0; r < nr; ++r) {
            if (!end[r]) continue;
            const ref::RowMask& mask = mg[r];
            weighted_values_acc(
                p + r * bs, vb, v_stride, head_dim, nb, [&](index_t i) { return allowed(mask, kb + i); },
                og + r * out_stride);
          }
        }
      }
      for (index_t r = 0; r < nr; ++r) {
        float* o = og + r * out_stride;
        if (seen[r]) {
          div_map(o, o, head_dim, l[r]);
        } else {  // every key masked: the documented convention
          const float w = fill == MaskFill::neg_1e9 ? 1.0f / static_cast<float>(n_keys) : 0.0f;
          weighted_values_acc(
              &w, v, v_stride, head_dim, n_keys, [&](index_t) { return w != 0.0f; }, o, true);
        }
      }
    }
  }

  /// out[r, :] = Σ_{j < end[r]} p[r, j] · v[j] for nr rows, in key order (accumulate: continuing
  /// from out; else from +0, and every end[r] >= 1): the keys every row has as one register-tiled
  /// product, then each row's remaining keys continue its own sums.
  static void weighted_values_prefix(const float* p, index_t p_stride, index_t nr, const index_t* end, const float* v,
                                     index_t v_stride, index_t head_dim, float* out, index_t out_stride,
                                     bool accumulate) {
    index_t e_min = end[0];
    for (index_t r = 1; r < nr; ++r) e_min = end[r] < e_min ? end[r] : e_min;
    if (e_min) gemm(p, p_stride, nr, e_min, v, v_stride, head_dim, out, out_stride, nullptr, accumulate);
    for (index_t r = 0; r < nr; ++r)
      if (end[r] > e_min)
        gemm(p + r * p_stride + e_min, p_stride, 1, end[r] - e_min, v + e_min * v_stride, v_stride, head_dim,
             out + r * out_stride, out_stride, nullptr, true);
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
        if (use(j)) acc = fma_scalar(uniform ? p[0] : p[j], I::load_partial(v + j * v_stride + d, c), acc);
      I::store_partial(out + d, acc, c);
    }
  }
};

}  // namespace stf::kernels_detail

namespace stf {

// Kernels<Tag>'s members, defined from Generic<Tag>; each variant translation unit instantiates
// them for its own tag: `template struct stf::Kernels<stf::isa::avx2>;`.
template <class Tag>
void Kernels<Tag>::linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out,
                          float* y, Fuse act) noexcept {
  kernels_detail::Generic<Tag>::linear(x, rows, in, w, bias, out, y, act);
}
template <class Tag>
void Kernels<Tag>::linear_block(const float* x, index_t ldx, index_t rows, index_t in, WeightBlock w, index_t out,
                                float* y, index_t ldy, const float* bias, bool accumulate, Fuse act) noexcept {
  kernels_detail::Generic<Tag>::linear_block(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act);
}
template <class Tag>
void Kernels<Tag>::attention_row(const float* q, const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                                 index_t head_dim, index_t n_keys, ref::RowMask mask, MaskFill fill, float* p,
                                 float* out) noexcept {
  kernels_detail::Generic<Tag>::attention_row(q, kt, kt_stride, v, v_stride, head_dim, n_keys, mask, fill, p, out);
}
template <class Tag>
void Kernels<Tag>::attention_rows(const float* q, index_t q_stride, index_t n_rows, const float* kt, index_t kt_stride,
                                  const float* v, index_t v_stride, index_t head_dim, index_t n_keys,
                                  const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                  index_t out_stride) noexcept {
  kernels_detail::Generic<Tag>::attention_rows_hooked(q, q_stride, n_rows, kt, kt_stride, v, v_stride, head_dim, n_keys,
                                                      masks, fill, p, out, out_stride);
}
template <class Tag>
void Kernels<Tag>::attention_rows_weights(const float* q, index_t q_stride, index_t n_rows, const float* kt,
                                          index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                          index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* weights,
                                          float* out, index_t out_stride) noexcept {
  kernels_detail::Generic<Tag>::attention_rows_weights(q, q_stride, n_rows, kt, kt_stride, v, v_stride, head_dim,
                                                       n_keys, masks, fill, weights, out, out_stride);
}
template <class Tag>
void Kernels<Tag>::layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind,
                                  float eps, float* y) noexcept {
  kernels_detail::Generic<Tag>::layer_norm_row(x, gain, bias, n, kind, eps, y);
}
template <class Tag>
void Kernels<Tag>::layer_norm_rows(const float* x, index_t rows, const float* gain, const float* bias, index_t n,
                                   LayerNormKind kind, float eps, float* y) noexcept {
  kernels_detail::Generic<Tag>::layer_norm_rows(x, rows, gain, bias, n, kind, eps, y);
}
template <class Tag>
void Kernels<Tag>::log_softmax_row(float* x, index_t n) noexcept {
  kernels_detail::Generic<Tag>::log_softmax_row(x, n);
}
template <class Tag>
void Kernels<Tag>::activation(Activation a, float* x, index_t n) noexcept {
  kernels_detail::Generic<Tag>::activation(a, x, n);
}
template <class Tag>
void Kernels<Tag>::add(float* y, const float* x, index_t n) noexcept {
  kernels_detail::Generic<Tag>::add(y, x, n);
}
template <class Tag>
void Kernels<Tag>::transpose(const float* src, index_t rows, index_t cols, index_t ld_src, float* dst,
                             index_t ld_dst) noexcept {
  kernels_detail::Generic<Tag>::transpose(src, rows, cols, ld_src, dst, ld_dst);
}
template <class Tag>
float Kernels<Tag>::dot(const float* a, const float* b, index_t n) noexcept {
  return kernels_detail::Generic<Tag>::dot(a, b, n);
}
template <class Tag>
float Kernels<Tag>::sum(const float* x, index_t n) noexcept {
  return kernels_detail::Generic<Tag>::sum(x, n);
}
template <class Tag>
void Kernels<Tag>::exp(const float* x, float* y, index_t n) noexcept {
  using G = kernels_detail::Generic<Tag>;
  G::map(x, y, n, [](typename G::V v) { return G::exp_v(v); });
}
template <class Tag>
void Kernels<Tag>::log(const float* x, float* y, index_t n) noexcept {
  using G = kernels_detail::Generic<Tag>;
  G::map(x, y, n, [](typename G::V v) { return simd_math::log<typename G::I>(v); });
}
template <class Tag>
void Kernels<Tag>::gelu(const float* x, float* y, index_t n) noexcept {
  using G = kernels_detail::Generic<Tag>;
  G::map(x, y, n, [](typename G::V v) { return simd_math::gelu<typename G::I>(v); });
}
template <class Tag>
bool Kernels<Tag>::supported() noexcept {
  return isa::Vocabulary<Tag>::supported();
}
template <class Tag>
const char* Kernels<Tag>::name() noexcept {
  return isa::Vocabulary<Tag>::name;
}

}  // namespace stf
