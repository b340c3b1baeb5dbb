// statiformer — matrix products on Arm NEON (aarch64; armv7-a with NEON and VFPv4), part: the int8
// number format (kernels/QUANTIZATION.md). The w8a8 linear of the neon variant (selected by
// kernels/product/select.hpp's ProductInt8Select; the generic one is kernels/product/int8.hpp):
//  - each group of up to kQuantizedRowGroup rows is quantized into the scratch, one row every
//    quantized_row_stride(in) bytes from its first 16-aligned byte (the scratch may have any
//    alignment; the sdot tiles' 16-byte row loads then never cross a cache line, and armv7's
//    broadcast loads, vld1.32 {d[]}, read aligned words). aarch64: vector
//    max|x| on the bits (as the generic code), one multiply and `vcvtnq` (ties to even) per
//    element; armv7: the generic quantize_row (scalar VFP: armv7 NEON flushes denormals to zero,
//    and a product x · (127 / a) through a denormal would change q);
//  - every 64-output weight panel then passes over the group in register tiles of rows × vectors
//    of 4 outputs. One 16-byte weight vector of a k-quad is 4 outputs × 4 k (the layout,
//    [k / 4][o][k % 4]), so the tiles read the weights as they are stored. Two kinds of tile:
//    - Int8Sdot (aarch64 with the dot product extension, __ARM_FEATURE_DOTPROD): per k-quad and
//      output vector one `sdot` by lane (vdotq_laneq_s32) per row, the row's 16 bytes (4 quads)
//      loaded once for four quads; tiles of 4 rows × 4 vectors (16 sums, 4 rows, 4 weights: 24 of
//      the 32 registers);
//    - Int8Smull (every NEON target; aarch64 builds without +dotprod, armv7): per two k-quads
//      q, q + 1 and half weight vector (2 outputs × 4 k), `smull` of quad q's weights by the row's
//      quad q broadcast, `smlal` of quad q + 1's, and `sadalp` into int32 lanes. Exact: each int16
//      lane holds two products, 2 · 127² = 32258 < 2¹⁵, and sadalp widens before it adds (one
//      more product in int16 could overflow: no more are accumulated there). The int32 lanes hold
//      two sums of each output, added pairwise at the end. Tiles of 4 rows × 2 vectors on aarch64,
//      2 × 2 on armv7 (16 of its Q registers);
//  - the epilogue y = fma(float(acc), s_x · s_w, bias) (or the product without a bias): on aarch64
//    per vector (vcvtq, vmulq, vfmaq: IEEE, denormals kept); on armv7 per output in scalar VFP
//    (generic::ProductInt8::dequantize), for the same reason as the quantization. Then the
//    activation as a pass over the group's rows (Kernels<Tag>::activation: the float linear's bits).
// Integer sums are exact in any order: the bits are ref::linear_w8a8's.
//
// Instructions of the inner loops (GCC 12 -O3, the Release build; counted in objdump), per
// multiply-add: sdot 4 × 4 tile, 98 per four quads = 1024 multiply-adds, 0.096; smull 4 × 2 tile
// on aarch64, 76 per two quads = 256, 0.30 (one sum spilled and reloaded, broadcasts as ldr +
// dup); smull 2 × 2 on armv7, 44 per two quads = 128, 0.34. The generic code
// (kernels/product/int8.hpp, which GCC vectorizes over a panel's outputs, the sums in memory): 33
// per 64 on aarch64 (0.52), 49 per 64 on armv7 (0.77).
//
// Why the tiles are a template parameter (ProductInt8<Tag, Tiles>) and not a compile-time branch
// inside one struct: the sdot tiles exist only where the translation unit is compiled with
// +dotprod. The library's neon variant gets them from the build's flags; the kernel tests also
// compile one translation unit with -march=armv8.2-a+dotprod (tests/unit/int8_neon_dotprod.cpp)
// so that the sdot code runs under qemu whatever the build's flags. ProductInt8<neon, Int8Sdot>
// and ProductInt8<neon, Int8Smull> are different classes: neither translation unit's copy can
// stand in for the other's at link time, and no class means different things in two of them.
//
// Compiles to nothing unless NEON is enabled with aarch64 or VFPv4's fused multiply-add (the
// targets of the neon variant, kernels/registry.hpp).
#pragma once

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>

#if defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
#include <arm_neon.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace stf::kernels_detail {
namespace generic {
template <class Tag>
struct ProductInt8;  // kernels/product/int8.hpp: quantize_row, dequantize (armv7)
}  // namespace generic

namespace neon {

/// One register tile's operands: quantized rows (row stride ldq bytes, 16-aligned), their scales
/// s, k-quads, the weights of the tile's first output (ldw bytes per quad: the panel's width · 4),
/// n outputs from there (1 to 4 · the tile's vectors), and where they go (row stride ldy).
struct Int8Tile {
  const std::int8_t* q;
  index_t ldq;
  const float* s;
  index_t quads;
  const std::int8_t* w;
  index_t ldw, n;
  const float* s_w;
  const float* bias;
  float* y;
  index_t ldy;
};

/// What both kinds of tile share: partial loads and the epilogue.
struct Int8TileCommon {
  /// The weights of `n` outputs (1..4) of one quad: 4n bytes, zeros after them (the bytes past a
  /// panel's last output belong to the next quad, or lie past the end of the weights).
  static int8x16_t load_weights(const std::int8_t* p, index_t n) {
    if (n >= 4) return vld1q_s8(p);
    std::int8_t t[16] = {};
    std::memcpy(t, p, static_cast<std::size_t>(4 * n));
    return vld1q_s8(t);
  }

  /// The row's quad at p in every 32-bit lane (GCC 12: ldr s + dup, or ld1r).
  static int8x16_t broadcast_quad(const std::int8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
  }

  /// y[0, n) = fma(float(acc), s_x · s_w, bias) of one vector of 4 sums (n ≤ 4 outputs stored).
  template <class Tag>
  static void store(int32x4_t acc, float s_x, const float* s_w, const float* bias, float* y, index_t n) {
#if defined(__aarch64__)
    float sw[4] = {}, b[4] = {}, v[4];
    const bool full = n >= 4;
    if (!full) {
      std::memcpy(sw, s_w, static_cast<std::size_t>(n) * 4);
      if (bias) std::memcpy(b, bias, static_cast<std::size_t>(n) * 4);
    }
    // (vcvtq: to nearest, ties to even, as float(acc); one rounded multiply, one fused multiply-add)
    const float32x4_t f = vcvtq_f32_s32(acc);
    const float32x4_t scale = vmulq_f32(vdupq_n_f32(s_x), vld1q_f32(full ? s_w : sw));
    const float32x4_t r = bias ? vfmaq_f32(vld1q_f32(full ? bias : b), f, scale) : vmulq_f32(f, scale);
    if (full) {
      vst1q_f32(y, r);
    } else {
      vst1q_f32(v, r);
      std::memcpy(y, v, static_cast<std::size_t>(n) * 4);
    }
#else
    // armv7: scalar VFP, which keeps denormals (NEON's vfma would flush a tiny s_x · s_w)
    std::int32_t a[4];
    vst1q_s32(a, acc);
    for (index_t j = 0; j < n; ++j)
      y[j] = generic::ProductInt8<Tag>::dequantize(a[j], s_x, s_w[j], bias ? bias + j : nullptr);
#endif
  }
};

/// The tiles without the dot product extension: int16 pairs by smull + smlal, widened by sadalp
/// (see the file's comment).
template <class Tag>
struct Int8Smull : Int8TileCommon {
#if defined(__aarch64__)
  static constexpr index_t kRows = 4, kVecs = 2;
#else
  static constexpr index_t kRows = 2, kVecs = 2;
#endif

  /// A row's quad, broadcast: on aarch64 in every 32-bit lane of a Q register (smull2 and smlal2
  /// read the high halves in place); on armv7 in a D register, which both halves of a weight vector
  /// (D registers themselves) multiply: half the registers of a Q broadcast (with Q, GCC 12 spilled
  /// two sums of the 2 × 2 tile in the loop).
#if defined(__aarch64__)
  using Quad = int8x16_t;
  static Quad quad(const std::int8_t* p) { return broadcast_quad(p); }
  static int16x8_t mul_lo(int8x16_t w, Quad x) { return vmull_s8(vget_low_s8(w), vget_low_s8(x)); }
  static int16x8_t mla_lo(int16x8_t p, int8x16_t w, Quad x) { return vmlal_s8(p, vget_low_s8(w), vget_low_s8(x)); }
  static int16x8_t mul_hi(int8x16_t w, Quad x) { return vmull_high_s8(w, x); }
  static int16x8_t mla_hi(int16x8_t p, int8x16_t w, Quad x) { return vmlal_high_s8(p, w, x); }
#else
  using Quad = int8x8_t;
  static Quad quad(const std::int8_t* p) {         // (p is 4-aligned: the rows start 16-aligned)
    using Word [[gnu::may_alias]] = std::int32_t;  // (the bytes were stored as int8)
    return vreinterpret_s8_s32(vld1_dup_s32(reinterpret_cast<const Word*>(p)));
  }
  static int16x8_t mul_lo(int8x16_t w, Quad x) { return vmull_s8(vget_low_s8(w), x); }
  static int16x8_t mla_lo(int16x8_t p, int8x16_t w, Quad x) { return vmlal_s8(p, vget_low_s8(w), x); }
  static int16x8_t mul_hi(int8x16_t w, Quad x) { return vmull_s8(vget_high_s8(w), x); }
  static int16x8_t mla_hi(int16x8_t p, int8x16_t w, Quad x) { return vmlal_s8(p, vget_high_s8(w), x); }
#endif

  /// Lanes (o0, o0, o1, o1) and (o2, o2, o3, o3) added pairwise into (o0, o1, o2, o3).
  static int32x4_t fold(int32x4_t lo, int32x4_t hi) {
#if defined(__aarch64__)
    return vpaddq_s32(lo, hi);
#else
    return vcombine_s32(vpadd_s32(vget_low_s32(lo), vget_high_s32(lo)), vpadd_s32(vget_low_s32(hi), vget_high_s32(hi)));
#endif
  }

  /// R rows × NV vectors of 4 outputs (the last holding n - 4·(NV - 1)).
  template <int R, int NV>
  static void tile(const Int8Tile& t) {
    int32x4_t acc[R][NV][2];  // [..][0]: outputs 0, 1 of the vector (two lanes each); [1]: 2, 3
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (int i = 0; i < NV; ++i) acc[r][i][0] = acc[r][i][1] = vdupq_n_s32(0);
    }
    const index_t tail = t.n - 4 * (NV - 1);
    const std::int8_t* wk = t.w;
    const std::int8_t* xk = t.q;
    index_t k = 0;
    for (; k + 2 <= t.quads; k += 2, wk += 2 * t.ldw, xk += 2 * kQuadK) {
      int8x16_t w0[NV], w1[NV];
#pragma GCC unroll 16
      for (int i = 0; i < NV; ++i) {
        const index_t n = i + 1 == NV ? tail : 4;
        w0[i] = load_weights(wk + 16 * i, n);
        w1[i] = load_weights(wk + t.ldw + 16 * i, n);
      }
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const Quad x0 = quad(xk + r * t.ldq), x1 = quad(xk + r * t.ldq + kQuadK);
#pragma GCC unroll 16
        for (int i = 0; i < NV; ++i) {
          acc[r][i][0] = vpadalq_s16(acc[r][i][0], mla_lo(mul_lo(w0[i], x0), w1[i], x1));
          acc[r][i][1] = vpadalq_s16(acc[r][i][1], mla_hi(mul_hi(w0[i], x0), w1[i], x1));
        }
      }
    }
    if (k < t.quads) {  // an odd quad last: one product per int16 lane
      int8x16_t w0[NV];
#pragma GCC unroll 16
      for (int i = 0; i < NV; ++i) w0[i] = load_weights(wk + 16 * i, i + 1 == NV ? tail : 4);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const Quad x0 = quad(xk + r * t.ldq);
#pragma GCC unroll 16
        for (int i = 0; i < NV; ++i) {
          acc[r][i][0] = vpadalq_s16(acc[r][i][0], mul_lo(w0[i], x0));
          acc[r][i][1] = vpadalq_s16(acc[r][i][1], mul_hi(w0[i], x0));
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (int i = 0; i < NV; ++i)
        store<Tag>(fold(acc[r][i][0], acc[r][i][1]), t.s[r], t.s_w + 4 * i, t.bias ? t.bias + 4 * i : nullptr,
                   t.y + r * t.ldy + 4 * i, i + 1 == NV ? tail : 4);
    }
  }
};

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
/// The tiles with the dot product extension: sdot by lane (see the file's comment).
template <class Tag>
struct Int8Sdot : Int8TileCommon {
  static constexpr index_t kRows = 4, kVecs = 4;

  /// Quad J of the rows' 16-byte blocks x[R] against the weights of that quad at wk.
  template <int J, int R, int NV>
  static void quad(int32x4_t (&acc)[R][NV], const int8x16_t (&x)[R], const std::int8_t* wk, index_t tail) {
    int8x16_t w[NV];
#pragma GCC unroll 16
    for (int i = 0; i < NV; ++i) w[i] = load_weights(wk + 16 * i, i + 1 == NV ? tail : 4);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (int i = 0; i < NV; ++i) acc[r][i] = vdotq_laneq_s32(acc[r][i], w[i], x[r], J);
    }
  }

  /// R rows × NV vectors of 4 outputs (the last holding n - 4·(NV - 1)).
  template <int R, int NV>
  static void tile(const Int8Tile& t) {
    int32x4_t acc[R][NV];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (int i = 0; i < NV; ++i) acc[r][i] = vdupq_n_s32(0);
    }
    const index_t tail = t.n - 4 * (NV - 1);
    const std::int8_t* wk = t.w;
    const std::int8_t* xk = t.q;
    index_t k = 0;
    for (; k + 4 <= t.quads; k += 4, wk += 4 * t.ldw, xk += 4 * kQuadK) {
      int8x16_t x[R];
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) x[r] = vld1q_s8(xk + r * t.ldq);
      quad<0>(acc, x, wk, tail);
      quad<1>(acc, x, wk + t.ldw, tail);
      quad<2>(acc, x, wk + 2 * t.ldw, tail);
      quad<3>(acc, x, wk + 3 * t.ldw, tail);
    }
    for (; k < t.quads; ++k, wk += t.ldw, xk += kQuadK) {  // the last 1-3 quads: the row's quad broadcast
      int8x16_t x[R];
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) x[r] = broadcast_quad(xk + r * t.ldq);
      quad<0>(acc, x, wk, tail);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (int i = 0; i < NV; ++i)
        store<Tag>(acc[r][i], t.s[r], t.s_w + 4 * i, t.bias ? t.bias + 4 * i : nullptr, t.y + r * t.ldy + 4 * i,
                   i + 1 == NV ? tail : 4);
    }
  }
};
#endif

/// The NEON w8a8 linear over the tiles `Tiles` (Int8Smull or Int8Sdot; see the file's comment).
template <class Tag, class Tiles>
struct ProductInt8 {
  static constexpr index_t kGroup = kQuantizedRowGroup;

  /// ref::quantize_row into q[0, quad_padded(n)) (aarch64: q[0, quantized_row_stride(n))), zeros
  /// from n on; returns the row's scale.
  static float quantize(const float* x, index_t n, std::int8_t* q) {
#if defined(__aarch64__)
    // max |x| on the bits, as the generic quantize_row: with the sign cleared, unsigned order is
    // the order of |x|, and infinities and NaNs are the largest patterns
    const uint32x4_t magnitude = vdupq_n_u32(0x7FFFFFFFu);
    uint32x4_t mv = vdupq_n_u32(0);
    index_t i = 0;
    for (; i + 4 <= n; i += 4) mv = vmaxq_u32(mv, vandq_u32(vreinterpretq_u32_f32(vld1q_f32(x + i)), magnitude));
    std::uint32_t m = vmaxvq_u32(mv);
    for (; i < n; ++i) {
      std::uint32_t b;
      std::memcpy(&b, x + i, 4);
      b &= 0x7FFFFFFFu;
      m = b > m ? b : m;
    }
    const bool finite = m < 0x7F800000u;
    const float a = std::bit_cast<float>(m);
    const index_t ld = quantized_row_stride(n);
    if (!finite || a < kMinQuantizedMax) {  // (a row of zeros among them)
      std::memset(q, 0, static_cast<std::size_t>(ld));
      return finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    }
    const float32x4_t inv = vdupq_n_f32(127.0f / a);
    // (|x · inv| rounds to at most 127 (int8.hpp): the clamps change nothing, they keep the packs safe)
    const int16x8_t hi = vdupq_n_s16(127), lo = vdupq_n_s16(-127);
    for (index_t j = 0; j < ld; j += 16) {
      const float* p = x + j;
      float t[16];
      if (j + 16 > n) {  // the row's last block, zeros after it (their q is 0)
        std::memset(t, 0, sizeof t);
        std::memcpy(t, x + j, static_cast<std::size_t>(n - j) * 4);
        p = t;
      }
      int16x8_t h[2];
#pragma GCC unroll 2
      for (int u = 0; u < 2; ++u) {
        // (vcvtnq: to nearest, ties to even, whatever the rounding mode)
        const int32x4_t c0 = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(p + 8 * u), inv));
        const int32x4_t c1 = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(p + 8 * u + 4), inv));
        h[u] = vmaxq_s16(vminq_s16(vcombine_s16(vqmovn_s32(c0), vqmovn_s32(c1)), hi), lo);
      }
      vst1q_s8(q + j, vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])));
    }
    return a / 127.0f;
#else
    // armv7: the generic scalar code (VFP keeps denormals; see the file's comment)
    return generic::ProductInt8<Tag>::quantize_row(x, n, q);
#endif
  }

  template <int R = 1>
  static void rows(index_t rows_left, index_t nv, const Int8Tile& t) {
    if constexpr (R < Tiles::kRows) {
      if (rows_left > R) return rows<R + 1>(rows_left, nv, t);
    }
    vectors<R>(nv, t);
  }
  template <int R, int NV = 1>
  static void vectors(index_t nv, const Int8Tile& t) {
    if constexpr (NV < Tiles::kVecs) {
      if (nv > NV) return vectors<R, NV + 1>(nv, t);
    }
    Tiles::template tile<R, NV>(t);
  }

  /// Kernels::linears_w8a8 (kernels/api.hpp): per group of rows the quantization, then each linear's
  /// tiles.
  static void linears_w8a8(const float* x, index_t rows_total, index_t in, const W8a8Linear* linears, index_t count,
                           std::int8_t* scratch) {
    const index_t ld = quantized_row_stride(in);
    // the rows from the scratch's first 16-aligned byte: linear_w8a8_scratch_bytes has two bytes
    // an element, these rows one, so the 15 bytes skipped at most fit (ld ≥ 16 where in > 0)
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(scratch);
    std::int8_t* base = scratch + ((16 - (address & 15)) & 15);
    float s[kGroup] = {};
    for (index_t r0 = 0; r0 < rows_total; r0 += kGroup) {
      const index_t n = rows_total - r0 < kGroup ? rows_total - r0 : kGroup;
      for (index_t r = 0; r < n; ++r) s[r] = quantize(x + (r0 + r) * in, in, base + r * ld);
      for (index_t l = 0; l < count; ++l) panels(linears[l], in, r0, n, base, s);
    }
  }

  /// One linear's products with a call's quantized rows [r0, r0 + n) (linears_w8a8: from `base`,
  /// quantized_row_stride(in) bytes apart; scales s), and its activation.
  static void panels(const W8a8Linear& L, index_t in, index_t r0, index_t n, const std::int8_t* base, const float* s) {
    const index_t in4 = quad_padded(in), quads = in4 / kQuadK, ld = quantized_row_stride(in), out = L.out;
    const std::int8_t* qw = L.qw;
    const float *s_w = L.s_w, *bias = L.bias;
    float* y = L.y;
    const Fuse act = L.act;
    constexpr index_t step = 4 * Tiles::kVecs;  // outputs of a tile
    for (index_t p0 = 0; p0 < out; p0 += kWeightPanel) {
      const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
      const std::int8_t* wp = qw + p0 * in4;  // the panel: k-quads of `width` outputs
      for (index_t r = 0; r < n; r += Tiles::kRows) {
        const index_t tr = n - r < Tiles::kRows ? n - r : Tiles::kRows;
        for (index_t o = 0; o < width; o += step) {
          const index_t tn = width - o < step ? width - o : step;
          const Int8Tile t{base + r * ld,
                           ld,
                           s + r,
                           quads,
                           wp + o * kQuadK,
                           width * kQuadK,
                           tn,
                           s_w + p0 + o,
                           bias ? bias + p0 + o : nullptr,
                           y + (r0 + r) * out + p0 + o,
                           out};
          rows(tr, (tn + 3) / 4, t);
        }
      }
    }
    if (act != Fuse::none)
      for (index_t r = 0; r < n; ++r) Kernels<Tag>::activation(activation_of(act), y + (r0 + r) * out, out);
  }
};

}  // namespace neon
}  // namespace stf::kernels_detail
#endif
