// statiformer — matrix products on Cortex-M55 (Helium / MVE), part: the int8 number format
// (kernels/QUANTIZATION.md). The w8a8 linear of the mve variant (selected by
// kernels/product/select.hpp's ProductInt8Select; the generic one is kernels/product/int8.hpp), and
// the w8a32 linear's vector steps around the float product (convert_w8a32, epilogue_w8a32) and its
// one-row product (product_w8a32_row; ProductInt8Select::W8a32, W8a32Row). The w8a8 linear:
//  - MVE has no per-lane 4-byte dot product; its one 16-multiply-add instruction is vmladava.s8,
//    which sums all 16 byte products of two vectors into a general-purpose register. So a vector
//    holds 16 consecutive k of one row (a plain vldrb of the quantized row) against 16
//    consecutive k of one output: in the k-quad layout those are 4 words one quad row (ldw bytes)
//    apart, one gather load (vldrw.u32 q, [q, #4·o]) from an address vector (the output's quads
//    q..q+3) that serves every output of a tile through the immediate;
//  - tiles of 2 rows × 3 outputs: the six sums in the even registers r0-r10 (vmladava's
//    accumulator must be even; lr runs the loop), per 16 k two row loads, three gathers, six
//    vmladava, one step of the addresses and the loop end: 13 instructions for 96 multiply-adds
//    (the float linear: about 7 for 16); all the full tiles of a row pair over a panel in one
//    assembly loop, 11 instructions per tile beyond; a single row in tiles of 1 × 6 (15 for 96);
//    the outputs left over (a panel's width mod 3 or 6) by the same loop for one output;
//  - rows of whole vectors (in a multiple of 16) are quantized quad-transposed (quantize_row_t:
//    lane j of the row's vectors walks the quads [j·in/16, (j + 1)·in/16)), so the gathers'
//    addresses step by one quad row per vector instead of four; in a full panel (64 outputs: 256
//    bytes, within the gather's immediate) the first gather steps them itself (writeback), and
//    the tiles take 12 instructions for 96 multiply-adds (1 × 6: 14);
//  - the reduction loop is tail-predicated (dlstp.32 / letp over the quads): the last 16 k may
//    hold 1 to 3 quads, and the predicate zeroes the rest of the row's vector and keeps the
//    gathers from reading past the panel (the weights' padding and the next panel are never read);
//  - the sums are stored (stm) into an int32 row of the panel, and the epilogue
//    fma(float(acc), s_x · s_w, b) runs over it in a tail-predicated loop, 14 instructions per 4
//    outputs of a row pair (vcvt rounds to nearest even, vfma is fused: the scalar bits); ReLU
//    fused into it (vmaxnm with +0, 2 more: the activation pass took 10 per 4 outputs of a row),
//    the GELUs by generic::ProductInt8's activation pass;
//  - quantize_row in vectors: max|x| on the bits (vbic of the sign, vmax.u32), x · inv (vmul),
//    vcvtn (to nearest, ties to even) and a narrowing store (vstrb.32): 7 instructions per 4
//    elements for both passes (quantize_row_t, 16 elements an iteration: 30 per 16); the clamps
//    are never needed (int8.hpp).
// Integer sums are exact in any order: the bits are ref::linear_w8a8's, with MVE's documented
// exception (README.md: its arithmetic flushes denormals) kept out of the quantization, where a
// flushed input would change a q and every output of its row: rows whose max|x| is below kMinQuantizedMax (2⁻¹⁰⁰)
// (a denormal x could round to a nonzero q) or not finite are quantized by the scalar code; the
// epilogue's scale, bias or result below 2⁻¹²⁶ are the float path's exception, and rows with a
// non-finite scale take the scalar epilogue (NaN payloads).
//
// The gathers: one instruction each, the count that qemu's -icount measures; on the silicon a
// gather accesses memory an element at a time, slower than a contiguous vldrw (not measured here:
// no M55 at hand), so there the tiles may be bound by the gathers. The weights must be word
// aligned (gathered words); a weight that is not runs the Cortex-M4F kernel (cortex_m4f_int8.hpp).
#pragma once

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2) && defined(__ARM_FEATURE_DSP)
#include <arm_mve.h>

#include <bit>
#include <cstdint>

#include <statiformer/kernels/product/cortex_m4f_int8.hpp>

namespace stf::kernels_detail {
namespace generic {
template <class Tag>
struct ProductInt8;  // kernels/product/int8.hpp: quantize_row, dequantize, activate
}  // namespace generic

namespace helium {

/// The Helium w8a8 linear (see the file's comment).
template <class Tag>
struct ProductInt8 {
  static constexpr index_t kGroup = kQuantizedRowGroup;

  static std::uint32_t address_of(const void* p) {
    return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(p));
  }

  /// The w8a32 linear's chunk conversion (generic::ProductInt8::linear_w8a32): `quads` whole k-quads
  /// of a weight panel `width` outputs wide (quad i's bytes at w + 4·width·i, output o's four at
  /// 4·o), outputs [0, cw), into sq[(4·i + j)·cw + o] = float(w[4·i + j][o]) (exact). Per four outputs
  /// and k: one gather of their bytes (vldrb.s32 at offsets 0, 4, 8, 12), one vcvt, one store; the
  /// last 1-3 outputs of a row predicated (the generic loop: about 8 instructions per weight).
  static void convert_w8a32(const std::int8_t* w, index_t width, index_t cw, index_t quads, float* sq) {
    const uint32x4_t offsets = vidupq_n_u32(0, 4);
    const index_t full = cw / 4 * 4;
    const mve_pred16_t tail = vctp32q(static_cast<std::uint32_t>(cw - full));
    for (index_t i = 0; i < quads; ++i, w += 4 * width)
      for (index_t j = 0; j < 4; ++j, sq += cw) {
        const std::int8_t* b = w + j;
        for (index_t o = 0; o < full; o += 4)
          vstrwq_f32(sq + o, vcvtq_f32_s32(vldrbq_gather_offset_s32(b + 4 * o, offsets)));
        if (full < cw)
          vstrwq_p_f32(sq + full, vcvtq_f32_s32(vldrbq_gather_offset_z_s32(b + 4 * full, offsets, tail)), tail);
      }
  }

  /// One row of the w8a32 linear's product (generic::ProductInt8::linear_w8a32 with rows == 1, a
  /// decoding step): y[o] = the sum over k in order of fma(x[k], float(w[k, o]), ·) from +0, the
  /// float product's canonical order (its bits), each weight converted where it is used instead of
  /// into a chunk the product reads back: per k and four outputs one gather of their bytes
  /// (vldrb.s32, offsets 0, 4, 8, 12 from the quad's byte k % 4), a vcvt and a vfma by x[k], twelve
  /// outputs (three accumulators) at a time; a panel's last 1-11 outputs by one to three
  /// accumulators, the last 1-3 lanes predicated (the weights' padding is never read).
  static void product_w8a32_row(const float* x, index_t in, const std::int8_t* qw, index_t out, float* y) {
    const index_t in4 = quad_padded(in);
    for (index_t p0 = 0; p0 < out; p0 += kWeightPanel) {
      const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
      const std::int8_t* wp = qw + p0 * in4;
      index_t o = 0;
      for (; o + 12 <= width; o += 12) row_outputs<3, false>(x, in, wp + 4 * o, width, 12, y + p0 + o);
      const index_t n = width - o;
      if (n > 8)
        row_outputs<3, true>(x, in, wp + 4 * o, width, n, y + p0 + o);
      else if (n > 4)
        row_outputs<2, true>(x, in, wp + 4 * o, width, n, y + p0 + o);
      else if (n > 0)
        row_outputs<1, true>(x, in, wp + 4 * o, width, n, y + p0 + o);
    }
  }

  /// product_w8a32_row's n outputs (4·(G - 1) < n ≤ 4·G) whose quad bytes start at w in a panel
  /// `width` outputs wide; Tail: the last accumulator's lanes from n on are neither read nor stored.
  template <int G, bool Tail>
  [[gnu::noinline]] static void row_outputs(const float* x, index_t in, const std::int8_t* w, index_t width, index_t n,
                                            float* y) {
    const mve_pred16_t p = vctp32q(static_cast<std::uint32_t>(n - 4 * (G - 1)));
    uint32x4_t off[G];
    float32x4_t acc[G];
    for (int g = 0; g < G; ++g) off[g] = vidupq_n_u32(static_cast<std::uint32_t>(16 * g), 4), acc[g] = vdupq_n_f32(0);
    auto step = [&](const std::int8_t* b, float xk) {
      for (int g = 0; g < G; ++g) {
        const int32x4_t q =
            Tail && g == G - 1 ? vldrbq_gather_offset_z_s32(b, off[g], p) : vldrbq_gather_offset_s32(b, off[g]);
        acc[g] = vfmaq_n_f32(acc[g], vcvtq_f32_s32(q), xk);
      }
    };
    const index_t quad_bytes = 4 * width;
    if constexpr (G == 3 && !Tail) {  // the whole quads in assembly: 42 instructions for 48 weights
      // (GCC 12: 4 ldr of x, the byte offsets and the counters in separate adds, 2 vorr: 50)
      asm volatile(
          ".macro stf_w8a32_k xr\n"
          "vldrb.s32 q6, [%[w], %q[o0]]\n vcvt.f32.s32 q6, q6\n vfma.f32 %q[a0], q6, \\xr\n"
          "vldrb.s32 q7, [%[w], %q[o1]]\n vcvt.f32.s32 q7, q7\n vfma.f32 %q[a1], q7, \\xr\n"
          "vldrb.s32 q6, [%[w], %q[o2]]\n vcvt.f32.s32 q6, q6\n vfma.f32 %q[a2], q6, \\xr\n"
          ".endm\n"
          "wls lr, %[n], 2f\n"
          "1:\n"
          "ldm %[x]!, {r0, r1, r2, r3}\n"
          "stf_w8a32_k r0\n add %[w], %[w], #1\n"
          "stf_w8a32_k r1\n add %[w], %[w], #1\n"
          "stf_w8a32_k r2\n add %[w], %[w], #1\n"
          "stf_w8a32_k r3\n add %[w], %[w], %[st]\n"
          "le lr, 1b\n"
          "2:\n"
          ".purgem stf_w8a32_k\n"
          : [x] "+r"(x), [w] "+r"(w), [a0] "+w"(acc[0]), [a1] "+w"(acc[1]), [a2] "+w"(acc[2])
          : [n] "r"(in / kQuadK), [st] "r"(quad_bytes - 3), [o0] "w"(off[0]), [o1] "w"(off[1]), [o2] "w"(off[2])
          : "r0", "r1", "r2", "r3", "lr", "q6", "q7", "cc", "memory");
    } else {
      for (index_t q = in / kQuadK; q > 0; --q, x += kQuadK, w += quad_bytes) {
        step(w, x[0]);
        step(w + 1, x[1]);
        step(w + 2, x[2]);
        step(w + 3, x[3]);
      }
    }
    for (index_t j = 0; j < in % kQuadK; ++j) step(w + j, x[j]);
    for (int g = 0; g < G; ++g) {
      if (Tail && g == G - 1)
        vstrwq_p_f32(y + 4 * g, acc[g], p);
      else
        vstrwq_f32(y + 4 * g, acc[g]);
    }
  }

  /// The w8a32 linear's epilogue over one row (generic::ProductInt8::w8a32_epilogue before its
  /// activation): y = fma(acc, s_w, bias) (vfma: fused, the scalar bits), acc · s_w without a bias,
  /// four outputs at a time, the last 1-3 predicated (the scalar loop: 6 instructions per output).
  [[gnu::noinline]] static void epilogue_w8a32(float* y, const float* s_w, const float* bias, index_t out) {
    const index_t full = out / 4 * 4;
    index_t o = 0;
    if (bias) {
      for (; o < full; o += 4)
        vstrwq_f32(y + o, vfmaq_f32(vldrwq_f32(bias + o), vldrwq_f32(y + o), vldrwq_f32(s_w + o)));
    } else {
      for (; o < full; o += 4) vstrwq_f32(y + o, vmulq_f32(vldrwq_f32(y + o), vldrwq_f32(s_w + o)));
    }
    if (o < out) {
      const mve_pred16_t p = vctp32q(static_cast<std::uint32_t>(out - o));
      const float32x4_t acc = vldrwq_z_f32(y + o, p), s = vldrwq_z_f32(s_w + o, p);
      vstrwq_p_f32(y + o, bias ? vfmaq_f32(vldrwq_z_f32(bias + o, p), acc, s) : vmulq_f32(acc, s), p);
    }
  }

  /// ref::quantize_row into q[0, quad_padded(k)) (zeros from k on; pad = false: exactly q[0, k));
  /// returns the row's scale (see the file's comment; the rows the vectors must not quantize go to
  /// the generic code).
  static float quantize_row(const float* x, index_t k, std::int8_t* q, bool pad = true) {
    uint32x4_t m = vdupq_n_u32(0);
    const float* p = x;
    asm volatile(
        "wlstp.32 lr, %[n], 2f\n"
        "1:\n"
        "vldrw.u32 q7, [%[p]], #16\n"
        "vbic.i32 q7, #0x80000000\n"  // |x| as bits: ordered as unsigned integers, NaN and inf the largest
        "vmax.u32 %q[m], %q[m], q7\n"
        "letp lr, 1b\n"
        "2:\n"
        : [m] "+w"(m), [p] "+r"(p)
        : [n] "r"(k)
        : "q7", "lr", "memory");
    const std::uint32_t bits = vmaxvq_u32(0, m);
    const float a = std::bit_cast<float>(bits);
    // not finite, or below kMinQuantizedMax (zeros among them): the scalar code's zeros
    if (!(bits < 0x7F800000u) || a < kMinQuantizedMax) return generic::ProductInt8<Tag>::quantize_row(x, k, q, pad);
    const float inv = 127.0f / a;
    std::int8_t* d = q;
    p = x;
    asm volatile(
        "wlstp.32 lr, %[n], 2f\n"
        "1:\n"
        "vldrw.u32 q7, [%[p]], #16\n"
        "vmul.f32 q7, q7, %[inv]\n"
        "vcvtn.s32.f32 q7, q7\n"  // to nearest, ties to even; |q| <= 127 (int8.hpp)
        "vstrb.32 q7, [%[d]], #4\n"
        "letp lr, 1b\n"
        "2:\n"
        : [p] "+r"(p), [d] "+l"(d)
        : [n] "r"(k), [inv] "r"(inv)
        : "q7", "lr", "memory");
    if (pad)
      for (index_t i = k; i < quad_padded(k); ++i) q[i] = 0;
    return a / 127.0f;
  }

  /// quantize_row of a row of k = 16·n (n ≥ 1) into the quad-transposed layout of linear_w8a8's
  /// whole-vector rows: bytes [16i, 16i + 16) of q hold the quads i, n + i, 2n + i and 3n + i, so
  /// that lane j of the tiles' vectors walks the quads [j·n, (j + 1)·n) and the weights' addresses
  /// of consecutive vectors are one quad row apart (in the gathers' immediate range: Wb). Both
  /// passes over 16 elements per iteration: max|x| on the bits in 13 instructions, x · inv, vcvtn
  /// and the narrowing stores in 17 (quantize_row: 16 and 20). The same q and scale as
  /// quantize_row, moved; the rows the vectors must not quantize go to the generic code (zeros:
  /// the same in either layout).
  static float quantize_row_t(const float* x, index_t k, std::int8_t* q) {
    const index_t n = k / 16;
    uint32x4_t m;
    const float* p = x;
    asm volatile(
        "vmov.i32 %q[m], #0\n"
        "dls lr, %[n]\n"
        "1:\n"
        "vldrw.u32 q0, [%[p]], #64\n"
        "vldrw.u32 q1, [%[p], #-48]\n"
        "vldrw.u32 q2, [%[p], #-32]\n"
        "vldrw.u32 q3, [%[p], #-16]\n"
        ".irp i, 0, 1, 2, 3\n vbic.i32 q\\i, #0x80000000\n .endr\n"  // |x| as bits (quantize_row)
        "vmax.u32 q0, q0, q1\n"
        "vmax.u32 q2, q2, q3\n"
        "vmax.u32 q0, q0, q2\n"
        "vmax.u32 %q[m], %q[m], q0\n"
        "le lr, 1b\n"
        : [m] "=&w"(m), [p] "+r"(p)
        : [n] "r"(n)
        : "q0", "q1", "q2", "q3", "lr", "memory");
    const std::uint32_t bits = vmaxvq_u32(0, m);
    const float a = std::bit_cast<float>(bits);
    // not finite, or below kMinQuantizedMax (zeros among them): the scalar code's zeros
    if (!(bits < 0x7F800000u) || a < kMinQuantizedMax) return generic::ProductInt8<Tag>::quantize_row(x, k, q, false);
    const float inv = 127.0f / a;
    const float *p0 = x, *p1 = x + 4 * n, *p2 = x + 8 * n, *p3 = x + 12 * n;
    std::uintptr_t d = reinterpret_cast<std::uintptr_t>(q) - 16;  // (the first store's writeback adds 16)
    asm volatile(
        "dls lr, %[n]\n"
        "1:\n"
        "vldrw.u32 q0, [%[p0]], #16\n"
        "vldrw.u32 q1, [%[p1]], #16\n"
        "vldrw.u32 q2, [%[p2]], #16\n"
        "vldrw.u32 q3, [%[p3]], #16\n"
        ".irp i, 0, 1, 2, 3\n vmul.f32 q\\i, q\\i, %[inv]\n .endr\n"
        ".irp i, 0, 1, 2, 3\n vcvtn.s32.f32 q\\i, q\\i\n .endr\n"  // to nearest, ties to even; |q| <= 127
        "vstrb.32 q0, [%[d], #16]!\n"
        "vstrb.32 q1, [%[d], #4]\n"
        "vstrb.32 q2, [%[d], #8]\n"
        "vstrb.32 q3, [%[d], #12]\n"
        "le lr, 1b\n"
        : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [d] "+l"(d)
        : [n] "r"(n), [inv] "r"(inv)
        : "q0", "q1", "q2", "q3", "lr", "memory");
    return a / 127.0f;
  }

  /// Kernels::quantize_rows (kernels/api.hpp): quantize_row over each row, exactly k bytes (the
  /// w8a8 attention's Q, K and V rows of a head); rows of 4, 8, 12 or 16 in registers (quantize_v).
  static void quantize_rows(const float* x, index_t ldx, index_t rows, index_t k, std::int8_t* q, index_t ldq,
                            float* s) {
    switch (k) {
      case 4:
        return quantize_rows_v<1>(x, ldx, rows, q, ldq, s);
      case 8:
        return quantize_rows_v<2>(x, ldx, rows, q, ldq, s);
      case 12:
        return quantize_rows_v<3>(x, ldx, rows, q, ldq, s);
      case 16:
        return quantize_rows_v<4>(x, ldx, rows, q, ldq, s);
      default:
        for (index_t r = 0; r < rows; ++r) s[r] = quantize_row(x + r * ldx, k, q + r * ldq, false);
    }
  }
  template <int N>
  static void quantize_rows_v(const float* x, index_t ldx, index_t rows, std::int8_t* q, index_t ldq, float* s) {
    for (index_t r = 0; r < rows; ++r) s[r] = quantize_v<N>(x + r * ldx, q + r * ldq);
  }
  /// quantize_row of a row of 4·N (N <= 4) in N registers, exactly 4·N bytes: max|x| as the
  /// maximum of the bits shifted left by one (the sign out; the order of |x|, NaN and infinity the
  /// largest), then x · inv, vcvtn, the narrowing stores; the rows the vectors must not quantize go
  /// to quantize_row (which gives them to the generic code). 4 + 4·N instructions and two divisions
  /// besides the checks.
  template <int N>
  static float quantize_v(const float* x, std::int8_t* q) {
    std::uint32_t bits;
    asm volatile(
        ".irp i, 0, 1, 2, 3\n"
        " .if \\i < %c[N]\n"
        "  vldrw.u32 q\\i, [%[x], #16*\\i]\n"
        "  vshl.i32 q\\i, q\\i, #1\n"
        " .endif\n"
        ".endr\n"
        ".if %c[N] > 1\n vmax.u32 q0, q0, q1\n .endif\n"
        ".if %c[N] > 2\n vmax.u32 q0, q0, q2\n .endif\n"
        ".if %c[N] > 3\n vmax.u32 q0, q0, q3\n .endif\n"
        "movs %[b], #0\n"
        "vmaxv.u32 %[b], q0\n"
        : [b] "=&r"(bits)
        : [x] "r"(x), [N] "i"(N)
        : "q0", "q1", "q2", "q3", "memory");
    bits >>= 1;
    const float a = std::bit_cast<float>(bits);
    // not finite, or below kMinQuantizedMax (zero included): quantize_row (one unsigned comparison of
    // the bits)
    constexpr std::uint32_t kFloor = std::bit_cast<std::uint32_t>(kMinQuantizedMax);
    if (bits - kFloor >= 0x7F800000u - kFloor) return quantize_row(x, 4 * N, q, false);
    const float inv = 127.0f / a;
    asm volatile(
        ".irp i, 0, 1, 2, 3\n"
        " .if \\i < %c[N]\n"
        "  vldrw.u32 q0, [%[x], #16*\\i]\n"
        "  vmul.f32 q0, q0, %[inv]\n"
        "  vcvtn.s32.f32 q0, q0\n"  // to nearest, ties to even; |q| <= 127 (int8.hpp)
        "  vstrb.32 q0, [%[q], #4*\\i]\n"
        " .endif\n"
        ".endr\n"
        :
        : [x] "r"(x), [q] "l"(q), [inv] "r"(inv), [N] "i"(N)
        : "q0", "memory");
    return a / 127.0f;
  }

  /// 2 rows (x0, x1) × 3·`tiles` outputs, quads ≥ 1: the sums over the quads into a[0, 3·tiles)
  /// (row 0) and a[kWeightPanel, ...) (row 1); w: the addresses of output 0's first quads in the
  /// lanes (the quads the rows' first vector holds), step: from one vector's quads to the next's
  /// in bytes. Wb (transposed rows of a full panel, step = one quad row of kWeightPanel outputs):
  /// the first gather steps the addresses itself (writeback), one instruction fewer per 16 k, and the loop needs no
  /// predication: its first 16 k are peeled (vmladav starts the sums) and the rest is a plain loop. One assembly loop
  /// over the tiles (the sums of a tile in r0-r10, zeroed by one ldm of 6 zero words pushed on the stack, or started
  /// by the peeled vmladav; stored by two stm); per 16 k 13 instructions (the file's comment; 12 with Wb, the peeled
  /// 11), per tile 11 more (9). Not inlined: inlined into
  /// linear_w8a8, GCC 12 finds no registers for the 13 general-purpose operands ("impossible constraints").
  template <bool Wb>
  [[gnu::noinline]] static void tiles23(const std::int8_t* x0, const std::int8_t* x1, index_t quads, index_t tiles,
                                        uint32x4_t w, uint32x4_t step, std::int32_t* a) {
    const index_t bytes = (quads + 3) / 4 * 16;  // of a row per tile: the loop's whole vectors
    // Wb: from the addresses after a tile's loop to the next tile's (no lane is ever predicated off:
    // the quads fill the vectors); else the next tile's from this one's (the loop's last step of the
    // addresses leaves the predicated-off lanes behind)
    const uint32x4_t back = vdupq_n_u32(Wb ? quads / 4 * kQuadK * kWeightPanel - 3 * kQuadK : 3 * kQuadK);
    uint32x4_t t;
    register std::int32_t c0 asm("r0");
    register std::int32_t c1 asm("r2");
    register std::int32_t c2 asm("r4");
    register std::int32_t c3 asm("r6");
    register std::int32_t c4 asm("r8");
    register std::int32_t c5 asm("r10");
    asm volatile(
        ".macro stf_t23 op\n"  // 16 k: `op` vmladav.s8 (the first) or vmladava.s8
        " vldrb.u8 q0, [%[x0]], #16\n"
        " vldrb.u8 q1, [%[x1]], #16\n"
        " .if %c[wb]\n vldrw.u32 q2, [%q[t], #%c[ldw]]!\n .else\n vldrw.u32 q2, [%q[t]]\n .endif\n"
        " \\op r0, q0, q2\n"
        " \\op r6, q1, q2\n"
        " vldrw.u32 q3, [%q[t], #4]\n"
        " \\op r2, q0, q3\n"
        " \\op r8, q1, q3\n"
        " vldrw.u32 q2, [%q[t], #8]\n"
        " \\op r4, q0, q2\n"
        " \\op r10, q1, q2\n"
        " .if %c[wb] == 0\n vadd.i32 %q[t], %q[t], %q[s]\n .endif\n"
        ".endm\n"
        ".if %c[wb]\n"
        " vsub.i32 %q[t], %q[w], %q[s]\n"
        ".else\n"
        " movs r0, #0\n"
        " movs r2, #0\n"
        " strd r0, r2, [sp, #-8]!\n"
        " strd r0, r2, [sp, #-8]!\n"
        " strd r0, r2, [sp, #-8]!\n"
        ".endif\n"
        "1:\n"
        ".if %c[wb]\n"  // the first 16 k peeled (its products start the sums), then a plain loop
        " stf_t23 vmladav.s8\n"
        " wls lr, %[n], 3f\n"
        " 2:\n"
        " stf_t23 vmladava.s8\n"
        " le lr, 2b\n"
        " 3:\n"
        ".else\n"  // the sums zeroed, a tail-predicated loop
        " ldm sp, {r0, r2, r4, r6, r8, r10}\n"
        " vmov %q[t], %q[w]\n"
        " dlstp.32 lr, %[n]\n"
        " 2:\n"
        " stf_t23 vmladava.s8\n"
        " letp lr, 2b\n"
        ".endif\n"
        ".purgem stf_t23\n"
        "stm %[a]!, {r0, r2, r4}\n"
        "add lr, %[a], %[row1]\n"  // (lr is free between the loops)
        "stm lr, {r6, r8, r10}\n"
        "sub %[x0], %[x0], %[bytes]\n"
        "sub %[x1], %[x1], %[bytes]\n"
        ".if %c[wb]\n vsub.i32 %q[t], %q[t], %q[back]\n .else\n vadd.i32 %q[w], %q[w], %q[back]\n .endif\n"
        "subs %[tiles], %[tiles], #1\n"
        "bne 1b\n"
        ".if %c[wb] == 0\n add sp, sp, #24\n .endif\n"
        : "=&r"(c0), "=&r"(c1), "=&r"(c2), "=&r"(c3), "=&r"(c4),
          "=&r"(c5), [x0] "+r"(x0), [x1] "+r"(x1), [a] "+r"(a), [tiles] "+r"(tiles), [w] "+w"(w), [t] "=&w"(t)
        : [n] "r"(Wb ? quads / 4 - 1 : quads), [bytes] "r"(bytes), [s] "w"(step), [back] "w"(back),
          [row1] "I"(4 * kWeightPanel - 3 * 4), [wb] "i"(Wb), [ldw] "i"(kQuadK * kWeightPanel)
        : "q0", "q1", "q2", "q3", "lr", "cc", "memory");
  }

  /// 1 row × 6·`tiles` outputs, quads ≥ 1: the sums into a[0, 6·tiles) (as tiles23; per 16 k 15
  /// instructions, 14 with Wb, the peeled 13; per tile 8 more, 6).
  template <bool Wb>
  [[gnu::noinline]] static void tiles16(const std::int8_t* x, index_t quads, index_t tiles, uint32x4_t w,
                                        uint32x4_t step, std::int32_t* a) {
    const index_t bytes = (quads + 3) / 4 * 16;
    const uint32x4_t back = vdupq_n_u32(Wb ? quads / 4 * kQuadK * kWeightPanel - 6 * kQuadK : 6 * kQuadK);
    uint32x4_t t;
    register std::int32_t c0 asm("r0");
    register std::int32_t c1 asm("r2");
    register std::int32_t c2 asm("r4");
    register std::int32_t c3 asm("r6");
    register std::int32_t c4 asm("r8");
    register std::int32_t c5 asm("r10");
    asm volatile(
        ".macro stf_t16 op\n"  // 16 k: `op` vmladav.s8 (the first) or vmladava.s8
        " vldrb.u8 q0, [%[x]], #16\n"
        " .if %c[wb]\n vldrw.u32 q1, [%q[t], #%c[ldw]]!\n .else\n vldrw.u32 q1, [%q[t]]\n .endif\n"
        " \\op r0, q0, q1\n"
        " vldrw.u32 q2, [%q[t], #4]\n"
        " \\op r2, q0, q2\n"
        " vldrw.u32 q1, [%q[t], #8]\n"
        " \\op r4, q0, q1\n"
        " vldrw.u32 q2, [%q[t], #12]\n"
        " \\op r6, q0, q2\n"
        " vldrw.u32 q1, [%q[t], #16]\n"
        " \\op r8, q0, q1\n"
        " vldrw.u32 q2, [%q[t], #20]\n"
        " \\op r10, q0, q2\n"
        " .if %c[wb] == 0\n vadd.i32 %q[t], %q[t], %q[s]\n .endif\n"
        ".endm\n"
        ".if %c[wb]\n"
        " vsub.i32 %q[t], %q[w], %q[s]\n"
        ".else\n"
        " movs r0, #0\n"
        " movs r2, #0\n"
        " strd r0, r2, [sp, #-8]!\n"
        " strd r0, r2, [sp, #-8]!\n"
        " strd r0, r2, [sp, #-8]!\n"
        ".endif\n"
        "1:\n"
        ".if %c[wb]\n"  // (as tiles23)
        " stf_t16 vmladav.s8\n"
        " wls lr, %[n], 3f\n"
        " 2:\n"
        " stf_t16 vmladava.s8\n"
        " le lr, 2b\n"
        " 3:\n"
        ".else\n"
        " ldm sp, {r0, r2, r4, r6, r8, r10}\n"
        " vmov %q[t], %q[w]\n"
        " dlstp.32 lr, %[n]\n"
        " 2:\n"
        " stf_t16 vmladava.s8\n"
        " letp lr, 2b\n"
        ".endif\n"
        ".purgem stf_t16\n"
        "stm %[a]!, {r0, r2, r4, r6, r8, r10}\n"
        "sub %[x], %[x], %[bytes]\n"
        ".if %c[wb]\n vsub.i32 %q[t], %q[t], %q[back]\n .else\n vadd.i32 %q[w], %q[w], %q[back]\n .endif\n"
        "subs %[tiles], %[tiles], #1\n"
        "bne 1b\n"
        ".if %c[wb] == 0\n add sp, sp, #24\n .endif\n"
        : "=&r"(c0), "=&r"(c1), "=&r"(c2), "=&r"(c3), "=&r"(c4),
          "=&r"(c5), [x] "+r"(x), [a] "+r"(a), [tiles] "+r"(tiles), [w] "+w"(w), [t] "=&w"(t)
        : [n] "r"(Wb ? quads / 4 - 1 : quads), [bytes] "r"(bytes), [s] "w"(step), [back] "w"(back), [wb] "i"(Wb),
          [ldw] "i"(kQuadK * kWeightPanel)
        : "q0", "q1", "q2", "lr", "cc", "memory");
  }

  /// R rows (1, 2) × 1 output, quads ≥ 1: the sums into *a0 and *a1 (the outputs the tiles leave;
  /// the tiles' loop for one output: 7 instructions per 16 k with two rows).
  template <int R>
  static void tile_edge(const std::int8_t* x0, const std::int8_t* x1, index_t quads, uint32x4_t w, uint32x4_t step,
                        std::int32_t* a0, std::int32_t* a1) {
    register std::int32_t c0 asm("r0");
    register std::int32_t c1 asm("r2");
    if constexpr (R == 2) {
      asm volatile(
          "movs r0, #0\n"
          "movs r2, #0\n"
          "dlstp.32 lr, %[n]\n"
          "1:\n"
          "vldrb.u8 q0, [%[x0]], #16\n"
          "vldrb.u8 q1, [%[x1]], #16\n"
          "vldrw.u32 q2, [%q[w]]\n"
          "vmladava.s8 r0, q0, q2\n"
          "vmladava.s8 r2, q1, q2\n"
          "vadd.i32 %q[w], %q[w], %q[s]\n"
          "letp lr, 1b\n"
          : "=&r"(c0), "=&r"(c1), [x0] "+r"(x0), [x1] "+r"(x1), [w] "+w"(w)
          : [n] "r"(quads), [s] "w"(step)
          : "q0", "q1", "q2", "lr", "cc", "memory");  // (movs sets the flags)
      *a0 = c0, *a1 = c1;
    } else {
      asm volatile(
          "movs r0, #0\n"
          "dlstp.32 lr, %[n]\n"
          "1:\n"
          "vldrb.u8 q0, [%[x0]], #16\n"
          "vldrw.u32 q2, [%q[w]]\n"
          "vmladava.s8 r0, q0, q2\n"
          "vadd.i32 %q[w], %q[w], %q[s]\n"
          "letp lr, 1b\n"
          : "=&r"(c0), [x0] "+r"(x0), [w] "+w"(w)
          : [n] "r"(quads), [s] "w"(step)
          : "q0", "q2", "lr", "cc", "memory");
      *a0 = c0;
      (void)x1, (void)a1, (void)c1;
    }
  }

  /// y[o] = fma(float(acc[o]), s_x · s_w[o], bias[o]) (or the product without a bias) for o < n,
  /// then ReLU if Relu (max(y, +0): y > 0 ? y : +0, also for -0 and NaN, the activation pass's
  /// bits): generic::ProductInt8::dequantize in vectors (the same bits; see the file's comment).
  template <bool Relu>
  static void dequantize_row(const std::int32_t* acc, float s_x, const float* s_w, const float* bias, float* y,
                             index_t n) {
    if (!(s_x - s_x == 0.0f)) {  // a row of NaN or infinity: its NaN as the scalar code makes it
      for (index_t o = 0; o < n; ++o) {
        const float v = generic::ProductInt8<Tag>::dequantize(acc[o], s_x, s_w[o], bias ? bias + o : nullptr);
        y[o] = Relu ? (v > 0.0f ? v : 0.0f) : v;
      }
      return;
    }
    // one tail-predicated loop: 8 instructions per 4 outputs, 9 with ReLU (the intrinsics' loop: a
    // vpst per predicated load)
    if (bias)
      asm volatile(
          ".if %c[relu]\n vmov.i32 q3, #0\n .endif\n"
          "wlstp.32 lr, %[n], 2f\n"
          "1:\n"
          "vldrw.u32 q0, [%[acc]], #16\n"
          "vldrw.u32 q1, [%[sw]], #16\n"
          "vldrw.u32 q2, [%[b]], #16\n"
          "vcvt.f32.s32 q0, q0\n"  // (to nearest, ties to even)
          "vmul.f32 q1, q1, %[sx]\n"
          "vfma.f32 q2, q0, q1\n"
          ".if %c[relu]\n vmaxnm.f32 q2, q2, q3\n .endif\n"
          "vstrw.32 q2, [%[y]], #16\n"
          "letp lr, 1b\n"
          "2:\n"
          : [acc] "+r"(acc), [sw] "+r"(s_w), [b] "+r"(bias), [y] "+r"(y)
          : [n] "r"(n), [sx] "r"(s_x), [relu] "i"(Relu)
          : "q0", "q1", "q2", "q3", "lr", "memory");
    else
      asm volatile(
          ".if %c[relu]\n vmov.i32 q3, #0\n .endif\n"
          "wlstp.32 lr, %[n], 2f\n"
          "1:\n"
          "vldrw.u32 q0, [%[acc]], #16\n"
          "vldrw.u32 q1, [%[sw]], #16\n"
          "vcvt.f32.s32 q0, q0\n"
          "vmul.f32 q1, q1, %[sx]\n"
          "vmul.f32 q0, q0, q1\n"
          ".if %c[relu]\n vmaxnm.f32 q0, q0, q3\n .endif\n"
          "vstrw.32 q0, [%[y]], #16\n"
          "letp lr, 1b\n"
          "2:\n"
          : [acc] "+r"(acc), [sw] "+r"(s_w), [y] "+r"(y)
          : [n] "r"(n), [sx] "r"(s_x), [relu] "i"(Relu)
          : "q0", "q1", "q3", "lr", "memory");
  }

  /// dequantize_row for two rows: the sums acc[0, n) and acc[kWeightPanel, ...), scales s0 and s1,
  /// outputs y0 and y1, both finite scales (one loop: the weights' scales and the biases loaded
  /// once, 14 instructions per 4 outputs of both rows, against 16 in two loops; 16 with ReLU).
  template <bool Relu>
  static void dequantize_rows2(const std::int32_t* acc, float s0, float s1, const float* s_w, const float* bias,
                               float* y0, float* y1, index_t n) {
    if (bias)
      asm volatile(
          ".if %c[relu]\n vmov.i32 q5, #0\n .endif\n"
          "wlstp.32 lr, %[n], 2f\n"
          "1:\n"
          "vldrw.u32 q0, [%[acc], %[row1]]\n"
          "vldrw.u32 q1, [%[acc]], #16\n"
          "vldrw.u32 q2, [%[sw]], #16\n"
          "vcvt.f32.s32 q0, q0\n"
          "vcvt.f32.s32 q1, q1\n"
          "vmul.f32 q3, q2, %[s1]\n"
          "vmul.f32 q2, q2, %[s0]\n"
          "vldrw.u32 q4, [%[b]]\n"
          "vfma.f32 q4, q0, q3\n"
          "vldrw.u32 q0, [%[b]], #16\n"
          "vfma.f32 q0, q1, q2\n"
          ".if %c[relu]\n vmaxnm.f32 q0, q0, q5\n vmaxnm.f32 q4, q4, q5\n .endif\n"
          "vstrw.32 q0, [%[y0]], #16\n"
          "vstrw.32 q4, [%[y1]], #16\n"
          "letp lr, 1b\n"
          "2:\n"
          : [acc] "+r"(acc), [sw] "+r"(s_w), [b] "+r"(bias), [y0] "+r"(y0), [y1] "+r"(y1)
          : [n] "r"(n), [s0] "r"(s0), [s1] "r"(s1), [row1] "I"(4 * kWeightPanel), [relu] "i"(Relu)
          : "q0", "q1", "q2", "q3", "q4", "q5", "lr", "memory");
    else
      asm volatile(
          ".if %c[relu]\n vmov.i32 q5, #0\n .endif\n"
          "wlstp.32 lr, %[n], 2f\n"
          "1:\n"
          "vldrw.u32 q0, [%[acc], %[row1]]\n"
          "vldrw.u32 q1, [%[acc]], #16\n"
          "vldrw.u32 q2, [%[sw]], #16\n"
          "vcvt.f32.s32 q0, q0\n"
          "vcvt.f32.s32 q1, q1\n"
          "vmul.f32 q3, q2, %[s1]\n"
          "vmul.f32 q2, q2, %[s0]\n"
          "vmul.f32 q0, q0, q3\n"
          "vmul.f32 q1, q1, q2\n"
          ".if %c[relu]\n vmaxnm.f32 q0, q0, q5\n vmaxnm.f32 q1, q1, q5\n .endif\n"
          "vstrw.32 q1, [%[y0]], #16\n"
          "vstrw.32 q0, [%[y1]], #16\n"
          "letp lr, 1b\n"
          "2:\n"
          : [acc] "+r"(acc), [sw] "+r"(s_w), [y0] "+r"(y0), [y1] "+r"(y1)
          : [n] "r"(n), [s0] "r"(s0), [s1] "r"(s1), [row1] "I"(4 * kWeightPanel), [relu] "i"(Relu)
          : "q0", "q1", "q2", "q3", "q5", "lr", "memory");
  }

  /// The epilogue of `rows` (1, 2) rows of one panel's sums (acc[i]: row i), ReLU fused if Relu.
  template <bool Relu>
  static void dequantize(const std::int32_t (*acc)[kWeightPanel], const float* s, index_t rows, const float* s_w,
                         const float* b, float* y, index_t out, index_t width) {
    if (rows == 2 && s[0] - s[0] == 0.0f && s[1] - s[1] == 0.0f)  // (finite)
      dequantize_rows2<Relu>(acc[0], s[0], s[1], s_w, b, y, y + out, width);
    else
      for (index_t i = 0; i < rows; ++i) dequantize_row<Relu>(acc[i], s[i], s_w, b, y + i * out, width);
  }

  /// Kernels::linears_w8a8 (kernels/api.hpp): per group of rows the quantization, then each linear's
  /// panels (gathered words: a weight not at a word goes the Cortex-M4F way). Out of line and not
  /// cloned: one copy serves Kernels::linear_w8a8 and linears_w8a8 (GCC inlines it into both, 2.6 KB
  /// each on the M55, 0.9 KB on the M4F: 0.1-0.8 % fewer instructions for 2.2 KB more code).
  [[gnu::noinline, gnu::noclone]] static void linears_w8a8(const float* x, index_t rows, index_t in,
                                                           const W8a8Linear* linears, index_t count,
                                                           std::int8_t* scratch) {
    for (index_t l = 0; l < count; ++l)
      if (address_of(linears[l].qw) & 3) {  // (words are gathered)
        cortex_m4f::ProductInt8<Tag>::linears_w8a8(x, rows, in, linears, count, scratch);
        return;
      }
    const index_t ld = quantized_row_stride(in);
    // rows of whole vectors: quad-transposed (quantize_row_t), lane j walking quads [j·lane, (j + 1)·lane)
    const bool transposed = in % 16 == 0 && in > 0;
    float s[kGroup];
    for (index_t r0 = 0; r0 < rows; r0 += kGroup) {
      const index_t n = rows - r0 < kGroup ? rows - r0 : kGroup;
      for (index_t r = 0; r < n; ++r)
        s[r] = transposed ? quantize_row_t(x + (r0 + r) * in, in, scratch + r * ld)
                          : quantize_row(x + (r0 + r) * in, in, scratch + r * ld);
      for (index_t l = 0; l < count; ++l) panels(linears[l], in, transposed, r0, n, scratch, s);
    }
  }

  /// One linear's products with a call's quantized rows [r0, r0 + n) (linears_w8a8: from `scratch`,
  /// quantized_row_stride(in) bytes apart, quad-transposed where `transposed`; scales s), its
  /// epilogue and activation.
  static void panels(const W8a8Linear& L, index_t in, bool transposed, index_t r0, index_t n,
                     const std::int8_t* scratch, const float* s) {
    const index_t in4 = quad_padded(in), quads = in4 / kQuadK, ld = quantized_row_stride(in), out = L.out;
    const std::int8_t* qw = L.qw;
    const float *s_w = L.s_w, *bias = L.bias;
    float* y = L.y;
    const Fuse act = L.act;
    const index_t lane = transposed ? quads / 4 : 1;
    std::int32_t acc[2][kWeightPanel];
    for (index_t p0 = 0; p0 < out; p0 += kWeightPanel) {
      const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
      const std::int8_t* wp = qw + p0 * in4;
      const std::uint32_t ldw = static_cast<std::uint32_t>(width * kQuadK);
      // output 0's quads in the lanes of the rows' first vector (0..3, or 0, lane, 2·lane, 3·lane),
      // and the next vector's (4 quad rows further, or 1)
      const uint32x4_t quad_rows = vmulq_n_u32(vidupq_n_u32(0, 1), ldw * lane);
      const uint32x4_t base = vaddq_n_u32(quad_rows, address_of(wp));
      const uint32x4_t step = vdupq_n_u32(transposed ? ldw : 4 * ldw);
      const bool wb = transposed && width == kWeightPanel;  // (the gathers' writeback: an immediate)
      for (index_t r = 0; r < n; r += 2) {
        const std::int8_t* x0 = scratch + r * ld;
        const std::int8_t* x1 = x0 + ld;
        index_t o = 0;
        if (n - r >= 2) {
          if (quads > 0 && width >= 3) {
            if (wb)
              tiles23<true>(x0, x1, quads, width / 3, base, step, acc[0]);
            else
              tiles23<false>(x0, x1, quads, width / 3, base, step, acc[0]);
            o = width / 3 * 3;
          }
          for (; o < width; ++o)
            if (quads > 0)
              tile_edge<2>(x0, x1, quads, vaddq_n_u32(base, 4 * o), step, acc[0] + o, acc[1] + o);
            else
              acc[0][o] = acc[1][o] = 0;
        } else {
          if (quads > 0 && width >= 6) {
            if (wb)
              tiles16<true>(x0, quads, width / 6, base, step, acc[0]);
            else
              tiles16<false>(x0, quads, width / 6, base, step, acc[0]);
            o = width / 6 * 6;
          }
          for (; o < width; ++o)
            if (quads > 0)
              tile_edge<1>(x0, x0, quads, vaddq_n_u32(base, 4 * o), step, acc[0] + o, acc[0] + o);
            else
              acc[0][o] = 0;
        }
        const float* b = bias ? bias + p0 : nullptr;
        float* yr = y + (r0 + r) * out + p0;
        if (act == Fuse::relu)
          dequantize<true>(acc, s + r, n - r >= 2 ? 2 : 1, s_w + p0, b, yr, out, width);
        else
          dequantize<false>(acc, s + r, n - r >= 2 ? 2 : 1, s_w + p0, b, yr, out, width);
      }
    }
    if (act != Fuse::relu)  // (ReLU is fused into the epilogue)
      generic::ProductInt8<Tag>::activate(act, y + r0 * out, n, out);
  }
};

}  // namespace helium
}  // namespace stf::kernels_detail
#endif
