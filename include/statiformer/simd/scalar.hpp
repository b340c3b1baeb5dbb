// statiformer — SIMD vocabulary, scalar: one lane of plain C++. The same small set of operations
// every ISA header provides; each is one IEEE operation, so kernels written on this vocabulary give
// the same bits on every ISA.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include <statiformer/config.hpp>
#include <statiformer/simd/isa.hpp>

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
};

}  // namespace stf::isa
