// statiformer — matrix-product kernels on Cortex-M55 (Helium / MVE): row_tile, the tile whose
// vectors run across 2 to 4 rows, row_outputs, one row with the vectors across the outputs (a
// decoding step), and linear_panels, which walks a linear's weight panels with them. See
// kernels/README.md.
#pragma once

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>
#include <statiformer/simd/arm_mve.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::kernels_detail::helium {

/// A pointer as the 32-bit address that MVE address vectors hold.
inline uint32_t address(const void* p) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)); }

/// The matrix products (generic::Product::tile and generic::Product::linear_block call them).
struct Product {
  using I = isa::Vocabulary<isa::mve>;
  using V = I::V;

  /// The matrix kernels' tile for 2 to 4 rows (generic::Product::tile calls it): y[r, o] for r < rows,
  /// o < width, each accumulated in sequence over k in [k0, k1) with fma, from +0 when `first`,
  /// else from y; then + bias[o] (nullable), then `epilogue` (the fused activation), as
  /// generic::Product::tile. The lanes run across the rows instead of the outputs, so that both operands of
  /// a step come in one instruction each: the rows' x[r, k] by a gather load that steps its own
  /// addresses (vldrw.u32 q, [q, #4]!), the weights w[k, o..o+5] into six general-purpose
  /// registers by one ldm, a pointer step and six vfma by scalar into six accumulators: 9
  /// instructions per 24 multiply-adds, plus a loop end per 4 steps (the generic 3 × 2 tile: 13).
  /// Each output's sequence is unchanged (lanes never mix), so are the bits.
  template <class Epilogue>
  [[gnu::noinline]] static void row_tile(const float* x, index_t ldx, index_t rows, index_t k0, index_t k1,
                                         const float* w, index_t ldw, float* y, index_t ldy, index_t width, bool first,
                                         const float* bias, Epilogue epilogue) {
    // panels of 6 outputs (each panel costs 3 instructions per step beyond its vfma), then the
    // rest: as many panels as an even split
    const index_t full = width / 6, rest = width % 6;
    const RowPanel a{x + k0, w + k0 * ldw, y, bias, ldx, ldw, ldy, k1 - k0, rows, first};
    index_t o = 0;
    if constexpr (Epilogue::fuse == Fuse::none || Epilogue::fuse == Fuse::relu) {  // (the epilogue types say)
      // without GELU (in registers too big for the asm's), the full panels in one assembly loop,
      // and a last panel of 4 or 2 outputs in the same call
      const index_t tail = rest == 4 || rest == 2 ? rest : 0;
      if (full || tail) {
        if (bias)
          first ? row_panels6<true, true, Epilogue::fuse>(a, full, tail)
                : row_panels6<false, true, Epilogue::fuse>(a, full, tail);
        else
          first ? row_panels6<true, false, Epilogue::fuse>(a, full, tail)
                : row_panels6<false, false, Epilogue::fuse>(a, full, tail);
        if (tail) return;
        o = 6 * full;
      }
    }
    for (; o + 6 <= width; o += 6) row_panel<6>(a, o, epilogue);
    switch (rest) {
      case 1:
        row_panel<1>(a, o, epilogue);
        break;
      case 2:
        row_panel<2>(a, o, epilogue);
        break;
      case 3:
        row_panel<3>(a, o, epilogue);
        break;
      case 4:
        row_panel<4>(a, o, epilogue);
        break;
      case 5:
        row_panel<5>(a, o, epilogue);
        break;
      default:
        break;
    }
  }
  /// linear_panels for one row (out of line, so that the rows' walk stays inlined where it was):
  /// row_outputs_all per weight panel.
  [[gnu::noinline]] static void row_panels(const float* x, index_t in, WeightBlock w, index_t out, float* y,
                                           const float* bias, bool first, bool relu) {
    for (index_t o = 0; o < out;) {
      index_t ld = 0, width = 0;
      const float* wo = w.column(o, ld, width);
      width = out - o < width ? out - o : width;
      row_outputs_all(x, in, wo, ld, width, y + o, bias ? bias + o : nullptr, first, relu);
      o += width;
    }
  }
  /// One row's outputs [0, n) over weights w[k, o] (row stride ld floats): y[o] accumulated in
  /// sequence over k with fma from +0 (`first`) or from y[o], + bias[o] (nullable), then ReLU as
  /// vmaxnm with +0 (the reference's v > 0 ? v : +0, NaN and -0 included): the lanes across the
  /// outputs, groups of 6 vectors (24 outputs), then groups of up to 3.
  static void row_outputs_all(const float* x, index_t in, const float* w, index_t ld, index_t n, float* y,
                              const float* bias, bool first, bool relu) {
    index_t o = 0;
    for (; n - o >= 24; o += 24)
      row_outputs<6, false>(x, in, w + o, ld, 24, y + o, bias ? bias + o : nullptr, first, relu);
    // the 1 to 23 outputs left: groups of at most 3 vectors (fewer instantiations of the
    // assembly: 4 to 6 vectors as 3 + the rest), the last vector of the last group predicated
    // where it is partial
    while (o < n) {
      const index_t left = n - o, vecs = (left + 3) / 4;
      const index_t c = vecs > 3 ? 3 : vecs, cn = c * 4 < left ? c * 4 : left;
      const float* wl = w + o;
      float* yl = y + o;
      const float* bl = bias ? bias + o : nullptr;
      const bool tail = cn % 4 != 0;
      if (c == 3)
        tail ? row_outputs<3, true>(x, in, wl, ld, cn, yl, bl, first, relu)
             : row_outputs<3, false>(x, in, wl, ld, cn, yl, bl, first, relu);
      else if (c == 2)
        tail ? row_outputs<2, true>(x, in, wl, ld, cn, yl, bl, first, relu)
             : row_outputs<2, false>(x, in, wl, ld, cn, yl, bl, first, relu);
      else
        tail ? row_outputs<1, true>(x, in, wl, ld, cn, yl, bl, first, relu)
             : row_outputs<1, false>(x, in, wl, ld, cn, yl, bl, first, relu);
      o += cn;
    }
  }
  /// row_outputs_all's group of C vectors, outputs [0, n): n = 4·C, or (Tail) 4·(C - 1) < n < 4·C.
  /// The steps over k in assembly (GCC 12 keeps the accumulators of an intrinsics loop in memory):
  /// per 4 k one ldm of x, then per k C loads of weights (vldrw, the last predicated for a Tail),
  /// C vfma by x[k] and a pointer step: 54 instructions for 96 multiply-adds at C = 6. Its state in
  /// memory and its registers fixed (q0-q5 the accumulators, in and out through `acc`), so that it
  /// builds at every optimization level (with operands in registers, -O0 and -Os ran out of them).
  template <int C, bool Tail>
  [[gnu::noinline]] static void row_outputs(const float* x, index_t in, const float* w, index_t ld, index_t n, float* y,
                                            const float* bias, bool first, bool relu) {
    static_assert(C >= 1 && C <= 6);
    const mve_pred16_t p = vctp32q(static_cast<uint32_t>(n - 4 * (C - 1)));
    alignas(16) float acc[4 * C];
    for (int c = 0; c < C; ++c)
      vstrwq_f32(acc + 4 * c,
                 first ? vdupq_n_f32(0.0f) : (Tail && c == C - 1 ? vldrwq_z_f32(y + 4 * c, p) : vldrwq_f32(y + 4 * c)));
    struct State {     // (byte offsets in the assembly)
      const float* x;  // 0
      const float* w;  // 4
      uint32_t in;     // 8
      uint32_t ld;     // 12: bytes from w[k, ·] to w[k + 1, ·]
      uint32_t nt;     // 16: the last vector's lanes
      float* acc;      // 20
    } st{x, w, static_cast<uint32_t>(in), static_cast<uint32_t>(ld * 4), static_cast<uint32_t>(n - 4 * (C - 1)), acc};
    asm volatile(
        ".macro stf_row_ld q, i\n"
        " .if %c[tail] && (\\i == %c[C] - 1)\n vpst\n vldrwt.u32 \\q, [r5, #16 * \\i]\n"
        " .else\n vldrw.u32 \\q, [r5, #16 * \\i]\n .endif\n"
        ".endm\n"
        ".macro stf_row_k xr\n"
        " stf_row_ld q6, 0\n vfma.f32 q0, q6, \\xr\n"
        " .if %c[C] > 1\n stf_row_ld q7, 1\n vfma.f32 q1, q7, \\xr\n .endif\n"
        " .if %c[C] > 2\n stf_row_ld q6, 2\n vfma.f32 q2, q6, \\xr\n .endif\n"
        " .if %c[C] > 3\n stf_row_ld q7, 3\n vfma.f32 q3, q7, \\xr\n .endif\n"
        " .if %c[C] > 4\n stf_row_ld q6, 4\n vfma.f32 q4, q6, \\xr\n .endif\n"
        " .if %c[C] > 5\n stf_row_ld q7, 5\n vfma.f32 q5, q7, \\xr\n .endif\n"
        " add r5, r5, r6\n"
        ".endm\n"
        ".macro stf_row_acc op\n"  // the accumulators from or to acc
        " \\op q0, [r0]\n"
        " .if %c[C] > 1\n \\op q1, [r0, #16]\n .endif\n .if %c[C] > 2\n \\op q2, [r0, #32]\n .endif\n"
        " .if %c[C] > 3\n \\op q3, [r0, #48]\n .endif\n .if %c[C] > 4\n \\op q4, [r0, #64]\n .endif\n"
        " .if %c[C] > 5\n \\op q5, [r0, #80]\n .endif\n"
        ".endm\n"
        "ldr r0, [%[s], #20]\n"
        "stf_row_acc vldrw.u32\n"
        "ldrd r4, r5, [%[s]]\n"  // x, w
        "ldr r6, [%[s], #12]\n"
        ".if %c[tail]\n ldr r0, [%[s], #16]\n vctp.32 r0\n .endif\n"
        "ldr r0, [%[s], #8]\n"
        "lsrs r0, r0, #2\n"
        "wls lr, r0, 2f\n"
        "1:\n"
        "ldm r4!, {r0, r1, r2, r3}\n"
        "stf_row_k r0\n stf_row_k r1\n stf_row_k r2\n stf_row_k r3\n"
        "le lr, 1b\n"
        "2:\n"
        "ldr r0, [%[s], #8]\n"
        "and r0, r0, #3\n"
        "wls lr, r0, 4f\n"
        "3:\n"
        "ldr r0, [r4], #4\n"
        "stf_row_k r0\n"
        "le lr, 3b\n"
        "4:\n"
        "ldr r0, [%[s], #20]\n"
        "stf_row_acc vstrw.32\n"
        ".purgem stf_row_k\n"
        ".purgem stf_row_ld\n"
        ".purgem stf_row_acc\n"
        :
        : [s] "r"(&st), [C] "n"(C), [tail] "n"(Tail ? 1 : 0)
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "cc",
          "memory");
    for (int c = 0; c < C; ++c) {
      const bool part = Tail && c == C - 1;
      V v = vldrwq_f32(acc + 4 * c);
      if (bias) v = vaddq_f32(v, part ? vldrwq_z_f32(bias + 4 * c, p) : vldrwq_f32(bias + 4 * c));
      if (relu) v = vmaxnmq_f32(v, vdupq_n_f32(0.0f));
      if (part)
        vstrwq_p_f32(y + 4 * c, v, p);
      else
        vstrwq_f32(y + 4 * c, v);
    }
  }

  /// generic::Product::gemm_plain (the attention's products): y [rows, out] = x [rows, in] · w [in,
  /// out] (plain, row strides ldx, ldw, ldy), from +0 or continuing from y (`accumulate`), no bias,
  /// no activation (`none`: the generic epilogue of Fuse::none). Two or more rows by row_tile (tiles of
  /// 4, the last two even, as linear_panels). One row: groups of 12 outputs by row_outputs<3>
  /// (speed-first), the rest with the lanes across 4 outputs at a time in a loop of intrinsics. Only
  /// whole groups of 12 go to the assembly: its set-up costs more than it saves on fewer outputs (the
  /// demo's decoding, heads of 8 and up to 10 keys, took 1.1 % more instructions through
  /// row_outputs_all at every width), and one instantiation keeps the code of layers that never
  /// decode small (row_outputs_all's seven: +4.2 KB in the M55's w8a8 encoder-layer firmware).
  /// Either way vfma by the row's x[k], the last lanes predicated. Each sum in sequence over k with
  /// fma: the canonical order, so the bits of generic::Product::gemm. in == 0 leaves y as gemm does.
  template <class None>
  static void gemm_plain(const float* x, index_t ldx, index_t rows, index_t in, const float* w, index_t ldw,
                         index_t out, float* y, index_t ldy, bool accumulate, None none) {
    if (in == 0 || out == 0) return;
    if (rows == 1) {
      index_t o = 0;
      if constexpr (!kKernelsSizeFirst)
        for (; out - o >= 12; o += 12) row_outputs<3, false>(x, in, w + o, ldw, 12, y + o, nullptr, !accumulate, false);
      for (; o < out; o += 4) {
        const mve_pred16_t p = vctp32q(static_cast<uint32_t>(out - o));
        float32x4_t acc = accumulate ? vldrwq_z_f32(y + o, p) : vdupq_n_f32(0.0f);
        const float* wk = w + o;
        for (index_t k = 0; k < in; ++k, wk += ldw) acc = vfmaq_n_f32(acc, vldrwq_z_f32(wk, p), x[k]);
        vstrwq_p_f32(y + o, acc, p);
      }
      return;
    }
    for (index_t r = 0; r < rows;) {
      const index_t rem = rows - r;
      const index_t n = rem <= 4 ? rem : (rem < 8 ? (rem + 1) / 2 : 4);
      row_tile(x + r * ldx, ldx, n, 0, in, w, ldw, y + r * ldy, ldy, out, !accumulate, nullptr, none);
      r += n;
    }
  }

  /// A linear layer's product over a block of a panel-stored weight (generic::Product::linear_block calls
  /// it): the row tiles of generic::Product::product (rows in tiles of 4, the last two even; each weight
  /// panel of kWeightPanel outputs as one row_tile), walked directly, with the whole reduction in
  /// one pass (no cache here to block for; parking partial sums in y would not change their
  /// bits); one row (a decoding step) by row_outputs, the lanes across the outputs. So it takes
  /// every call (ProductSelect::Panels: linear_block links no generic product). act: none
  /// or ReLU (linear_block runs a GELU as a pass over the outputs). in == 0 leaves y as product does.
  template <class None, class Relu>
  static void linear_panels(const float* x, index_t ldx, index_t rows, index_t in, WeightBlock w, index_t out, float* y,
                            index_t ldy, const float* bias, bool accumulate, Fuse act, None none, Relu relu) {
    if (in == 0) return;
    if (rows == 1) return row_panels(x, in, w, out, y, bias, !accumulate, act == Fuse::relu);
    for (index_t o = 0; o < out;) {
      index_t ld = 0, width = 0;
      const float* wo = w.column(o, ld, width);
      width = out - o < width ? out - o : width;
      const float* b = bias ? bias + o : nullptr;
      for (index_t r = 0; r < rows;) {
        const index_t rem = rows - r;
        const index_t n = rem <= 4 ? rem : (rem < 8 ? (rem + 1) / 2 : 4);
        if (act == Fuse::relu)
          row_tile(x + r * ldx, ldx, n, 0, in, wo, ld, y + r * ldy + o, ldy, width, !accumulate, b, relu);
        else
          row_tile(x + r * ldx, ldx, n, 0, in, wo, ld, y + r * ldy + o, ldy, width, !accumulate, b, none);
        r += n;
      }
      o += width;
    }
  }

 private:
  /// base + r·stride floats for the lanes r = 0..3; lanes past the last row repeat it.
  static uint32x4_t row_addresses(uint32_t base, index_t stride, uint32_t last_row) {
    const uint32x4_t r = vminq_u32(vidupq_n_u32(0u, 1), vdupq_n_u32(last_row));
    return vaddq_n_u32(vmulq_n_u32(r, static_cast<uint32_t>(stride * 4)), base);
  }

  /// row_tile's C outputs (C <= 6) from output o on. The step loop is assembly: GCC 12 loads the
  /// weights with six ldr, never one ldm.
  // (not inlined, and the address vectors made from opaque scalars: else GCC 12 keeps vectors alive
  // through the asm, which needs all 8 Q registers, and fails)
  struct RowPanel {  // row_tile's arguments, by reference to each panel
    const float* x;  // at k0
    const float* w;  // at row k0
    float* y;
    const float* bias;
    index_t ldx, ldw, ldy, n, rows;
    bool first;
  };
  /// `panels` panels of 6 outputs from output 0 on, one after the other in one assembly loop,
  /// then a panel of `tail` (0, 2 or 4) outputs (row_panel's step loop; per panel: the
  /// accumulators zeroed or gathered from y, + bias, ReLU as vmaxnm(x, +0), the scatter stores;
  /// the panel's weights, bias and count in registers, the rows' addresses in memory).
  template <bool First, bool Bias, Fuse F>
  [[gnu::noinline]] static void row_panels6(const RowPanel& a, index_t panels, index_t tail) {
    struct State {        // (byte offsets in the assembly)
      uint32x4_t xa, ya;  // 0, 16: the rows' addresses of x[r, k0] - 4 bytes, of y[r, o]
      const float* w;     // 32: at row k0, output o
      uint32_t n;         // 36
      const float* bias;  // 40: at output o
      uint32_t panels;    // 44
      uint32_t tail;      // 48
    };
    const uint32_t last = static_cast<uint32_t>(a.rows - 1);
    State st{row_addresses(address(a.x) - 4, a.ldx, last),
             row_addresses(address(a.y), a.ldy, last),
             a.w,
             static_cast<uint32_t>(a.n),
             a.bias,
             static_cast<uint32_t>(panels),
             static_cast<uint32_t>(tail)};
    V acc[6], xa, xv;
    const float* w;
    const float* wb;  // the panel's weights at row k0
    const float* bp;  // the panel's bias
    uint32_t n, left;
    asm volatile(
        ".macro stf_row_step c\n"
        "vldrw.u32 %q[xv], [%q[xa], #4]!\n"
        ".if \\c == 6\n ldm %[w], {r0-r5}\n .elseif \\c == 4\n ldm %[w], {r0-r3}\n .else\n ldrd r0, r1, [%[w]]\n"
        " .endif\n"
        "add %[w], %[w], %[ldw]\n"
        "vfma.f32 %q[a0], %q[xv], r0\n"
        "vfma.f32 %q[a1], %q[xv], r1\n"
        ".if \\c > 2\n vfma.f32 %q[a2], %q[xv], r2\n vfma.f32 %q[a3], %q[xv], r3\n .endif\n"
        ".if \\c > 4\n vfma.f32 %q[a4], %q[xv], r4\n vfma.f32 %q[a5], %q[xv], r5\n .endif\n"
        ".endm\n"
        ".macro stf_row_acc op, c\n"  // the accumulators a0..a(c-1): one instruction each
        "\\op %q[a0]\n \\op %q[a1]\n"
        ".if \\c > 2\n \\op %q[a2]\n \\op %q[a3]\n .endif\n"
        ".if \\c > 4\n \\op %q[a4]\n \\op %q[a5]\n .endif\n"
        ".endm\n"
        ".macro stf_row_zero a\n vmov.i32 \\a, #0\n .endm\n"
        ".macro stf_row_relu a\n vmaxnm.f32 \\a, \\a, %q[xa]\n .endm\n"
        ".macro stf_row_panel c\n"
        "vldrw.u32 %q[xa], [%[st]]\n"
        ".if %c[first]\n"
        "stf_row_acc stf_row_zero, \\c\n"
        ".else\n"
        "vldrw.u32 %q[xv], [%[st], #16]\n"
        "vldrw.u32 %q[a0], [%q[xv]]\n vldrw.u32 %q[a1], [%q[xv], #4]\n"
        ".if \\c > 2\n vldrw.u32 %q[a2], [%q[xv], #8]\n vldrw.u32 %q[a3], [%q[xv], #12]\n .endif\n"
        ".if \\c > 4\n vldrw.u32 %q[a4], [%q[xv], #16]\n vldrw.u32 %q[a5], [%q[xv], #20]\n .endif\n"
        ".endif\n"
        "mov %[w], %[wb]\n"
        "lsls lr, %[n], #31\n"  // n mod 4 single steps (bit 0: N, bit 1: C), then 4 per iteration
        "bpl 2f\n"
        "stf_row_step \\c\n"
        "2:\n"
        "bcc 3f\n"
        "stf_row_step \\c\n"
        "stf_row_step \\c\n"
        "3:\n"
        "lsr lr, %[n], #2\n"
        "wls lr, lr, 5f\n"
        "4:\n"
        "stf_row_step \\c\n"
        "stf_row_step \\c\n"
        "stf_row_step \\c\n"
        "stf_row_step \\c\n"
        "le lr, 4b\n"
        "5:\n"
        "vldrw.u32 %q[xv], [%[st], #16]\n"  // the y addresses of this panel
        ".if %c[bias]\n"
        ".if \\c == 6\n ldm %[bp]!, {r0-r5}\n .elseif \\c == 4\n ldm %[bp]!, {r0-r3}\n .else\n ldm %[bp]!, {r0-r1}\n"
        " .endif\n"
        "vadd.f32 %q[a0], %q[a0], r0\n vadd.f32 %q[a1], %q[a1], r1\n"
        ".if \\c > 2\n vadd.f32 %q[a2], %q[a2], r2\n vadd.f32 %q[a3], %q[a3], r3\n .endif\n"
        ".if \\c > 4\n vadd.f32 %q[a4], %q[a4], r4\n vadd.f32 %q[a5], %q[a5], r5\n .endif\n"
        ".endif\n"
        ".if %c[relu]\n"  // max(x, +0): x > 0 ? x : +0, also for -0 and NaN (maxNum's number)
        "vmov.i32 %q[xa], #0\n"
        "stf_row_acc stf_row_relu, \\c\n"
        ".endif\n"
        "vstrw.32 %q[a0], [%q[xv]]\n vstrw.32 %q[a1], [%q[xv], #4]\n"
        ".if \\c > 2\n vstrw.32 %q[a2], [%q[xv], #8]\n vstrw.32 %q[a3], [%q[xv], #12]\n .endif\n"
        ".if \\c > 4\n vstrw.32 %q[a4], [%q[xv], #16]\n vstrw.32 %q[a5], [%q[xv], #20]\n .endif\n"
        ".endm\n"
        "ldrd %[wb], %[n], [%[st], #32]\n"
        "ldrd %[bp], %[left], [%[st], #40]\n"
        "cmp %[left], #0\n"
        "beq 8f\n"
        "9:\n"
        "stf_row_panel 6\n"
        "movs r0, #24\n"
        "vadd.i32 %q[xv], %q[xv], r0\n"
        "vstrw.32 %q[xv], [%[st], #16]\n"
        "add %[wb], %[wb], #24\n"  // the next panel
        "subs %[left], %[left], #1\n"
        "bne 9b\n"
        "8:\n"
        "ldr %[left], [%[st], #48]\n"
        "cmp %[left], #4\n"
        "bne 7f\n"
        "stf_row_panel 4\n"
        "b 6f\n"
        "7:\n"
        "cmp %[left], #2\n"
        "bne 6f\n"
        "stf_row_panel 2\n"
        "6:\n"
        ".purgem stf_row_panel\n"
        ".purgem stf_row_relu\n"
        ".purgem stf_row_zero\n"
        ".purgem stf_row_acc\n"
        ".purgem stf_row_step\n"
        : [a0] "=&w"(acc[0]), [a1] "=&w"(acc[1]), [a2] "=&w"(acc[2]), [a3] "=&w"(acc[3]), [a4] "=&w"(acc[4]),
          [a5] "=&w"(acc[5]), [xa] "=&w"(xa), [xv] "=&w"(xv), [w] "=&r"(w), [wb] "=&r"(wb), [bp] "=&r"(bp),
          [n] "=&r"(n), [left] "=&r"(left)
        : [st] "r"(&st), [ldw] "r"(a.ldw * 4), [first] "i"(First), [bias] "i"(Bias), [relu] "i"(F == Fuse::relu)
        : "r0", "r1", "r2", "r3", "r4", "r5", "lr", "cc", "memory");
  }

  template <int C, class Epilogue>
  [[gnu::noinline]] static void row_panel(const RowPanel& a, index_t o, Epilogue epilogue) {
    const index_t n = a.n, ldx = a.ldx, ldy = a.ldy;
    const float* w = a.w + o;
    const float* bias = a.bias ? a.bias + o : nullptr;
    const bool first = a.first;
    uint32_t x_base = address(a.x) - 4, y_base = address(a.y + o), last = static_cast<uint32_t>(a.rows - 1);
    asm("" : "+r"(x_base), "+r"(y_base), "+r"(last));
    uint32x4_t xa = row_addresses(x_base, ldx, last);
    uint32x4_t ya = row_addresses(y_base, ldy, last);
    V acc[6];
    // (the gathers' and scatters' offsets are immediates: J a template constant, not an unrolled
    // loop's counter, which -Og does not unroll)
    [&]<int... J>(std::integer_sequence<int, J...>) {
      ((acc[J] = (first || J >= C) ? vdupq_n_f32(0.0f) : vldrwq_gather_base_f32(ya, 4 * J)), ...);
    }
    (std::make_integer_sequence<int, 6>{});
    if (n) {
      V xv;
      // The step: the rows' x[r, k] (gather, addresses += 4), w[k, o..o+C) into r0.., w += ldw,
      // acc[j] = fma(x, w[k, o+j], acc[j]).
      asm volatile(
          ".macro stf_row_step\n"
          "vldrw.u32 %q[xv], [%q[xa], #4]!\n"
          ".if %c[C] == 1\n ldr r0, [%[w]]\n .else\n ldm %[w], {r0-r%c[last]}\n .endif\n"
          "add %[w], %[w], %[ldw]\n"
          "vfma.f32 %q[a0], %q[xv], r0\n"
          ".if %c[C] > 1\n vfma.f32 %q[a1], %q[xv], r1\n .endif\n"
          ".if %c[C] > 2\n vfma.f32 %q[a2], %q[xv], r2\n .endif\n"
          ".if %c[C] > 3\n vfma.f32 %q[a3], %q[xv], r3\n .endif\n"
          ".if %c[C] > 4\n vfma.f32 %q[a4], %q[xv], r4\n .endif\n"
          ".if %c[C] > 5\n vfma.f32 %q[a5], %q[xv], r5\n .endif\n"
          ".endm\n"
          "tst %[n], #1\n"  // n mod 4 single steps, then 4 per loop iteration
          "beq 1f\n"
          "stf_row_step\n"
          "1:\n"
          "tst %[n], #2\n"
          "beq 2f\n"
          "stf_row_step\n"
          "stf_row_step\n"
          "2:\n"
          "lsr lr, %[n], #2\n"
          "wls lr, lr, 4f\n"
          "3:\n"
          "stf_row_step\n"
          "stf_row_step\n"
          "stf_row_step\n"
          "stf_row_step\n"
          "le lr, 3b\n"
          "4:\n"
          ".purgem stf_row_step\n"
          : [a0] "+w"(acc[0]), [a1] "+w"(acc[1]), [a2] "+w"(acc[2]), [a3] "+w"(acc[3]), [a4] "+w"(acc[4]),
            [a5] "+w"(acc[5]), [xa] "+w"(xa), [xv] "=&w"(xv), [w] "+r"(w)
          : [n] "r"(n), [ldw] "r"(a.ldw * 4), [C] "i"(C), [last] "i"(C - 1)
          : "r0", "r1", "r2", "r3", "r4", "r5", "lr", "cc", "memory");
    }
    asm("" : "+r"(y_base), "+r"(last));
    ya = row_addresses(y_base, ldy, last);
    // (unpredicated: the lanes past the rows computed the last row again, bit for bit, and store
    // the same values to the same addresses)
    [&]<int... J>(std::integer_sequence<int, J...>) {
      if (bias) ((acc[J] = vaddq_n_f32(acc[J], bias[J])), ...);
      (vstrwq_scatter_base_f32(ya, 4 * J, epilogue(acc[J])), ...);
    }
    (std::make_integer_sequence<int, C>{});
  }
};

}  // namespace stf::kernels_detail::helium
#endif
