// statiformer — matrix-product kernels on Cortex-M4F/M7 (Arm M-profile with an FPU): tile4, the
// 1..6 × 4 tile (its assembly tiles: cortex_m4f_tiles.hpp), and linear_panels. See kernels/README.md.
#pragma once

#include <cmath>
#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/product/cortex_m4f_tiles.hpp>

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
namespace stf::kernels_detail::cortex_m4f {

/// The matrix products (generic::Product::tile and generic::Product::linear_block call them): the 1..6 × 4 tile in
/// assembly, and the walk over a panel-stored weight that calls it directly.
struct Product : ProductTiles {
  /// A linear layer's product over a block of a panel-stored weight (generic::Product::linear_block calls
  /// it): generic::Product::product's tiles (rows in tiles of 6, the last two even; 4 outputs each, tile4),
  /// walked directly, with the whole reduction in one pass (parking partial sums in y would not
  /// change their bits); one row (a decoding step's linear) by row_panels. Outputs short of a group of 4
  /// (before a block's first multiple of 4 and after its last) go one column at a time, each sum in
  /// sequence over k with fma (the canonical order, column_sums). It takes every call
  /// (ProductSelect::Panels), so linear_block links no generic product (its tiles were 23 KB of
  /// every speed-first firmware, for a generator of 13 outputs). act: none or ReLU (linear_block runs a
  /// GELU as a pass over the outputs). in == 0 leaves y as product does.
  template <class None, class Relu>
  static void linear_panels(const float* x, index_t ldx, index_t rows, index_t in, WeightBlock w, index_t out, float* y,
                            index_t ldy, const float* bias, bool accumulate, Fuse act, None, Relu) {
    if (in == 0) return;
    const bool relu = act == Fuse::relu;
    if (!kKernelsSizeFirst && rows == 1)  // (size-first: without row16's 1.1 KB)
      return row_panels(x, in, w, out, y, bias, (accumulate ? 0u : 1u) | (relu ? 2u : 0u));
    auto column = [&](index_t o) {
      index_t ld = 0, run = 0;
      const float* wo = w.column(o, ld, run);
      column_sums(x, ldx, rows, in, wo, ld, y + o, ldy, !accumulate, bias ? bias + o : nullptr, relu);
    };
    // single columns up to the weight's first multiple of 4 (a block may start anywhere); from
    // there groups of 4 never straddle two panels (kWeightPanel is a multiple of 4)
    index_t o = 0;
    for (; o < out && (w.o0 + o) % 4 != 0; ++o) column(o);
    for (; out - o >= 4; o += 4) {
      index_t ld = 0, run = 0;
      const float* wo = w.column(o, ld, run);
      const float* b = bias ? bias + o : nullptr;
      for (index_t r = 0; r < rows;) {
        const index_t rem = rows - r;
        const index_t n = rem <= 6 ? rem : (rem < 12 ? (rem + 1) / 2 : 6);
        tile4(x + r * ldx, ldx, n, 0, in, wo, ld, y + r * ldy + o, ldy, !accumulate, b, relu);
        r += n;
      }
    }
    for (; o < out; ++o) column(o);
  }
  /// linear_panels for one row (in == 0 excluded): 16 outputs at a time by row16 where they lie in one
  /// panel, else 4 by tile4's one-row tile, the outputs short of a group of 4 by column_sums. The same
  /// operations on each output as the rows' walk. Out of line, so that the rows' walk stays as it was
  /// where linear_panels is inlined.
  [[gnu::noinline]] static void row_panels(const float* x, index_t in, const WeightBlock& w, index_t out, float* y,
                                           const float* bias, unsigned mode) {
    const bool first = mode & 1u, relu = mode & 2u;
    for (index_t o = 0; o < out;) {
      index_t ld = 0, run = 0;
      const float* wo = w.column(o, ld, run);
      const float* b = bias ? bias + o : nullptr;
      if ((w.o0 + o) % 4 != 0 || out - o < 4) {
        column_sums(x, 1, 1, in, wo, ld, y + o, 1, first, b, relu);
        o += 1;
      } else if (out - o >= 16 && run >= 16) {
        row16(x, in, wo, ld, y + o, b, mode);
        o += 16;
      } else {
        tile4_rows<1>(x, 1, in, wo, ld, y + o, 1, b, mode);
        o += 4;
      }
    }
  }
  /// One output column of `rows` rows (w: its weights, ld apart): y[r] accumulated in sequence
  /// over k with fma from +0 (`first`) or from y[r], + *bias (nullable), then ReLU when `relu`
  /// (the reference's v > 0 ? v : +0): tile4's operations on one output.
  [[gnu::noinline]] static void column_sums(const float* x, index_t ldx, index_t rows, index_t in, const float* w,
                                            index_t ld, float* y, index_t ldy, bool first, const float* bias,
                                            bool relu) {
    for (index_t r = 0; r < rows; ++r) {
      const float* xr = x + r * ldx;
      float acc = first ? 0.0f : y[r * ldy];
      for (index_t k = 0; k < in; ++k) acc = std::fma(xr[k], w[k * ld], acc);
      if (bias) acc = acc + *bias;
      y[r * ldy] = relu ? (acc > 0.0f ? acc : 0.0f) : acc;
    }
  }
  /// generic::Product::gemm_plain (the attention's products): y [rows, out] = x [rows, in] · w [in,
  /// out] (plain, row strides ldx, ldw, ldy), from +0 or continuing from y (`accumulate`), no bias,
  /// no activation (the generic epilogue of Fuse::none, unused). One row of 16 or more outputs by row_plain; else
  /// outputs in groups of 4 by tile4 (rows in tiles of 6, the last two even, as linear_panels), the last
  /// out % 4 one by one, each sum in sequence over k with fma: the
  /// canonical order, so the bits of generic::Product::gemm. in == 0 leaves y as gemm does.
  template <class None>
  static void gemm_plain(const float* x, index_t ldx, index_t rows, index_t in, const float* w, index_t ldw,
                         index_t out, float* y, index_t ldy, bool accumulate, None) {
    if (in == 0) return;
    if (!kKernelsSizeFirst && rows == 1 && out >= 16) return row_plain(x, in, w, ldw, out, y, accumulate);
    const index_t full = out / 4 * 4;
    for (index_t o = 0; o < full; o += 4)
      for (index_t r = 0; r < rows;) {
        const index_t rem = rows - r;
        const index_t n = rem <= 6 ? rem : (rem < 12 ? (rem + 1) / 2 : 6);
        tile4_apart(x + r * ldx, ldx, n, 0, in, w + o, ldw, y + r * ldy + o, ldy, !accumulate);
        r += n;
      }
    for (index_t o = full; o < out; ++o)
      column_sums(x, ldx, rows, in, w + o, ldw, y + o, ldy, !accumulate, nullptr, false);
  }

  /// gemm_plain for one row of 16 or more outputs (out of line, as row_panels): 16 at a time by row16,
  /// then 4 by tile4's one-row tile, the last out % 4 by column_sums. row_panels' walk over one panel,
  /// kept apart on purpose: one driver for both, calling tile4_rows<1> (13 register operands), did not
  /// compile at -O3 ("impossible constraints"), and a 4-wide row16 in its place made GCC stop inlining
  /// tile4 into linear_panels (+0.7 % in the float layers).
  [[gnu::noinline]] static void row_plain(const float* x, index_t in, const float* w, index_t ldw, index_t out,
                                          float* y, bool accumulate) {
    const unsigned mode = accumulate ? 0u : 1u;
    index_t o = 0;
    for (; out - o >= 16; o += 16) row16(x, in, w + o, ldw, y + o, nullptr, mode);
    for (; out - o >= 4; o += 4) tile4_rows<1>(x, 1, in, w + o, ldw, y + o, 1, nullptr, mode);
    for (; o < out; ++o) column_sums(x, 1, 1, in, w + o, ldw, y + o, 1, !accumulate, nullptr, false);
  }

  /// The matrix kernels' tile of `rows` (1 to 6) × 4 outputs on Cortex-M (generic::Product::tile calls
  /// it for full-width tiles without GELU): y[r, o] accumulated in sequence over k in [k0, k1)
  /// with fma from +0 (`first`) or from y, + bias[o] (nullable), then ReLU when `relu`. In
  /// assembly, because the gain is in the loads GCC will not merge: per 4 steps of 3 rows, the
  /// weights w[k..k+3, o..o+3] by 4 vldmia, each row's x[r, k..k+3] by one vldmia, for 48 vfma
  /// (1.27 instructions per multiply-add; GCC's 6 × 4 tile: 1.42 plus a longer prologue and
  /// epilogue: zeroing, bias, stores one by one). 6 rows go as 3 + 3, 4 as 2 + 2; 5 rows (the
  /// driver's even split of 10) as one tile of 2 steps at a time (1.275).
  static void tile4(const float* x, index_t ldx, index_t rows, index_t k0, index_t k1, const float* w, index_t ldw,
                    float* y, index_t ldy, bool first, const float* bias, bool relu) {
    const unsigned mode = (first ? 1u : 0u) | (relu ? 2u : 0u);
    x += k0;
    w += k0 * ldw;
    if (rows == 5) return tile4_rows5(x, ldx, k1 - k0, w, ldw, y, ldy, bias, mode);
    while (rows) {
      const index_t r = rows >= 6 || rows == 3 ? 3 : (rows >= 2 ? 2 : 1);
      if (r == 3)
        tile4_rows<3>(x, ldx, k1 - k0, w, ldw, y, ldy, bias, mode);
      else if (r == 2)
        tile4_rows<2>(x, ldx, k1 - k0, w, ldw, y, ldy, bias, mode);
      else
        tile4_rows<1>(x, ldx, k1 - k0, w, ldw, y, ldy, bias, mode);
      x += r * ldx;
      y += r * ldy;
      rows -= r;
    }
  }
  /// tile4 without bias or ReLU, not inlined (its asm needs the registers the caller's loops hold).
  [[gnu::noinline]] static void tile4_apart(const float* x, index_t ldx, index_t rows, index_t k0, index_t k1,
                                            const float* w, index_t ldw, float* y, index_t ldy, bool first) {
    tile4(x, ldx, rows, k0, k1, w, ldw, y, ldy, first, nullptr, false);
  }
};

}  // namespace stf::kernels_detail::cortex_m4f
#endif
