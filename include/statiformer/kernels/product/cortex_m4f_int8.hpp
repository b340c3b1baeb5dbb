// statiformer — matrix products on Cortex-M4F/M7 (Arm M-profile with an FPU and the DSP extension),
// part: the int8 number format (kernels/QUANTIZATION.md). The w8a8 linear of the scalar variant
// (selected by kernels/product/select.hpp's ProductInt8Select; the generic one is
// kernels/product/int8.hpp), the idea of CMSIS-NN's s8 × s16 matrix kernel, written anew:
//  - each group of up to kQuantizedRowGroup rows is quantized with generic::ProductInt8::quantize_row's
//    bits (rounded by vcvtr) straight into int16 pairs in the lanes of `sxtb16` (quantize_expanded):
//    for k-quad q, the word A = (x0, x2) and the word B = (x1, x3) (what sxtb16 v and sxtb16 v,
//    ror #8 make of the int8 quad v). The quantized row's padding (k ≥ in) is zero, so is its
//    expansion, whatever the weights' padding holds;
//  - per weight word w (one output's quad): sxtb16 w = (w0, w2), sxtb16 w, ror #8 = (w1, w3), and
//    acc = smlad(A, (w0, w2), acc), acc = smlad(B, (w1, w3), acc): four products per two
//    instructions, exact (|x·w| ≤ 127², in ≤ ref::kMaxQuantizedIn keeps the sums within int32);
//  - tiles of 2 rows × 2 outputs (the 4 sums in registers over the whole reduction; per quad two
//    ldrd of (A, B), two ldr of weights, four sxtb16, eight smlad), a single row in tiles of 1 × 4,
//    the last output alone;
//  - the epilogue and the activation pass are generic::ProductInt8's (the float linear's bits).
// Integer sums are exact in any order: the bits are ref::linear_w8a8's.
//
// The scratch (linear_w8a8_scratch_bytes) holds per row 2 · quantized_row_stride(in) bytes from
// the first 4-aligned byte (ldrd needs word alignment; the scratch may have any): each pair of rows
// of a group interleaved by quad (row 0's (A, B), row 1's: one pointer walks both), from the pair's
// first row's place; an odd group's last row alone.
#pragma once

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>

#include <cstdint>
#include <cstring>
#include <limits>

namespace stf::kernels_detail {
namespace generic {
template <class Tag>
struct ProductInt8;  // kernels/product/int8.hpp: quantize_row, dequantize, activate
}  // namespace generic

namespace cortex_m4f {

/// The Cortex-M4F/M7 w8a8 linear (see the file's comment).
template <class Tag>
struct ProductInt8 {
  static constexpr index_t kGroup = kQuantizedRowGroup;

  /// sxtb16 w, ror #8: bytes 1 and 3 of w sign-extended into two int16 lanes (GCC 12 writes the
  /// rotation as an instruction of its own).
  static std::int32_t sxtb16_ror8(std::int32_t w) {
    std::int32_t r;
    asm("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(w));
    return r;
  }

  static std::int32_t load_word(const std::int8_t* p) {  // (ldr: any alignment on Armv7-M)
    std::int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }

  /// x rounded to an integer in the FPSCR's rounding mode (vcvtr): the bits of the add-subtract of
  /// 1.5 · 2²³ that generic::ProductInt8::quantize_row rounds with, for |x| ≤ 2²², in one instruction.
  static std::int32_t round_int(float x) {
    float t;
    asm("vcvtr.s32.f32 %0, %1" : "=t"(t) : "t"(x));
    std::int32_t r;
    std::memcpy(&r, &t, 4);
    return r;
  }

  /// generic::ProductInt8::quantize_row(x, n, q) (zeros to the quad's end) where max_bits is
  /// max |x[i]| as bits (the sign cleared): the same bits; the common case (finite, at least
  /// kMinQuantizedMax: 127 / max finite, no clamp) with vcvtr, else quantize_row itself.
  static float quantize_max(const float* x, index_t n, std::uint32_t max_bits, std::int8_t* q) {
    float a;
    std::memcpy(&a, &max_bits, 4);
    if (max_bits < 0x7F800000u && a >= kMinQuantizedMax) {
      const float inv = 127.0f / a;
      for (index_t i = 0; i < n; ++i) q[i] = static_cast<std::int8_t>(round_int(x[i] * inv));
      for (index_t i = n; i < quad_padded(n); ++i) q[i] = 0;
      return a / 127.0f;
    }
    return generic::ProductInt8<Tag>::quantize_row(x, n, q, true);
  }

  /// max |x[i]| for i < n as bits (the sign cleared; generic::ProductInt8::quantize_row's first
  /// loop), in two lanes (max is order-free).
  static std::uint32_t max_abs_bits(const float* x, index_t n) {
    std::uint32_t m0 = 0, m1 = 0;
    index_t i = 0;
    for (; i + 2 <= n; i += 2) {
      std::uint32_t b[2];
      std::memcpy(b, x + i, 8);
      b[0] &= 0x7FFFFFFFu, b[1] &= 0x7FFFFFFFu;
      m0 = b[0] > m0 ? b[0] : m0;
      m1 = b[1] > m1 ? b[1] : m1;
    }
    if (i < n) {
      std::uint32_t b;
      std::memcpy(&b, x + i, 4);
      b &= 0x7FFFFFFFu;
      m0 = b > m0 ? b : m0;
    }
    return m0 > m1 ? m0 : m1;
  }

  /// generic::ProductInt8::quantize_row(x, n, ...) straight into the expanded words (A, B) of quad
  /// q at y + S·q (S = 2: a row alone; 4: a row of a pair, interleaved by quad): the same bits (no
  /// int8 row in between: per quad vldm, four vmul, four vcvtr, two vmov of pairs, two pkhbt, strd);
  /// quantize_row's special cases (not finite, below kMinQuantizedMax) written out as it has them.
  template <int S>
  static float quantize_expanded(const float* x, index_t n, std::int32_t* y) {
    const std::uint32_t mb = max_abs_bits(x, n);
    float a;
    std::memcpy(&a, &mb, 4);
    const bool finite = mb < 0x7F800000u;
    if (!finite || a < kMinQuantizedMax) {  // (a row of zeros among them)
      for (index_t q = 0; q < quad_padded(n) / kQuadK; ++q) y[S * q] = 0, y[S * q + 1] = 0;
      return finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    }
    const float inv = 127.0f / a;  // (finite: a >= kMinQuantizedMax)
    index_t full = n / 4;
    if (full > 0) {
      std::int32_t e, f, g, h;
      asm volatile(
          "1:\n\t"
          "vldmia %[x]!, {s0-s3}\n\t"
          "vmul.f32 s0, s0, %[inv]\n\t"
          "vmul.f32 s1, s1, %[inv]\n\t"
          "vmul.f32 s2, s2, %[inv]\n\t"
          "vmul.f32 s3, s3, %[inv]\n\t"
          "vcvtr.s32.f32 s0, s0\n\t"
          "vcvtr.s32.f32 s1, s1\n\t"
          "vcvtr.s32.f32 s2, s2\n\t"
          "vcvtr.s32.f32 s3, s3\n\t"
          "vmov %[e], %[f], s0, s1\n\t"
          "vmov %[g], %[h], s2, s3\n\t"
          "pkhbt %[e], %[e], %[g], lsl #16\n\t"
          "pkhbt %[f], %[f], %[h], lsl #16\n\t"
          "strd %[e], %[f], [%[y]], %[st]\n\t"
          "subs %[n], %[n], #1\n\t"
          "bne 1b"
          : [x] "+r"(x), [y] "+r"(y), [n] "+r"(full), [e] "=&r"(e), [f] "=&r"(f), [g] "=&r"(g), [h] "=&r"(h)
          : [inv] "t"(inv), [st] "n"(4 * S)
          : "s0", "s1", "s2", "s3", "cc", "memory");
    }
    if (const index_t rest = n % 4) {  // the last quad, zeros from n on
      std::int32_t qv[4] = {};
      for (index_t j = 0; j < rest; ++j) qv[j] = round_int(x[j] * inv);
      y[0] = pair16(qv[0], qv[2]), y[1] = pair16(qv[1], qv[3]);
    }
    return a / 127.0f;
  }

  /// (lo, hi) as int16 lanes.
  static std::int32_t pair16(std::int32_t lo, std::int32_t hi) {
    return static_cast<std::int32_t>((static_cast<std::uint32_t>(lo) & 0xFFFFu) |
                                     (static_cast<std::uint32_t>(hi) << 16));
  }

  /// A pair of rows (interleaved by quad: row 0's (A, B), row 1's) × 2 outputs of a panel (ldw bytes
  /// per quad), quads ≥ 1: the sums, in assembly (GCC 12 spilled the sums of the intrinsics' loop:
  /// 31 instructions per quad). Per quad 17 instructions for 16 multiply-adds (the loop unrolled by
  /// two quads, entered at the second when their count is odd), in 14 registers: both outputs'
  /// (w0, w2), (w1, w3) live, each row's (A, B) loaded once.
  static void tile22(const std::int32_t* x, index_t quads, const std::int8_t* w, index_t ldw,
                     std::int32_t (&acc)[2][2]) {
    std::int32_t c00 = 0, c01 = 0, c10 = 0, c11 = 0, e0, e1, t1, a, b;
    std::int32_t t0 = static_cast<std::int32_t>(quads & 1);  // (first: whether to enter at the second quad)
    index_t pairs = (quads + 1) / 2;
#define STF_M4_QUAD                        \
  "ldrd   %[a], %[b], [%[x]], #8\n\t"      \
  "ldr    %[t0], [%[w]]\n\t"               \
  "ldr    %[t1], [%[w], #4]\n\t"           \
  "add    %[w], %[w], %[ldw]\n\t"          \
  "sxtb16 %[e0], %[t0]\n\t"                \
  "sxtb16 %[t0], %[t0], ror #8\n\t"        \
  "sxtb16 %[e1], %[t1]\n\t"                \
  "sxtb16 %[t1], %[t1], ror #8\n\t"        \
  "smlad  %[c00], %[a], %[e0], %[c00]\n\t" \
  "smlad  %[c00], %[b], %[t0], %[c00]\n\t" \
  "smlad  %[c01], %[a], %[e1], %[c01]\n\t" \
  "smlad  %[c01], %[b], %[t1], %[c01]\n\t" \
  "ldrd   %[a], %[b], [%[x]], #8\n\t"      \
  "smlad  %[c10], %[a], %[e0], %[c10]\n\t" \
  "smlad  %[c10], %[b], %[t0], %[c10]\n\t" \
  "smlad  %[c11], %[a], %[e1], %[c11]\n\t" \
  "smlad  %[c11], %[b], %[t1], %[c11]\n\t"
    asm volatile(
        "cmp    %[t0], #0\n\t"
        "bne    2f\n"
        "1:\n\t" STF_M4_QUAD "2:\n\t" STF_M4_QUAD
        "subs   %[n], %[n], #1\n\t"
        "bne    1b"
        : [c00] "+r"(c00), [c01] "+r"(c01), [c10] "+r"(c10), [c11] "+r"(c11), [x] "+r"(x), [w] "+r"(w), [n] "+r"(pairs),
          [t0] "+&r"(t0), [e0] "=&r"(e0), [e1] "=&r"(e1), [t1] "=&r"(t1), [a] "=&r"(a), [b] "=&r"(b)
        : [ldw] "r"(ldw)
        : "cc", "memory");
#undef STF_M4_QUAD
    acc[0][0] = c00, acc[0][1] = c01, acc[1][0] = c10, acc[1][1] = c11;
  }

  /// 1 row × 4 outputs of a panel (ldw bytes per quad), quads ≥ 1: the sums, in assembly (a single
  /// row: a decoding step). Per quad 24 instructions for 16 multiply-adds (the intrinsics' 1 × 2
  /// tile: 16 for 8).
  static void tile14(const std::int32_t* x, index_t quads, const std::int8_t* w, index_t ldw, std::int32_t (&acc)[4]) {
    std::int32_t c0 = 0, c1 = 0, c2 = 0, c3 = 0, t, e, a, b;
#define STF_M4_OUT(C, OFF)            \
  "ldr    %[t], [%[w], #" OFF         \
  "]\n\t"                             \
  "sxtb16 %[e], %[t]\n\t"             \
  "sxtb16 %[t], %[t], ror #8\n\t"     \
  "smlad  %[" C "], %[a], %[e], %[" C \
  "]\n\t"                             \
  "smlad  %[" C "], %[b], %[t], %[" C "]\n\t"
    asm volatile("1:\n\t"
                 "ldrd   %[a], %[b], [%[x]], #8\n\t" STF_M4_OUT("c0", "0") STF_M4_OUT("c1", "4")
                     STF_M4_OUT("c2", "8") STF_M4_OUT("c3", "12") "add    %[w], %[w], %[ldw]\n\t"
                 "subs   %[n], %[n], #1\n\t"
                 "bne    1b"
                 : [c0] "+r"(c0), [c1] "+r"(c1), [c2] "+r"(c2), [c3] "+r"(c3), [x] "+r"(x), [w] "+r"(w),
                   [n] "+r"(quads), [t] "=&r"(t), [e] "=&r"(e), [a] "=&r"(a), [b] "=&r"(b)
                 : [ldw] "r"(ldw)
                 : "cc", "memory");
#undef STF_M4_OUT
    acc[0] = c0, acc[1] = c1, acc[2] = c2, acc[3] = c3;
  }

  /// R rows (1: alone; 2: a pair, interleaved by quad) × N outputs (1, 2) of a panel (ldw bytes per
  /// quad): the sums (the edges of the tiles: intrinsics).
  template <int R, int N>
  static void tile(const std::int32_t* x, index_t quads, const std::int8_t* w, index_t ldw, std::int32_t (&acc)[2][2]) {
    std::int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
    const std::int32_t* x1 = x + 2;
    for (index_t q = 0; q < quads; ++q, x += 2 * R, x1 += 2 * R, w += ldw) {
      const std::int32_t w0 = load_word(w);
      const std::int32_t e0 = __sxtb16(w0), o0 = sxtb16_ror8(w0);
      const std::int32_t a0 = x[0], b0 = x[1];
      a00 = __smlad(a0, e0, a00);
      a00 = __smlad(b0, o0, a00);
      std::int32_t a1 = 0, b1 = 0;
      if constexpr (R == 2) {
        a1 = x1[0], b1 = x1[1];
        a10 = __smlad(a1, e0, a10);
        a10 = __smlad(b1, o0, a10);
      }
      if constexpr (N == 2) {
        const std::int32_t w1 = load_word(w + 4);
        const std::int32_t e1 = __sxtb16(w1), o1 = sxtb16_ror8(w1);
        a01 = __smlad(a0, e1, a01);
        a01 = __smlad(b0, o1, a01);
        if constexpr (R == 2) {
          a11 = __smlad(a1, e1, a11);
          a11 = __smlad(b1, o1, a11);
        }
      }
    }
    acc[0][0] = a00, acc[0][1] = a01, acc[1][0] = a10, acc[1][1] = a11;
  }

  /// Kernels::linear_w8a8 (kernels/api.hpp).
  static void linear_w8a8(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w,
                          const float* bias, index_t out, float* y, std::int8_t* scratch, Fuse act) {
    using Generic = generic::ProductInt8<Tag>;
    const index_t in4 = quad_padded(in), quads = in4 / kQuadK, ld = quantized_row_stride(in);
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(scratch);
    std::int32_t* base = reinterpret_cast<std::int32_t*>(scratch + ((4 - (a & 3)) & 3));  // (words from here)
    const index_t ldx = ld / 2;  // words per row: 2 · ld bytes (a pair: ld words from its first row's)
    float s[kGroup];
    for (index_t r0 = 0; r0 < rows; r0 += kGroup) {
      const index_t n = rows - r0 < kGroup ? rows - r0 : kGroup;
      for (index_t r = 0; r < n; ++r) {
        std::int32_t* pair = base + (r & ~index_t{1}) * ldx;
        if (r + 1 < n || (r & 1))  // a row of a pair
          s[r] = quantize_expanded<4>(x + (r0 + r) * in, in, pair + 2 * (r & 1));
        else  // the last row alone
          s[r] = quantize_expanded<2>(x + (r0 + r) * in, in, pair);
      }
      for (index_t p0 = 0; p0 < out; p0 += kWeightPanel) {
        const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
        const std::int8_t* wp = qw + p0 * in4;
        const index_t ldw = width * kQuadK;
        for (index_t r = 0; r < n; r += 2) {
          const bool two = n - r >= 2;
          float* yr = y + (r0 + r) * out + p0;
          const std::int32_t* xr = base + r * ldx;
          const float* sw = s_w + p0;
          const float* b = bias ? bias + p0 : nullptr;
          index_t o = 0;
          if (two && quads > 0) {  // the full tiles, their epilogue written out
            const float s0 = s[r], s1 = s[r + 1];
            for (; o + 2 <= width; o += 2) {
              std::int32_t acc[2][2];
              tile22(xr, quads, wp + o * kQuadK, ldw, acc);
              yr[o] = Generic::dequantize(acc[0][0], s0, sw[o], b ? b + o : nullptr);
              yr[o + 1] = Generic::dequantize(acc[0][1], s0, sw[o + 1], b ? b + o + 1 : nullptr);
              yr[out + o] = Generic::dequantize(acc[1][0], s1, sw[o], b ? b + o : nullptr);
              yr[out + o + 1] = Generic::dequantize(acc[1][1], s1, sw[o + 1], b ? b + o + 1 : nullptr);
            }
          }
          if (!two && quads > 0) {  // a single row, 4 outputs at a time
            const float s0 = s[r];
            for (; o + 4 <= width; o += 4) {
              std::int32_t acc[4];
              tile14(xr, quads, wp + o * kQuadK, ldw, acc);
              for (index_t j = 0; j < 4; ++j)
                yr[o + j] = Generic::dequantize(acc[j], s0, sw[o + j], b ? b + o + j : nullptr);
            }
          }
          for (; o < width; o += 2) {  // the edges: one row or one output, no reduction
            std::int32_t acc[2][2];
            const std::int8_t* wo = wp + o * kQuadK;
            const bool pair = width - o >= 2;
            if (two && pair)
              tile<2, 2>(xr, quads, wo, ldw, acc);
            else if (two)
              tile<2, 1>(xr, quads, wo, ldw, acc);
            else if (pair)
              tile<1, 2>(xr, quads, wo, ldw, acc);
            else
              tile<1, 1>(xr, quads, wo, ldw, acc);
            for (index_t i = 0; i < (two ? 2 : 1); ++i)
              for (index_t j = 0; j < (pair ? 2 : 1); ++j)
                yr[i * out + o + j] = Generic::dequantize(acc[i][j], s[r + i], sw[o + j], b ? b + o + j : nullptr);
          }
        }
      }
      Generic::activate(act, y + r0 * out, n, out);
    }
  }
};

}  // namespace cortex_m4f
}  // namespace stf::kernels_detail
#endif
