// statiformer — SIMD vocabulary, scalar: one lane of plain C++. The same small set of operations
// every ISA header provides; each is one IEEE operation, so kernels written on this vocabulary give
// the same bits on every ISA.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <statiformer/config.hpp>
#include <statiformer/simd/fma_double.hpp>
#include <statiformer/simd/isa.hpp>
#include <statiformer/simd/math.hpp>

namespace stf::isa {
inline namespace STF_VARIANT_NAMESPACE {

template <>
struct Vocabulary<scalar> {
  using V = float;
  static constexpr index_t lanes = 1;
  static constexpr const char* name = "scalar";
  /// Which of simd/math.hpp's steps this vocabulary spells in its own instructions (the same bits;
  /// the kernel tests compare): exp, exp_nonpositive's last steps, exp's lower clamp.
  static constexpr bool own_exp = false, own_exp_nonpositive = false, own_zero_unless_ge = false;
  static bool supported() { return true; }  ///< can this CPU run it
  /// Register tile of the matrix kernels: rows × vectors of outputs. Arm (M4F, M7) and RISC-V have
  /// 32 floating-point registers: 24 accumulators + 4 weights + 1 input; x86 has 16.
#if defined(__arm__) || defined(__riscv)
  static constexpr index_t gemm_rows = 6, gemm_vecs = 4;
#else
  static constexpr index_t gemm_rows = 3, gemm_vecs = 4;
#endif
  static constexpr index_t gemv_vecs = gemm_vecs;  ///< vectors of a single row's tile

  static V load(const float* p) { return *p; }
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
  /// Four consecutive floats in one instruction (vldmia): on Cortex-M an instruction saved per
  /// weight of the matrix kernels' inner loop. GCC never merges vldr into vldm, hence the asm.
  /// Fragile: GCC 12's register allocation around the fixed registers changes with unrelated edits
  /// to the tile (measured: spills in the 6x4 loop, +14% instructions); re-check the firmware
  /// benchmark's counts after touching generic::Product::tile.
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
// Assembly fragments of this vocabulary's exp and reduce16, shared with the Cortex-M4F kernels
// (kernels/<op>/cortex_m4f.hpp), so they stay defined (STF_-prefixed).
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
  /// simd_math::exp's one-lane operations, the same bits, for the kernels (the generic kernels call it; the
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
  /// simd_math::exp's constants in the order the assembly loads them (s16..s30 in exp_kernel, and in
  /// exp_sum of kernels/attention/cortex_m4f.hpp).
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
#if defined(__x86_64__) && !defined(__FMA__) && defined(__SSE2_MATH__)
  /// a·b + c, one rounding: x86-64 without FMA instructions (simd/fma_double.hpp: libm's fmaf is a
  /// call, and on a CPU without FMA a slow one)
  static V fma(V a, V b, V c) { return simd_math::fma_by_double(a, b, c); }
#else
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }  ///< a·b + c, one rounding
#endif
  static V fma_n(float a, V b, V c) { return fma(a, b, c); }  ///< a·b + c with a scalar a
  static V max(V a, V b) { return a > b ? a : b; }            ///< b when unordered, as x86 maxps
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
};

}  // namespace STF_VARIANT_NAMESPACE
}  // namespace stf::isa
