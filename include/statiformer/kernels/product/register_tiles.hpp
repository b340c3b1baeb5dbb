// statiformer — matrix products, generic, part: the register tiles (R rows × NV vectors of outputs)
// on the SIMD vocabulary and the choice of tile for a block of rows and outputs; targets' own
// tiles where kernels/product/select.hpp names them. product/generic.hpp drives them over the
// cache blocks. See kernels/README.md.
// Register tiles only stay in registers when their small constant loops are fully unrolled: those
// loops carry `#pragma GCC unroll 16`.
#pragma once

#include <type_traits>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/product/select.hpp>
#include <statiformer/simd/math.hpp>

namespace stf::kernels_detail::generic {

/// The register tiles of the matrix products: every output accumulated in sequence over the
/// reduction with fma from +0, bias and the fused activation after the last block.
template <class Tag>
struct ProductTiles : Elementwise<Tag> {
  using typename Elementwise<Tag>::I;
  using typename Elementwise<Tag>::V;
  using Elementwise<Tag>::L;

  /// The target's own kernels where the selection names them (kernels/product/select.hpp): a
  /// struct, or void where the tiles below run.
  using Tile4 = typename ProductSelect<Tag>::Tile4;
  using RowTile = typename ProductSelect<Tag>::RowTile;
  /// The size-first selection of the tiles (kKernelsSizeFirst, kernels/api.hpp) where the
  /// vocabulary has one lane and the target a four-column assembly tile (Cortex-M4F/M7): outputs
  /// short of four columns go one column at a time (tile<R, 1>, instead of tiles 2 and 3 wide),
  /// and GELU is a pass over a tile's stored outputs (gelu_outputs) instead of a generic tile of
  /// its own for every row count. The same operations on every output, so the same bits.
  static constexpr bool kSizeFirstTiles = kKernelsSizeFirst && L == 1 && !std::is_void_v<Tile4>;

  // ---- matrix product: register tiles of R rows × NV vectors of outputs --------------------------
  // Every output is accumulated in sequence over the reduction index with fma, starting from +0:
  // acc = fma(x[r, k], w[k, o], acc) for k = 0, 1, ...; vectors run across outputs, so no lane
  // ever needs a horizontal reduction and the bits do not depend on the vector width. Blocking the
  // reduction (k) only parks an accumulator in y between blocks, which keeps its exact value.

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
    if constexpr (R >= 5 && NV == 4 && !Partial && ProductSelect<Tag>::load4)
      I::load4(wk, wv[0], wv[1], wv[2], wv[3]);
    else {
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i) wv[i] = tile_vector<NV, Partial>(wk, i, tail);
    }
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
      const float xr = xk[r * ldx];
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i) acc[r][i] = I::fma_n(xr, wv[i], acc[r][i]);
    }
  }

  /// Accumulates y[r, o] += Σ_{k in [k0, k1)} x[r, k] · w[k, o] for an R × (NV vectors) tile, the
  /// last vector holding `tail` valid lanes when Partial. `first`: start from +0 instead of y.
  /// `bias` (nullable) is added and `act` applied after the last block.
  /// pf: lines to prefetch during the tile, one per reduction step, up to pf_end. (noinline: on x86 GCC
  /// kept the tiles out of line before their body moved into tile_once; after, it inlined the one-row
  /// tiles into Product::product, fivefold its size, which then stopped inlining product_blocked. Other
  /// targets' tiles, not measured, stay out of line too; Cortex-M links none.)
  template <index_t R, index_t NV, bool Partial>
  [[gnu::noinline]] static void tile(const float* x, index_t ldx, index_t k0, index_t k1, const float* w, index_t ldw,
                                     float* y, index_t ldy, index_t tail, bool first, const float* bias, Fuse act,
                                     const char* pf = nullptr, const char* pf_end = nullptr) {
    // A target's own kernel for tiles of several rows, in the same order per output (MVE:
    // vectors across the rows, see kernels/product/helium.hpp); bias and activation as below.
    if constexpr (R >= 2 && !std::is_void_v<RowTile>) {
      return row_tile(x, ldx, R, k0, k1, w, ldw, y, ldy, (NV - 1) * L + (Partial ? tail : L), first, bias, act);
    }
    // Cortex-M4F/M7's full-width scalar tile in assembly (kernels/product/cortex_m4f.hpp), ReLU
    // fused
    if constexpr (NV == 4 && !Partial && !std::is_void_v<Tile4>) {
      if constexpr (kSizeFirstTiles) {  // a GELU after the tile's bias, as the pass the generic tile makes
        Tile4::tile4(x, ldx, R, k0, k1, w, ldw, y, ldy, first, bias, act == Fuse::relu);
        if (act >= Fuse::gelu) gelu_outputs(y, ldy, R, NV * L, act);
        return;
      } else {  // (a GELU: the generic tile below)
        if (act <= Fuse::relu) return Tile4::tile4(x, ldx, R, k0, k1, w, ldw, y, ldy, first, bias, act == Fuse::relu);
      }
    }
    tile_once<R, NV, Partial>(x, ldx, k0, k1, w, ldw, y, ldy, tail, first, bias, act, pf, pf_end, 0);
  }
  /// `count` tiles of tile's down the rows, one after the other (tile t at x + t·R·ldx, y + t·R·ldy):
  /// x86's product walk makes one call for a tile column's run of equal tiles, instead of a call, its
  /// arguments and the dispatch before every tile. Each prefetches its share of the lines [pf, pf_end),
  /// at most pf_lines and one per reduction step.
  template <index_t R, index_t NV, bool Partial>
  [[gnu::noinline]] static void tile_run(index_t count, index_t pf_lines, const float* x, index_t ldx, index_t k0,
                                         index_t k1, const float* w, index_t ldw, float* y, index_t ldy, index_t tail,
                                         bool first, const float* bias, Fuse act, const char* pf, const char* pf_end) {
    for (index_t t = 0; t < count; ++t, x += R * ldx, y += R * ldy)
      tile_once<R, NV, Partial>(x, ldx, k0, k1, w, ldw, y, ldy, tail, first, bias, act, pf, pf_end, pf_lines);
  }
  /// One whole-product tile (short_tile: x86's one-tile shortcut, see Product::product): R rows × NV
  /// full vectors over the whole reduction [0, in) from +0, the bias added, then ReLU (relu) or
  /// nothing; GELUs, partial vectors and continued sums take tile. tile_once's operations, so the same
  /// bits; without its prefetches, loads of y and GELU code, and called without product_tile's
  /// dispatch, 10×16 products took ~15 ns less (the encoder layer at 10×16×2×32 4-5 % faster, Zen 4).
  template <index_t R, index_t NV>
  [[gnu::noinline]] static void short_tile(const float* x, index_t ldx, index_t in, const float* w, index_t ldw,
                                           float* y, index_t ldy, const float* bias, bool relu) {
    const char* pf = nullptr;
    tile_once<R, NV, false, true>(x, ldx, 0, in, w, ldw, y, ldy, L, true, bias, relu ? Fuse::relu : Fuse::none, pf,
                                  nullptr, 0);
  }
  using ShortTile = void (*)(const float*, index_t, index_t, const float*, index_t, float*, index_t, const float*,
                             bool);

  /// One tile of tile, tile_run or short_tile (pf: advanced past the lines it prefetched; pf_lines 0:
  /// all of them). Lean: short_tile's (first, no prefetch, no GELU).
  template <index_t R, index_t NV, bool Partial, bool Lean = false>
  [[gnu::always_inline]] static inline void tile_once(const float* x, index_t ldx, index_t k0, index_t k1,
                                                      const float* w, index_t ldw, float* y, index_t ldy, index_t tail,
                                                      bool first, const float* bias, Fuse act, const char*& pf,
                                                      const char* pf_end, index_t pf_lines) {
    V acc[R][NV];
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t i = 0; i < NV; ++i)
        acc[r][i] = Lean || first ? I::zero() : tile_vector<NV, Partial>(y + r * ldy, i, tail);
    }
    const float* xk = x + k0;
    const float* wk = w + k0 * ldw;
    index_t k = k0;
    if constexpr (kPrefetchWeights && !Lean) {
      // the caller's next weight block (see kPrefetchWeights), one line per reduction step
      index_t lines = static_cast<index_t>(pf_end - pf) / 64;
      lines = pf_lines && pf_lines < lines ? pf_lines : lines;
      const index_t kp = k0 + (lines < k1 - k0 ? lines : k1 - k0);
      for (; k < kp; ++k, ++xk, wk += ldw, pf += 64) {
        __builtin_prefetch(pf, 0, 2);
        tile_step<R, NV, Partial>(acc, xk, ldx, wk, tail);
      }
    } else {
      (void)pf_end, (void)pf_lines;
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
    } else if (!Lean && act >= Fuse::gelu && !kSizeFirstTiles) {
      // (one test for both GELUs: a product without them takes as many branches as before there were two)
      // (unrolled like every loop over acc: a runtime index would keep acc in memory)
      if (act == Fuse::gelu) {
#pragma GCC unroll 16
        for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
          for (index_t i = 0; i < NV; ++i) acc[r][i] = simd_math::gelu<I>(acc[r][i]);
        }
      } else {
#pragma GCC unroll 16
        for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
          for (index_t i = 0; i < NV; ++i) acc[r][i] = simd_math::gelu_tanh<I>(acc[r][i]);
        }
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
    if constexpr (kSizeFirstTiles) {
      if (act >= Fuse::gelu) gelu_outputs(y, ldy, R, NV * L, act);
    }
  }

  /// y[r, o] = gelu(y[r, o]) (act: Fuse::gelu) or gelu_tanh(y[r, o]) (Fuse::gelu_tanh) for r < rows,
  /// o < cols (L == 1): the size-first tiles' GELU, one function for every tile (a stored float
  /// reloads exactly, so the bits are the fused GELU's).
  [[gnu::noinline]] static void gelu_outputs(float* y, index_t ldy, index_t rows, index_t cols, Fuse act) {
    for (index_t r = 0; r < rows; ++r)
      for (index_t o = 0; o < cols; ++o) {
        const V v = I::load(y + r * ldy + o);
        I::store(y + r * ldy + o, act == Fuse::gelu ? simd_math::gelu<I>(v) : simd_math::gelu_tanh<I>(v));
      }
  }

  /// The activation fused into a product's epilogue (api.hpp's Fuse) as a type: one instantiation
  /// of a target's row_tile each; `fuse` tells a target's assembly what it may apply itself
  /// (kernels/product/helium.hpp).
  template <Fuse F>
  struct Epilogue {
    static constexpr Fuse fuse = F;
    V operator()(V v) const {
      if constexpr (F == Fuse::relu)
        return simd_math::relu<I>(v);
      else if constexpr (F == Fuse::gelu)
        return simd_math::gelu<I>(v);
      else if constexpr (F == Fuse::gelu_tanh)
        return simd_math::gelu_tanh<I>(v);
      else
        return v;
    }
  };
  static void row_tile(const float* x, index_t ldx, index_t rows, index_t k0, index_t k1, const float* w, index_t ldw,
                       float* y, index_t ldy, index_t width, bool first, const float* bias, Fuse act) {
    if (act == Fuse::relu)
      RowTile::row_tile(x, ldx, rows, k0, k1, w, ldw, y, ldy, width, first, bias, Epilogue<Fuse::relu>{});
    else if (act == Fuse::gelu)
      RowTile::row_tile(x, ldx, rows, k0, k1, w, ldw, y, ldy, width, first, bias, Epilogue<Fuse::gelu>{});
    else if (act == Fuse::gelu_tanh)
      RowTile::row_tile(x, ldx, rows, k0, k1, w, ldw, y, ldy, width, first, bias, Epilogue<Fuse::gelu_tanh>{});
    else
      RowTile::row_tile(x, ldx, rows, k0, k1, w, ldw, y, ldy, width, first, bias, Epilogue<Fuse::none>{});
  }

  static constexpr index_t kRows = I::gemm_rows, kVecs = I::gemm_vecs;
  /// Whether product's walk calls a tile column's equal row tiles as one run (product_tile_run,
  /// tile_run): the wide-vector x86 variants, where a tile's call and dispatch took ~10 % of its time
  /// (Zen 3: the in-L1 6×128×64 product at 89 GFLOP/s against 99 for the same loop called bare); over
  /// reduction blocks of kTileRunSteps steps or more (runs over the 16- and 32-step products too,
  /// kTileRunSteps 16, measured the encoder layer at 10×16×2×32 3.0 % and at 16×32×4×64 1.3 % slower:
  /// ab.sh, Zen 3).
  static constexpr bool kTileRuns = L >= 8;
  static constexpr index_t kTileRunSteps = 64;
  /// Vectors per tile for a single row (a matrix-vector product): more, since no row shares them.
  static constexpr index_t kGemvVecs = I::gemv_vecs;
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
    const char* pf;  ///< lines to prefetch during the tile, one per reduction step
    const char* pf_end;
    index_t count = 1;     ///< tiles down the rows in one call (product_tile_run, where kTileRuns)
    index_t pf_lines = 0;  ///< lines each of them prefetches at most
    // (a constructor, not an aggregate: GCC cleared an aggregate's 96 bytes with `rep stosq` before
    // storing its fields, ~40 cycles on AMD Zen 3 for every tile a product calls)
    TileArgs(const float* x_, index_t ldx_, index_t k0_, index_t k1_, const float* w_, index_t ldw_, float* y_,
             index_t ldy_, index_t tail_, bool first_, const float* bias_, Fuse act_, const char* pf_ = nullptr,
             const char* pf_end_ = nullptr)
        : x(x_),
          ldx(ldx_),
          k0(k0_),
          k1(k1_),
          w(w_),
          ldw(ldw_),
          y(y_),
          ldy(ldy_),
          tail(tail_),
          first(first_),
          bias(bias_),
          act(act_),
          pf(pf_),
          pf_end(pf_end_) {}
  };

  /// The tile of R rows and nv <= NV vectors for a (tile_nv), or, Run, the run of a.count of them
  /// down the rows (tile_run; x86's product walk, see kTileRuns).
  template <index_t R, index_t NV, bool Run = false>
  static void tile_nv(index_t nv, const TileArgs& a) {
    static_assert(!Run || (kTileRuns && R >= 2), "runs: x86's tiles of two rows or more");
    if constexpr (kSizeFirstTiles && NV > 1) {
      // size-first: fewer than NV outputs, one column at a time (L == 1: no partial vectors)
      if (nv < NV) {
        for (index_t j = 0; j < nv; ++j)
          tile<R, 1, false>(a.x, a.ldx, a.k0, a.k1, a.w + j, a.ldw, a.y + j, a.ldy, a.tail, a.first,
                            a.bias ? a.bias + j : nullptr, a.act, a.pf, a.pf_end);
        return;
      }
      tile<R, NV, false>(a.x, a.ldx, a.k0, a.k1, a.w, a.ldw, a.y, a.ldy, a.tail, a.first, a.bias, a.act, a.pf,
                         a.pf_end);
    } else {
      if constexpr (NV > 1) {
        if (nv < NV) return tile_nv<R, NV - 1, Run>(nv, a);
      }
      if constexpr (Run) {
        if (a.tail == L)
          tile_run<R, NV, false>(a.count, a.pf_lines, a.x, a.ldx, a.k0, a.k1, a.w, a.ldw, a.y, a.ldy, a.tail, a.first,
                                 a.bias, a.act, a.pf, a.pf_end);
        else
          tile_run<R, NV, true>(a.count, a.pf_lines, a.x, a.ldx, a.k0, a.k1, a.w, a.ldw, a.y, a.ldy, a.tail, a.first,
                                a.bias, a.act, a.pf, a.pf_end);
        return;
      }
      // (one lane: the last vector always holds all of its L lanes, so no partial tile exists)
      if (L == 1 || a.tail == L)
        tile<R, NV, false>(a.x, a.ldx, a.k0, a.k1, a.w, a.ldw, a.y, a.ldy, a.tail, a.first, a.bias, a.act, a.pf,
                           a.pf_end);
      else if constexpr (L > 1)
        tile<R, NV, true>(a.x, a.ldx, a.k0, a.k1, a.w, a.ldw, a.y, a.ldy, a.tail, a.first, a.bias, a.act, a.pf,
                          a.pf_end);
    }
  }

  /// Rows of a tile at most kVecs / 2 vectors wide: twice kRows where the registers hold twice
  /// the accumulators (32-register vocabularies). A narrow product's rows then share one tile:
  /// more independent sums in flight over a short reduction, and fewer calls.
  static constexpr index_t kTallRows = L >= 16 && kVecs % 2 == 0 ? 2 * kRows : kRows;

  template <index_t R, bool Run = false>
  static void tall_rows(index_t rows, index_t nv, const TileArgs& a) {
    if constexpr (R > kRows + 1) {
      if (rows < R) return tall_rows<R - 1, Run>(rows, nv, a);
    }
    tile_nv<R, kVecs / 2, Run>(nv, a);
  }

  /// The tile (or, Run, the run of tiles) of `rows` <= R rows and nv vectors.
  template <index_t R, bool Run = false>
  static void tile_rows(index_t rows, index_t nv, const TileArgs& a) {
    if constexpr (kTallRows > kRows) {
      if (R == kRows && rows > kRows) return tall_rows<kTallRows, Run>(rows, nv, a);
    }
    if constexpr (R > (Run ? 2 : 1)) {  // (runs: of two rows or more)
      if (rows < R) return tile_rows<R - 1, Run>(rows, nv, a);
    }
    if constexpr (R == 1)
      tile_nv<1, kGemvVecs>(nv, a);  // (single-row tiles come only from single-row products)
    else
      tile_nv<R, kVecs, Run>(nv, a);
  }

  /// tile_rows<kRows> as one function for product's two paths (inlined twice, its dispatch tree
  /// grew the translation unit past GCC's inlining budget for the attention kernels)
  [[gnu::noinline]] static void product_tile(index_t rows, index_t nv, const TileArgs& a) {
    tile_rows<kRows>(rows, nv, a);
  }

  /// The run of `a.count` tiles of `rows` rows (2 .. kTallRows) and nv vectors (tile_run): product_tile's
  /// choice of tile (tile_rows<kRows, true>), made once for the run, in a function of its own: a single
  /// tile's dispatch tests for no run (a test of a.count there made every single tile slower, 10×16 3 %).
  [[gnu::noinline]] static void product_tile_run(index_t rows, index_t nv, const TileArgs& a) {
    if constexpr (kTileRuns) tile_rows<kRows, true>(rows, nv, a);
  }

  /// Software prefetch of the next weight block (wide-vector x86 variants: their tiles consume a
  /// block faster than the hardware prefetchers bring it from L3). Each row tile issues its share
  /// inside its reduction loop, one line per step: issued as a burst between tiles, the prefetches
  /// waited for fill buffers and cost 3-4% of a product's time (perf: 3.4% of samples on them).
  static constexpr bool kPrefetchWeights = L >= 8;
};

}  // namespace stf::kernels_detail::generic
