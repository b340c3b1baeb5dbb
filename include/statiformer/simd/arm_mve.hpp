// statiformer — SIMD vocabulary, Armv8.1-M Helium / MVE with floating point (4 lanes, 8 Q
// registers): Cortex-M55. No vector division or square root: those run lane by lane.
#pragma once

#include <arm_mve.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>
#include <statiformer/simd/isa.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/scalar.hpp>

namespace stf::isa {

template <>
struct Vocabulary<mve> {
  using V = float32x4_t;
  static constexpr index_t lanes = 4;
  static constexpr const char* name = "mve";
  static bool supported() { return true; }  ///< can this CPU run it
  /// Register tile of the matrix kernels: up to 4 rows × 16 vectors of outputs, computed by
  /// row_tile below with vectors across the rows, in panels of 6 outputs (so wide that one call
  /// runs up to 10 panels in its assembly loop); a single row: Generic's 1 × 6 tile.
  static constexpr index_t gemm_rows = 4, gemm_vecs = 16, gemv_vecs = 6;

  /// The matrix kernels' tile for 2 to 4 rows (Generic::tile calls it): y[r, o] for r < rows,
  /// o < width, each accumulated in sequence over k in [k0, k1) with fma, from +0 when `first`,
  /// else from y; then + bias[o] (nullable), then `epilogue` (the fused activation), as
  /// Generic::tile. The lanes run across the rows instead of the outputs, so that both operands of
  /// a step come in one instruction each: the rows' x[r, k] by a gather load that steps its own
  /// addresses (vldrw.u32 q, [q, #4]!), the weights w[k, o..o+5] into six general-purpose
  /// registers by one ldm, a pointer step and six vfma by scalar into six accumulators: 9
  /// instructions per 24 multiply-adds, plus a loop end per 4 steps (Generic's 3 × 2 tile: 13).
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
    if constexpr (Epilogue::fusion != Fusion::other) {  // (Generic's epilogue types say)
      // without GELU (in registers too big for the asm's), the full panels in one assembly loop,
      // and a last panel of 4 or 2 outputs in the same call
      const index_t tail = rest == 4 || rest == 2 ? rest : 0;
      if (full || tail) {
        if (bias)
          first ? row_panels6<true, true, Epilogue::fusion>(a, full, tail)
                : row_panels6<false, true, Epilogue::fusion>(a, full, tail);
        else
          first ? row_panels6<true, false, Epilogue::fusion>(a, full, tail)
                : row_panels6<false, false, Epilogue::fusion>(a, full, tail);
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
  /// A linear layer's product over a block of a panel-stored weight (Generic::linear_block calls
  /// it): the row tiles of Generic::product (rows in tiles of 4, the last two even; each weight
  /// panel of kWeightPanel outputs as one row_tile), walked directly, with the whole reduction in
  /// one pass (no cache here to block for; parking partial sums in y would not change their
  /// bits). false: one row, GELU or no reduction, left to Generic::product.
  template <class Identity, class Relu>
  static bool linear_panels(const float* x, index_t ldx, index_t rows, index_t in, WeightBlock w, index_t out, float* y,
                            index_t ldy, const float* bias, bool accumulate, Fuse act, Identity identity, Relu relu) {
    if (rows < 2 || in == 0 || act == Fuse::gelu) return false;
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
          row_tile(x + r * ldx, ldx, n, 0, in, wo, ld, y + r * ldy + o, ldy, width, !accumulate, b, identity);
        r += n;
      }
      o += width;
    }
    return true;
  }
  static V load(const float* p) { return vld1q_f32(p); }
  static V load_partial(const float* p, index_t n) {
    return vldrwq_z_f32(p, vctp32q(static_cast<uint32_t>(n < 4 ? n : 4)));
  }
  static V load_partial_or(const float* p, index_t n, float fill) {
    const mve_pred16_t m = vctp32q(static_cast<uint32_t>(n < 4 ? n : 4));
    return vpselq_f32(vldrwq_z_f32(p, m), vdupq_n_f32(fill), m);
  }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static void store_partial(float* p, V v, index_t n) {
    vstrwq_p_f32(p, v, vctp32q(static_cast<uint32_t>(n < 4 ? n : 4)));
  }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V zero() { return vdupq_n_f32(0.0f); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V fma_n(float a, V b, V c) { return vfmaq_n_f32(c, b, a); }      ///< a·b + c, one rounding
  static V max(V a, V b) { return vpselq_f32(a, b, vcmpgtq_f32(a, b)); }  // b when unordered
  static V min(V a, V b) { return vpselq_f32(a, b, vcmpltq_f32(a, b)); }
  static V abs(V a) { return vabsq_f32(a); }
  /// Lane by lane (MVE has no vector division): vdiv.f32 on the S registers that alias the Q
  /// registers' lanes, instead of a round trip through memory.
  static V div(V a, V b) {
    register V num asm("q0") = a;
    register V den asm("q1") = b;
    asm("vdiv.f32 s0, s0, s4\n"
        "vdiv.f32 s1, s1, s5\n"
        "vdiv.f32 s2, s2, s6\n"
        "vdiv.f32 s3, s3, s7\n"
        : "+w"(num)
        : "w"(den));
    return num;
  }
  static V sqrt(V a) {
    return lanewise(a, a, [](float x, float) { return std::sqrt(x); });
  }
  static V keep_first(V v, index_t n) {
    // (whole vectors unchanged: GCC does not fold the all-true select of the full blocks)
    return n >= 4 ? v : vpselq_f32(v, vdupq_n_f32(0.0f), vctp32q(static_cast<uint32_t>(n)));
  }
  static V select_gt(V a, V b, V x, V y) { return vpselq_f32(x, y, vcmpgtq_f32(a, b)); }
  static V select_nan(V x, V y) { return vpselq_f32(y, x, vcmpeqq_f32(x, x)); }
  static V pow2i(V n) {
    const int32x4_t e = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
    return vreinterpretq_f32_s32(vshlq_n_s32(e, 23));
  }
  static void split_exponent(V x, V& m, V& e) {
    const int32x4_t bits = vreinterpretq_s32_f32(x);
    e = vcvtq_f32_s32(vsubq_s32(vshrq_n_s32(bits, 23), vdupq_n_s32(127)));
    m = vreinterpretq_f32_s32(vorrq_s32(vandq_s32(bits, vdupq_n_s32(0x007fffff)), vdupq_n_s32(0x3f800000)));
  }
  /// simd_math::exp's operations with the same bits, in a third of the instructions (assembly:
  /// GCC 12 holds the dozen constants as vectors, which 8 Q registers cannot hold, and moves every
  /// select's predicate through general-purpose registers). The constants come from a table
  /// (ldm, ldrd) and are used as scalar operands (vfma/vfmas/vsub/vcmp by a general-purpose register);
  /// the selects are predicated moves. Two identities: the clamp of x to [lo, hi] is dropped, since
  /// every lane outside it (or NaN) is replaced by the final selects, so only lanes where xc == x
  /// survive; pow2i(n - d) is computed as cvt(n) - d (n - d is exact for the integral n), and the
  /// product with 2^d as y + y where d = 1 (both exact doublings, or both overflow).
  static V exp(V x) {
    alignas(8) static constexpr float kConstants[] = {12582912.0f,    1.44269504088896341f,
                                                      -0.693359375f,  2.12194440e-4f,
                                                      1.0f / 5040.0f, 1.0f / 720.0f,
                                                      1.0f / 120.0f,  1.0f / 24.0f,
                                                      1.0f / 6.0f,    0.5f,
                                                      1.0f,           -87.3365448f,
                                                      88.7228394f,    std::numeric_limits<float>::infinity()};
    V n, r, p, y;
    // (six general-purpose registers only: with more, GCC 12 fails to allocate the callers' loops)
    std::uint32_t vpr;
    // (the caller's predicate is kept: GCC 12 knows no clobber name for VPR)
    asm("vmrs %[vpr], p0\n"
        "ldm %[c], {r0-r5}\n"
        "vdup.32 %q[n], r0\n"  // n = round(x / ln 2): fma(x, log2e, magic) - magic
        "vfma.f32 %q[n], %q[x], r1\n"
        "vsub.f32 %q[n], %q[n], r0\n"
        "vmov %q[r], %q[x]\n"  // r = fma(n, -c1, x), then fma(n, c2, r)
        "vfma.f32 %q[r], %q[n], r2\n"
        "vfma.f32 %q[r], %q[n], r3\n"
        "vdup.32 %q[p], r4\n"  // Horner: p = fma(p, r, c) = p·r + c
        "vfmas.f32 %q[p], %q[r], r5\n"
        "ldrd r0, r1, [%[c], #24]\n"
        "ldrd r2, r3, [%[c], #32]\n"
        "ldrd r4, r5, [%[c], #40]\n"
        "vfmas.f32 %q[p], %q[r], r0\n"
        "vfmas.f32 %q[p], %q[r], r1\n"
        "vfmas.f32 %q[p], %q[r], r2\n"
        "vfmas.f32 %q[p], %q[r], r3\n"
        "vfmas.f32 %q[p], %q[r], r4\n"
        "vfmas.f32 %q[p], %q[r], r4\n"
        "vcvt.s32.f32 %q[n], %q[n]\n"  // 2^(n-d): ((n + 127) - d) << 23, d = n > 0
        "mov r0, #127\n"
        "vadd.i32 %q[r], %q[n], r0\n"
        "mov r0, #1\n"
        "vpt.s32 gt, %q[n], zr\n"
        "vsubt.i32 %q[r], %q[r], r0\n"
        "vshl.i32 %q[r], %q[r], #23\n"
        "vmul.f32 %q[y], %q[p], %q[r]\n"
        "vpst\n"  // · 2^d
        "vaddt.f32 %q[y], %q[y], %q[y]\n"
        "ldrd r2, r3, [%[c], #48]\n"
        "vpt.f32 lt, %q[x], r5\n"  // x < lo: 0
        "vmovt.i32 %q[y], #0\n"
        "vpt.f32 gt, %q[x], r2\n"  // x > hi: inf
        "vdupt.32 %q[y], r3\n"
        "vpt.f32 ne, %q[x], %q[x]\n"  // NaN stays NaN
        "vmovt %q[y], %q[x]\n"
        "vmsr p0, %[vpr]\n"
        : [n] "=&w"(n), [r] "=&w"(r), [p] "=&w"(p), [y] "=&w"(y), [vpr] "=&r"(vpr)
        : [x] "w"(x), [c] "r"(kConstants), "m"(kConstants)
        : "r0", "r1", "r2", "r3", "r4", "r5", "cc");
    return y;
  }
  /// y[i] = exp(x[i] - m) for i < n, as map(x, y, n, exp(sub(v, set1(m)))) (the softmax's
  /// weights), with exp's operations as above: one assembly loop, tail-predicated (wlstp/letp),
  /// so the constants come by two ldm per vector instead of exp's five loads, VPR needs no saving
  /// and the loop no bookkeeping (42 -> 35 instructions per vector).
  [[gnu::noinline]] static void exp_shifted(const float* x, float* y, index_t n, float m) {
    alignas(8) static constexpr float kConstants[] = {
        12582912.0f,    1.44269504088896341f,
        -0.693359375f,  2.12194440e-4f,
        1.0f / 5040.0f, 1.0f / 720.0f,
        1.0f / 120.0f,  1.0f / 24.0f,  // first ldm: r0-r7
        1.0f / 6.0f,    0.5f,
        1.0f,           -87.3365448f,
        88.7228394f,    std::numeric_limits<float>::infinity()};  // second ldm: r0-r5 (r6, r7: 127, 1)
    const float* c = kConstants;
    V s, nv, r, p, e;
    asm volatile(
        "wlstp.32 lr, %[n], 2f\n"
        "1:\n"
        "vldrw.u32 %q[s], [%[x]], #16\n"
        "vsub.f32 %q[s], %q[s], %[m]\n"
        "ldm %[c]!, {r0-r7}\n"
        "vdup.32 %q[nv], r0\n"  // n = fma(s, log2e, magic) - magic
        "vfma.f32 %q[nv], %q[s], r1\n"
        "vsub.f32 %q[nv], %q[nv], r0\n"
        "vmov %q[r], %q[s]\n"  // r = fma(n, -c1, s), then fma(n, c2, r)
        "vfma.f32 %q[r], %q[nv], r2\n"
        "vfma.f32 %q[r], %q[nv], r3\n"
        "vdup.32 %q[p], r4\n"  // Horner: p = p·r + c
        "vfmas.f32 %q[p], %q[r], r5\n"
        "vfmas.f32 %q[p], %q[r], r6\n"
        "vfmas.f32 %q[p], %q[r], r7\n"
        "ldm %[c], {r0-r5}\n"
        "sub %[c], %[c], #32\n"
        "vfmas.f32 %q[p], %q[r], r0\n"
        "vfmas.f32 %q[p], %q[r], r1\n"
        "vfmas.f32 %q[p], %q[r], r2\n"
        "vfmas.f32 %q[p], %q[r], r2\n"
        "vcvt.s32.f32 %q[nv], %q[nv]\n"  // 2^(n-d): ((n + 127) - d) << 23, d = n > 0
        "mov r0, #127\n"
        "vadd.i32 %q[r], %q[nv], r0\n"
        "mov r0, #1\n"
        "vpt.s32 gt, %q[nv], zr\n"
        "vsubt.i32 %q[r], %q[r], r0\n"
        "vshl.i32 %q[r], %q[r], #23\n"
        "vmul.f32 %q[e], %q[p], %q[r]\n"
        "vpst\n"  // · 2^d
        "vaddt.f32 %q[e], %q[e], %q[e]\n"
        "vpt.f32 lt, %q[s], r3\n"  // s < lo: 0
        "vmovt.i32 %q[e], #0\n"
        "vpt.f32 gt, %q[s], r4\n"  // s > hi: inf
        "vdupt.32 %q[e], r5\n"
        "vpt.f32 ne, %q[s], %q[s]\n"  // NaN stays NaN
        "vmovt %q[e], %q[s]\n"
        "vstrw.32 %q[e], [%[y]], #16\n"
        "letp lr, 1b\n"
        "2:\n"
        : [x] "+r"(x), [y] "+r"(y), [c] "+r"(c), [s] "=&w"(s), [nv] "=&w"(nv), [r] "=&w"(r), [p] "=&w"(p), [e] "=&w"(e)
        : [n] "r"(n), [m] "r"(m), "m"(kConstants)
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "lr", "cc", "memory");
  }
  /// LayerNorm, torch kind, of a row of a multiple of 16 (Generic::layer_norm_row calls it): the
  /// same operations (canonical 16-lane sums over 4 accumulator vectors folded as reduce16, then
  /// ((x - mean) · inv) · gain + bias), in assembly with post-incremented loads and the mean and
  /// inverse as scalar operands (GCC: 424 instructions for a row of 64).
  [[gnu::noinline]] static void layer_norm16(const float* x, const float* gain, const float* bias, index_t n, float eps,
                                             float* y) {
    if (n == 16) return layer_norm_16(x, gain, bias, eps, y);
    const float* xs;
    uint32_t mean, inv;
    asm volatile(
        "vmov s20, %[nf]\n"  // s20: n, s21: eps (S registers of q5)
        "vmov s21, %[eps]\n"
        "vmov.i32 q0, #0\n"  // mean: the canonical 16-lane sum (4 vectors) / n
        "vmov.i32 q1, #0\n"
        "vmov.i32 q2, #0\n"
        "vmov.i32 q3, #0\n"
        "mov %[xs], %[x]\n"
        "wls lr, %[n16], 2f\n"
        "1:\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vadd.f32 q0, q0, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vadd.f32 q1, q1, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vadd.f32 q2, q2, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vadd.f32 q3, q3, q4\n"
        "le lr, 1b\n"
        "2:\n"
        "vadd.f32 q0, q0, q2\n"
        "vadd.f32 q1, q1, q3\n"
        "vadd.f32 q0, q0, q1\n"
        "vadd.f32 s0, s0, s2\n"
        "vadd.f32 s1, s1, s3\n"
        "vadd.f32 s22, s0, s1\n"
        "vdiv.f32 s22, s22, s20\n"  // s22: mean
        "vmov %[mean], s22\n"
        "vmov.i32 q0, #0\n"  // ss: the canonical sum of (x - mean)^2
        "vmov.i32 q1, #0\n"
        "vmov.i32 q2, #0\n"
        "vmov.i32 q3, #0\n"
        "mov %[xs], %[x]\n"
        "wls lr, %[n16], 4f\n"
        "3:\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vsub.f32 q4, q4, %[mean]\n"
        "vfma.f32 q0, q4, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vsub.f32 q4, q4, %[mean]\n"
        "vfma.f32 q1, q4, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vsub.f32 q4, q4, %[mean]\n"
        "vfma.f32 q2, q4, q4\n"
        "vldrw.u32 q4, [%[xs]], #16\n"
        "vsub.f32 q4, q4, %[mean]\n"
        "vfma.f32 q3, q4, q4\n"
        "le lr, 3b\n"
        "4:\n"
        "vadd.f32 q0, q0, q2\n"
        "vadd.f32 q1, q1, q3\n"
        "vadd.f32 q0, q0, q1\n"
        "vadd.f32 s0, s0, s2\n"
        "vadd.f32 s1, s1, s3\n"
        "vadd.f32 s23, s0, s1\n"
        "vdiv.f32 s23, s23, s20\n"  // inv = 1 / sqrt(ss / n + eps)
        "vadd.f32 s23, s23, s21\n"
        "vsqrt.f32 s23, s23\n"
        "vmov.f32 s20, #1.0\n"
        "vdiv.f32 s23, s20, s23\n"
        "vmov %[inv], s23\n"
        "lsl %[xs], %[n16], #2\n"  // y = ((x - mean) · inv) · gain + bias, a vector at a time
        "wls lr, %[xs], 6f\n"
        "5:\n"
        "vldrw.u32 q4, [%[x]], #16\n"
        "vldrw.u32 q5, [%[g]], #16\n"
        "vldrw.u32 q6, [%[b]], #16\n"
        "vsub.f32 q4, q4, %[mean]\n"
        "vmul.f32 q4, q4, %[inv]\n"
        "vmul.f32 q4, q4, q5\n"
        "vadd.f32 q4, q4, q6\n"
        "vstrw.32 q4, [%[y]], #16\n"
        "le lr, 5b\n"
        "6:\n"
        : [x] "+r"(x), [g] "+r"(gain), [b] "+r"(bias), [y] "+r"(y), [xs] "=&r"(xs), [mean] "=&r"(mean), [inv] "=&r"(inv)
        : [n16] "r"(n / 16), [nf] "r"(static_cast<float>(n)), [eps] "r"(eps)
        : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "lr", "memory");
  }
  /// Streaming attention of a group of `rows` query rows that all attend to the same keys [0, keys)
  /// (Generic::attention_rows calls it for prefix masks of one length; false: not handled here,
  /// rows 1 and 5). The reference's operations per row and block of 32 keys (see
  /// ref::attention_row), with the group's rows side by side in every step:
  ///  - the queries go transposed into qT [head_dim][rows], so that one ldm brings q[0..rows, d];
  ///    the scores are then vectors across 4 keys, one accumulator per row (Kᵀ rows are contiguous
  ///    keys): per step one load, one pointer step, one ldm and `rows` vfma, every lane used
  ///    (attention_scores); divided by the scale (a product by its inverse when the scale is a
  ///    power of two: the same rounding of the same quotient) and their maxima taken as they are
  ///    stored, transposed into pT [keys][rows];
  ///  - exp(s - m) over pT as one flat array (the lanes' maxima repeat every 3 vectors for 1, 2, 3,
  ///    4 or 6 rows), attention_exp: simd_math::exp's operations for arguments <= 0 or NaN (what
  ///    s - max(s) is), where its n > 0 branch and the overflow select do nothing;
  ///  - the rows' canonical 16-lane sums as one tree of vector additions across the rows;
  ///  - P·V as vectors across 4 outputs, one accumulator per row, ldm of pT[j][0..rows)
  ///    (attention_values), the last block's division by the sum on the S registers.
  static bool attention_prefix_rows(const float* q, index_t q_stride, index_t rows, const float* kt, index_t kt_stride,
                                    const float* v, index_t v_stride, index_t head_dim, index_t keys, float scale,
                                    float* p, float* out, index_t out_stride) {
    switch (rows) {
      case 2:
        attention_group<2>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, keys, scale, p, out, out_stride);
        return true;
      case 3:
        attention_group<3>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, keys, scale, p, out, out_stride);
        return true;
      case 4:
        attention_group<4>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, keys, scale, p, out, out_stride);
        return true;
      case 6:
        attention_group<6>(q, q_stride, kt, kt_stride, v, v_stride, head_dim, keys, scale, p, out, out_stride);
        return true;
      default:
        return false;
    }
  }
  /// layer_norm16 for a row of exactly 16, held in q0-q3 from one load each: each lane's sum is
  /// 0 + x[i] (the fold's result + 0 gives the same bits: only a -0 could differ, and only in the
  /// end), the squares' 0 + d·d are d·d, then the same folds, scalar steps and normalization.
  static void layer_norm_16(const float* x, const float* gain, const float* bias, float eps, float* y) {
    asm volatile(
        "vldrw.u32 q0, [%[x]]\n"
        "vldrw.u32 q1, [%[x], #16]\n"
        "vldrw.u32 q2, [%[x], #32]\n"
        "vldrw.u32 q3, [%[x], #48]\n"
        "vadd.f32 q4, q0, q2\n"  // mean
        "vadd.f32 q5, q1, q3\n"
        "vadd.f32 q4, q4, q5\n"
        "vadd.f32 s16, s16, s18\n"
        "vadd.f32 s17, s17, s19\n"
        "vadd.f32 s16, s16, s17\n"
        "vmov.i32 q5, #0\n"
        "vadd.f32 s16, s16, s20\n"
        "vmov.f32 s20, #16.0\n"
        "vdiv.f32 s16, s16, s20\n"
        "vmov %[x], s16\n"
        "vsub.f32 q0, q0, %[x]\n"  // d = x - mean
        "vsub.f32 q1, q1, %[x]\n"
        "vsub.f32 q2, q2, %[x]\n"
        "vsub.f32 q3, q3, %[x]\n"
        "vmul.f32 q4, q0, q0\n"  // squares, folded
        "vmul.f32 q5, q1, q1\n"
        "vmul.f32 q6, q2, q2\n"
        "vmul.f32 q7, q3, q3\n"
        "vadd.f32 q4, q4, q6\n"
        "vadd.f32 q5, q5, q7\n"
        "vadd.f32 q4, q4, q5\n"
        "vadd.f32 s16, s16, s18\n"
        "vadd.f32 s17, s17, s19\n"
        "vadd.f32 s16, s16, s17\n"
        "vmov.f32 s18, #16.0\n"  // inv = 1 / sqrt(ss / n + eps)
        "vdiv.f32 s16, s16, s18\n"
        "vmov s19, %[eps]\n"
        "vadd.f32 s16, s16, s19\n"
        "vsqrt.f32 s16, s16\n"
        "vmov.f32 s17, #1.0\n"
        "vdiv.f32 s16, s17, s16\n"
        "vmov %[x], s16\n"
        ".irp i, 0, 1, 2, 3\n"  // y = ((x - mean) · inv) · gain + bias
        "vldrw.u32 q4, [%[g]], #16\n"
        "vldrw.u32 q5, [%[b]], #16\n"
        "vmul.f32 q\\i, q\\i, %[x]\n"
        "vmul.f32 q\\i, q\\i, q4\n"
        "vadd.f32 q\\i, q\\i, q5\n"
        "vstrw.32 q\\i, [%[y]], #16\n"
        ".endr\n"
        : [x] "+r"(x), [g] "+r"(gain), [b] "+r"(bias), [y] "+r"(y)
        : [eps] "r"(eps)
        : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
  }
  /// y[i] += x[i] for i < n (Generic::add calls it): one tail-predicated loop, 5 instructions per
  /// vector.
  [[gnu::noinline]] static void add_n(float* y, const float* x, index_t n) {
    asm volatile(
        "wlstp.32 lr, %[n], 2f\n"
        "1:\n"
        "vldrw.u32 q0, [%[y]]\n"
        "vldrw.u32 q1, [%[x]], #16\n"
        "vadd.f32 q0, q0, q1\n"
        "vstrw.32 q0, [%[y]], #16\n"
        "letp lr, 1b\n"
        "2:\n"
        : [y] "+r"(y), [x] "+r"(x)
        : [n] "r"(n)
        : "q0", "q1", "lr", "memory");
  }
  static float reduce16(const V* acc) {
    const V s8a = vaddq_f32(acc[0], acc[2]), s8b = vaddq_f32(acc[1], acc[3]);
    const V s4 = vaddq_f32(s8a, s8b);
    const float s2a = vgetq_lane_f32(s4, 0) + vgetq_lane_f32(s4, 2);
    const float s2b = vgetq_lane_f32(s4, 1) + vgetq_lane_f32(s4, 3);
    return s2a + s2b;
  }
  static float reduce_max(V v) {
    float m = vgetq_lane_f32(v, 0);
    for (float x : {vgetq_lane_f32(v, 1), vgetq_lane_f32(v, 2), vgetq_lane_f32(v, 3)}) m = x > m ? x : m;
    return m;
  }

 private:
  // ---- attention_prefix_rows' pieces ------------------------------------------------------------
  template <int R>
  static void attention_group(const float* q, index_t q_stride, const float* kt, index_t kt_stride, const float* v,
                              index_t v_stride, index_t hd, index_t keys, float scale, float* p, float* out,
                              index_t out_stride) {
    constexpr index_t B = 32;  // kAttentionKeyBlock (kernels/api.hpp)
    const index_t bs = keys < B ? keys : B;
    float* pT = p;           // [bs][R]; the sums' vectors may read a few floats past it, into qT
    float* qT = p + R * bs;  // [hd][R]
    {
      const uint32x4_t offs = vmulq_n_u32(vidupq_n_u32(0u, 1), R);
      const index_t full = hd & ~index_t{3};
      for (int r = 0; r < R; ++r) {
        const float* qr = q + r * q_stride;
        for (index_t d = 0; d < full; d += 4)
          vstrwq_scatter_shifted_offset_f32(qT + d * R + r, offs, vld1q_f32(qr + d));
        if (full < hd) {
          const mve_pred16_t pr = vctp32q(static_cast<uint32_t>(hd - full));
          vstrwq_scatter_shifted_offset_p_f32(qT + full * R + r, offs, vldrwq_z_f32(qr + full, pr), pr);
        }
      }
    }
    // a power-of-two scale divides as its (exact) inverse multiplies
    std::uint32_t sbits;
    std::memcpy(&sbits, &scale, sizeof sbits);
    const bool pow2 = (sbits & 0x007fffffu) == 0 && ((sbits >> 23) & 0xffu) > 1u && ((sbits >> 23) & 0xffu) < 254u;
    const float factor = pow2 ? 1.0f / scale : scale;
    ScoreArgs sa;
    std::memcpy(&sa.scale, &factor, sizeof factor);
    sa.qT = qT;
    sa.kt_stride = static_cast<uint32_t>(kt_stride * 4);
    sa.hd = static_cast<uint32_t>(hd);
    vst1q_u32(sa.addr, vaddq_n_u32(vmulq_n_u32(vidupq_n_u32(0u, 1), 4 * R), address(pT)));
    float m[R] = {}, l[R < 4 ? 4 : R] = {};  // (l: read as a whole vector)
    using S = Vocabulary<scalar>;
    for (index_t kb = 0; kb < keys; kb += B) {
      const index_t cnt = keys - kb < B ? keys - kb : B;
      float bm[R];
      for (int r = 0; r < R; ++r) bm[r] = -std::numeric_limits<float>::infinity();
      sa.kt = kt + kb;
      sa.cnt = static_cast<uint32_t>(cnt);
      sa.bm = bm;
      if (pow2)
        attention_scores<R, false>(sa);
      else
        attention_scores<R, true>(sa);
      // the running maxima; what came before rescaled to them: the sums here, the outputs by
      // attention_values (by c = 1 where the maximum stayed: exact, MVE's outputs are never
      // denormal)
      float c[R];
      bool moved = false;
      for (int r = 0; r < R; ++r) {
        const float m_new = (kb && m[r] > bm[r]) ? m[r] : bm[r];
        c[r] = 1.0f;
        if (kb && m_new != m[r]) {
          c[r] = simd_math::exp<S>(m[r] - m_new);
          l[r] = l[r] * c[r];
          moved = true;
        }
        m[r] = m_new;
      }
      attention_exp<R>(pT, cnt, m);
      float bsum[R];
      if (cnt == 32)
        attention_sums32<R>(pT, bsum);
      else
        attention_sums<R>(pT, cnt, bsum);
      for (int r = 0; r < R; ++r) l[r] = kb ? l[r] + bsum[r] : bsum[r];
      const bool last = kb + B >= keys;
      ValueArgs va{pT,
                   v + kb * v_stride,
                   static_cast<uint32_t>(v_stride * 4),
                   static_cast<uint32_t>(cnt),
                   out,
                   static_cast<uint32_t>(out_stride * 4),
                   static_cast<uint32_t>(hd),
                   (kb == 0 ? 1u : 0u) | (last ? 2u : 0u) | (moved ? 4u : 0u),
                   l,
                   c};
      attention_values<R>(va);
    }
  }

  struct ScoreArgs {          // (byte offsets in the assembly)
    std::uint32_t addr[4];    // 0: pT + lane·R (the lanes' keys), advanced by 4 keys per vector
    const float* qT;          // 16
    const float* kt;          // 20: Kᵀ at the block's first key
    std::uint32_t kt_stride;  // 24: bytes
    std::uint32_t hd;         // 28
    std::uint32_t cnt;        // 32: keys in the block
    float* bm;                // 36: the rows' maxima, updated
    std::uint32_t scale;      // 40: bits of the inverse scale (multiply) or of the scale (divide)
  };
  /// The scores of R rows (qT) with the block's cnt keys, divided by the scale, stored in pT[j][r]
  /// (ScoreArgs::addr), their maxima into bm. Per 4 keys: accumulators q0..q(R-1), hd steps of
  /// fma(kt[d, j..j+3], q[r, d]) (the last vector's loads predicated), then the scale,
  /// the maxima (vmaxnmv; any order gives the same maximum of non-NaN values, and a signed zero's
  /// sign changes neither s - m nor exp), the scatter stores.
  template <int R, bool Div>
  [[gnu::noinline]] static void attention_scores(const ScoreArgs& a) {
    asm volatile(
        ".macro stf_sc_step pred, op=vfma\n"
        ".if \\pred\n vpst\n vldrwt.u32 q6, [r7]\n .else\n vldrw.u32 q6, [r7]\n .endif\n"
        "add r7, r7, r8\n"
        ".if %c[R] == 1\n ldr r0, [r6], #4\n .else\n ldm r6!, {r0-r%c[last]}\n .endif\n"
        "\\op\\().f32 q0, q6, r0\n"
        ".if %c[R] > 1\n \\op\\().f32 q1, q6, r1\n .endif\n"
        ".if %c[R] > 2\n \\op\\().f32 q2, q6, r2\n .endif\n"
        ".if %c[R] > 3\n \\op\\().f32 q3, q6, r3\n .endif\n"
        ".if %c[R] > 4\n \\op\\().f32 q4, q6, r4\n .endif\n"
        ".if %c[R] > 5\n \\op\\().f32 q5, q6, r5\n .endif\n"
        ".endm\n"
        // hd steps: the first a product (fma(a, b, +0) but for a zero's sign, which neither the
        // maximum's value nor any s - m nor exp sees), hd - 1 mod 4 single ones, then 4 per loop
        // iteration
        ".macro stf_sc_loop pred\n"
        "stf_sc_step \\pred, vmul\n"
        "ldr r12, [%[a], #28]\n"
        "sub r12, r12, #1\n"
        "lsls lr, r12, #31\n"
        "bpl 21f\n"
        "stf_sc_step \\pred\n"
        "21:\n"
        "bcc 22f\n"
        "stf_sc_step \\pred\n"
        "stf_sc_step \\pred\n"
        "22:\n"
        "lsr r12, r12, #2\n"
        "wls lr, r12, 24f\n"
        "23:\n"
        "stf_sc_step \\pred\n"
        "stf_sc_step \\pred\n"
        "stf_sc_step \\pred\n"
        "stf_sc_step \\pred\n"
        "le lr, 23b\n"
        "24:\n"
        ".endm\n"
        "vldrw.u32 q7, [%[a]]\n"
        "ldr r9, [%[a], #32]\n"   // keys left
        "ldr r10, [%[a], #20]\n"  // Kᵀ at the key vector
        "ldr r8, [%[a], #24]\n"
        "1:\n"
        "ldr r6, [%[a], #16]\n"
        "mov r7, r10\n"
        "cmp r9, #4\n"
        "blt 2f\n"
        "stf_sc_loop 0\n"
        "b 3f\n"
        "2:\n"
        "vctp.32 r9\n"
        "stf_sc_loop 1\n"
        "3:\n"
        "ldr r0, [%[a], #40]\n"  // the scale or its inverse
        ".if %c[div] == 0\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vmul.f32 q\\i, q\\i, r0\n .endif\n .endr\n"
        ".else\n"
        "vmov s24, r0\n"
        ".irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23\n"
        " .if \\i < 4 * %c[R]\n vdiv.f32 s\\i, s\\i, s24\n .endif\n"
        ".endr\n"
        ".endif\n"
        "ldr r12, [%[a], #36]\n"
        ".if %c[R] == 1\n ldr r0, [r12]\n .else\n ldm r12, {r0-r%c[last]}\n .endif\n"
        "cmp r9, #4\n"
        "blt 6f\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vmaxnmv.f32 r\\i, q\\i\n vstrw.32 q\\i, [q7, #4*\\i]\n .endif\n "
        ".endr\n"
        "b 7f\n"
        "6:\n"
        "vctp.32 r9\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vpstt\n vmaxnmvt.f32 r\\i, q\\i\n vstrwt.32 q\\i, [q7, #4*\\i]\n "
        ".endif\n .endr\n"
        "7:\n"
        ".if %c[R] == 1\n str r0, [r12]\n .else\n stm r12, {r0-r%c[last]}\n .endif\n"
        "mov r0, #16*%c[R]\n"  // the next 4 keys
        "vadd.i32 q7, q7, r0\n"
        "add r10, r10, #16\n"
        "subs r9, r9, #4\n"
        "bgt 1b\n"
        ".purgem stf_sc_loop\n"
        ".purgem stf_sc_step\n"
        :
        : [a] "r"(&a), [R] "i"(R), [last] "i"(R - 1), [div] "i"(Div), "m"(a)
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r12", "lr", "q0", "q1", "q2", "q3", "q4",
          "q5", "q6", "q7", "cc", "memory");
  }

  /// pT[j][r] = exp(pT[j][r] - m[r]) for j < cnt: a flat array of cnt·R floats whose lanes' maxima
  /// repeat every 12 floats (3 vectors). Groups of 3 vectors in assembly (constants in r0-r11, the
  /// maxima in q5-q7), the rest through exp (the same operations).
  template <int R>
  static void attention_exp(float* pT, index_t cnt, const float* m) {
    static_assert(12 % R == 0);
    alignas(16) float mv[12];
    for (int i = 0; i < 12; ++i) mv[i] = m[i % R];
    const index_t n = cnt * R;
    exp_groups12(pT, n / 12, n % 12, mv);
  }
  /// `groups` groups of 12 floats (3 vectors, the maxima q5, q6, q7), then `rest` (< 12) floats
  /// in a tail-predicated loop that turns the maxima q5 <- q6 <- q7 after each vector.
  [[gnu::noinline]] static void exp_groups12(float* p, index_t groups, index_t rest, const float* mv) {
    alignas(8) static constexpr float kConstants[] = {
        12582912.0f,   1.44269504088896341f, -0.693359375f, 2.12194440e-4f, 1.0f / 5040.0f, 1.0f / 720.0f,
        1.0f / 120.0f, 1.0f / 24.0f,         1.0f / 6.0f,   0.5f,           1.0f,           -87.3365448f};
    struct {
      float* p;
      std::uint32_t groups;
      const float* mv;
      const float* c;
      std::uint32_t rest;
    } args{p, static_cast<std::uint32_t>(groups), mv, kConstants, static_cast<std::uint32_t>(rest)};
    void* a = &args;
    asm volatile(
        // x = s - m, and the predicate x < lo; n = fma(x, log2e, magic) - magic (nm: its bits are
        // magic's + n); r = fma(n, -c1, x), fma(n, c2, r) in x's register; Horner; p · 2^n as
        // bits(p) + (n << 23) = bits(p) + (bits(nm) << 23) (magic's low 9 bits are 0): exact where
        // the product is normal (p in [0.7, 1.42], n in [-126, 0]), and where it is not (n = -126,
        // p < 1) a denormal that every MVE use flushes to zero, as it flushes vmul's result; x < lo: +0.
        // A NaN x needs no select: MVE arithmetic returns the default NaN (FPSCR.DN as in the
        // standard FPSCR value), which x = s - m already is, so NaN in, the same NaN out.
        ".macro stf_exp_vec m\n"
        "vldrw.u32 q0, [%[a]]\n"
        "vsub.f32 q0, q0, \\m\n"
        "vcmp.f32 lt, q0, r11\n"
        "vdup.32 q1, r0\n"
        "vfma.f32 q1, q0, r1\n"
        "vsub.f32 q2, q1, r0\n"
        "vfma.f32 q0, q2, r2\n"
        "vfma.f32 q0, q2, r3\n"
        "vdup.32 q4, r4\n"
        "vfmas.f32 q4, q0, r5\n"
        "vfmas.f32 q4, q0, r6\n"
        "vfmas.f32 q4, q0, r7\n"
        "vfmas.f32 q4, q0, r8\n"
        "vfmas.f32 q4, q0, r9\n"
        "vfmas.f32 q4, q0, r10\n"
        "vfmas.f32 q4, q0, r10\n"
        "vshl.i32 q1, q1, #23\n"
        "vadd.i32 q4, q4, q1\n"
        "vpst\n"
        "vmovt.i32 q4, #0\n"
        "vstrw.32 q4, [%[a]], #16\n"
        ".endm\n"
        "ldr r0, [%[a], #8]\n"
        "vldrw.u32 q5, [r0]\n"
        "vldrw.u32 q6, [r0, #16]\n"
        "vldrw.u32 q7, [r0, #32]\n"
        "ldr r1, [%[a], #16]\n"  // rest, kept in s12 (q3 is free)
        "vmov s12, r1\n"
        "ldr lr, [%[a], #4]\n"  // groups
        "ldr r0, [%[a], #12]\n"
        "ldr %[a], [%[a]]\n"
        "ldm r0, {r0-r11}\n"
        "wls lr, lr, 2f\n"
        "1:\n"
        "stf_exp_vec q5\n"
        "stf_exp_vec q6\n"
        "stf_exp_vec q7\n"
        "le lr, 1b\n"
        "2:\n"
        "vmov s13, r1\n"  // (log2e kept in s13 meanwhile)
        "vmov r1, s12\n"
        "wlstp.32 lr, r1, 4f\n"
        "vmov r1, s13\n"
        "3:\n"
        "stf_exp_vec q5\n"
        "vmov q1, q5\n"
        "vmov q5, q6\n"
        "vmov q6, q7\n"
        "vmov q7, q1\n"
        "letp lr, 3b\n"
        "4:\n"
        ".purgem stf_exp_vec\n"
        : [a] "+r"(a)
        :  // (args and the constants: read through a, "memory")
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "lr", "q0", "q1", "q2", "q3", "q4",
          "q5", "q6", "q7", "cc", "memory");
  }

  /// The R rows' canonical sums of pT[j][r], j < cnt <= 32 (lane k of row r: the keys k and k+16,
  /// from +0, folded as reduce16), vectors across the rows: rows 0-3 from pT[j][0..3], rows 4-5 from
  /// pT[j][2..5]; for 2 and 3 rows the lanes past the last row hold another key's values, unused.
  template <int R>
  static void attention_sums(const float* pT, index_t cnt, float* sums) {
    const auto tree = [&](const float* base) {
      const bool whole = cnt == 32;  // (the usual block: no conditions)
      const auto leaf = [&](index_t i) {
        if (whole) return vaddq_f32(vld1q_f32(base + i * R), vld1q_f32(base + (i + 16) * R));
        V a = i < cnt ? vld1q_f32(base + i * R) : vdupq_n_f32(0.0f);
        return i + 16 < cnt ? vaddq_f32(a, vld1q_f32(base + (i + 16) * R)) : a;
      };
      const auto b = [&](index_t i) { return vaddq_f32(leaf(i), leaf(i + 8)); };
      const auto c = [&](index_t i) { return vaddq_f32(b(i), b(i + 4)); };
      const auto d = [&](index_t i) { return vaddq_f32(c(i), c(i + 2)); };
      return vaddq_f32(d(0), d(1));
    };
    const V t = tree(pT);
    for (int r = 0; r < (R < 4 ? R : 4); ++r) sums[r] = lane(t, r);
    if constexpr (R > 4) {
      const V u = tree(pT + 2);
      sums[4] = lane(u, 2);
      sums[5] = lane(u, 3);
    }
  }
  /// attention_sums for 32 keys in assembly: the tree in the order of the folds (lane i: keys i,
  /// i + 16; then i + 8, i + 4, i + 2, i + 1), the keys through pointers that step by R floats.
  template <int R>
  static void attention_sums32(const float* pT, float* sums) {
    alignas(16) float t[8];
    sum_tree32<R>(pT, t);
    if constexpr (R > 4) sum_tree32<R>(pT + 2, t + 4);
    for (int r = 0; r < (R < 4 ? R : 4); ++r) sums[r] = t[r];
    if constexpr (R > 4) {
      sums[4] = t[6];
      sums[5] = t[7];
    }
  }
  template <int R>
  [[gnu::noinline]] static void sum_tree32(const float* base, float* t) {
    const float* p0 = base;
    const float* p1 = base + 8 * R;
    const float* p2 = base + 16 * R;
    const float* p3 = base + 24 * R;
    asm volatile(
        // B_i = A_i + A_(i+8), A_i = key i + key i + 16: q0..q3 B_0..B_3, then + B_4..B_7
        ".macro stf_sum_leaves\n"  // q4 = A_i + A_(i+8), the pointers to key i + 1
        "vldrw.u32 q4, [%[p0]], #4*%c[R]\n"
        "vldrw.u32 q5, [%[p1]], #4*%c[R]\n"
        "vldrw.u32 q6, [%[p2]], #4*%c[R]\n"
        "vldrw.u32 q7, [%[p3]], #4*%c[R]\n"
        "vadd.f32 q4, q4, q6\n"
        "vadd.f32 q5, q5, q7\n"
        "vadd.f32 q4, q4, q5\n"
        ".endm\n"
        ".irp i, 0, 1, 2, 3\n stf_sum_leaves\n vmov q\\i, q4\n .endr\n"
        ".irp i, 0, 1, 2, 3\n stf_sum_leaves\n vadd.f32 q\\i, q\\i, q4\n .endr\n"
        ".purgem stf_sum_leaves\n"
        "vadd.f32 q0, q0, q2\n"
        "vadd.f32 q1, q1, q3\n"
        "vadd.f32 q0, q0, q1\n"
        "vstrw.32 q0, [%[t]]\n"
        : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3)
        : [t] "r"(t), [R] "i"(R)
        : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory");
  }
  static float lane(V v, int i) {
    switch (i) {
      case 0:
        return vgetq_lane_f32(v, 0);
      case 1:
        return vgetq_lane_f32(v, 1);
      case 2:
        return vgetq_lane_f32(v, 2);
      default:
        return vgetq_lane_f32(v, 3);
    }
  }

  struct ValueArgs {           // (byte offsets in the assembly)
    const float* pT;           // 0
    const float* v;            // 4: V at the block's first key
    std::uint32_t v_stride;    // 8: bytes
    std::uint32_t cnt;         // 12
    float* out;                // 16
    std::uint32_t out_stride;  // 20: bytes
    std::uint32_t hd;          // 24
    std::uint32_t flags;       // 28: bit 0 from +0 (else from out), bit 1 divide by l, bit 2 rescale by c
    const float* l;            // 32
    const float* c;            // 36
  };
  /// out[r, d] = fma(pT[j][r], v[j, d], out[r, d]) over the block's keys in order, 4 outputs at a
  /// time (the last vector predicated): accumulators q0..q(R-1), per key one ldm of pT[j], one
  /// load of v, a pointer step, R vfma. With the last block, then divided by l[r] lane by lane.
  template <int R>
  [[gnu::noinline]] static void attention_values(const ValueArgs& a) {
    asm volatile(
        ".macro stf_pv_step pred\n"
        ".if %c[R] == 1\n ldr r0, [r6], #4\n .else\n ldm r6!, {r0-r%c[last]}\n .endif\n"
        ".if \\pred\n vpst\n vldrwt.u32 q6, [r7]\n .else\n vldrw.u32 q6, [r7]\n .endif\n"
        "add r7, r7, r8\n"
        "vfma.f32 q0, q6, r0\n"
        ".if %c[R] > 1\n vfma.f32 q1, q6, r1\n .endif\n"
        ".if %c[R] > 2\n vfma.f32 q2, q6, r2\n .endif\n"
        ".if %c[R] > 3\n vfma.f32 q3, q6, r3\n .endif\n"
        ".if %c[R] > 4\n vfma.f32 q4, q6, r4\n .endif\n"
        ".if %c[R] > 5\n vfma.f32 q5, q6, r5\n .endif\n"
        ".endm\n"
        ".macro stf_pv_loop pred\n"  // cnt steps: cnt mod 4 single ones, then 4 per loop iteration
        "ldr r0, [%[a], #12]\n"
        "lsls lr, r0, #31\n"
        "bpl 21f\n"
        "stf_pv_step \\pred\n"
        "21:\n"
        "bcc 22f\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "22:\n"
        "ldr r0, [%[a], #12]\n"
        "lsr r0, r0, #2\n"
        "wls lr, r0, 24f\n"
        "23:\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "le lr, 23b\n"
        "24:\n"
        ".endm\n"
        ".macro stf_pv_rows op, sfx, pred\n"  // load or store the accumulators at out rows from r12
        "mov r0, r12\n"
        "ldr r1, [%[a], #20]\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n"
        " .if \\i < %c[R]\n"
        "  .if \\pred\n vpst\n \\op\\()t.\\sfx q\\i, [r0]\n .else\n \\op\\().\\sfx q\\i, [r0]\n .endif\n"
        "  add r0, r0, r1\n"
        " .endif\n"
        ".endr\n"
        ".endm\n"
        "ldr r9, [%[a], #24]\n"   // outputs left
        "ldr r10, [%[a], #4]\n"   // V at the output vector
        "ldr r12, [%[a], #16]\n"  // out at the output vector
        "ldr r8, [%[a], #8]\n"
        "1:\n"
        "vctp.32 r9\n"
        "ldr r0, [%[a], #28]\n"
        "tst r0, #1\n"
        "beq 2f\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vmov.i32 q\\i, #0\n .endif\n .endr\n"
        "b 4f\n"
        "2:\n"
        "cmp r9, #4\n"
        "blt 3f\n"
        "stf_pv_rows vldrw, u32, 0\n"
        "b 10f\n"
        "3:\n"
        "stf_pv_rows vldrw, u32, 1\n"
        "10:\n"
        "ldr r0, [%[a], #28]\n"  // rescaled: out[r] · c[r]
        "tst r0, #4\n"
        "beq 4f\n"
        "ldr r0, [%[a], #36]\n"
        ".if %c[R] == 1\n ldr r0, [r0]\n .else\n ldm r0, {r0-r%c[last]}\n .endif\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vmul.f32 q\\i, q\\i, r\\i\n .endif\n .endr\n"
        "4:\n"
        "ldr r6, [%[a]]\n"
        "mov r7, r10\n"
        "cmp r9, #4\n"
        "blt 5f\n"
        "stf_pv_loop 0\n"
        "b 6f\n"
        "5:\n"
        "vctp.32 r9\n"
        "stf_pv_loop 1\n"
        "6:\n"
        "ldr r0, [%[a], #28]\n"
        "tst r0, #2\n"
        "beq 7f\n"
        "ldr r0, [%[a], #32]\n"  // l[0..R) into s24..
        "vldrw.u32 q6, [r0]\n"
        ".if %c[R] > 4\n vldr s28, [r0, #16]\n vldr s29, [r0, #20]\n .endif\n"
        ".if %c[R] > 0\n vdiv.f32 s0, s0, s24\n vdiv.f32 s1, s1, s24\n vdiv.f32 s2, s2, s24\n vdiv.f32 s3, s3, s24\n "
        ".endif\n"
        ".if %c[R] > 1\n vdiv.f32 s4, s4, s25\n vdiv.f32 s5, s5, s25\n vdiv.f32 s6, s6, s25\n vdiv.f32 s7, s7, s25\n "
        ".endif\n"
        ".if %c[R] > 2\n vdiv.f32 s8, s8, s26\n vdiv.f32 s9, s9, s26\n vdiv.f32 s10, s10, s26\n vdiv.f32 s11, s11, "
        "s26\n .endif\n"
        ".if %c[R] > 3\n vdiv.f32 s12, s12, s27\n vdiv.f32 s13, s13, s27\n vdiv.f32 s14, s14, s27\n vdiv.f32 s15, "
        "s15, s27\n .endif\n"
        ".if %c[R] > 4\n vdiv.f32 s16, s16, s28\n vdiv.f32 s17, s17, s28\n vdiv.f32 s18, s18, s28\n vdiv.f32 s19, "
        "s19, s28\n .endif\n"
        ".if %c[R] > 5\n vdiv.f32 s20, s20, s29\n vdiv.f32 s21, s21, s29\n vdiv.f32 s22, s22, s29\n vdiv.f32 s23, "
        "s23, s29\n .endif\n"
        "7:\n"
        "cmp r9, #4\n"
        "blt 8f\n"
        "stf_pv_rows vstrw, 32, 0\n"
        "b 9f\n"
        "8:\n"
        "vctp.32 r9\n"
        "stf_pv_rows vstrw, 32, 1\n"
        "9:\n"
        "add r12, r12, #16\n"
        "add r10, r10, #16\n"
        "subs r9, r9, #4\n"
        "bgt 1b\n"
        ".purgem stf_pv_rows\n"
        ".purgem stf_pv_loop\n"
        ".purgem stf_pv_step\n"
        :
        : [a] "r"(&a), [R] "i"(R), [last] "i"(R - 1), "m"(a)
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r12", "lr", "q0", "q1", "q2", "q3", "q4",
          "q5", "q6", "q7", "cc", "memory");
  }

  static uint32_t address(const void* p) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)); }
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
  template <bool First, bool Bias, Fusion F>
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
        : [st] "r"(&st), [ldw] "r"(a.ldw * 4), [first] "i"(First), [bias] "i"(Bias), [relu] "i"(F == Fusion::relu)
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
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j) acc[j] = (first || j >= C) ? vdupq_n_f32(0.0f) : vldrwq_gather_base_f32(ya, 4 * j);
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
#pragma GCC unroll 6
    for (int j = 0; j < C; ++j) {
      if (bias) acc[j] = vaddq_n_f32(acc[j], bias[j]);
      // (unpredicated: the lanes past the rows computed the last row again, bit for bit, and
      // store the same values to the same addresses)
      vstrwq_scatter_base_f32(ya, 4 * j, epilogue(acc[j]));
    }
  }

  template <class F>
  static V lanewise(V a, V b, F f) {
    float x[4], y[4];
    vst1q_f32(x, a);
    vst1q_f32(y, b);
    for (int i = 0; i < 4; ++i) x[i] = f(x[i], y[i]);
    return vld1q_f32(x);
  }
};

}  // namespace stf::isa
