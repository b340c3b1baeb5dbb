// statiformer — SIMD vocabulary, scalar: one lane of plain C++. The same small set of operations
// every ISA header provides; each is one IEEE operation, so kernels written on this vocabulary give
// the same bits on every ISA.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>
#include <statiformer/simd/isa.hpp>
#include <statiformer/simd/math.hpp>

namespace stf::isa {

template <>
struct Vocabulary<scalar> {
  using V = float;
  static constexpr index_t lanes = 1;
  static constexpr const char* name = "scalar";
  static bool supported() { return true; }  ///< can this CPU run it
  /// Register tile of the matrix kernels: rows × vectors of outputs. Arm (M4F, M7) and RISC-V have
  /// 32 floating-point registers: 24 accumulators + 4 weights + 1 input; x86 has 16.
#if defined(__arm__) || defined(__riscv)
  static constexpr index_t gemm_rows = 6, gemm_vecs = 4;
#else
  static constexpr index_t gemm_rows = 3, gemm_vecs = 4;
#endif

  static V load(const float* p) { return *p; }
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
  /// Four consecutive floats in one instruction (vldmia): on Cortex-M an instruction saved per
  /// weight of the matrix kernels' inner loop. GCC never merges vldr into vldm, hence the asm.
  /// Fragile: GCC 12's register allocation around the fixed registers changes with unrelated edits
  /// to the tile (measured: spills in the 6x4 loop, +14% instructions); re-check the firmware
  /// benchmark's counts after touching Generic::tile.
  static void load4(const float* p, V& a, V& b, V& c, V& d) {
    register float r0 asm("s28");
    register float r1 asm("s29");
    register float r2 asm("s30");
    register float r3 asm("s31");
    asm("vldmia %[p], {s28-s31}"
        : "=t"(r0), "=t"(r1), "=t"(r2), "=t"(r3)
        : [p] "r"(p), "m"(*reinterpret_cast<const float(*)[4]>(p)));
    a = r0, b = r1, c = r2, d = r3;
  }
// Assembly fragments the kernels below share (#undef'd after the last of them).
// exp's reduction and polynomial on x (simd_math::exp_reduced's operations), the constants in
// s16-s26 as kExpConstants loads them: nm = fma(x, log2e, magic), n = nm - magic (NM and N may be
// the same register), r = fma(n, -c1, x) then fma(n, c2, r), and Horner p = fma(p, r, c) into the
// coefficients' registers (vfma is destructive), p in s31.
#define STF_EXP_CORE(X, NM, N, R)                                                                   \
  "vmov.f32 " NM ", s16\n vfma.f32 " NM ", " X ", s17\n vsub.f32 " N ", " NM                        \
  ", s16\n"                                                                                         \
  "vmov.f32 " R ", " X "\n vfma.f32 " R ", " N ", s18\n vfma.f32 " R ", " N                         \
  ", s19\n"                                                                                         \
  "vfma.f32 s21, s20, " R "\n vfma.f32 s22, s21, " R "\n vfma.f32 s23, s22, " R                     \
  "\n"                                                                                              \
  "vfma.f32 s24, s23, " R "\n vfma.f32 s25, s24, " R "\n vmov.f32 s31, s26\n vfma.f32 s26, s25, " R \
  "\n"                                                                                              \
  "vfma.f32 s31, s26, " R "\n"
// The canonical fold of 16 lane sums s0-s15 (lane i + lane i+8, then +4, +2), leaving the last
// step, s0 + s1, to the caller (layer_norm16 needs both halves of it apart).
#define STF_FOLD16_S0_S1                                                                        \
  "vadd.f32 s0, s0, s8\n vadd.f32 s1, s1, s9\n vadd.f32 s2, s2, s10\n vadd.f32 s3, s3, s11\n"   \
  "vadd.f32 s4, s4, s12\n vadd.f32 s5, s5, s13\n vadd.f32 s6, s6, s14\n vadd.f32 s7, s7, s15\n" \
  "vadd.f32 s0, s0, s4\n vadd.f32 s1, s1, s5\n vadd.f32 s2, s2, s6\n vadd.f32 s3, s3, s7\n"     \
  "vadd.f32 s0, s0, s2\n vadd.f32 s1, s1, s3\n"
  /// simd_math::exp's one-lane operations, the same bits, for the kernels (Generic calls it; the
  /// reference keeps simd_math::exp): the 15 constants come by one vldmia per call into registers
  /// that the Horner steps may then overwrite as their addends (vfma is destructive: GCC copies or
  /// reloads each coefficient), 33 instructions in the range instead of about 45.
  static V exp_kernel(V x) {
    float y, n, r, t;
    unsigned e;
    asm("vldmia %[c], {s16-s30}\n"
        "vcmp.f32 %[x], s27\n"  // outside [lo, hi] or NaN: 1
        "vmrs APSR_nzcv, fpscr\n"
        "blt 1f\n"
        "vcmp.f32 %[x], s28\n"
        "vmrs APSR_nzcv, fpscr\n"
        "bgt 1f\n"
        STF_EXP_CORE("%[x]", "%[n]", "%[n]", "%[r]")
        "vcvt.s32.f32 %[t], %[n]\n"  // n > 0 ? p · 2^(n-1) · 2 : p · 2^n
        "vmov %[e], %[t]\n"
        "vcmp.f32 %[n], #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it gt\n"
        "subgt %[e], %[e], #1\n"
        "add %[e], %[e], #127\n"
        "lsl %[e], %[e], #23\n"
        "vmov %[t], %[e]\n"
        "vmul.f32 %[y], s31, %[t]\n"
        "it gt\n"
        "vaddgt.f32 %[y], %[y], %[y]\n"
        "b 2f\n"
        "1:\n"  // NaN stays NaN, below lo 0, above hi inf
        "vmov.f32 %[y], %[x]\n"
        "vcmp.f32 %[x], %[x]\n"
        "vmrs APSR_nzcv, fpscr\n"
        "bvs 2f\n"
        "vcmp.f32 %[x], s27\n"
        "vmrs APSR_nzcv, fpscr\n"
        "ite lt\n"
        "vmovlt.f32 %[y], s30\n"
        "vmovge.f32 %[y], s29\n"
        "2:\n"
        : [y] "=&t"(y), [n] "=&t"(n), [r] "=&t"(r), [t] "=&t"(t), [e] "=&r"(e)
        : [x] "t"(x), [c] "r"(kExpConstants), "m"(kExpConstants)
        : "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30",
          "s31", "cc");
    return y;
  }
  /// y[i] = x[i] / d for i < n, y may be x (Generic::div_map calls it: the softmax's scaling and
  /// normalization), 4 elements per vldmia/vstmia.
  static void div_n(const float* x, float* y, index_t n, float d) {
    index_t count;
    asm volatile(
        "lsrs %[count], %[n], #2\n"
        "beq 2f\n"
        "1:\n"
        "vldmia %[x]!, {s0-s3}\n"
        "vdiv.f32 s0, s0, %[d]\n"
        "vdiv.f32 s1, s1, %[d]\n"
        "vdiv.f32 s2, s2, %[d]\n"
        "vdiv.f32 s3, s3, %[d]\n"
        "vstmia %[y]!, {s0-s3}\n"
        "subs %[count], %[count], #1\n"
        "bne 1b\n"
        "2:\n"
        "ands %[count], %[n], #3\n"
        "beq 4f\n"
        "3:\n"
        "vldmia %[x]!, {s0}\n"
        "vdiv.f32 s0, s0, %[d]\n"
        "vstmia %[y]!, {s0}\n"
        "subs %[count], %[count], #1\n"
        "bne 3b\n"
        "4:\n"
        : [x] "+r"(x), [y] "+r"(y), [count] "=&r"(count)
        : [n] "r"(n), [d] "t"(d)
        : "s0", "s1", "s2", "s3", "cc", "memory");
  }
  /// y[i] += x[i] for i < n (Generic::add calls it), 4 elements per vldmia/vstmia (GCC: one at a
  /// time, 6 instructions per element).
  static void add_n(float* y, const float* x, index_t n) {
    float* yr = y;  // (read and written through separate pointers: vstmia's writeback is ahead)
    index_t count;
    asm volatile(
        "lsrs %[count], %[n], #2\n"
        "beq 2f\n"
        "1:\n"
        "vldmia %[yr]!, {s0-s3}\n"
        "vldmia %[x]!, {s4-s7}\n"
        "vadd.f32 s0, s0, s4\n"
        "vadd.f32 s1, s1, s5\n"
        "vadd.f32 s2, s2, s6\n"
        "vadd.f32 s3, s3, s7\n"
        "vstmia %[y]!, {s0-s3}\n"
        "subs %[count], %[count], #1\n"
        "bne 1b\n"
        "2:\n"
        "ands %[count], %[n], #3\n"
        "beq 4f\n"
        "3:\n"
        "vldmia %[yr]!, {s0}\n"
        "vldmia %[x]!, {s4}\n"
        "vadd.f32 s0, s0, s4\n"
        "vstmia %[y]!, {s0}\n"
        "subs %[count], %[count], #1\n"
        "bne 3b\n"
        "4:\n"
        : [y] "+r"(y), [yr] "+r"(yr), [x] "+r"(x), [count] "=&r"(count)
        : [n] "r"(n)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "cc", "memory");
  }
  /// LayerNorm, torch kind, of a row of a multiple of 16 (Generic::layer_norm_row calls it): the
  /// same operations (canonical 16-lane sums, then ((x - mean) · inv) · gain + bias), in assembly
  /// with 4 elements per vldmia (GCC kept the 16 lane sums in memory: 463 instructions for 16).
  static void layer_norm16(const float* x, const float* gain, const float* bias, index_t n, float eps, float* y) {
    alignas(8) static constexpr float kZeros[16] = {};
    const float* xs;
    index_t count;
    asm volatile(
        "vmov s30, %[nf]\n"  // s30: n, s31: eps
        "vmov s31, %[eps]\n"
        "vldmia %[zeros], {s0-s15}\n"  // mean: the canonical 16-lane sum / n
        "mov %[xs], %[x]\n"
        "mov %[cnt], %[n16]\n"
        "1:\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vadd.f32 s0, s0, s16\n"
        "vadd.f32 s1, s1, s17\n"
        "vadd.f32 s2, s2, s18\n"
        "vadd.f32 s3, s3, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vadd.f32 s4, s4, s16\n"
        "vadd.f32 s5, s5, s17\n"
        "vadd.f32 s6, s6, s18\n"
        "vadd.f32 s7, s7, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vadd.f32 s8, s8, s16\n"
        "vadd.f32 s9, s9, s17\n"
        "vadd.f32 s10, s10, s18\n"
        "vadd.f32 s11, s11, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vadd.f32 s12, s12, s16\n"
        "vadd.f32 s13, s13, s17\n"
        "vadd.f32 s14, s14, s18\n"
        "vadd.f32 s15, s15, s19\n"
        "subs %[cnt], %[cnt], #1\n"
        "bne 1b\n" STF_FOLD16_S0_S1
        "vadd.f32 s28, s0, s1\n"
        "vdiv.f32 s28, s28, s30\n"     // s28: mean
        "vldmia %[zeros], {s0-s15}\n"  // ss: the canonical 16-lane sum of (x - mean)^2
        "mov %[xs], %[x]\n"
        "mov %[cnt], %[n16]\n"
        "2:\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vsub.f32 s16, s16, s28\n"
        "vsub.f32 s17, s17, s28\n"
        "vsub.f32 s18, s18, s28\n"
        "vsub.f32 s19, s19, s28\n"
        "vfma.f32 s0, s16, s16\n"
        "vfma.f32 s1, s17, s17\n"
        "vfma.f32 s2, s18, s18\n"
        "vfma.f32 s3, s19, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vsub.f32 s16, s16, s28\n"
        "vsub.f32 s17, s17, s28\n"
        "vsub.f32 s18, s18, s28\n"
        "vsub.f32 s19, s19, s28\n"
        "vfma.f32 s4, s16, s16\n"
        "vfma.f32 s5, s17, s17\n"
        "vfma.f32 s6, s18, s18\n"
        "vfma.f32 s7, s19, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vsub.f32 s16, s16, s28\n"
        "vsub.f32 s17, s17, s28\n"
        "vsub.f32 s18, s18, s28\n"
        "vsub.f32 s19, s19, s28\n"
        "vfma.f32 s8, s16, s16\n"
        "vfma.f32 s9, s17, s17\n"
        "vfma.f32 s10, s18, s18\n"
        "vfma.f32 s11, s19, s19\n"
        "vldmia %[xs]!, {s16-s19}\n"
        "vsub.f32 s16, s16, s28\n"
        "vsub.f32 s17, s17, s28\n"
        "vsub.f32 s18, s18, s28\n"
        "vsub.f32 s19, s19, s28\n"
        "vfma.f32 s12, s16, s16\n"
        "vfma.f32 s13, s17, s17\n"
        "vfma.f32 s14, s18, s18\n"
        "vfma.f32 s15, s19, s19\n"
        "subs %[cnt], %[cnt], #1\n"
        "bne 2b\n" STF_FOLD16_S0_S1
        "vadd.f32 s29, s0, s1\n"
        "vdiv.f32 s29, s29, s30\n"  // s29: inv = 1 / sqrt(ss / n + eps)
        "vadd.f32 s29, s29, s31\n"
        "vsqrt.f32 s29, s29\n"
        "vmov.f32 s20, #1.0\n"
        "vdiv.f32 s29, s20, s29\n"
        "lsl %[cnt], %[n16], #2\n"  // y = ((x - mean) · inv) · gain + bias, 4 at a time
        "3:\n"
        "vldmia %[x]!, {s16-s19}\n"
        "vldmia %[g]!, {s20-s23}\n"
        "vldmia %[b]!, {s24-s27}\n"
        "vsub.f32 s16, s16, s28\n"
        "vmul.f32 s16, s16, s29\n"
        "vmul.f32 s16, s16, s20\n"
        "vadd.f32 s16, s16, s24\n"
        "vsub.f32 s17, s17, s28\n"
        "vmul.f32 s17, s17, s29\n"
        "vmul.f32 s17, s17, s21\n"
        "vadd.f32 s17, s17, s25\n"
        "vsub.f32 s18, s18, s28\n"
        "vmul.f32 s18, s18, s29\n"
        "vmul.f32 s18, s18, s22\n"
        "vadd.f32 s18, s18, s26\n"
        "vsub.f32 s19, s19, s28\n"
        "vmul.f32 s19, s19, s29\n"
        "vmul.f32 s19, s19, s23\n"
        "vadd.f32 s19, s19, s27\n"
        "vstmia %[y]!, {s16-s19}\n"
        "subs %[cnt], %[cnt], #1\n"
        "bne 3b\n"
        : [x] "+r"(x), [g] "+r"(gain), [b] "+r"(bias), [y] "+r"(y), [xs] "=&r"(xs), [cnt] "=&r"(count)
        : [n16] "r"(n / 16), [nf] "r"(static_cast<float>(n)), [eps] "r"(eps), [zeros] "r"(kZeros), "m"(kZeros)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
          "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc",
          "memory");
  }
  /// A linear layer's product over a block of a panel-stored weight (Generic::linear_block calls
  /// it): Generic::product's tiles (rows in tiles of 6, the last two even; 4 outputs each, tile4),
  /// walked directly, with the whole reduction in one pass (parking partial sums in y would not
  /// change their bits). false: GELU, no reduction, or outputs not in whole groups of 4, left to
  /// Generic::product.
  template <class Identity, class Relu>
  static bool linear_panels(const float* x, index_t ldx, index_t rows, index_t in, WeightBlock w, index_t out, float* y,
                            index_t ldy, const float* bias, bool accumulate, Fuse act, Identity, Relu) {
    if (in == 0 || act == Fuse::gelu || out % 4 != 0 || w.o0 % 4 != 0 || w.out_total % 4 != 0) return false;
    for (index_t o = 0; o < out; o += 4) {
      index_t ld = 0, run = 0;
      const float* wo = w.column(o, ld, run);
      const float* b = bias ? bias + o : nullptr;
      for (index_t r = 0; r < rows;) {
        const index_t rem = rows - r;
        const index_t n = rem <= 6 ? rem : (rem < 12 ? (rem + 1) / 2 : 6);
        tile4(x + r * ldx, ldx, n, 0, in, wo, ld, y + r * ldy + o, ldy, !accumulate, b, act == Fuse::relu);
        r += n;
      }
    }
    return true;
  }
  /// Streaming attention of a group of `rows` (1 to 6) query rows that all attend to the same keys
  /// [0, keys) (Generic::attention_rows_hooked calls it; the same operations per row and block of 32
  /// keys as ref::attention_row): the scores and P·V through tile4 directly (4 keys, or 4 outputs,
  /// at a time; a last partial panel of scores recomputes the keys it overlaps, to the same bits),
  /// then per row the scale and the maximum in one loop (scale_max), exp(s - m) and the canonical
  /// sum in another (exp_sum), the weights into a zeroed [rows][32] block on the stack that P·V
  /// reads and the sums' 16 lanes load at once.
  static bool attention_prefix_rows(const float* q, index_t q_stride, index_t rows, const float* kt, index_t kt_stride,
                                    const float* v, index_t v_stride, index_t hd, index_t keys, float scale, float* p,
                                    float* out, index_t out_stride) {
    constexpr index_t B = 32;  // kAttentionKeyBlock (kernels/api.hpp)
    if (rows < 1 || rows > 6) return false;
    const index_t bs = keys < B ? keys : B;
    float* s = p;  // [rows][bs] scores
    const float* qs = q;
    index_t qstr = q_stride;
    if (keys > B) {  // later blocks read the queries after the outputs, which may alias them, are written
      float* qc = p + rows * bs;
      for (index_t r = 0; r < rows; ++r)
        for (index_t d = 0; d < hd; ++d) qc[r * hd + d] = q[r * q_stride + d];
      qs = qc;
      qstr = hd;
    }
    alignas(8) float eb[6][B];
    float m[6] = {}, l[6] = {};
    for (index_t kb = 0; kb < keys; kb += B) {
      const index_t cnt = keys - kb < B ? keys - kb : B;
      // scores
      if (cnt >= 4) {
        for (index_t j = 0; j < cnt; j += 4) {
          const index_t j0 = j + 4 <= cnt ? j : cnt - 4;
          tile4_apart(qs, qstr, rows, 0, hd, kt + kb + j0, kt_stride, s + j0, bs, true);
        }
      } else {
        for (index_t r = 0; r < rows; ++r)
          for (index_t j = 0; j < cnt; ++j) {
            float acc = 0.0f;
            for (index_t d = 0; d < hd; ++d) acc = std::fma(qs[r * qstr + d], kt[d * kt_stride + kb + j], acc);
            s[r * bs + j] = acc;
          }
      }
      // per row: scale and maximum, the running maximum (what came before rescaled), weights, sum
      for (index_t r = 0; r < rows; ++r) {
        const float bm = scale_max(s + r * bs, cnt, scale);
        const float mn = (kb && m[r] > bm) ? m[r] : bm;
        if (kb && mn != m[r]) {
          const float c = simd_math::exp<Vocabulary<scalar>>(m[r] - mn);
          l[r] = l[r] * c;
          float* o = out + r * out_stride;
          for (index_t d = 0; d < hd; ++d) o[d] = o[d] * c;
        }
        const float bsum = exp_sum(s + r * bs, eb[r], cnt, mn);
        l[r] = kb ? l[r] + bsum : bsum;
        m[r] = mn;
      }
      // P·V, continuing from the outputs after the first block
      const float* vb = v + kb * v_stride;
      index_t d = 0;
      for (; d + 4 <= hd; d += 4)
        tile4_apart(&eb[0][0], B, rows, 0, cnt, vb + d, v_stride, out + d, out_stride, kb == 0);
      if (d < hd && kb == 0 && hd >= 4)  // from +0: the overlapped outputs come out the same
        tile4_apart(&eb[0][0], B, rows, 0, cnt, vb + hd - 4, v_stride, out + hd - 4, out_stride, true);
      else
        for (; d < hd; ++d)
          for (index_t r = 0; r < rows; ++r) {
            float acc = kb ? out[r * out_stride + d] : 0.0f;
            for (index_t j = 0; j < cnt; ++j) acc = std::fma(eb[r][j], vb[j * v_stride + d], acc);
            out[r * out_stride + d] = acc;
          }
    }
    for (index_t r = 0; r < rows; ++r) div_n(out + r * out_stride, out + r * out_stride, hd, l[r]);
    return true;
  }
  /// tile4 without bias or ReLU, not inlined (its asm needs the registers the caller's loops hold).
  [[gnu::noinline]] static void tile4_apart(const float* x, index_t ldx, index_t rows, index_t k0, index_t k1,
                                            const float* w, index_t ldw, float* y, index_t ldy, bool first) {
    tile4(x, ldx, rows, k0, k1, w, ldw, y, ldy, first, nullptr, false);
  }
  /// s[i] = s[i] / d for i < n (n >= 1), and their maximum: the first, then each one greater than
  /// the maximum so far (the reference's order), 4 at a time.
  static float scale_max(float* s, index_t n, float d_value) {
    std::uint32_t d;
    std::memcpy(&d, &d_value, sizeof d);
    std::uint32_t mbits;
    index_t cnt, c4;
    asm volatile(
        "vmov s5, %[d]\n"
        "vldmia %[s], {s0}\n"
        "vdiv.f32 s0, s0, s5\n"
        "vstmia %[s]!, {s0}\n"
        "vmov.f32 s4, s0\n"
        "subs %[cnt], %[n], #1\n"
        "lsrs %[c4], %[cnt], #2\n"
        "beq 2f\n"
        "1:\n"
        "vldmia %[s], {s0-s3}\n"
        "vdiv.f32 s0, s0, s5\n"
        "vdiv.f32 s1, s1, s5\n"
        "vdiv.f32 s2, s2, s5\n"
        "vdiv.f32 s3, s3, s5\n"
        "vstmia %[s]!, {s0-s3}\n"
        ".irp i, 0, 1, 2, 3\n"
        "vcmp.f32 s\\i, s4\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it gt\n"
        "vmovgt.f32 s4, s\\i\n"
        ".endr\n"
        "subs %[c4], %[c4], #1\n"
        "bne 1b\n"
        "2:\n"
        "ands %[cnt], %[cnt], #3\n"
        "beq 4f\n"
        "3:\n"
        "vldmia %[s], {s0}\n"
        "vdiv.f32 s0, s0, s5\n"
        "vstmia %[s]!, {s0}\n"
        "vcmp.f32 s0, s4\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it gt\n"
        "vmovgt.f32 s4, s0\n"
        "subs %[cnt], %[cnt], #1\n"
        "bne 3b\n"
        "4:\n"
        "vmov %[m], s4\n"
        : [s] "+r"(s), [cnt] "=&r"(cnt), [c4] "=&r"(c4), [m] "=r"(mbits)
        : [n] "r"(n), [d] "r"(d)
        : "s0", "s1", "s2", "s3", "s4", "s5", "cc", "memory");
    float m;
    std::memcpy(&m, &mbits, sizeof m);
    return m;
  }
  /// e[j] = exp(s[j] - m) for j < n (1..32), e zeroed up to 32 before, and the canonical sum of
  /// e[0, n): lane i holds e[i] (+ e[i + 16]), the 16 lanes folded as reduce16. exp_kernel's
  /// operations for x = s - m in [lo, 0] (what s - max is, m >= every s): there n <= 0, so p · 2^n
  /// in one product, 2^n's bits as (bits(nm) << 23) + bits(1.0f) (magic's low 9 bits are 0); below
  /// lo +0, NaN stays NaN.
  static float exp_sum(const float* s, float* e, index_t n, float m_value) {
    std::uint32_t m;
    std::memcpy(&m, &m_value, sizeof m);
    std::uint32_t sum;
    float* t;
    index_t cnt;
    std::uint32_t k;
    asm volatile(
        "vldmia %[z], {s0-s15}\n"  // e[0, 32) = +0
        "vstmia %[e], {s0-s15}\n"
        "add %[t], %[e], #64\n"
        "vstmia %[t], {s0-s15}\n"
        "vmov s5, %[m]\n"
        "mov %[t], %[e]\n"
        "mov %[cnt], %[n]\n"
        "1:\n"
        "vldmia %[s]!, {s0}\n"
        "vsub.f32 s0, s0, s5\n"
        "vldmia %[c], {s16-s30}\n"
        "vcmp.f32 s0, s27\n"  // below lo, or NaN
        "vmrs APSR_nzcv, fpscr\n"
        "blt 5f\n" STF_EXP_CORE("s0", "s1", "s2", "s3")  // (nm kept in s1 for 2^n)
        "vmov %[k], s1\n"                                // 2^n
        "lsl %[k], %[k], #23\n"
        "add %[k], %[k], #0x3f800000\n"
        "vmov s1, %[k]\n"
        "vmul.f32 s4, s31, s1\n"
        "3:\n"
        "vstmia %[t]!, {s4}\n"
        "subs %[cnt], %[cnt], #1\n"
        "bne 1b\n"
        "b 6f\n"
        "5:\n"  // +0 (s30), or the NaN itself
        "vmov.f32 s4, s30\n"
        "vcmp.f32 s0, s0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it vs\n"
        "vmovvs.f32 s4, s0\n"
        "b 3b\n"
        "6:\n"  // the 16 lanes (+ the second 16), folded in halves
        "vldmia %[e], {s0-s15}\n"
        "cmp %[n], #16\n"
        "ble 7f\n"
        "add %[t], %[e], #64\n"
        "vldmia %[t], {s16-s31}\n"
        "vadd.f32 s0, s0, s16\n vadd.f32 s1, s1, s17\n vadd.f32 s2, s2, s18\n vadd.f32 s3, s3, s19\n"
        "vadd.f32 s4, s4, s20\n vadd.f32 s5, s5, s21\n vadd.f32 s6, s6, s22\n vadd.f32 s7, s7, s23\n"
        "vadd.f32 s8, s8, s24\n vadd.f32 s9, s9, s25\n vadd.f32 s10, s10, s26\n vadd.f32 s11, s11, s27\n"
        "vadd.f32 s12, s12, s28\n vadd.f32 s13, s13, s29\n vadd.f32 s14, s14, s30\n vadd.f32 s15, s15, s31\n"
        "7:\n" STF_FOLD16_S0_S1
        "vadd.f32 s0, s0, s1\n"
        "vmov %[sum], s0\n"
        : [s] "+r"(s), [t] "=&r"(t), [cnt] "=&r"(cnt), [k] "=&r"(k), [sum] "=r"(sum)
        : [e] "r"(e), [n] "r"(n), [m] "r"(m), [c] "r"(kExpConstants), [z] "r"(kZeros16)  // (tables: "memory")
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
          "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc",
          "memory");
    float r;
    std::memcpy(&r, &sum, sizeof r);
    return r;
  }
#undef STF_EXP_CORE
#undef STF_FOLD16_S0_S1
  /// simd_math::exp's constants in the order the assembly loads them (s16..s30 in exp_kernel).
  alignas(8) static constexpr float kExpConstants[] = {12582912.0f,
                                                       1.44269504088896341f,
                                                       -0.693359375f,
                                                       2.12194440e-4f,
                                                       1.0f / 5040.0f,
                                                       1.0f / 720.0f,
                                                       1.0f / 120.0f,
                                                       1.0f / 24.0f,
                                                       1.0f / 6.0f,
                                                       0.5f,
                                                       1.0f,
                                                       -87.3365448f,
                                                       88.7228394f,
                                                       std::numeric_limits<float>::infinity(),
                                                       0.0f};  // s16..s30
  alignas(8) static constexpr float kZeros16[16] = {};
  /// The matrix kernels' tile of `rows` (1 to 6) × 4 outputs on Cortex-M (Generic::tile calls
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
#endif
  static V load_partial(const float* p, index_t n) { return n ? *p : 0.0f; }
  /// load_partial with the lanes >= n set to `fill` instead of +0.
  static V load_partial_or(const float* p, index_t n, float fill) { return n ? *p : fill; }
  static void store(float* p, V v) { *p = v; }
  static void store_partial(float* p, V v, index_t n) {
    if (n) *p = v;
  }
  static V set1(float x) { return x; }
  static V zero() { return 0.0f; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }  ///< a·b + c, one rounding
  static V max(V a, V b) { return a > b ? a : b; }           ///< b when unordered, as x86 maxps
  static V min(V a, V b) { return a < b ? a : b; }
  static V sqrt(V a) { return std::sqrt(a); }
  static V abs(V a) { return std::fabs(a); }
  /// Lanes < n keep v, the others become +0.
  static V keep_first(V v, index_t n) { return n ? v : 0.0f; }
  /// a > b ? x : y, lane-wise (false for NaN).
  static V select_gt(V a, V b, V x, V y) { return a > b ? x : y; }
  /// x is NaN ? x : y, lane-wise.
  static V select_nan(V x, V y) { return x != x ? x : y; }
  /// 2^n for integral n in [-126, 127].
  static V pow2i(V n) {
    const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  /// x = m · 2^e with m in [1, 2), for finite x > 0 (normal); e as a float.
  static void split_exponent(V x, V& m, V& e) {
    std::int32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    e = static_cast<float>((bits >> 23) - 127);
    bits = (bits & 0x007fffff) | 0x3f800000;
    std::memcpy(&m, &bits, sizeof m);
  }
  /// The canonical 16-lane sum: fold halves (lane i + lane i+8, then +4, +2, +1).
  static float reduce16(const V* acc) {
    float s8[8], s4[4], s2[2];
    for (int i = 0; i < 8; ++i) s8[i] = acc[i] + acc[i + 8];
    for (int i = 0; i < 4; ++i) s4[i] = s8[i] + s8[i + 4];
    for (int i = 0; i < 2; ++i) s2[i] = s4[i] + s4[i + 2];
    return s2[0] + s2[1];
  }
  static float reduce_max(V v) { return v; }

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
 private:
  /// tile4 for 5 rows, 2 steps at a time: accumulators s0-s19, the weights of 2 steps s20-s27, a
  /// row's x of 2 steps s28-s29; the epilogue's arguments from memory (general-purpose registers:
  /// 5 row pointers, w, ldw, a counter).
  static void tile4_rows5(const float* x, index_t ldx, index_t n, const float* w, index_t ldw, float* y, index_t ldy,
                          const float* bias, unsigned mode) {
    alignas(8) static constexpr float kZeros[20] = {};
    struct Args {  // (byte offsets in the assembly)
      float* y;    // 0
      unsigned ldy, mode;
      const float* bias;   // 12
      const float* zeros;  // 16
      unsigned n;          // 20
    } args{y, static_cast<unsigned>(ldy * 4), mode, bias, kZeros, static_cast<unsigned>(n)};
    const float* x1 = x + ldx;
    const float* x2 = x1 + ldx;
    const float* x3 = x2 + ldx;
    const float* x4 = x3 + ldx;
    unsigned count;
    asm volatile(
        "ldr %[count], [%[a], #8]\n"  // accumulators: +0, or y
        "tst %[count], #1\n"
        "beq 1f\n"
        "ldr %[count], [%[a], #16]\n"
        "vldmia %[count], {s0-s19}\n"
        "b 2f\n"
        "1:\n"
        "ldrd %[count], lr, [%[a]]\n"
        "vldmia %[count], {s0-s3}\n"
        "add %[count], %[count], lr\n"
        "vldmia %[count], {s4-s7}\n"
        "add %[count], %[count], lr\n"
        "vldmia %[count], {s8-s11}\n"
        "add %[count], %[count], lr\n"
        "vldmia %[count], {s12-s15}\n"
        "add %[count], %[count], lr\n"
        "vldmia %[count], {s16-s19}\n"
        "2:\n"
        "ldr %[count], [%[a], #20]\n"
        "lsrs %[count], %[count], #1\n"
        "beq 4f\n"
        "3:\n"  // 2 steps
        "vldmia %[w], {s20-s23}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[w], {s24-s27}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[x0]!, {s28-s29}\n"
        "vfma.f32 s0, s28, s20\n"
        "vfma.f32 s1, s28, s21\n"
        "vfma.f32 s2, s28, s22\n"
        "vfma.f32 s3, s28, s23\n"
        "vfma.f32 s0, s29, s24\n"
        "vfma.f32 s1, s29, s25\n"
        "vfma.f32 s2, s29, s26\n"
        "vfma.f32 s3, s29, s27\n"
        "vldmia %[x1]!, {s28-s29}\n"
        "vfma.f32 s4, s28, s20\n"
        "vfma.f32 s5, s28, s21\n"
        "vfma.f32 s6, s28, s22\n"
        "vfma.f32 s7, s28, s23\n"
        "vfma.f32 s4, s29, s24\n"
        "vfma.f32 s5, s29, s25\n"
        "vfma.f32 s6, s29, s26\n"
        "vfma.f32 s7, s29, s27\n"
        "vldmia %[x2]!, {s28-s29}\n"
        "vfma.f32 s8, s28, s20\n"
        "vfma.f32 s9, s28, s21\n"
        "vfma.f32 s10, s28, s22\n"
        "vfma.f32 s11, s28, s23\n"
        "vfma.f32 s8, s29, s24\n"
        "vfma.f32 s9, s29, s25\n"
        "vfma.f32 s10, s29, s26\n"
        "vfma.f32 s11, s29, s27\n"
        "vldmia %[x3]!, {s28-s29}\n"
        "vfma.f32 s12, s28, s20\n"
        "vfma.f32 s13, s28, s21\n"
        "vfma.f32 s14, s28, s22\n"
        "vfma.f32 s15, s28, s23\n"
        "vfma.f32 s12, s29, s24\n"
        "vfma.f32 s13, s29, s25\n"
        "vfma.f32 s14, s29, s26\n"
        "vfma.f32 s15, s29, s27\n"
        "vldmia %[x4]!, {s28-s29}\n"
        "vfma.f32 s16, s28, s20\n"
        "vfma.f32 s17, s28, s21\n"
        "vfma.f32 s18, s28, s22\n"
        "vfma.f32 s19, s28, s23\n"
        "vfma.f32 s16, s29, s24\n"
        "vfma.f32 s17, s29, s25\n"
        "vfma.f32 s18, s29, s26\n"
        "vfma.f32 s19, s29, s27\n"
        "subs %[count], %[count], #1\n"
        "bne 3b\n"
        "4:\n"  // an odd last step
        "ldr %[count], [%[a], #20]\n"
        "tst %[count], #1\n"
        "beq 5f\n"
        "vldmia %[w], {s20-s23}\n"
        "vldmia %[x0]!, {s28}\n"
        "vfma.f32 s0, s28, s20\n"
        "vfma.f32 s1, s28, s21\n"
        "vfma.f32 s2, s28, s22\n"
        "vfma.f32 s3, s28, s23\n"
        "vldmia %[x1]!, {s28}\n"
        "vfma.f32 s4, s28, s20\n"
        "vfma.f32 s5, s28, s21\n"
        "vfma.f32 s6, s28, s22\n"
        "vfma.f32 s7, s28, s23\n"
        "vldmia %[x2]!, {s28}\n"
        "vfma.f32 s8, s28, s20\n"
        "vfma.f32 s9, s28, s21\n"
        "vfma.f32 s10, s28, s22\n"
        "vfma.f32 s11, s28, s23\n"
        "vldmia %[x3]!, {s28}\n"
        "vfma.f32 s12, s28, s20\n"
        "vfma.f32 s13, s28, s21\n"
        "vfma.f32 s14, s28, s22\n"
        "vfma.f32 s15, s28, s23\n"
        "vldmia %[x4]!, {s28}\n"
        "vfma.f32 s16, s28, s20\n"
        "vfma.f32 s17, s28, s21\n"
        "vfma.f32 s18, s28, s22\n"
        "vfma.f32 s19, s28, s23\n"
        "5:\n"  // + bias
        "ldr %[count], [%[a], #12]\n"
        "cmp %[count], #0\n"
        "beq 6f\n"
        "vldmia %[count], {s20-s23}\n"
        "vadd.f32 s0, s0, s20\n"
        "vadd.f32 s1, s1, s21\n"
        "vadd.f32 s2, s2, s22\n"
        "vadd.f32 s3, s3, s23\n"
        "vadd.f32 s4, s4, s20\n"
        "vadd.f32 s5, s5, s21\n"
        "vadd.f32 s6, s6, s22\n"
        "vadd.f32 s7, s7, s23\n"
        "vadd.f32 s8, s8, s20\n"
        "vadd.f32 s9, s9, s21\n"
        "vadd.f32 s10, s10, s22\n"
        "vadd.f32 s11, s11, s23\n"
        "vadd.f32 s12, s12, s20\n"
        "vadd.f32 s13, s13, s21\n"
        "vadd.f32 s14, s14, s22\n"
        "vadd.f32 s15, s15, s23\n"
        "vadd.f32 s16, s16, s20\n"
        "vadd.f32 s17, s17, s21\n"
        "vadd.f32 s18, s18, s22\n"
        "vadd.f32 s19, s19, s23\n"
        "6:\n"  // ReLU: x > 0 ? x : +0 (le also holds for NaN)
        "ldr %[count], [%[a], #8]\n"
        "tst %[count], #2\n"
        "beq 7f\n"
        "ldr %[count], [%[a], #16]\n"
        "vldmia %[count], {s20}\n"
        "vcmp.f32 s0, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s0, s20\n"
        "vcmp.f32 s1, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s1, s20\n"
        "vcmp.f32 s2, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s2, s20\n"
        "vcmp.f32 s3, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s3, s20\n"
        "vcmp.f32 s4, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s4, s20\n"
        "vcmp.f32 s5, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s5, s20\n"
        "vcmp.f32 s6, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s6, s20\n"
        "vcmp.f32 s7, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s7, s20\n"
        "vcmp.f32 s8, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s8, s20\n"
        "vcmp.f32 s9, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s9, s20\n"
        "vcmp.f32 s10, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s10, s20\n"
        "vcmp.f32 s11, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s11, s20\n"
        "vcmp.f32 s12, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s12, s20\n"
        "vcmp.f32 s13, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s13, s20\n"
        "vcmp.f32 s14, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s14, s20\n"
        "vcmp.f32 s15, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s15, s20\n"
        "vcmp.f32 s16, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s16, s20\n"
        "vcmp.f32 s17, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s17, s20\n"
        "vcmp.f32 s18, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s18, s20\n"
        "vcmp.f32 s19, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s19, s20\n"
        "7:\n"  // store
        "ldrd %[count], lr, [%[a]]\n"
        "vstmia %[count], {s0-s3}\n"
        "add %[count], %[count], lr\n"
        "vstmia %[count], {s4-s7}\n"
        "add %[count], %[count], lr\n"
        "vstmia %[count], {s8-s11}\n"
        "add %[count], %[count], lr\n"
        "vstmia %[count], {s12-s15}\n"
        "add %[count], %[count], lr\n"
        "vstmia %[count], {s16-s19}\n"
        : [x0] "+r"(x), [x1] "+r"(x1), [x2] "+r"(x2), [x3] "+r"(x3), [x4] "+r"(x4), [w] "+r"(w), [count] "=&r"(count)
        : [a] "r"(&args), [ldw] "r"(ldw * 4), "m"(args)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
          "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "lr", "cc",
          "memory");
  }

  /// tile4 for R (1 to 3) rows: accumulators s0..s(4R-1), weights of 4 steps s12-s27, a row's x of
  /// 4 steps s28-s31. mode: bit 0 start from +0, bit 1 ReLU.
  template <int R>
  static void tile4_rows(const float* x, index_t ldx, index_t n, const float* w, index_t ldw, float* y, index_t ldy,
                         const float* bias, unsigned mode) {
    alignas(8) static constexpr float kZeros[12] = {};
    const float* x1 = x + ldx;
    const float* x2 = x1 + ldx;
    index_t count;
    float* yr;
    asm volatile(
        // accumulators: +0, or y
        "tst %[mode], #1\n"
        "beq 1f\n"
        "vldmia %[zeros], {s0-s%c[last]}\n"
        "b 2f\n"
        "1:\n"
        "mov %[yr], %[y]\n"
        "vldmia %[yr], {s0-s3}\n"
        ".if %c[R] > 1\n add %[yr], %[yr], %[ldy]\n vldmia %[yr], {s4-s7}\n .endif\n"
        ".if %c[R] > 2\n add %[yr], %[yr], %[ldy]\n vldmia %[yr], {s8-s11}\n .endif\n"
        "2:\n"
        "lsrs %[count], %[n], #2\n"
        "beq 4f\n"
        "3:\n"  // 4 steps
        "vldmia %[w], {s12-s15}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[w], {s16-s19}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[w], {s20-s23}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[w], {s24-s27}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[x0]!, {s28-s31}\n"
        "vfma.f32 s0, s28, s12\n vfma.f32 s1, s28, s13\n vfma.f32 s2, s28, s14\n vfma.f32 s3, s28, s15\n"
        "vfma.f32 s0, s29, s16\n vfma.f32 s1, s29, s17\n vfma.f32 s2, s29, s18\n vfma.f32 s3, s29, s19\n"
        "vfma.f32 s0, s30, s20\n vfma.f32 s1, s30, s21\n vfma.f32 s2, s30, s22\n vfma.f32 s3, s30, s23\n"
        "vfma.f32 s0, s31, s24\n vfma.f32 s1, s31, s25\n vfma.f32 s2, s31, s26\n vfma.f32 s3, s31, s27\n"
        ".if %c[R] > 1\n"
        "vldmia %[x1]!, {s28-s31}\n"
        "vfma.f32 s4, s28, s12\n vfma.f32 s5, s28, s13\n vfma.f32 s6, s28, s14\n vfma.f32 s7, s28, s15\n"
        "vfma.f32 s4, s29, s16\n vfma.f32 s5, s29, s17\n vfma.f32 s6, s29, s18\n vfma.f32 s7, s29, s19\n"
        "vfma.f32 s4, s30, s20\n vfma.f32 s5, s30, s21\n vfma.f32 s6, s30, s22\n vfma.f32 s7, s30, s23\n"
        "vfma.f32 s4, s31, s24\n vfma.f32 s5, s31, s25\n vfma.f32 s6, s31, s26\n vfma.f32 s7, s31, s27\n"
        ".endif\n"
        ".if %c[R] > 2\n"
        "vldmia %[x2]!, {s28-s31}\n"
        "vfma.f32 s8, s28, s12\n vfma.f32 s9, s28, s13\n vfma.f32 s10, s28, s14\n vfma.f32 s11, s28, s15\n"
        "vfma.f32 s8, s29, s16\n vfma.f32 s9, s29, s17\n vfma.f32 s10, s29, s18\n vfma.f32 s11, s29, s19\n"
        "vfma.f32 s8, s30, s20\n vfma.f32 s9, s30, s21\n vfma.f32 s10, s30, s22\n vfma.f32 s11, s30, s23\n"
        "vfma.f32 s8, s31, s24\n vfma.f32 s9, s31, s25\n vfma.f32 s10, s31, s26\n vfma.f32 s11, s31, s27\n"
        ".endif\n"
        "subs %[count], %[count], #1\n"
        "bne 3b\n"
        "4:\n"  // the remaining 0 to 3 steps
        "ands %[count], %[n], #3\n"
        "beq 6f\n"
        "5:\n"
        "vldmia %[w], {s12-s15}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[x0]!, {s28}\n"
        "vfma.f32 s0, s28, s12\n vfma.f32 s1, s28, s13\n vfma.f32 s2, s28, s14\n vfma.f32 s3, s28, s15\n"
        ".if %c[R] > 1\n"
        "vldmia %[x1]!, {s28}\n"
        "vfma.f32 s4, s28, s12\n vfma.f32 s5, s28, s13\n vfma.f32 s6, s28, s14\n vfma.f32 s7, s28, s15\n"
        ".endif\n"
        ".if %c[R] > 2\n"
        "vldmia %[x2]!, {s28}\n"
        "vfma.f32 s8, s28, s12\n vfma.f32 s9, s28, s13\n vfma.f32 s10, s28, s14\n vfma.f32 s11, s28, s15\n"
        ".endif\n"
        "subs %[count], %[count], #1\n"
        "bne 5b\n"
        "6:\n"  // + bias
        "cmp %[bias], #0\n"
        "beq 7f\n"
        "vldmia %[bias], {s12-s15}\n"
        "vadd.f32 s0, s0, s12\n vadd.f32 s1, s1, s13\n vadd.f32 s2, s2, s14\n vadd.f32 s3, s3, s15\n"
        ".if %c[R] > 1\n vadd.f32 s4, s4, s12\n vadd.f32 s5, s5, s13\n vadd.f32 s6, s6, s14\n vadd.f32 s7, s7, s15\n "
        ".endif\n"
        ".if %c[R] > 2\n vadd.f32 s8, s8, s12\n vadd.f32 s9, s9, s13\n vadd.f32 s10, s10, s14\n vadd.f32 s11, s11, "
        "s15\n .endif\n"
        "7:\n"  // ReLU: x > 0 ? x : +0 (le also holds for NaN)
        "tst %[mode], #2\n"
        "beq 8f\n"
        "vldmia %[zeros], {s12}\n"
        ".irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11\n"
        ".if \\i < %c[R] * 4\n"
        "vcmp.f32 s\\i, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s\\i, s12\n"
        ".endif\n"
        ".endr\n"
        "8:\n"
        "mov %[yr], %[y]\n"
        "vstmia %[yr], {s0-s3}\n"
        ".if %c[R] > 1\n add %[yr], %[yr], %[ldy]\n vstmia %[yr], {s4-s7}\n .endif\n"
        ".if %c[R] > 2\n add %[yr], %[yr], %[ldy]\n vstmia %[yr], {s8-s11}\n .endif\n"
        : [x0] "+r"(x), [x1] "+r"(x1), [x2] "+r"(x2), [w] "+r"(w), [count] "=&r"(count), [yr] "=&r"(yr)
        : [n] "r"(n), [ldw] "r"(ldw * 4), [y] "r"(y), [ldy] "r"(ldy * 4), [bias] "r"(bias), [mode] "r"(mode),
          [zeros] "r"(kZeros), [R] "i"(R), [last] "i"(4 * R - 1)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
          "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc",
          "memory");
  }
#endif
};

}  // namespace stf::isa
