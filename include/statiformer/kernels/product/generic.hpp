// statiformer — matrix products, generic: register tiles on the SIMD vocabulary, the cache blocking
// around them, linear layers. Targets' own tiles: kernels/product/select.hpp. See kernels/README.md.
#pragma once

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/product/select.hpp>
#include <statiformer/simd/math.hpp>
#include <type_traits>

namespace stf::kernels_detail::generic {

/// Matrix products in register tiles of R rows × NV vectors of outputs (every output accumulated
/// in sequence over the reduction with fma from +0), blocked for the cache; linear layers over
/// panel-stored weights (kWeightPanel) and plain matrices (gemm).
template <class Tag>
struct Product : Elementwise<Tag> {
  using typename Elementwise<Tag>::I;
  using typename Elementwise<Tag>::V;
  using Elementwise<Tag>::L;
  using Elementwise<Tag>::add;
  /// The target's own kernels where the selection names them (kernels/product/select.hpp): a
  /// struct, or void where the tiles below run.
  using Tile4 = typename ProductSelect<Tag>::Tile4;
  using RowTile = typename ProductSelect<Tag>::RowTile;
  using Panels = typename ProductSelect<Tag>::Panels;
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
      if constexpr (kSizeFirstTiles) {  // GELU after the tile's bias, as the pass the generic tile makes
        Tile4::tile4(x, ldx, R, k0, k1, w, ldw, y, ldy, first, bias, act == Fuse::relu);
        if (act == Fuse::gelu) gelu_outputs(y, ldy, R, NV * L);
        return;
      } else {
        if (act != Fuse::gelu) return Tile4::tile4(x, ldx, R, k0, k1, w, ldw, y, ldy, first, bias, act == Fuse::relu);
      }
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
    } else if (act == Fuse::gelu && !kSizeFirstTiles) {
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
    if constexpr (kSizeFirstTiles) {
      if (act == Fuse::gelu) gelu_outputs(y, ldy, R, NV * L);
    }
  }

  /// y[r, o] = gelu(y[r, o]) for r < rows, o < cols (L == 1): the size-first tiles' GELU, one
  /// function for every tile (a stored float reloads exactly, so the bits are the fused GELU's).
  [[gnu::noinline]] static void gelu_outputs(float* y, index_t ldy, index_t rows, index_t cols) {
    for (index_t r = 0; r < rows; ++r)
      for (index_t o = 0; o < cols; ++o) I::store(y + r * ldy + o, simd_math::gelu<I>(I::load(y + r * ldy + o)));
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
    else
      RowTile::row_tile(x, ldx, rows, k0, k1, w, ldw, y, ldy, width, first, bias, Epilogue<Fuse::none>{});
  }

  static constexpr index_t kRows = I::gemm_rows, kVecs = I::gemm_vecs;
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
    const char* pf = nullptr;  ///< lines to prefetch during the tile, one per reduction step
    const char* pf_end = nullptr;
  };

  template <index_t R, index_t NV>
  static void tile_nv(index_t nv, const TileArgs& a) {
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
        if (nv < NV) return tile_nv<R, NV - 1>(nv, a);
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
      if (Panels::linear_panels(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act, Epilogue<Fuse::none>{},
                                Epilogue<Fuse::relu>{}))
        return;
    }
    product(x, ldx, rows, in, WeightAt::panel_block(w), out, y, ldy, bias, accumulate, act);
  }

  static void linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out, float* y,
                     Fuse act) {
    linear_block(x, in, rows, in, WeightBlock{w, in, out}, out, y, out, bias, false, act);
  }
};

}  // namespace stf::kernels_detail::generic
