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
//  - per four outputs of a panel, their weights expanded once per group of rows (expand<true>; per
//    pair, expand<false>, where the weights are not 4-aligned and for a last pair: both words of each
//    quad, sxtb16 w and sxtb16 w, ror #8, into the scratch after the rows), then per pair of them
//    tiles of 2 rows × those 2 outputs over every pair of rows of the group in one assembly loop
//    (sums22: the 4 sums in registers over the whole reduction; per quad one ldm of both rows'
//    (A, B), one ldm of both outputs' expanded weights, eight smlad: 10 instructions for 16
//    multiply-adds where expanding in each tile took 14); a single row in tiles of 1 × 4, its
//    weights expanded where they are used (sums14; sums14_pairs: ldrd of two outputs' weights where
//    they are 4-aligned), the edges (an odd output, a row alone's last outputs) in one plain loop;
//  - the sums are stored as int32 bits in y, then one epilogue pass per pair of rows (assembly:
//    s_w and the bias loaded once for both rows) gives generic::ProductInt8::dequantize's bits, then
//    a ReLU is a pass on the bits (relu_pass; other activations: generic::ProductInt8's pass). The
//    edges, the quantization and the ReLU take their shape for code size (issue 23: the w8a8 layer's
//    code no larger than the float32 layer's, the ctest "firmware: code size per number format");
//  - max |x| of a row on the bits shifted left by one (cmp, it, lsl per element).
// Integer sums are exact in any order: the bits are ref::linear_w8a8's.
//
// The scratch (linear_w8a8_scratch_bytes) holds per row 2 · quantized_row_stride(in) bytes from
// the first 4-aligned byte (ldrd needs word alignment; the scratch may have any): each pair of rows
// of a group interleaved by quad (row 0's (A, B), row 1's: one pointer walks both), from the pair's
// first row's place; an odd group's last row alone. After the first group's rows, four outputs'
// expanded weights (linear_w8a8_expanded_bytes: 8 · quantized_row_stride(in) bytes).
//
// Also the w8a32 linear's one-row product (product_w8a32_row, ProductInt8Select::W8a32Row): float
// sums over weights converted where they are used, 4 outputs at a time (the float product's order);
// and its steps around the float product for more rows (ProductInt8Select::W8a32): a chunk's
// k-quads converted to float (convert_w8a32) and fma(acc, s_w, b) over a row (epilogue_w8a32).
#pragma once

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace stf::kernels_detail {
namespace generic {
template <class Tag>
struct ProductInt8;  // kernels/product/int8.hpp: quantize_row, dequantize, activate
}  // namespace generic

namespace cortex_m4f {

// Four floats from x (post-incremented) times inv, rounded by vcvtr, as int32 in e, f (the first
// two) and g, h (quantize_bytes, quantize_expanded: operands x, inv, e, f, g, h).
#define STF_M4_ROUND4                                                                                   \
  "vldmia %[x]!, {s0-s3}\n\tvmul.f32 s0, s0, %[inv]\n\tvmul.f32 s1, s1, %[inv]\n\t"                     \
  "vmul.f32 s2, s2, %[inv]\n\tvmul.f32 s3, s3, %[inv]\n\tvcvtr.s32.f32 s0, s0\n\t"                      \
  "vcvtr.s32.f32 s1, s1\n\tvcvtr.s32.f32 s2, s2\n\tvcvtr.s32.f32 s3, s3\n\tvmov %[e], %[f], s0, s1\n\t" \
  "vmov %[g], %[h], s2, s3\n\t"
// m = the operand R's bits shifted left by one where that is larger (max_abs_bits and the int8
// attention's weights_max: the maximum of |x| on the bits, operand m).
#define STF_M4_MAX_BITS(R) "cmp %[m], %[" R "], lsl #1\n\tit lo\n\tlsllo %[m], %[" R "], #1\n\t"
// The byte of each of the words t0-t3 that the rotation ROT ("", ", ror #8", ", ror #16", ", ror #24")
// brings down, sign-extended (sxtb) and converted to float into s0-s3, through u0, u1 and two vmov of
// pairs (the w8a32 linear's product_w8a32_row and convert_w8a32: operands t0-t3, u0, u1).
#define STF_M4_SXTB_VCVT4(ROT)                            \
  "sxtb   %[u0], %[t0]" ROT "\n\tsxtb   %[u1], %[t1]" ROT \
  "\n\tvmov   s0, s1, %[u0], %[u1]\n\t"                   \
  "sxtb   %[u0], %[t2]" ROT "\n\tsxtb   %[u1], %[t3]" ROT \
  "\n\tvmov   s2, s3, %[u0], %[u1]\n\t"                   \
  "vcvt.f32.s32 s0, s0\n\tvcvt.f32.s32 s1, s1\n\tvcvt.f32.s32 s2, s2\n\tvcvt.f32.s32 s3, s3\n\t"

/// The Cortex-M4F/M7 w8a8 linear (see the file's comment).
template <class Tag>
struct ProductInt8 {
  static constexpr index_t kGroup = kQuantizedRowGroup;
  /// Where sums14_pairs runs: speed-first, and not on Helium, which sends here only linears with a
  /// weight that is not 4-aligned (helium_int8.hpp) and would carry its 0.2 KB for a rare case.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
  static constexpr bool kRowPairs = false;
#else
  static constexpr bool kRowPairs = !kKernelsSizeFirst;
#endif

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
  /// pad = false: exactly q[0, n) (quantize_row's).
  static float quantize_max(const float* x, index_t n, std::uint32_t max_bits, std::int8_t* q, bool pad = true) {
    float a;
    std::memcpy(&a, &max_bits, 4);
    if (max_bits < 0x7F800000u && a >= kMinQuantizedMax) {
      quantize_bytes(x, n, 127.0f / a, q);
      if (pad)
        for (index_t i = n; i < quad_padded(n); ++i) q[i] = 0;
      return a / 127.0f;
    }
    return generic::ProductInt8<Tag>::quantize_row(x, n, q, pad);
  }

  /// Kernels::quantize_rows (kernels/api.hpp; the int8 attention's Q, K and V rows per head):
  /// generic::ProductInt8::quantize_row(x, k, q, false) of each row, exactly k bytes: quantize_max
  /// with max_abs_bits, the same bits.
  static void quantize_rows(const float* x, index_t ldx, index_t rows, index_t k, std::int8_t* q, index_t ldq,
                            float* s) {
    for (index_t r = 0; r < rows; ++r)
      s[r] = quantize_max(x + r * ldx, k, max_abs_bits(x + r * ldx, k), q + r * ldq, false);
  }

  /// q[i] = round_int(x[i] · inv) for i < n, exactly n bytes (|x[i] · inv| ≤ 127 · (1 + 2⁻²⁴)²: no
  /// clamp). Four at a time in assembly (vldm, four vmul, four vcvtr, two vmov of pairs, the four
  /// int8 packed into one word by pkhbt, uxtb16 and orr, one str: q may have any alignment on
  /// Armv7-M), the rest one by one.
  static void quantize_bytes(const float* x, index_t n, float inv, std::int8_t* q) {
    if (index_t quads = n / 4) {
      std::int32_t e, f, g, h;
      asm volatile("1:\n\t" STF_M4_ROUND4
                   "pkhbt %[e], %[e], %[g], lsl #16\n\t"  // (q0, q2) in the halves
                   "pkhbt %[f], %[f], %[h], lsl #16\n\t"  // (q1, q3)
                   "uxtb16 %[e], %[e]\n\t"                // bytes 0 and 2: q0, q2
                   "uxtb16 %[f], %[f]\n\t"
                   "orr %[e], %[e], %[f], lsl #8\n\t"  // q0, q1, q2, q3
                   "str %[e], [%[q]], #4\n\t"
                   "subs %[n], %[n], #1\n\t"
                   "bne 1b"
                   : [x] "+r"(x), [q] "+r"(q), [n] "+r"(quads), [e] "=&r"(e), [f] "=&r"(f), [g] "=&r"(g), [h] "=&r"(h)
                   : [inv] "t"(inv)
                   : "s0", "s1", "s2", "s3", "cc", "memory");
    }
    for (index_t i = 0; i < n % 4; ++i) q[i] = static_cast<std::int8_t>(round_int(x[i] * inv));
  }

  /// max |x[i]| for i < n as bits (the sign cleared; generic::ProductInt8::quantize_row's first
  /// loop): the maximum of the bits shifted left by one (the shift drops the sign and keeps the
  /// order of the rest), shifted back. Four elements per ldm, three instructions each (cmp with the
  /// shifted operand, it, lsl).
  [[gnu::noinline]] static std::uint32_t max_abs_bits(const float* x, index_t n) {
    std::uint32_t m = 0;  // max of the bits << 1
    if (index_t quads = n / 4) {
      register std::uint32_t a asm("r2"), b asm("r3"), c asm("r4"), d asm("r5");
      asm volatile("1:\n\t"
                   "ldmia  %[x]!, {%[a], %[b], %[c], %[d]}\n\t" STF_M4_MAX_BITS("a") STF_M4_MAX_BITS("b")
                       STF_M4_MAX_BITS("c") STF_M4_MAX_BITS("d") "subs   %[n], %[n], #1\n\t"
                                       "bne    1b"
                   : [m] "+r"(m), [x] "+r"(x), [n] "+r"(quads), [a] "=&r"(a), [b] "=&r"(b), [c] "=&r"(c), [d] "=&r"(d)
                   :
                   : "cc", "memory");
    }
    for (index_t i = 0; i < n % 4; ++i) {
      std::uint32_t v;
      std::memcpy(&v, x + i, 4);
      m = v << 1 > m ? v << 1 : m;
    }
    return m >> 1;
  }

  /// quantize_expanded's whole quads (quads ≥ 1): per quad vldm, four vmul, four vcvtr, two vmov of
  /// pairs, two pkhbt and the strd of (A, B) at y, then kStep bytes on. x and y advance.
  template <int kStep>
  [[gnu::always_inline]] static inline void round_quads(const float*& x, std::int32_t*& y, index_t quads, float inv) {
    std::int32_t e, f, g, h;
    asm volatile("1:\n\t" STF_M4_ROUND4
                 "pkhbt %[e], %[e], %[g], lsl #16\n\t"
                 "pkhbt %[f], %[f], %[h], lsl #16\n\t"
                 "strd %[e], %[f], [%[y]], %[st]\n\t"
                 "subs %[n], %[n], #1\n\t"
                 "bne 1b"
                 : [x] "+r"(x), [y] "+r"(y), [n] "+r"(quads), [e] "=&r"(e), [f] "=&r"(f), [g] "=&r"(g), [h] "=&r"(h)
                 : [inv] "t"(inv), [st] "n"(kStep)
                 : "s0", "s1", "s2", "s3", "cc", "memory");
  }

  /// generic::ProductInt8::quantize_row(x, n, ...) straight into the expanded words (A, B) of quad
  /// q at y + (pair ? 4 : 2)·q (a row of a pair, interleaved by quad, or a row alone): the same bits
  /// (no int8 row in between: per quad vldm, four vmul, four vcvtr, two vmov of pairs, two pkhbt,
  /// strd); quantize_row's special cases (not finite, below kMinQuantizedMax) written out as it has
  /// them. Out of line, one copy for both layouts (each its own loop: strd's step is an immediate).
  [[gnu::noinline]] static float quantize_expanded(const float* x, index_t n, std::int32_t* y, bool pair) {
    const std::uint32_t mb = max_abs_bits(x, n);
    const index_t step = pair ? 4 : 2;  // words per quad
    float a;
    std::memcpy(&a, &mb, 4);
    const bool finite = mb < 0x7F800000u;
    if (!finite || a < kMinQuantizedMax) {  // (a row of zeros among them)
      for (index_t q = 0; q < quad_padded(n) / kQuadK; ++q) y[step * q] = 0, y[step * q + 1] = 0;
      return finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    }
    const float inv = 127.0f / a;  // (finite: a >= kMinQuantizedMax)
    if (const index_t full = n / 4) {
      if (pair)
        round_quads<16>(x, y, full, inv);
      else
        round_quads<8>(x, y, full, inv);
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

  /// The weights of two outputs (kFour = false: w is output 0's first quad, output 1's 4 bytes on;
  /// any alignment) or four (kFour: two pairs, 4-aligned), ldw bytes per quad, expanded into int16
  /// pairs for sums22: per quad and pair the words sxtb16 w0, sxtb16 w0 ror #8, sxtb16 w1, sxtb16 w1
  /// ror #8 (16 bytes a quad), the first pair's at wx0, the second's at wx1. Per quad two ldr and an
  /// add, four sxtb16 and one stm (9 instructions, 9.5 with the loop's: unrolled by two quads, an odd
  /// count entered at the second), or with kFour two ldrd, eight sxtb16, two stm and an add (13.5
  /// with the loop's: 6.75 per pair). Once per group of rows. (Four registers of its own: the same
  /// code at every optimization level and with a frame pointer.)
  template <bool kFour>
  static void expand(const std::int8_t* w, index_t ldw, index_t quads, std::int32_t* wx0, std::int32_t* wx1) {
#define STF_M4_WORDS(X)             \
  "sxtb16 %[o0], %[e0], ror #8\n\t" \
  "sxtb16 %[e0], %[e0]\n\t"         \
  "sxtb16 %[o1], %[e1], ror #8\n\t" \
  "sxtb16 %[e1], %[e1]\n\t"         \
  "stmia  %[" X "]!, {%[e0], %[o0], %[e1], %[o1]}\n\t"
#define STF_M4_PAIR              \
  "ldr    %[e1], [%[w], #4]\n\t" \
  "ldr    %[e0], [%[w]]\n\t"     \
  "add    %[w], %[w], %[ldw]\n\t" STF_M4_WORDS("x0")
#define STF_M4_FOUR                                                                                        \
  "ldrd   %[e0], %[e1], [%[w]]\n\t" STF_M4_WORDS("x0") "ldrd   %[e0], %[e1], [%[w], #8]\n\t" STF_M4_WORDS( \
      "x1") "add    %[w], %[w], %[ldw]\n\t"
#define STF_M4_LOOP(QUAD)                                                \
  "lsrs   %[n], %[n], #1\n\t" /* rounds of two quads; C: an odd count */ \
  "adc    %[n], %[n], #0\n\t"                                            \
  "bcs    2f\n"                                                          \
  "1:\n\t" QUAD "2:\n\t" QUAD                                            \
  "subs   %[n], %[n], #1\n\t"                                            \
  "bne    1b"
#define STF_M4_OPERANDS                                                                                           \
  : [w] "+r"(w), [x0] "+r"(wx0), [x1] "+r"(wx1), [n] "+r"(quads), [e0] "=&r"(e0), [o0] "=&r"(o0), [e1] "=&r"(e1), \
    [o1] "=&r"(o1)                                                                                             \
  : [ldw] "r"(ldw)                                                                                             \
  : "cc", "memory"
    register std::int32_t e0 asm("r2"), o0 asm("r3"), e1 asm("r4"), o1 asm("r5");  // (stm: ascending)
    if constexpr (kFour)
      asm volatile(STF_M4_LOOP(STF_M4_FOUR) STF_M4_OPERANDS);
    else
      asm volatile(STF_M4_LOOP(STF_M4_PAIR) STF_M4_OPERANDS);
#undef STF_M4_OPERANDS
#undef STF_M4_LOOP
#undef STF_M4_FOUR
#undef STF_M4_PAIR
#undef STF_M4_WORDS
  }

  /// The state of sums22's loop over the 2 × 2 tiles of one pair of outputs and a group's pairs of
  /// rows, read and advanced by the assembly at these offsets.
  struct Pair22 {
    const std::int32_t* x;      // 0: the next pair of rows' quads (interleaved: row 0's (A, B), row 1's)
    const std::int32_t* w;      // 4: the outputs' expanded weights (expand)
    std::int32_t rem;           // 8: quads % 4 (the loop is entered at its quad (4 - rem) % 4)
    std::int32_t ldx;           // 12: bytes from a pair of rows' quads to the next pair's
    std::int32_t zero[4];       // 16: the accumulators' start (loaded with the rest by one ldm)
    float* y;                   // 32: the next pair's row 0 outputs (the sums' bits are stored there)
    std::int32_t y1;            // 36: bytes from a row 0 output to its row 1 output
    std::int32_t ldy;           // 40: bytes from a pair's row 0 outputs to the next pair's
    float* end;                 // 44: y after the last pair
    const std::int32_t* w_end;  // 48: w + 4 · quads
  };

  /// The sums of the 2 × 2 tiles of two outputs (their weights expanded once: expand) × every
  /// pair of rows from j.x on until y reaches j.end (quads ≥ 1, at least one pair), stored as int32
  /// bits in y (the epilogue reads them there), in one assembly loop over the pairs (its state in j;
  /// no per-tile call). Per quad ldm of both rows' (A, B), ldm of both outputs' expanded weights,
  /// eight smlad: 10 instructions for 16 multiply-adds, 10.75 with the loop's end test (unrolled by
  /// four quads: 0.67 per multiply-add; weights expanded per tile, as before, took 14.5). Per tile
  /// the loop's state is reloaded from j (the accumulators, r10-r12 and lr, start from j's zeros).
  [[gnu::noinline]] static void sums22(Pair22& j) {
    static_assert(sizeof(void*) == 4 && sizeof(Pair22) == 52);
#define STF_M4_QUAD                  \
  "ldmia  r0!, {r3, r4, r5, r6}\n\t" \
  "ldmia  r1!, {r2, r7, r8, r9}\n\t" \
  "smlad  r10, r3, r2, r10\n\t"      \
  "smlad  r11, r3, r8, r11\n\t"      \
  "smlad  r12, r5, r2, r12\n\t"      \
  "smlad  lr, r5, r8, lr\n\t"        \
  "smlad  r10, r4, r7, r10\n\t"      \
  "smlad  r11, r4, r9, r11\n\t"      \
  "smlad  r12, r6, r7, r12\n\t"      \
  "smlad  lr, r6, r9, lr\n\t"
    register Pair22* jp asm("r0") = &j;
    asm volatile(
        "ldr    r1, [r0, #48]\n\t"
        "push   {r0, r1}\n"  // [sp]: j, [sp, #4]: w_end
        "9:\n\t"
        "ldr    r2, [sp]\n\t"
        "ldm    r2, {r0, r1, r3, r4, r10, r11, r12, lr}\n\t"  // x, w, rem, ldx, zeros
        "add    r4, r0, r4\n\t"
        "str    r4, [r2]\n\t"
        "cbz    r3, 1f\n\t"
        "cmp    r3, #2\n\t"
        "beq    3f\n\t"
        "bhi    2f\n\t"
        "b      4f\n"
        "1:\n\t" STF_M4_QUAD "2:\n\t" STF_M4_QUAD "3:\n\t" STF_M4_QUAD "4:\n\t" STF_M4_QUAD
        "ldr    r2, [sp, #4]\n\t"
        "cmp    r1, r2\n\t"
        "bne    1b\n\t"
        "ldr    r0, [sp]\n\t"
        "ldrd   r1, r2, [r0, #32]\n\t"  // y, y1
        "add    r2, r1, r2\n\t"
        "strd   r12, lr, [r2]\n\t"
        "strd   r10, r11, [r1]\n\t"
        "ldrd   r2, r3, [r0, #40]\n\t"  // ldy, end
        "add    r1, r1, r2\n\t"
        "str    r1, [r0, #32]\n\t"
        "cmp    r1, r3\n\t"
        "bne    9b\n\t"
        "add    sp, sp, #8"
        : "+r"(jp)
        :
        : "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory");
#undef STF_M4_QUAD
  }

  /// The state of sums14's loop over the 1 × 4 tiles of a row and a panel (offsets as the assembly
  /// reads them).
  struct Row14 {
    const std::int32_t* x;  // 0: the row's quads
    const std::int8_t* w;   // 4: the next tile's weights
    std::int32_t quads;     // 8
    std::int32_t ldw;       // 12: bytes per quad of the panel
    std::int32_t zero[4];   // 16: the accumulators' start (loaded with the rest by one ldm)
    float* y;               // 32: the tiles' outputs (the sums' bits are stored there)
    float* end;             // 36: y after the last tile
  };

  /// The sums of every 1 × 4 tile of a single row (a decoding step) × a panel's first (end - y)
  /// outputs (quads ≥ 1, at least one tile), stored as int32 bits in y, in one assembly loop over
  /// the tiles. Per quad 24 instructions for 16 multiply-adds (ldrd of the row's (A, B), per output
  /// ldr, two sxtb16, two smlad); per tile 8 (stm of the four sums).
  static void sums14(Row14& j) {
    static_assert(sizeof(void*) == 4 && sizeof(Row14) == 40);
#define STF_M4_OUT(C, OFF)    \
  "ldr    r6, [r1, #" OFF     \
  "]\n\t"                     \
  "sxtb16 r7, r6\n\t"         \
  "sxtb16 r6, r6, ror #8\n\t" \
  "smlad  " C ", r3, r7, " C  \
  "\n\t"                      \
  "smlad  " C ", r4, r6, " C "\n\t"
    register Row14* jp asm("r0") = &j;
    asm volatile("mov    lr, r0\n\t"
                 "ldr    r12, [lr, #32]\n"
                 "3:\n\t"
                 "ldm    lr, {r0, r1, r2, r5, r8, r9, r10, r11}\n\t"  // x, w, quads, ldw, zeros
                 "add    r6, r1, #16\n\t"
                 "str    r6, [lr, #4]\n\t"
                 "1:\n\t"
                 "ldrd   r3, r4, [r0], #8\n\t" STF_M4_OUT("r8", "0") STF_M4_OUT("r9", "4") STF_M4_OUT("r10", "8")
                     STF_M4_OUT("r11", "12") "add    r1, r1, r5\n\t"
                 "subs   r2, r2, #1\n\t"
                 "bne    1b\n\t"
                 "stmia  r12!, {r8, r9, r10, r11}\n\t"
                 "ldr    r6, [lr, #36]\n\t"
                 "cmp    r12, r6\n\t"
                 "bne    3b"
                 : "+r"(jp)
                 :
                 : "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory");
#undef STF_M4_OUT
  }

  /// sums14 where the weights are 4-aligned (ldrd of two outputs' words): per quad ldrd of the
  /// row's (A, B), two ldrd of the four outputs' weights, eight sxtb16, eight smlad and the add of
  /// the panel's stride, 20 instructions for 16 multiply-adds (sums14: 24), 21 with the loop's
  /// subs and bne (unrolled by two quads, an odd count entered at the second). y is read and
  /// advanced in j per tile (its register holds a weight word): 12 instructions per tile.
  static void sums14_pairs(Row14& j) {
#define STF_M4_OUTS(C0, C1, OFF) \
  "ldrd   r6, r7, [r1" OFF       \
  "]\n\t"                        \
  "sxtb16 r12, r6\n\t"           \
  "sxtb16 r6, r6, ror #8\n\t"    \
  "smlad  " C0 ", r3, r12, " C0  \
  "\n\t"                         \
  "smlad  " C0 ", r4, r6, " C0   \
  "\n\t"                         \
  "sxtb16 r12, r7\n\t"           \
  "sxtb16 r7, r7, ror #8\n\t"    \
  "smlad  " C1 ", r3, r12, " C1  \
  "\n\t"                         \
  "smlad  " C1 ", r4, r7, " C1 "\n\t"
#define STF_M4_QUAD \
  "ldrd   r3, r4, [r0], #8\n\t" STF_M4_OUTS("r8", "r9", "") STF_M4_OUTS("r10", "r11", ", #8") "add    r1, r1, r5\n\t"
    register Row14* jp asm("r0") = &j;
    asm volatile(
        "mov    lr, r0\n"
        "3:\n\t"
        "ldm    lr, {r0, r1, r2, r5, r8, r9, r10, r11}\n\t"  // x, w, quads, ldw, zeros
        "add    r6, r1, #16\n\t"
        "str    r6, [lr, #4]\n\t"
        "lsrs   r2, r2, #1\n\t"  // rounds of two quads; C: an odd count
        "adc    r2, r2, #0\n\t"
        "bcs    2f\n"
        "1:\n\t" STF_M4_QUAD "2:\n\t" STF_M4_QUAD
        "subs   r2, r2, #1\n\t"
        "bne    1b\n\t"
        "ldr    r6, [lr, #32]\n\t"
        "stmia  r6!, {r8, r9, r10, r11}\n\t"
        "str    r6, [lr, #32]\n\t"
        "ldr    r7, [lr, #36]\n\t"
        "cmp    r6, r7\n\t"
        "bne    3b"
        : "+r"(jp)
        :
        : "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory");
#undef STF_M4_QUAD
#undef STF_M4_OUTS
  }

  /// The sums of `two ? 2 : 1` rows (one alone, or a pair interleaved by quad) × `pair ? 2 : 1`
  /// outputs of a panel (ldw bytes per quad), stored as int32 bits at y (rows `out` apart): the edges
  /// of the tiles, which the benchmarked shapes never reach; one loop for the four shapes, out of
  /// line, for its code.
  [[gnu::noinline]] static void sums_edge(const std::int32_t* x, index_t quads, const std::int8_t* w, index_t ldw,
                                          bool two, bool pair, float* y, index_t out) {
    const index_t rows = two ? 2 : 1;
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < (pair ? 2 : 1); ++j) {
        std::int32_t acc = 0;
        const std::int32_t* xi = x + 2 * i;
        const std::int8_t* wj = w + 4 * j;
#pragma GCC unroll 1
        for (index_t q = 0; q < quads; ++q, xi += 2 * rows, wj += ldw) {
          const std::int32_t v = load_word(wj);
          acc = __smlad(xi[1], sxtb16_ror8(v), __smlad(xi[0], __sxtb16(v), acc));
        }
        std::memcpy(y + i * out + j, &acc, 4);
      }
  }

  /// relu(v) (the float path's v > 0 ? v : 0) on the bits: every negative (-0 too) and every NaN
  /// is above +inf's pattern as an unsigned integer, and becomes +0.
  static float relu_bits(float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    u = u > 0x7F800000u ? 0u : u;
    std::memcpy(&v, &u, 4);
    return v;
  }

  /// relu_bits of y[0, n) in place (the linears' ReLU, a pass after their epilogue: fused into the
  /// epilogue's assembly it took 676 B more code for 0.25 instructions fewer per output). Four at a
  /// time in assembly: ldm, per word the compare, it, move, stm: 16 instructions for 4 outputs.
  static void relu_pass(float* y, index_t n) {
    if (index_t quads = n / 4) {
      register std::uint32_t a asm("r2"), b asm("r3"), c asm("r4"), d asm("r5");  // (ldm, stm: ascending)
#define STF_M4_RELU(R) "cmp    %[" R "], #0x7F800000\n\tit     hi\n\tmovhi  %[" R "], #0\n\t"
      asm volatile("1:\n\t"
                   "ldmia  %[y], {%[a], %[b], %[c], %[d]}\n\t" STF_M4_RELU("a") STF_M4_RELU("b") STF_M4_RELU("c")
                       STF_M4_RELU("d") "stmia  %[y]!, {%[a], %[b], %[c], %[d]}\n\t"
                                        "subs   %[n], %[n], #1\n\t"
                                        "bne    1b"
                   : [y] "+r"(y), [n] "+r"(quads), [a] "=&r"(a), [b] "=&r"(b), [c] "=&r"(c), [d] "=&r"(d)
                   :
                   : "cc", "memory");
#undef STF_M4_RELU
    }
    for (index_t i = 0; i < n % 4; ++i) y[i] = relu_bits(y[i]);
  }

  /// One row of the w8a32 linear's product (ProductInt8Select::W8a32Row; generic::ProductInt8::
  /// linear_w8a32 with rows == 1, a decoding step): y[o] = the sum over k in order of fma(x[k],
  /// float(w[k, o]), ·) from +0, generic::ProductInt8::linear_w8a32_row's bits, four outputs at a
  /// time, the whole k-quads in assembly (sums_w8a32_row4); the last k (in mod 4) and the last
  /// outputs (a panel's width mod 4) as the generic loop.
  static void product_w8a32_row(const float* x, index_t in, const std::int8_t* qw, index_t out, float* y) {
    const index_t in4 = quad_padded(in), quads = in / kQuadK;
    const bool aligned = (reinterpret_cast<std::uintptr_t>(qw) & 3) == 0;  // (ldrd of the weights)
    for (index_t p0 = 0; p0 < out; p0 += kWeightPanel) {
      const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
      const std::int8_t* wp = qw + p0 * in4;
      const index_t ldw = width * kQuadK;
      index_t o = 0;
      for (; o + 4 <= width; o += 4) {
        float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        const float* xk = x;
        const std::int8_t* w = wp + 4 * o;
        if (quads > 0) {
          if (aligned)
            sums_w8a32_row4<true>(xk, w, quads, ldw, a);
          else
            sums_w8a32_row4<false>(xk, w, quads, ldw, a);
        }
        for (index_t j = 0; j < in % kQuadK; ++j)
          for (index_t c = 0; c < 4; ++c) a[c] = std::fma(xk[j], static_cast<float>(w[4 * c + j]), a[c]);
        for (index_t c = 0; c < 4; ++c) y[p0 + o + c] = a[c];
      }
      for (; o < width; ++o) {
        float a = 0.0f;
        const std::int8_t* wq = wp + 4 * o;
        for (index_t k = 0; k < in; k += kQuadK, wq += ldw) {
          const index_t n = in - k < kQuadK ? in - k : kQuadK;
          for (index_t j = 0; j < n; ++j) a = std::fma(x[k + j], static_cast<float>(wq[j]), a);
        }
        y[p0 + o] = a;
      }
    }
  }

  /// product_w8a32_row's sums a[0..3] of four outputs over `quads` whole k-quads from x and w (the
  /// outputs' first quad; the next one ldw bytes on), both advanced past them. Per quad: vldm of
  /// x's four, the four outputs' words (kAligned: two ldrd; else four ldr, any alignment), then per
  /// k four sxtb (the k's byte of each word, by rotation), two vmov into pairs of single registers,
  /// four vcvt and four vfma: 62 instructions for 16 weights with the loop (GCC's loop: 72, a
  /// ldrsb and a vmov per weight). The core registers are the compiler's to choose (fixed ones ran
  /// out at -O2 on the M55, where GCC inlines more around it).
  template <bool kAligned>
  static void sums_w8a32_row4(const float*& x, const std::int8_t*& w, index_t quads, index_t ldw, float (&a)[4]) {
    float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    std::int32_t t0, t1, t2, t3, u0, u1;  // the four words; two bytes sign-extended
#define STF_M4_W8A32_K(ROT, XS) \
  STF_M4_SXTB_VCVT4(ROT)        \
  "vfma.f32 %[a0], " XS         \
  ", s0\n\t"                    \
  "vfma.f32 %[a1], " XS         \
  ", s1\n\t"                    \
  "vfma.f32 %[a2], " XS         \
  ", s2\n\t"                    \
  "vfma.f32 %[a3], " XS ", s3\n\t"
#define STF_M4_W8A32_QUAD(LOAD) \
  "1:\n\t"                                                                                                           \
  "vldmia %[x]!, {s4-s7}\n\t" LOAD "add    %[w], %[w], %[ldw]\n\t" STF_M4_W8A32_K("", "s4")                       \
      STF_M4_W8A32_K(", ror #8", "s5") STF_M4_W8A32_K(", ror #16", "s6") STF_M4_W8A32_K(", ror #24", "s7")          \
          "subs   %[n], %[n], #1\n\t"                                                                                \
          "bne    1b"
#define STF_M4_W8A32_OPERANDS                                                                              \
  : [x] "+r"(x), [w] "+r"(w), [n] "+r"(quads), [a0] "+t"(a0), [a1] "+t"(a1), [a2] "+t"(a2), [a3] "+t"(a3),          \
    [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [u0] "=&r"(u0), [u1] "=&r"(u1)                   \
  : [ldw] "r"(ldw)                                                                                                   \
  : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "cc", "memory"
    if constexpr (kAligned)
      asm volatile(STF_M4_W8A32_QUAD("ldrd   %[t0], %[t1], [%[w]]\n\tldrd   %[t2], %[t3], [%[w], #8]\n\t")
                       STF_M4_W8A32_OPERANDS);
    else
      asm volatile(
          STF_M4_W8A32_QUAD("ldr    %[t0], [%[w]]\n\tldr    %[t1], [%[w], #4]\n\t"
                            "ldr    %[t2], [%[w], #8]\n\tldr    %[t3], [%[w], #12]\n\t") STF_M4_W8A32_OPERANDS);
#undef STF_M4_W8A32_OPERANDS
#undef STF_M4_W8A32_QUAD
#undef STF_M4_W8A32_K
    a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;
  }

  /// The w8a32 linear's chunk conversion (ProductInt8Select::W8a32; generic::ProductInt8::
  /// linear_w8a32): `quads` whole k-quads of a weight panel `width` outputs wide (quad i's bytes at
  /// w + 4·width·i, output o's four at 4·o), outputs [0, cw), into sq[(4·i + j)·cw + o] =
  /// float(w[4·i + j][o]) (exact). Per quad and four outputs, in assembly: four ldr (any
  /// alignment), then per k four sxtb (the k's byte by rotation), two vmov into pairs of single
  /// registers, four vcvt and one vstmia to the k's row: 51 instructions for 16 weights with the
  /// loop (GCC's loop: 76, a ldrsb, a vmov and a vstmia per weight). The last 1-3 outputs of a row
  /// as the generic loop.
  static void convert_w8a32(const std::int8_t* w, index_t width, index_t cw, index_t quads, float* sq) {
    const index_t groups = cw / 4;
    for (index_t i = 0; i < quads; ++i, w += 4 * width, sq += 4 * cw) {
      if (groups > 0) {
        const std::int8_t* wo = w;
        float* p0 = sq;
        float* p1 = sq + cw;
        float* p2 = sq + 2 * cw;
        float* p3 = sq + 3 * cw;
        index_t n = groups;
        std::int32_t t0, t1, t2, t3, u0, u1;  // the four words; two bytes sign-extended
#define STF_M4_CONVERT_K(ROT, P) STF_M4_SXTB_VCVT4(ROT) "vstmia %[" P "]!, {s0-s3}\n\t"
        asm volatile(
            "1:\n\t"
            "ldr    %[t0], [%[w]]\n\t"
            "ldr    %[t1], [%[w], #4]\n\t"
            "ldr    %[t2], [%[w], #8]\n\t"
            "ldr    %[t3], [%[w], #12]\n\t"
            "adds   %[w], %[w], #16\n\t" STF_M4_CONVERT_K("", "p0") STF_M4_CONVERT_K(", ror #8", "p1")
                STF_M4_CONVERT_K(", ror #16", "p2") STF_M4_CONVERT_K(", ror #24", "p3") "subs   %[n], %[n], #1\n\t"
                                                                                         "bne    1b"
            : [w] "+r"(wo), [n] "+r"(n), [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [t0] "=&r"(t0),
              [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [u0] "=&r"(u0), [u1] "=&r"(u1)
            :
            : "s0", "s1", "s2", "s3", "cc", "memory");
#undef STF_M4_CONVERT_K
      }
      for (index_t o = groups * 4; o < cw; ++o)
        for (index_t j = 0; j < 4; ++j) sq[j * cw + o] = static_cast<float>(w[4 * o + j]);
    }
  }

  /// The w8a32 linear's epilogue over one row (ProductInt8Select::W8a32; generic::ProductInt8::
  /// w8a32_epilogue before its activation): y = fma(acc, s_w, bias) (vfma: fused, std::fma's bits),
  /// acc · s_w without a bias; four outputs per loop in assembly (vldmia of y, s_w and the bias,
  /// four vfma, one vstmia: 10 instructions with the loop; GCC's loop: 7 per output), the last 1-3
  /// one by one.
  static void epilogue_w8a32(float* y, const float* s_w, const float* bias, index_t out) {
    index_t n = out / 4;
    if (n > 0) {
      if (bias)
        asm volatile(
            "1:\n\t"
            "vldmia %[y], {s0-s3}\n\t"
            "vldmia %[s]!, {s4-s7}\n\t"
            "vldmia %[b]!, {s8-s11}\n\t"
            "vfma.f32 s8, s0, s4\n\t"
            "vfma.f32 s9, s1, s5\n\t"
            "vfma.f32 s10, s2, s6\n\t"
            "vfma.f32 s11, s3, s7\n\t"
            "vstmia %[y]!, {s8-s11}\n\t"
            "subs   %[n], %[n], #1\n\t"
            "bne    1b"
            : [y] "+r"(y), [s] "+r"(s_w), [b] "+r"(bias), [n] "+r"(n)
            :
            : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "cc", "memory");
      else
        asm volatile(
            "1:\n\t"
            "vldmia %[y], {s0-s3}\n\t"
            "vldmia %[s]!, {s4-s7}\n\t"
            "vmul.f32 s0, s0, s4\n\t"
            "vmul.f32 s1, s1, s5\n\t"
            "vmul.f32 s2, s2, s6\n\t"
            "vmul.f32 s3, s3, s7\n\t"
            "vstmia %[y]!, {s0-s3}\n\t"
            "subs   %[n], %[n], #1\n\t"
            "bne    1b"
            : [y] "+r"(y), [s] "+r"(s_w), [n] "+r"(n)
            :
            : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "cc", "memory");
    }
    for (index_t o = 0; o < out % 4; ++o) y[o] = bias ? std::fma(y[o], s_w[o], bias[o]) : y[o] * s_w[o];
  }

  /// The epilogue of one row's `width` outputs whose int32 sums y holds as bits:
  /// generic::ProductInt8::dequantize's bits.
  static void epilogue_row(float* y, index_t width, float sx, const float* sw, const float* b) {
    using Generic = generic::ProductInt8<Tag>;
    for (index_t o = 0; o < width; ++o) {
      std::int32_t acc;
      std::memcpy(&acc, y + o, 4);
      y[o] = Generic::dequantize(acc, sx, sw[o], b ? b + o : nullptr);
    }
  }

  /// The epilogue of a pair of rows (y0, y1) × 4·quads outputs with a bias, in assembly: per four
  /// outputs both rows' sums by vldm, eight vcvt, s_w and the bias loaded once per row pair
  /// (the bias by two vldm, one per row's fma), eight vmul (s_x · s_w), eight vfma
  /// (fma(float(acc), s_x · s_w, b): dequantize's bits), two vstm: 33 instructions for 8 outputs.
  static void epilogue_pair(float* y0, float* y1, index_t quads, float sx0, float sx1, const float* sw,
                            const float* b) {
    asm volatile(
        "1:\n\t"
        "vldmia %[y0], {s0-s3}\n\t"
        "vldmia %[y1], {s4-s7}\n\t"
        "vcvt.f32.s32 s0, s0\n\t"
        "vcvt.f32.s32 s1, s1\n\t"
        "vcvt.f32.s32 s2, s2\n\t"
        "vcvt.f32.s32 s3, s3\n\t"
        "vcvt.f32.s32 s4, s4\n\t"
        "vcvt.f32.s32 s5, s5\n\t"
        "vcvt.f32.s32 s6, s6\n\t"
        "vcvt.f32.s32 s7, s7\n\t"
        "vldmia %[sw]!, {s8-s11}\n\t"
        "vmul.f32 s12, %[sx0], s8\n\t"
        "vmul.f32 s13, %[sx0], s9\n\t"
        "vmul.f32 s14, %[sx0], s10\n\t"
        "vmul.f32 s15, %[sx0], s11\n\t"
        "vmul.f32 s8, %[sx1], s8\n\t"
        "vmul.f32 s9, %[sx1], s9\n\t"
        "vmul.f32 s10, %[sx1], s10\n\t"
        "vmul.f32 s11, %[sx1], s11\n\t"
        "vldmia %[b], {s16-s19}\n\t"
        "vldmia %[b]!, {s20-s23}\n\t"
        "vfma.f32 s16, s0, s12\n\t"
        "vfma.f32 s17, s1, s13\n\t"
        "vfma.f32 s18, s2, s14\n\t"
        "vfma.f32 s19, s3, s15\n\t"
        "vfma.f32 s20, s4, s8\n\t"
        "vfma.f32 s21, s5, s9\n\t"
        "vfma.f32 s22, s6, s10\n\t"
        "vfma.f32 s23, s7, s11\n\t"
        "vstmia %[y0]!, {s16-s19}\n\t"
        "vstmia %[y1]!, {s20-s23}\n\t"
        "subs   %[n], %[n], #1\n\t"
        "bne    1b"
        : [y0] "+r"(y0), [y1] "+r"(y1), [sw] "+r"(sw), [b] "+r"(b), [n] "+r"(quads)
        : [sx0] "t"(sx0), [sx1] "t"(sx1)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
          "s17", "s18", "s19", "s20", "s21", "s22", "s23", "cc", "memory");
  }

  /// The epilogue of one row's 4·quads outputs with a bias, in assembly (epilogue_pair's steps for
  /// one row: 18 instructions for 4 outputs).
  static void epilogue_one(float* y, index_t quads, float sx, const float* sw, const float* b) {
    asm volatile(
        "1:\n\t"
        "vldmia %[y], {s0-s3}\n\t"
        "vcvt.f32.s32 s0, s0\n\t"
        "vcvt.f32.s32 s1, s1\n\t"
        "vcvt.f32.s32 s2, s2\n\t"
        "vcvt.f32.s32 s3, s3\n\t"
        "vldmia %[sw]!, {s8-s11}\n\t"
        "vmul.f32 s8, %[sx], s8\n\t"
        "vmul.f32 s9, %[sx], s9\n\t"
        "vmul.f32 s10, %[sx], s10\n\t"
        "vmul.f32 s11, %[sx], s11\n\t"
        "vldmia %[b]!, {s4-s7}\n\t"
        "vfma.f32 s4, s0, s8\n\t"
        "vfma.f32 s5, s1, s9\n\t"
        "vfma.f32 s6, s2, s10\n\t"
        "vfma.f32 s7, s3, s11\n\t"
        "vstmia %[y]!, {s4-s7}\n\t"
        "subs   %[n], %[n], #1\n\t"
        "bne    1b"
        : [y] "+r"(y), [sw] "+r"(sw), [b] "+r"(b), [n] "+r"(quads)
        : [sx] "t"(sx)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "cc", "memory");
  }

  /// The epilogue of the outputs [0, width) of `two ? 2 : 1` rows from y (rows `out` apart) whose
  /// sums y holds as bits.
  static void epilogue(float* y, index_t out, bool two, index_t width, const float* sx, const float* sw,
                       const float* b) {
    index_t o = 0;
    if (b && width >= 4) {
      if (two)
        epilogue_pair(y, y + out, width / 4, sx[0], sx[1], sw, b);
      else
        epilogue_one(y, width / 4, sx[0], sw, b);
      o = width & ~index_t{3};
    }
    for (index_t i = 0; i < (two ? 2 : 1); ++i)
      epilogue_row(y + i * out + o, width - o, sx[i], sw + o, b ? b + o : nullptr);
  }

  /// Kernels::linears_w8a8 (kernels/api.hpp): per group of rows the quantization, then for each
  /// linear per panel and pair of outputs the weights expanded and the sums of every pair of rows
  /// stored as bits in y (sums22; a row alone: sums14's tiles; the edges), then per pair of rows the
  /// epilogue over them, then the activation (relu_pass, else generic::ProductInt8::activate). Out
  /// of line and not cloned, as helium_int8.hpp's: one copy serves Kernels::linear_w8a8 and
  /// linears_w8a8.
  [[gnu::noinline, gnu::noclone]] static void linears_w8a8(const float* x, index_t rows, index_t in,
                                                           const W8a8Linear* linears, index_t count,
                                                           std::int8_t* scratch) {
    const index_t ld = quantized_row_stride(in);
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(scratch);
    std::int32_t* base = reinterpret_cast<std::int32_t*>(scratch + ((4 - (a & 3)) & 3));  // (words from here)
    const index_t ldx = ld / 2;  // words per row: 2 · ld bytes (a pair: ld words from its first row's)
    // the expanded weights after the first (largest) group's rows: 2 · ld words (linear_w8a8_expanded_bytes)
    std::int32_t* wx = base + (rows < kGroup ? rows : kGroup) * ldx;
    float s[kGroup];
    for (index_t r0 = 0; r0 < rows; r0 += kGroup) {
      const index_t n = rows - r0 < kGroup ? rows - r0 : kGroup;
      for (index_t r = 0; r < n; ++r) {
        std::int32_t* pair = base + (r & ~index_t{1}) * ldx;
        const bool of_pair = r + 1 < n || (r & 1);  // else the last row alone
        s[r] = quantize_expanded(x + (r0 + r) * in, in, pair + 2 * (r & 1), of_pair);
      }
      for (index_t l = 0; l < count; ++l) panels(linears[l], in, r0, n, base, ldx, s, wx);
    }
  }

  /// The 2 × 2 tiles of a panel's first `wide` outputs (even) × `pairs` pairs of rows from base (ldx
  /// words per row): per four outputs expand<true> into wx (per pair expand<false> where the weights are
  /// not 4-aligned, and for the last pair), then sums22 of each pair over the pairs of rows; the
  /// sums' bits from y (rows `out` apart). Out of line: a single row's calls (a decoding step) never
  /// come here and keep their registers.
  [[gnu::noinline]] static void tiles22(const std::int32_t* base, index_t ldx, index_t pairs, index_t quads,
                                        const std::int8_t* wp, index_t ldw, index_t wide, std::int32_t* wx, float* y,
                                        index_t out) {
    const bool aligned = (reinterpret_cast<std::uintptr_t>(wp) & 3) == 0;  // (ldrd of weights)
    Pair22 j{base,
             wx,
             static_cast<std::int32_t>(quads % 4),
             static_cast<std::int32_t>(8 * ldx),
             {},
             nullptr,
             static_cast<std::int32_t>(4 * out),
             static_cast<std::int32_t>(8 * out),
             nullptr,
             wx + 4 * quads};
    std::int32_t* const wx1 = wx + 4 * quads;  // the second pair's expanded weights
    for (index_t o = 0; o < wide;) {
      const bool four = aligned && wide - o >= 4;
      if (four)
        expand<true>(wp + o * kQuadK, ldw, quads, wx, wx1);
      else
        expand<false>(wp + o * kQuadK, ldw, quads, wx, wx1);
      std::int32_t* const ws[2] = {wx, wx1};
      for (std::int32_t* w : ws) {
        j.x = base;  // (sums22 advances x and y)
        j.w = w;
        j.w_end = w + 4 * quads;
        j.y = y + o;
        j.end = j.y + 2 * pairs * out;
        sums22(j);
        o += 2;
        if (!four) break;
      }
    }
  }

  /// One linear's products with a call's quantized rows [r0, r0 + n) (linears_w8a8: pairs of rows
  /// from `base`, ldx words apart, scales s; wx: room for four outputs' expanded weights where n ≥ 2),
  /// its epilogue and activation.
  static void panels(const W8a8Linear& L, index_t in, index_t r0, index_t n, const std::int32_t* base, index_t ldx,
                     const float* s, std::int32_t* wx) {
    using Generic = generic::ProductInt8<Tag>;
    const index_t in4 = quad_padded(in), quads = in4 / kQuadK, out = L.out;
    const std::int8_t* qw = L.qw;
    const float *s_w = L.s_w, *bias = L.bias;
    float* y = L.y;
    const bool aligned = (reinterpret_cast<std::uintptr_t>(qw) & 3) == 0;  // (ldrd of weights)
    const index_t pairs = n / 2;                                           // pairs of rows
    for (index_t p0 = 0; p0 < out; p0 += kWeightPanel) {
      const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
      const std::int8_t* wp = qw + p0 * in4;
      const index_t ldw = width * kQuadK;
      const index_t wide = pairs > 0 && quads > 0 ? width & ~index_t{1} : 0;  // outputs of the 2 x 2 tiles
      if (wide > 0) tiles22(base, ldx, pairs, quads, wp, ldw, wide, wx, y + r0 * out + p0, out);
      for (index_t r = 0; r < n; r += 2) {
        const bool two = n - r >= 2;
        float* yr = y + (r0 + r) * out + p0;
        const std::int32_t* xr = base + r * ldx;
        index_t o = two ? wide : 0;
        if (!two && quads > 0 && width >= 4) {  // a single row, the 1 x 4 tiles
          o = width & ~index_t{3};
          Row14 rj{xr, wp, static_cast<std::int32_t>(quads), static_cast<std::int32_t>(ldw), {}, yr, yr + o};
          if (kRowPairs && aligned)
            sums14_pairs(rj);
          else
            sums14(rj);
        }
        for (; o < width; o += 2)  // the edges: one row or one output, no reduction
          sums_edge(xr, quads, wp + o * kQuadK, ldw, two, width - o >= 2, yr + o, out);
        epilogue(yr, out, two, width, s + r, s_w + p0, bias ? bias + p0 : nullptr);
      }
    }
    if (L.act == Fuse::relu)
      relu_pass(y + r0 * out, n * out);
    else
      Generic::activate(L.act, y + r0 * out, n, out);
  }
};

}  // namespace cortex_m4f
}  // namespace stf::kernels_detail
#endif
