// statiformer — matrix products, generic: the cache blocking around the register tiles
// (product/register_tiles.hpp), linear layers over panel-stored weights, plain products (gemm).
// Targets' own walks: kernels/product/select.hpp. See kernels/README.md.
#pragma once

#include <type_traits>
#include <utility>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/product/register_tiles.hpp>
#include <statiformer/kernels/product/select.hpp>

namespace stf::kernels_detail::generic {

/// Matrix products in register tiles of R rows × NV vectors of outputs (every output accumulated
/// in sequence over the reduction with fma from +0), blocked for the cache; linear layers over
/// panel-stored weights (kWeightPanel) and plain matrices (gemm).
template <class Tag>
struct Product : ProductTiles<Tag> {
  using Elementwise<Tag>::L;
  using typename ProductTiles<Tag>::TileArgs;
  using ProductTiles<Tag>::kRows;
  using ProductTiles<Tag>::kVecs;
  using ProductTiles<Tag>::kGemvVecs;
  using ProductTiles<Tag>::kTallRows;
  using ProductTiles<Tag>::kPrefetchWeights;
  using ProductTiles<Tag>::kTileRuns;
  using ProductTiles<Tag>::kTileRunSteps;
  using ProductTiles<Tag>::product_tile;
  template <Fuse F>
  using Epilogue = typename ProductTiles<Tag>::template Epilogue<F>;
  /// The target's own walk over a panel-stored weight where the selection names one
  /// (kernels/product/select.hpp), or void.
  using Panels = typename ProductSelect<Tag>::Panels;
  /// The target's own walk over plain matrices for gemm_plain, or void.
  using PlainWalk = typename ProductSelect<Tag>::PlainWalk;

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

  /// The outputs [o0, o0 + width) one tile column of a product takes: at most `panel` of them, not
  /// past `out` nor past the end of o0's weight panel; w: the address of w[0, o0], ld its row stride,
  /// nv vectors, the last holding `tail` lanes.
  struct TileColumn {
    const float* w;
    index_t ld, width, nv, tail;
  };
  [[gnu::always_inline]] static TileColumn tile_column(const WeightAt& w, index_t o0, index_t out, index_t panel) {
    index_t ld = 0, run = 0;
    const float* wo = w.column(o0, ld, run);
    index_t width = out - o0 < panel ? out - o0 : panel;
    width = width < run ? width : run;
    const index_t nv = (width + L - 1) / L;
    return {wo, ld, width, nv, width - (nv - 1) * L};
  }

  /// Whether a product that is one register tile (rows, outputs and reduction each one block)
  /// calls that tile directly, without product's blocking loops (x86: their set-up is a third of
  /// a small product's time). Elsewhere product's code stays as it was (Cortex-M flash).
  static constexpr bool kOneTileShortcut = L >= 8;

  /// Whether panel-stored weights take the long cache blocks (block_steps' panels): the wide-vector
  /// x86 variants. Elsewhere the blocks stay as they were (NEON, RISC-V; Cortex-M walks its own).
  static constexpr bool kLongPanelBlocks = L >= 8;

  /// The reduction steps of one cache block of a product whose tiles are panel floats wide: a
  /// [kc, panel] block of w stays in L1 while every row passes. At each block's end every tile parks
  /// its sums in y and the next block reloads them (the exact values: no bit moves with kc).
  /// panels: w is a panel-stored weight, whose blocks are contiguous. On the kLongPanelBlocks
  /// variants its block is an L2 share instead (128 KiB, at most 512 steps, so that the rows'
  /// slice of x, 2 KiB a row, stays in L2 beside it): a y past L2 (128 rows of 2048 outputs: 1 MiB)
  /// came back from L3 at every block's start, and [128, 512]·[512, 2048] ran at 91 % of the FMA
  /// peak in blocks of 128 steps, at 97-99 % as one block (Zen 4, session 53). The linears of
  /// the small shapes are one block either way.
  static constexpr index_t block_steps(index_t panel, index_t in, bool panels = false) {
    const bool long_block = kLongPanelBlocks && panels;
    const index_t bytes = long_block ? 128 * 1024 : 32 * 1024;
    // and at most 128 steps elsewhere: in a plain matrix a panel's rows are ld floats apart, which for
    // a power-of-two ld maps them all to few cache sets; 128 rows of a narrow panel still fit L2's
    // ways there
    const index_t most = long_block ? 512 : 128;
    index_t kc = bytes / (panel * sizeof(float));
    kc = kc < 16 ? 16 : kc;
    kc = kc > most ? most : kc;
    return in <= kc + kc / 2 ? in : kc;
  }

  /// Rows per register tile of a product nv vectors wide.
  static constexpr index_t tile_height(index_t nv) { return nv * 2 <= kVecs ? kTallRows : kRows; }

  /// The one-tile shortcut's lean tiles (short_tile), one per tile of 2 .. tile_height(nv) rows and nv
  /// vectors: a table instead of product_tile's tree of tests.
  using ShortTile = typename ProductTiles<Tag>::ShortTile;
  struct ShortTiles {
    ShortTile at[kTallRows + 1][kVecs + 1] = {};
    constexpr ShortTiles() { rows(std::make_index_sequence<kTallRows + 1>{}); }
    template <std::size_t... R>
    constexpr void rows(std::index_sequence<R...>) {
      (vecs<R>(std::make_index_sequence<kVecs + 1>{}), ...);
    }
    template <std::size_t R, std::size_t... NV>
    constexpr void vecs(std::index_sequence<NV...>) {
      ((at[R][NV] = entry<R, NV>()), ...);
    }
    template <index_t R, index_t NV>
    static constexpr ShortTile entry() {
      if constexpr (R >= 2 && NV >= 1 && R <= tile_height(NV))
        return &ProductTiles<Tag>::template short_tile<R, NV>;
      else
        return nullptr;
    }
  };

  /// y[r, o] = Σ_k x[r, k] · w[k, o] (+ bias[o]) for x [rows, in] (row stride ldx), w [in, out]
  /// (see WeightAt), y [rows, out] (row stride ldy). y must not alias x or w.
  /// accumulate: continue from the values in y (the same sequence as if k had started earlier).
  /// act: applied after the bias.
  static void product(const float* x, index_t ldx, index_t rows, index_t in, const WeightAt& w, index_t out, float* y,
                      index_t ldy, const float* bias, bool accumulate, Fuse act) {
    if constexpr (kOneTileShortcut) {
      // the same tile product_blocked would call, with the same arguments: a lean one where the table
      // has it, the rest out of line (product_wide), so that this call takes no stack frame for the
      // walk's locals (the encoder layer at 10×16×2×32: 2-4 % faster, Zen 5)
      if (one_tile(rows, (out + L - 1) / L, in, w) && !accumulate && out % L == 0 && act <= Fuse::relu) {
        index_t ldw = 0, run = 0;
        const float* wo = w.column(0, ldw, run);
        if (run >= out) {
          static constexpr ShortTiles kShort{};
          return kShort.at[rows][out / L](x, ldx, in, wo, ldw, y, ldy, bias, act == Fuse::relu);
        }
      }
      product_wide(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act);
    } else {
      product_blocked(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act);
    }
  }

  /// Whether product's rows × nv vectors over `in` steps of w are one register tile of more than one
  /// row (one cache block of the reduction).
  [[gnu::always_inline]] static bool one_tile(index_t rows, index_t nv, index_t in, const WeightAt& w) {
    return rows > 1 && nv > 0 && nv <= kVecs && rows <= tile_height(nv) && block_steps(kVecs * L, in, w.panels) == in;
  }

  /// product's other calls where it has the one-tile shortcut (kOneTileShortcut).
  [[gnu::noinline]] static void product_wide(const float* x, index_t ldx, index_t rows, index_t in, const WeightAt& w,
                                             index_t out, float* y, index_t ldy, const float* bias, bool accumulate,
                                             Fuse act) {
    // the same tile product_blocked would call, with the same arguments
    const index_t nv = (out + L - 1) / L;
    if (one_tile(rows, nv, in, w)) {
      index_t ldw = 0, run = 0;
      const float* wo = w.column(0, ldw, run);
      if (run >= out) {
        const TileArgs a{x, ldx, 0, in, wo, ldw, y, ldy, out - (nv - 1) * L, !accumulate, bias, act};
        return product_tile(rows, nv, a);
      }
    }
    // one row over one reduction block (a decoding step's linears): each panel column's
    // single-row tile directly, the tiles product_blocked would reach through its loops and
    // product_tile's dispatch, with the same arguments
    if (rows == 1 && block_steps(kGemvVecs * L, in, w.panels) == in) {
      for (index_t o0 = 0; o0 < out;) {
        const TileColumn c = tile_column(w, o0, out, kGemvVecs * L);
        const TileArgs a{x, ldx, 0, in, c.w, c.ld, y + o0, ldy, c.tail, !accumulate, bias ? bias + o0 : nullptr, act};
        ProductTiles<Tag>::template tile_nv<1, kGemvVecs>(c.nv, a);
        o0 += c.width;
      }
      return;
    }
    if constexpr (kTileRuns)  // (inlined, as GCC did before the runs made the walk longer: small products 3 % faster)
      blocked_walk(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act);
    else
      product_blocked(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act);
  }

  // (noclone: its tiles are inlined, and a constant-propagated copy would double them in flash)
  [[gnu::noclone]] static void product_blocked(const float* x, index_t ldx, index_t rows, index_t in, const WeightAt& w,
                                               index_t out, float* y, index_t ldy, const float* bias, bool accumulate,
                                               Fuse act) {
    blocked_walk(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act);
  }
  /// product_blocked's walk over the cache blocks, tile columns and row tiles.
  [[gnu::always_inline]] static inline void blocked_walk(const float* x, index_t ldx, index_t rows, index_t in,
                                                         const WeightAt& w, index_t out, float* y, index_t ldy,
                                                         const float* bias, bool accumulate, Fuse act) {
    const index_t panel = (rows == 1 ? kGemvVecs : kVecs) * L;
    const index_t kc = block_steps(panel, in, w.panels);
    EvenParts split(0, 1);
    index_t split_nv = 0;
    for (index_t k0 = 0; k0 < in; k0 += kc) {
      const index_t k1 = in - k0 < kc ? in : k0 + kc;
      const bool first = k0 == 0 && !accumulate, last = k1 == in;
      for (index_t o0 = 0; o0 < out;) {
        const TileColumn c = tile_column(w, o0, out, panel);
        const index_t width = c.width, nv = c.nv;
        TileArgs a{x,
                   ldx,
                   k0,
                   k1,
                   c.w,
                   c.ld,
                   y + o0,
                   ldy,
                   c.tail,
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
        // as many tiles as tile_height(nv)-row tiles would take, as even as they go (32 rows of
        // 6-row tiles: 6 6 5 5 5 5, not 6 6 6 6 4 4; 25: five of 5, not 6 6 6 4 3): a thin tile has
        // fewer sums in flight and reuses each weight load less (AVX2: a 4-row tile's 8 sums just
        // cover the FMA latency, a 3-row tile's 6 do not). Which tile takes a row moves no bit.
        if (nv != split_nv) {  // (the cut is the same for every tile column as wide)
          split = EvenParts(rows, tile_height(nv));
          split_nv = nv;
        }
        if constexpr (kTileRuns) {
          // (runs of tiles of 2 rows or more; a column of one tile takes the single tile's path)
          if (k1 - k0 >= kTileRunSteps && split.big > 2 && split.parts > 1) {
            column_runs(split, nv, a, x, ldx, y + o0, ldy, next, next_lines, per_tile);
            o0 += width;
            continue;
          }
        }
        for (index_t r = 0, i = 0; r < rows; r += split[i++]) {
          const index_t n = split[i];
          a.x = x + r * ldx;
          a.y = y + r * ldy + o0;
          if constexpr (kPrefetchWeights) prefetch_share(a, 1, per_tile, next, next_lines);
          if constexpr (kOneTileShortcut)
            product_tile(n, nv, a);
          else
            ProductTiles<Tag>::template tile_rows<kRows>(n, nv, a);
        }
        o0 += width;
      }
    }
  }

  /// The next weight block's lines [a.pf, a.pf_end) that `tiles` tiles of a (one, or a run's) take
  /// from [next, next + next_lines·64): per tile per_tile lines, at most one per reduction step, while
  /// lines are left; next and next_lines move past them. Returns the lines per tile.
  [[gnu::always_inline]] static inline index_t prefetch_share(TileArgs& a, index_t tiles, index_t per_tile,
                                                              const char*& next, index_t& next_lines) {
    const index_t steps = a.k1 - a.k0;
    const index_t step = per_tile < steps ? per_tile : steps;
    const index_t cnt = tiles * step < next_lines ? tiles * step : next_lines;
    a.pf = next;
    a.pf_end = next + cnt * 64;
    next += cnt * 64;
    next_lines -= cnt;
    return step;
  }

  /// product_blocked's tiles of one tile column (a: its arguments) in (at most) two calls: its run of
  /// split.big-row tiles, then its run of big - 1 (tile_run: the same tiles in the same order, each
  /// prefetching its share of the next block's lines as product_blocked's per-tile loop gives it).
  /// Out of line: inside the walk, the runs' state moved GCC's code for the small products that take
  /// the loop of single tiles.
  [[gnu::noinline]] static void column_runs(const EvenParts& split, index_t nv, TileArgs& a, const float* x,
                                            index_t ldx, float* y, index_t ldy, const char*& next, index_t& next_lines,
                                            index_t per_tile) {
    for (index_t r = 0, run = 0; run < 2; ++run) {
      const index_t n = run ? split.big - 1 : split.big;
      const index_t tiles = run ? split.parts - split.big_count : split.big_count;
      if (!tiles) continue;
      a.x = x + r * ldx;
      a.y = y + r * ldy;
      a.count = tiles;
      if constexpr (kPrefetchWeights) a.pf_lines = prefetch_share(a, tiles, per_tile, next, next_lines);
      ProductTiles<Tag>::product_tile_run(n, nv, a);
      r += tiles * n;
    }
  }

  /// gemm without bias or activation (the attention's Q·Kᵀ and P·V): through the target's own walk
  /// over plain matrices where it has one (Cortex-M4F/M7: tile4 and a scalar column; then a layer
  /// whose linears are int8 links no product_blocked; Helium: row_tile and a one-row walk), else gemm. The same bits
  /// either way. Always inlined: as one more inline level it moved GCC's inlining in the attention
  /// on x86, where it only forwards to gemm (decoder steps 4 % slower, A/B).
  [[gnu::always_inline]] static void gemm_plain(const float* x, index_t ldx, index_t rows, index_t in, const float* w,
                                                index_t ldw, index_t out, float* y, index_t ldy,
                                                bool accumulate = false) {
    if constexpr (!std::is_void_v<PlainWalk>)
      PlainWalk::gemm_plain(x, ldx, rows, in, w, ldw, out, y, ldy, accumulate, Epilogue<Fuse::none>{});
    else
      gemm(x, ldx, rows, in, w, ldw, out, y, ldy, nullptr, accumulate);
  }

  /// product with a plain w [in, out] of row stride ldw.
  static void gemm(const float* x, index_t ldx, index_t rows, index_t in, const float* w, index_t ldw, index_t out,
                   float* y, index_t ldy, const float* bias, bool accumulate = false, Fuse act = Fuse::none) {
    product(x, ldx, rows, in, WeightAt::plain(w, ldw), out, y, ldy, bias, accumulate, act);
  }

  static void linear_block(const float* x, index_t ldx, index_t rows, index_t in, WeightBlock w, index_t out, float* y,
                           index_t ldy, const float* bias, bool accumulate, Fuse act) {
    // a target's own walk over its weight panels where it has one (kernels/product/<target>.hpp:
    // Cortex-M4F/M7, Helium) takes every call and leaves a GELU to a pass over the outputs it
    // stored (a stored float reloads exactly, so the fused GELU's bits): product is not linked
    // for linears there.
    if constexpr (!std::is_void_v<Panels>) {
      const bool gelu = act >= Fuse::gelu;
      Panels::linear_panels(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, gelu ? Fuse::none : act,
                            Epilogue<Fuse::none>{}, Epilogue<Fuse::relu>{});
      if (gelu && in > 0) {
        if constexpr (L == 1)
          ProductTiles<Tag>::gelu_outputs(y, ldy, rows, out, act);
        else
          gelu_vectors(y, ldy, rows, out, act);
      }
    } else {
      product(x, ldx, rows, in, WeightAt::panel_block(w), out, y, ldy, bias, accumulate, act);
    }
  }

  /// How many linears one shared tile holds (linears: a self-attention's Q, K and V).
  static constexpr index_t kSharedTile = 3;

  /// Kernels::linears (kernels/api.hpp). Where the variant has the one-tile shortcut (x86) and tiles
  /// of kSharedTile vectors (AVX-512; AVX2's hold two), and the call is kSharedTile linears each one
  /// vector wide (out == L: d_model 16) over more than one row and one cache block of the
  /// reduction, their outputs share register tiles (shared_tile: each x broadcast once for the three
  /// instead of once per linear, one call instead of three; the encoder layer at 10×16×2×32 spent
  /// ~45 ns per 10×16→16 linear); else one linear_block each. Every output takes the operations of
  /// its own linear's tile (fma from +0 over k in order, then the bias), so the same bits.
  static void linears(const float* x, index_t rows, index_t in, const F32Linear* ls, index_t count) {
    if constexpr (kOneTileShortcut && kSharedTile <= kVecs) {
      bool shared = count == kSharedTile && rows > 1 && in > 0 && block_steps(kVecs * L, in, true) == in;
      for (index_t i = 0; shared && i < count; ++i) shared = ls[i].out == L;
      if (shared) {
        const index_t tr = tile_height(kSharedTile);
        for (index_t r = 0; r < rows;) {  // (row tiles as product_blocked cuts them)
          const index_t n = even_part(rows - r, tr);
          shared_rows<kRows>(n, x + r * in, in, ls, r);
          r += n;
        }
        return;
      }
    }
    for (index_t i = 0; i < count; ++i) linear_of(x, rows, in, ls[i]);
  }

  /// One linear of linears' loop (out of line: inlined into the loop, the Cortex-M4F's assembly tile
  /// found no registers for its operands).
  [[gnu::noinline]] static void linear_of(const float* x, index_t rows, index_t in, const F32Linear& l) {
    linear_block(x, in, rows, in, WeightBlock{l.w, in, l.out}, l.out, l.y, l.ldy, l.bias, false, Fuse::none);
  }

  /// shared_tile for n <= R rows.
  template <index_t R>
  static void shared_rows(index_t n, const float* x, index_t in, const F32Linear* ls, index_t r0) {
    if constexpr (R > 1) {
      if (n < R) return shared_rows<R - 1>(n, x, in, ls, r0);
    }
    shared_tile<R>(x, in, ls, r0);
  }

  /// Rows r0 .. r0 + R of kSharedTile one-vector linears over x [R, in] (row stride in): the register
  /// tile R × kSharedTile, vector i linear i's outputs.
  template <index_t R>
  [[gnu::noinline]] static void shared_tile(const float* x, index_t in, const F32Linear* ls, index_t r0) {
    using I = typename ProductTiles<Tag>::I;
    using V = typename ProductTiles<Tag>::V;
    constexpr index_t N = kSharedTile;
    V acc[R][N];
#pragma GCC unroll 16
    for (index_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (index_t i = 0; i < N; ++i) acc[r][i] = I::zero();
    }
    const float* w[N];
#pragma GCC unroll 16
    for (index_t i = 0; i < N; ++i) w[i] = ls[i].w;
    for (index_t k = 0; k < in; ++k) {
      V wv[N];
#pragma GCC unroll 16
      for (index_t i = 0; i < N; ++i) wv[i] = I::load(w[i] + k * L);
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) {
        const float xr = x[r * in + k];
#pragma GCC unroll 16
        for (index_t i = 0; i < N; ++i) acc[r][i] = I::fma_n(xr, wv[i], acc[r][i]);
      }
    }
#pragma GCC unroll 16
    for (index_t i = 0; i < N; ++i) {
      if (ls[i].bias) {
        const V b = I::load(ls[i].bias);
#pragma GCC unroll 16
        for (index_t r = 0; r < R; ++r) acc[r][i] = I::add(acc[r][i], b);
      }
#pragma GCC unroll 16
      for (index_t r = 0; r < R; ++r) I::store(ls[i].y + (r0 + r) * ls[i].ldy, acc[r][i]);
    }
  }

  /// y[r, o] = gelu(y[r, o]) (act: Fuse::gelu) or gelu_tanh (Fuse::gelu_tanh) for r < rows, o < cols,
  /// a vector at a time, the last one partial (gelu_outputs for more than one lane).
  [[gnu::noinline]] static void gelu_vectors(float* y, index_t ldy, index_t rows, index_t cols, Fuse act) {
    using I = typename ProductTiles<Tag>::I;
    for (index_t r = 0; r < rows; ++r)
      for (index_t o = 0; o < cols; o += L) {
        float* p = y + r * ldy + o;
        const index_t n = cols - o < L ? cols - o : L;
        const auto v = I::load_partial(p, n);
        I::store_partial(p, act == Fuse::gelu ? simd_math::gelu<I>(v) : simd_math::gelu_tanh<I>(v), n);
      }
  }

  static void linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out, float* y,
                     Fuse act) {
    linear_block(x, in, rows, in, WeightBlock{w, in, out}, out, y, out, bias, false, act);
  }
};

}  // namespace stf::kernels_detail::generic
