// statiformer — attention kernels on Cortex-M4F/M7 (Arm M-profile with an FPU): row groups over
// a prefix of the keys, the scores and P·V on tile4, scale/maximum and exp/sum in assembly.
// See kernels/README.md.
#pragma once

#include <cstdint>
#include <cstring>

#include <statiformer/config.hpp>
#include <statiformer/kernels/elementwise/cortex_m4f.hpp>
#include <statiformer/kernels/product/cortex_m4f.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/scalar.hpp>

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
// The scores' running maximum in s4 (scale_max, here and in cortex_m4f_int8.hpp): s4 = R where R
// (a register's name) > s4, the reference's order.
#define STF_M4F_MAX_S4(R) "vcmp.f32 " R ", s4\nvmrs APSR_nzcv, fpscr\nit gt\nvmovgt.f32 s4, " R "\n"

namespace stf::kernels_detail::cortex_m4f {

/// Streaming attention of row groups over a prefix of the keys (generic::Attention::attention_rows
/// calls it), on Product's tile and Elementwise's division.
struct Attention {
  /// Streaming attention of a group of `rows` (1 to 6) query rows that all attend to the same keys
  /// [0, keys) (generic::Attention::attention_rows calls it; the same operations per row and block of 32
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
          Product::tile4_apart(qs, qstr, rows, 0, hd, kt + kb + j0, kt_stride, s + j0, bs, true);
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
          const float c = simd_math::exp<isa::Vocabulary<isa::scalar>>(m[r] - mn);
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
        Product::tile4_apart(&eb[0][0], B, rows, 0, cnt, vb + d, v_stride, out + d, out_stride, kb == 0);
      if (d < hd && kb == 0 && hd >= 4)  // from +0: the overlapped outputs come out the same
        Product::tile4_apart(&eb[0][0], B, rows, 0, cnt, vb + hd - 4, v_stride, out + hd - 4, out_stride, true);
      else
        for (; d < hd; ++d)
          for (index_t r = 0; r < rows; ++r) {
            float acc = kb ? out[r * out_stride + d] : 0.0f;
            for (index_t j = 0; j < cnt; ++j) acc = std::fma(eb[r][j], vb[j * v_stride + d], acc);
            out[r * out_stride + d] = acc;
          }
    }
    for (index_t r = 0; r < rows; ++r) Elementwise::div_n(out + r * out_stride, out + r * out_stride, hd, l[r]);
    return true;
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
        "vstmia %[s]!, {s0-s3}\n" STF_M4F_MAX_S4("s0") STF_M4F_MAX_S4("s1") STF_M4F_MAX_S4("s2") STF_M4F_MAX_S4("s3")
        "subs %[c4], %[c4], #1\n"
        "bne 1b\n"
        "2:\n"
        "ands %[cnt], %[cnt], #3\n"
        "beq 4f\n"
        "3:\n"
        "vldmia %[s], {s0}\n"
        "vdiv.f32 s0, s0, s5\n"
        "vstmia %[s]!, {s0}\n" STF_M4F_MAX_S4("s0")
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
  /// (Also the int8 attention's, cortex_m4f_int8.hpp.)
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
        : [e] "r"(e), [n] "r"(n), [m] "r"(m), [c] "r"(isa::Vocabulary<isa::scalar>::kExpConstants),
          [z] "r"(kZeros16)  // (tables: "memory")
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
          "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc",
          "memory");
    float r;
    std::memcpy(&r, &sum, sizeof r);
    return r;
  }
  alignas(8) static constexpr float kZeros16[16] = {};
};

}  // namespace stf::kernels_detail::cortex_m4f
#endif
