// statiformer — matrix products, generic, part: the int8 number format (kernels/QUANTIZATION.md), a
// second format of the product operation. The w8a8 linear written once for every target (plain
// integer loops: exact in any order, so the compiler may vectorize them as it likes); a target's own
// kernel where kernels/product/select.hpp's ProductInt8Select names one (x86: x86_int8.hpp;
// Cortex-M4F/M7: cortex_m4f_int8.hpp; Cortex-M55's Helium: helium_int8.hpp; NEON: neon_int8.hpp). The
// bits are ref::linear_w8a8's. The w8a32 linear, written once: int8 weights converted to float a
// chunk at a time and multiplied by the target's own float product (its selection, ProductSelect);
// the bits are ref::linear_w8a32's. See kernels/README.md.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/product/cortex_m4f_int8.hpp>
#include <statiformer/kernels/product/generic.hpp>
#include <statiformer/kernels/product/select.hpp>
#include <statiformer/kernels/product/x86_int8.hpp>

namespace stf::kernels_detail::generic {

/// int8 products: each row quantized with its own scale, int32 sums, the float epilogue.
template <class Tag>
struct ProductInt8 : Elementwise<Tag> {
  /// The target's own w8a8 linear where the selection names one, or void.
  using Linear = typename ProductInt8Select<Tag>::Linear;

  /// ref::quantize_row into q[0, quad_padded(k)) (zeros from k on); returns the row's scale. max|x|
  /// is taken on the bits: with the sign cleared, the order of the bit patterns as unsigned
  /// integers is the order of |x| for every non-NaN x, and the patterns of infinity and NaN are the
  /// largest (integer instructions: half the Cortex-M4F's float compare-and-move). The rounding to
  /// an integer is the add-subtract of 1.5·2²³, which rounds |v| < 2²² to nearest, ties to even
  /// (the default rounding mode), with no library call: the bits of nearbyint.
  /// pad = false: exactly q[0, k) (rows packed side by side: the attention's heads).
  static float quantize_row(const float* x, index_t k, std::int8_t* q, bool pad = true) {
    std::uint32_t m = 0;  // max |x| as bits
    for (index_t i = 0; i < k; ++i) {
      std::uint32_t b;
      std::memcpy(&b, x + i, 4);
      b &= 0x7FFFFFFFu;
      m = b > m ? b : m;
    }
    const bool finite = m < 0x7F800000u;  // (no NaN, no infinity)
    const float a = std::bit_cast<float>(m);
    const index_t k4 = pad ? quad_padded(k) : k;
    if (!finite || a < kMinQuantizedMax) {  // (a row of zeros among them)
      for (index_t i = 0; i < k4; ++i) q[i] = 0;
      return finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    }
    const float inv = 127.0f / a;          // (finite: a ≥ kMinQuantizedMax)
    constexpr float kRound = 12582912.0f;  // 1.5 · 2²³
    // |x| ≤ a, so |x · inv| ≤ 127 · (1 + 2⁻²⁴)², which rounds to at most 127: no clamp is needed
    for (index_t i = 0; i < k; ++i) {
      const float v = x[i] * inv;
      q[i] = static_cast<std::int8_t>((v + kRound) - kRound);
    }
    for (index_t i = k; i < k4; ++i) q[i] = 0;
    return a / 127.0f;
  }

  /// Kernels::quantize_rows (kernels/api.hpp): quantize_row over each row, exactly k bytes (the
  /// target's own loop where the selection names one: Helium's).
  static void quantize_rows(const float* x, index_t ldx, index_t rows, index_t k, std::int8_t* q, index_t ldq,
                            float* s) {
    if constexpr (!std::is_void_v<typename ProductInt8Select<Tag>::QuantizeRows>)
      ProductInt8Select<Tag>::QuantizeRows::quantize_rows(x, ldx, rows, k, q, ldq, s);
    else
      for (index_t r = 0; r < rows; ++r) s[r] = quantize_row(x + r * ldx, k, q + r * ldq, false);
  }

  /// The epilogue of one sum: fma(float(acc), s_x · s_w, *bias), or the product without a bias (the
  /// targets' own w8a8 linears call it too).
  static float dequantize(std::int32_t acc, float s_x, float s_w, const float* bias) {
    const float scale = s_x * s_w;
    const float t = static_cast<float>(acc);
    return bias ? std::fma(t, scale, *bias) : t * scale;
  }

  /// The activation pass over `rows` rows of `out` outputs (none for Fuse::none).
  static void activate(Fuse act, float* y, index_t rows, index_t out) {
    if (act != Fuse::none)
      for (index_t r = 0; r < rows; ++r) Elementwise<Tag>::activation(activation_of(act), y + r * out, out);
  }

  /// Kernels::linears_w8a8 (kernels/api.hpp). Generic: one row at a time, quantized once for every
  /// linear; a weight panel's outputs in an int32 array, the k-quads in order.
  static void linears_w8a8(const float* x, index_t rows, index_t in, const W8a8Linear* linears, index_t count,
                           std::int8_t* scratch) {
    if constexpr (!std::is_void_v<Linear>) {
      Linear::linears_w8a8(x, rows, in, linears, count, scratch);
    } else {
      const index_t in4 = quad_padded(in);
      for (index_t r = 0; r < rows; ++r) {
        const float s_x = quantize_row(x + r * in, in, scratch);
        for (index_t l = 0; l < count; ++l) {
          const W8a8Linear& L = linears[l];
          float* yr = L.y + r * L.out;
          for (index_t p0 = 0; p0 < L.out; p0 += kWeightPanel) {
            const index_t width = L.out - p0 < kWeightPanel ? L.out - p0 : kWeightPanel;
            const std::int8_t* wp = L.qw + p0 * in4;
            std::int32_t acc[kWeightPanel] = {};
            for (index_t k = 0; k < in4; k += kQuadK) {
              const std::int32_t x0 = scratch[k], x1 = scratch[k + 1], x2 = scratch[k + 2], x3 = scratch[k + 3];
              const std::int8_t* wk = wp + k * width;
              for (index_t o = 0; o < width; ++o)
                acc[o] += x0 * wk[4 * o] + x1 * wk[4 * o + 1] + x2 * wk[4 * o + 2] + x3 * wk[4 * o + 3];
            }
            for (index_t o = 0; o < width; ++o)
              yr[p0 + o] = dequantize(acc[o], s_x, L.s_w[p0 + o], L.bias ? L.bias + p0 + o : nullptr);
          }
          activate(L.act, yr, 1, L.out);
        }
      }
    }
  }

  /// Kernels::linear_w8a32 (kernels/api.hpp), on every target through its float product: per
  /// weight panel, chunks of kW8A32ChunkK reduction rows × kW8A32ChunkWidth outputs converted to
  /// float into `scratch` (a [chunk, width] float weight: float(int8) is exact), each chunk one
  /// call of the variant's linear_block that continues the sums of the chunk before (so the chunks
  /// compose into the canonical order over k from +0, whatever the chunk size), then the epilogue
  /// fma(acc, s_w[o], bias[o]) and act. The conversion is done once per call for all rows: with
  /// few rows it costs more than the product, so one row (a decoding step) converts each weight
  /// where it is used: by the target's own code where it has a W8a32Row (Helium, Cortex-M4F/M7),
  /// else on one-lane vocabularies here.
  static void linear_w8a32(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w,
                           const float* bias, index_t out, float* y, float* scratch, Fuse act) {
    const index_t in4 = quad_padded(in);
    if constexpr (!std::is_void_v<typename ProductInt8Select<Tag>::W8a32Row>) {
      if (rows == 1) {  // the target's own one-row product, each weight converted where it is used
        ProductInt8Select<Tag>::W8a32Row::product_w8a32_row(x, in, qw, out, y);
        return w8a32_epilogue(y, s_w, bias, out, act);
      }
    } else if constexpr (Elementwise<Tag>::L == 1) {
      // One row on a one-lane vocabulary (scalar): each weight is used once, so it is converted
      // where it is used, four outputs at a time, instead of into a chunk the product then reads
      // back (1×64→64 on the M4F, before it had its own: 30,137 instructions through the chunks).
      if (rows == 1) return linear_w8a32_row(x, in, qw, s_w, bias, out, y, act);
    }
    for (index_t p0 = 0; p0 < out; p0 += kWeightPanel) {
      const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
      const std::int8_t* wp = qw + p0 * in4;  // the panel: k-quads of `width` outputs
      for (index_t k0 = 0; k0 < in; k0 += kW8A32ChunkK) {
        const index_t kc = in - k0 < kW8A32ChunkK ? in - k0 : kW8A32ChunkK;
        for (index_t c0 = 0; c0 < width; c0 += kW8A32ChunkWidth) {  // outputs [c0, c0 + cw) of the panel
          const index_t cw = width - c0 < kW8A32ChunkWidth ? width - c0 : kW8A32ChunkWidth;
          index_t q0 = 0;  // the quads the target's own conversion took
          if constexpr (!std::is_void_v<typename ProductInt8Select<Tag>::W8a32>) {
            q0 = kc / kQuadK * kQuadK;
            ProductInt8Select<Tag>::W8a32::convert_w8a32(wp + k0 * width + 4 * c0, width, cw, kc / kQuadK, scratch);
          }
          for (index_t q = q0; q < kc; q += kQuadK) {  // k0 + q starts a quad: its bytes are [o][k % 4]
            const std::int8_t* wq = wp + (k0 + q) * width + 4 * c0;
            float* sq = scratch + q * cw;
            if (kc - q >= kQuadK) {
              for (index_t o = 0; o < cw; ++o) {
                sq[o] = static_cast<float>(wq[4 * o]);
                sq[cw + o] = static_cast<float>(wq[4 * o + 1]);
                sq[2 * cw + o] = static_cast<float>(wq[4 * o + 2]);
                sq[3 * cw + o] = static_cast<float>(wq[4 * o + 3]);
              }
            } else {
              for (index_t j = 0; j < kc - q; ++j)
                for (index_t o = 0; o < cw; ++o) sq[j * cw + o] = static_cast<float>(wq[4 * o + j]);
            }
          }
          Kernels<Tag>::linear_block(x + k0, in, rows, kc, WeightBlock{scratch, kc, cw}, cw, y + p0 + c0, out, nullptr,
                                     k0 > 0, Fuse::none);
        }
      }
    }
    if (in == 0)  // no product: acc = +0
      for (index_t i = 0; i < rows * out; ++i) y[i] = 0.0f;
    for (index_t r = 0; r < rows; ++r) w8a32_epilogue(y + r * out, s_w, bias, out, act);
  }

  /// y = fma(acc, s_w, bias) (acc · s_w without a bias), then act, over one row of outputs.
  static void w8a32_epilogue(float* yr, const float* s_w, const float* bias, index_t out, Fuse act) {
    if constexpr (!std::is_void_v<typename ProductInt8Select<Tag>::W8a32>)
      ProductInt8Select<Tag>::W8a32::epilogue_w8a32(yr, s_w, bias, out);
    else if (bias)
      for (index_t o = 0; o < out; ++o) yr[o] = std::fma(yr[o], s_w[o], bias[o]);
    else
      for (index_t o = 0; o < out; ++o) yr[o] = yr[o] * s_w[o];
    if (act != Fuse::none) Elementwise<Tag>::activation(activation_of(act), yr, out);
  }

  /// linear_w8a32 for one row: acc[o] = fma(x[k], float(w[k, o]), acc[o]) over k in order from +0
  /// (the float product's canonical order: the same bits), four outputs of a panel at a time, the
  /// bytes read where the k-quads store them (w[k, o] at the panel + (k - k % 4)·width + 4·o + k % 4).
  static void linear_w8a32_row(const float* x, index_t in, const std::int8_t* qw, const float* s_w, const float* bias,
                               index_t out, float* y, Fuse act) {
    const index_t in4 = quad_padded(in);
    for (index_t p0 = 0; p0 < out; p0 += kWeightPanel) {
      const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
      const std::int8_t* wp = qw + p0 * in4;
      index_t o = 0;
      for (; o + 4 <= width; o += 4) {
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        const std::int8_t* wq = wp + 4 * o;  // this quad's bytes of outputs o..o+3
        auto step = [&](const std::int8_t* w, float xk) {
          a0 = std::fma(xk, static_cast<float>(w[0]), a0);
          a1 = std::fma(xk, static_cast<float>(w[4]), a1);
          a2 = std::fma(xk, static_cast<float>(w[8]), a2);
          a3 = std::fma(xk, static_cast<float>(w[12]), a3);
        };
        index_t k = 0;
        for (; k + kQuadK <= in; k += kQuadK, wq += kQuadK * width) {  // whole quads, unrolled
          step(wq, x[k]);
          step(wq + 1, x[k + 1]);
          step(wq + 2, x[k + 2]);
          step(wq + 3, x[k + 3]);
        }
        for (index_t j = 0; k + j < in; ++j) step(wq + j, x[k + j]);
        y[p0 + o] = a0;
        y[p0 + o + 1] = a1;
        y[p0 + o + 2] = a2;
        y[p0 + o + 3] = a3;
      }
      for (; o < width; ++o) {
        float a = 0.0f;
        const std::int8_t* wq = wp + 4 * o;
        for (index_t k = 0; k < in; k += kQuadK, wq += kQuadK * width) {
          const index_t n = in - k < kQuadK ? in - k : kQuadK;
          for (index_t j = 0; j < n; ++j) a = std::fma(x[k + j], static_cast<float>(wq[j]), a);
        }
        y[p0 + o] = a;
      }
    }
    w8a32_epilogue(y, s_w, bias, out, act);
  }
};

}  // namespace stf::kernels_detail::generic
