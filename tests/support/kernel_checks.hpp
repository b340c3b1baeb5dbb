// The kernel checks, written once (issue 22): each compares a kernel variant K with the reference
// (stf::ref) at the cases of the one case list (kernel_cases.hpp). Two runners call them:
// tests/unit/test_kernels.cpp (Catch2, every registry variant the CPU can run, on the hosts and
// under qemu-user) and examples/firmware/kernel_check.cpp (the Cortex-M kernels, whose assembly and
// intrinsics run only there). A runner is an Env:
//
//   struct Env {
//     Buffers buf;                 // caller-owned storage, at least Capacity<...>'s sizes
//     bool flushes_denormals;      // the variant flushes denormal results (armv7 NEON, MVE)
//     index_t max_head_dim, max_keys;  // attention cases beyond these are skipped (buffers)
//     index_t max_rows;            // the int8 attention's query rows up to this (Capacity's MaxRows)
//     void expect(const char* op, const float* got, const float* want, index_t n,
//                 std::initializer_list<Size> sizes, bool flushed);  // report a difference
//   };
//
// expect compares with first_difference below and decides itself whether two NaNs of other bits
// are equal (Catch2's runner: yes, as the suite always did; the firmware's: no, bit for bit).
//
// Heap-free, no stdio, no test framework (the firmware includes it).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/reference.hpp>

#include "kernel_cases.hpp"

namespace stf_checks {
using namespace stf;
using namespace stf_cases;

/// A name and value of a case, for the mismatch message.
struct Size {
  const char* name;
  index_t value;
};

/// The floats (and bytes) the checks need, for attention up to MaxHeadDim and MaxKeys, and query
/// rows up to MaxRows.
template <index_t MaxHeadDim, index_t MaxKeys, index_t MaxRows = largest(kAttentionRowCases)>
struct Capacity {
  static constexpr index_t kLinX = largest(kLinearRows) * largest(kLinearIns);
  static constexpr index_t kBlkX = largest(kBlockRows) * largest(kBlockIns);
  static constexpr index_t kLongX = largest(kLongRows) * kLongIn;
  static constexpr index_t kTr = largest(kTransposeSizes) * (largest(kTransposeSizes) + largest(kTransposePads));
  static constexpr index_t kDense = 1024;  // exp over its whole range
  static constexpr index_t max3(index_t a, index_t b, index_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }
  static constexpr index_t x = max3(max3(kLinX, kBlkX, kLongX), kTr,
                                    max3(largest(kLayerNormRowCounts) * largest(kRowLengths), MaxKeys*(MaxHeadDim + 5),
                                         0));  // (K rows: check_attention_w8a8's, attention_lane_rows_heads')
  static constexpr index_t w = max3(largest(kLinearIns) * largest(kLinearOuts),
                                    largest(kBlockIns) * largest(kBlockOuts), kLongIn* largest(kLongOuts));
  static constexpr index_t bias = max3(largest(kLinearOuts), largest(kBlockOuts), largest(kLongOuts));
  /// outputs, plus 8 guard floats
  static constexpr index_t y =
      max3(max3(largest(kLinearRows) * largest(kLinearOuts), largest(kBlockRows) * largest(kBlockOuts), kDense), kTr,
           largest(kLayerNormRowCounts) * largest(kRowLengths)) +
      8;
  static constexpr index_t rows = MaxRows > largest(kAttentionRowCases) ? MaxRows : largest(kAttentionRowCases);
  static constexpr index_t model = MaxHeadDim + 5;  // heads inside a wider row
  static constexpr index_t q = rows * model;
  static constexpr index_t kt = MaxHeadDim * (MaxKeys + 2);
  static constexpr index_t v = MaxKeys * model;
  static constexpr index_t scratch = attention_scratch_floats(rows, MaxKeys, MaxHeadDim) + rows * MaxKeys;
  static constexpr index_t allow = rows * MaxKeys;
  // int8 (check_linear_w8a8): weights in k-quads, their scales, the linear's scratch, the
  // reference's quantized row; the case near the int32 limit needs the *_limit sizes on top
  static constexpr index_t qw =
      max3(max3(quad_padded(largest(kLinearIns)) * largest(kLinearOuts), quad_padded(kLongIn) * largest(kLongOuts),
                quad_padded(largest(kQuantSpecialIns)) * largest(kQuantSpecialOuts)),
           2 * MaxKeys * model + q, 0);  // (check_attention_w8a8: int8 K, V and Q)
  static constexpr index_t s_w = max3(bias, largest(kQuantSpecialOuts), kQuantLimitOuts);
  static constexpr index_t q_scratch = max3(linear_w8a8_scratch_bytes(largest(kLinearRows), largest(kLinearIns)),
                                            linear_w8a8_scratch_bytes(largest(kLongRows), kLongIn),
                                            linear_w8a8_scratch_bytes(kQuantSpecialRows, largest(kQuantSpecialIns)));
  static constexpr index_t q_row = kLongIn > largest(kLinearIns) ? kLongIn : largest(kLinearIns);
  static constexpr index_t limit_x = kQuantLimitRows * ref::kMaxQuantizedIn;
  static constexpr index_t limit_qw = quad_padded(ref::kMaxQuantizedIn) * kQuantLimitOuts;
  // w8a32 (check_linear_w8a32): the float scratch of one chunk of a weight panel
  static constexpr index_t w32_scratch =
      linear_w8a32_scratch_floats(kLongIn > largest(kLinearIns) ? kLongIn : largest(kLinearIns));
  static constexpr index_t limit_scratch = linear_w8a8_scratch_bytes(kQuantLimitRows, ref::kMaxQuantizedIn);
  // rows around the quantized groups: their rows and weights (the scratch is q_scratch's)
  static constexpr index_t group_x = largest(kQuantGroupRows) * kQuantGroupIn;
  static constexpr index_t group_qw = quad_padded(kQuantGroupIn) * kQuantGroupOuts + 12;
  static_assert(linear_w8a8_scratch_bytes(largest(kQuantGroupRows), kQuantGroupIn) <= q_scratch);
};

/// Where the checks work: the runner's buffers (sizes: Capacity).
struct Buffers {
  float *x, *w, *bias, *got, *want;
  float *q, *kt, *vv, *s_got, *s_want, *o_got, *o_want;
  std::uint8_t* allow;
  ref::RowMask* masks;
  ref::MaskArrays* mask_arrays;
};

/// Where the int8 checks work (sizes: Capacity's qw, s_w, q_scratch, q_row). limit_*: the case near
/// the int32 limit (limit_x, limit_qw; scratch and q_row then hold limit_scratch and
/// ref::kMaxQuantizedIn bytes), or null where the runner has no room for it (the firmware).
struct QuantBuffers {
  std::int8_t *qw, *scratch, *q_row;
  float* s_w;
  float* limit_x;
  std::int8_t* limit_qw;
  float* w32_scratch;     ///< Capacity's w32_scratch floats
  float* group_x;         ///< Capacity's group_x floats: the rows around the quantized groups
  std::int8_t* group_qw;  ///< Capacity's group_qw bytes
};

/// Index of the first element of got that differs from want, or n. flushed: a zero of the same sign
/// may stand for a reference result below 1e-36 in magnitude (a computation through a denormal,
/// which the variant flushes); nan_any: two NaNs are equal whatever their bits.
inline index_t first_difference(const float* got, const float* want, index_t n, bool flushed, bool nan_any) {
  if (std::memcmp(got, want, n * sizeof(float)) == 0) return n;
  for (index_t i = 0; i < n; ++i) {
    if (std::memcmp(got + i, want + i, sizeof(float)) == 0) continue;
    if (nan_any && std::isnan(got[i]) && std::isnan(want[i])) continue;
    const bool zeroed = flushed && got[i] == 0.0f && std::signbit(got[i]) == std::signbit(want[i]) &&
                        want[i] < 1e-36f && want[i] > -1e-36f;
    if (!zeroed) return i;
  }
  return n;
}

/// dot and sum of rows of every length.
template <class K, class Env>
void check_dot_sum(Env& env) {
  Buffers& b = env.buf;
  for (index_t n : kRowLengths) {
    fill(b.x, n, 1 + static_cast<std::uint32_t>(n));
    fill(b.w, n, 99 + static_cast<std::uint32_t>(n));
    b.got[0] = K::dot(b.x, b.w, n), b.want[0] = ref::dot(b.x, b.w, n);
    b.got[1] = K::sum(b.x, n), b.want[1] = ref::sum(b.x, n);
    env.expect("dot", b.got, b.want, 1, {{"n", n}}, false);
    env.expect("sum", b.got + 1, b.want + 1, 1, {{"n", n}}, false);
  }
}

/// transpose with padded strides; guard values around the outputs show writes outside.
template <class K, class Env>
void check_transpose(Env& env) {
  Buffers& b = env.buf;
  for (index_t rows : kTransposeSizes)
    for (index_t cols : kTransposeSizes)
      for (index_t pad : kTransposePads) {
        const index_t ld_src = cols + pad, ld_dst = rows + pad, n = cols * ld_dst;
        fill(b.x, rows * ld_src, static_cast<std::uint32_t>(rows * 131 + cols));
        for (index_t i = 0; i < n + 8; ++i) b.got[i] = b.want[i] = -7.0f;
        K::transpose(b.x, rows, cols, ld_src, b.got, ld_dst);
        ref::transpose(b.x, rows, cols, ld_src, b.want, ld_dst);
        env.expect("transpose", b.got, b.want, n + 8, {{"rows", rows}, {"cols", cols}, {"pad", pad}}, false);
      }
}

/// Three float linears over the same rows (Kernels::linears) against ref::linear of each, row by row:
/// one vector wide each at the widths of AVX-512 and AVX2 (x86 shares their register tiles) and mixed
/// widths (one linear each), the second without a bias, the third's rows padded (ldy = out + 3; the
/// padding must stay as it was), rows around the shared tiles' cuts and reductions in one cache block
/// and beyond it.
template <class K, class Env>
void check_linears(Env& env) {
  Buffers& b = env.buf;
  fill(b.x, Capacity<1, 1>::x, 81);
  fill(b.w, Capacity<1, 1>::w, 82);
  fill(b.bias, Capacity<1, 1>::bias, 83);
  constexpr index_t kOuts[][3] = {{16, 16, 16}, {8, 8, 8}, {16, 17, 16}, {4, 4, 4}};
  for (const auto& outs : kOuts)
    for (index_t rows : {index_t{1}, index_t{2}, index_t{5}, index_t{6}, index_t{7}, index_t{10}, index_t{12},
                         index_t{13}, index_t{25}})
      for (index_t in : {index_t{1}, index_t{5}, index_t{16}, index_t{17}, index_t{64}, largest(kLinearIns)}) {
        F32Linear ls[3];
        index_t w0 = 0, y0 = 0;
        for (index_t l = 0; l < 3; ++l) {
          const index_t ldy = l == 2 ? outs[l] + 3 : outs[l];
          ls[l] = {b.w + w0, l == 1 ? nullptr : b.bias + 20 * l, outs[l], b.got + y0, ldy};
          w0 += in * outs[l];
          y0 += rows * ldy;
        }
        static_assert(25 * (16 + 17 + 19) + 8 <= largest(kLinearRows) * largest(kLinearOuts), "outputs fit");
        static_assert(3 * 17 * largest(kLinearIns) <= largest(kLinearIns) * largest(kLinearOuts), "weights fit");
        static_assert(25 * 17 <= largest(kLinearRows) * largest(kLinearIns), "rows fit");
        for (index_t i = 0; i < y0 + 8; ++i) b.got[i] = b.want[i] = -7.0f;
        K::linears(b.x, rows, in, ls, 3);
        for (index_t l = 0; l < 3; ++l)
          for (index_t r = 0; r < rows; ++r)
            ref::linear(b.x + r * in, 1, in, ls[l].w, ls[l].bias, outs[l], b.want + (ls[l].y - b.got) + r * ls[l].ldy,
                        Fuse::none);
        env.expect("linears (three linears over the same rows)", b.got, b.want, y0 + 8,
                   {{"rows", rows}, {"in", in}, {"outs[0]", outs[0]}, {"outs[1]", outs[1]}, {"outs[2]", outs[2]}},
                   false);
      }
}

/// linear with and without bias, each fused activation; then a long reduction (several k blocks), and one
/// over several panel blocks by two row tiles; then check_linears.
template <class K, class Env>
void check_linear(Env& env) {
  Buffers& b = env.buf;
  fill(b.x, Capacity<1, 1>::x, 3);
  fill(b.w, Capacity<1, 1>::w, 4);
  fill(b.bias, Capacity<1, 1>::bias, 5);
  for (index_t rows : kLinearRows)
    for (index_t in : kLinearIns)
      for (index_t out : kLinearOuts)
        for (Fuse act : {Fuse::none, Fuse::relu, Fuse::gelu, Fuse::gelu_tanh})
          for (int with_bias = 0; with_bias < 2; ++with_bias) {
            const float* bias = with_bias ? b.bias : nullptr;
            // guard floats past the end: a store beyond the outputs shows up as a difference
            for (index_t i = 0; i < rows * out + 8; ++i) b.got[i] = b.want[i] = -7.0f;
            K::linear(b.x, rows, in, b.w, bias, out, b.got, act);
            ref::linear(b.x, rows, in, b.w, bias, out, b.want, act);
            // (the erf GELU of a large negative input goes through a denormal; the tanh GELU's
            // results and steps stay normal: it is held to the bits here too)
            env.expect("linear", b.got, b.want, rows * out + 8,
                       {{"rows", rows}, {"in", in}, {"out", out}, {"act", index_t(act)}, {"bias", index_t(with_bias)}},
                       act == Fuse::gelu && env.flushes_denormals);
          }
  for (index_t rows : kLongRows)
    for (index_t out : kLongOuts) {
      K::linear(b.x, rows, kLongIn, b.w, b.bias, out, b.got, Fuse::none);
      ref::linear(b.x, rows, kLongIn, b.w, b.bias, out, b.want, Fuse::none);
      env.expect("linear (long reduction)", b.got, b.want, rows * out, {{"rows", rows}, {"in", kLongIn}, {"out", out}},
                 false);
    }
  {
    constexpr index_t rows = kPanelBlocksRows, in = kPanelBlocksIn, out = kPanelBlocksOut;
    static_assert(rows * in <= Capacity<1, 1>::x && in * out <= Capacity<1, 1>::w && out <= Capacity<1, 1>::bias &&
                  rows * out + 8 <= Capacity<1, 1>::y);
    for (index_t i = 0; i < rows * out + 8; ++i) b.got[i] = b.want[i] = -7.0f;
    K::linear(b.x, rows, in, b.w, b.bias, out, b.got, Fuse::relu);
    ref::linear(b.x, rows, in, b.w, b.bias, out, b.want, Fuse::relu);
    env.expect("linear (panel blocks)", b.got, b.want, rows * out + 8, {{"rows", rows}, {"in", in}, {"out", out}},
               false);
  }
  check_linears<K>(env);
}

/// Several w8a8 linears over the same rows (Kernels::linears_w8a8: each group of rows quantized
/// once for all of them) against ref::linear_w8a8 of each: three linears of different widths,
/// activations and biases, the second's weights at an odd address (Helium: not at a word), at the
/// linear sizes' rows and some of their reductions, and, where the runner has the buffers, rows
/// around the quantized groups (the rows of a later group must serve every linear too).
template <class K, class Env>
void check_linears_w8a8(Env& env) {
  Buffers& b = env.buf;
  QuantBuffers& qb = env.qbuf;
  auto run = [&](const float* x, index_t rows, index_t in, const std::int8_t* qw, const index_t(&outs)[3]) {
    const index_t total = outs[0] + outs[1] + outs[2], in4 = quad_padded(in);
    const Fuse acts[3] = {Fuse::relu, Fuse::none, Fuse::gelu};
    W8a8Linear ls[3];
    index_t w0 = 0, o0 = 0;
    for (index_t l = 0; l < 3; ++l) {
      ls[l] = {qw + w0 + (l == 1 ? 1 : 0), qb.s_w + o0, l == 1 ? nullptr : b.bias + o0, outs[l],
               b.got + rows * o0,          acts[l]};
      w0 += in4 * outs[l] + 4;
      o0 += outs[l];
    }
    for (index_t i = 0; i < rows * total + 8; ++i) b.got[i] = b.want[i] = -7.0f;
    K::linears_w8a8(x, rows, in, ls, 3, qb.scratch);
    for (index_t l = 0; l < 3; ++l) {
      const index_t at = ls[l].y - b.got;
      ref::linear_w8a8(x, rows, in, ls[l].qw, ls[l].s_w, ls[l].bias, outs[l], b.want + at, qb.q_row, acts[l]);
    }
    env.expect("linears_w8a8 (three linears over the same rows)", b.got, b.want, rows * total + 8,
               {{"rows", rows}, {"in", in}, {"outs[0]", outs[0]}, {"outs[1]", outs[1]}, {"outs[2]", outs[2]}},
               env.flushes_denormals);
  };
  for (index_t o = 0; o < Capacity<1, 1>::s_w; ++o) qb.s_w[o] = static_cast<float>(o % 5 + 1) * 0.0027f;
  fill(b.x, Capacity<1, 1>::x, 71);
  fill_i8(qb.qw, Capacity<1, 1>::qw, 72);
  fill(b.bias, Capacity<1, 1>::bias, 73);
  // (three panels' worth and an edge: 17 + 64 + 33 outputs, within check_linear's largest out)
  constexpr index_t outs[3] = {17, 64, 33};
  static_assert(outs[0] + outs[1] + outs[2] <= largest(kLinearOuts), "the outputs fit in check_linear's");
  for (index_t rows : kLinearRows)
    for (index_t in : {index_t{1}, index_t{5}, index_t{16}, index_t{33}, largest(kLinearIns)}) {
      static_assert(quad_padded(largest(kLinearIns)) * (outs[0] + outs[1] + outs[2]) + 12 <= Capacity<1, 1>::qw,
                    "the weights fit in check_linear_w8a8's");
      run(b.x, rows, in, qb.qw, outs);
    }
  {  // rows around the quantized groups
    constexpr index_t in = kQuantGroupIn, few[3] = {5, 7, 3};
    static_assert(largest(kQuantGroupRows) * (few[0] + few[1] + few[2]) <= largest(kLinearRows) * largest(kLinearOuts),
                  "the outputs fit in check_linear's");
    static_assert(quad_padded(in) * (few[0] + few[1] + few[2]) + 12 <= Capacity<1, 1>::group_qw, "the weights fit");
    fill(qb.group_x, Capacity<1, 1>::group_x, 78);
    fill_i8(qb.group_qw, quad_padded(in) * (few[0] + few[1] + few[2]) + 12, 79);
    for (index_t rows : kQuantGroupRows) run(qb.group_x, rows, in, qb.group_qw, few);
  }
}

/// w8a8 linear (kernels/QUANTIZATION.md) against ref::linear_w8a8: every size of check_linear (the
/// quads, register tiles and 64-wide panels), each activation, with and without bias; the long
/// reduction; special rows (zeros, NaN, ±inf, ties, huge values); and, where the runner has the
/// buffers, the reduction of ref::kMaxQuantizedIn steps, |acc| 2147479576. The weights' padding
/// bytes (k from in to the quad) hold other values than zero: the kernels must not read them as
/// products (the quantized rows are zero there).
template <class K, class Env>
void check_linear_w8a8(Env& env) {
  Buffers& b = env.buf;
  QuantBuffers& qb = env.qbuf;
  auto scales = [&](index_t out) {
    for (index_t o = 0; o < out; ++o) qb.s_w[o] = static_cast<float>(o % 7 + 1) * 0.0031f;
  };
  auto run = [&](const char* what, const float* x, index_t rows, index_t in, const std::int8_t* qw, index_t out,
                 const float* bias, Fuse act) {
    for (index_t i = 0; i < rows * out + 8; ++i) b.got[i] = b.want[i] = -7.0f;
    K::linear_w8a8(x, rows, in, qw, qb.s_w, bias, out, b.got, qb.scratch, act);
    ref::linear_w8a8(x, rows, in, qw, qb.s_w, bias, out, b.want, qb.q_row, act);
    env.expect(what, b.got, b.want, rows * out + 8,
               {{"rows", rows}, {"in", in}, {"out", out}, {"act", index_t(act)}, {"bias", index_t(bias != nullptr)}},
               act == Fuse::gelu && env.flushes_denormals);
  };
  fill(b.x, Capacity<1, 1>::x, 61);
  fill_i8(qb.qw, Capacity<1, 1>::qw, 62);
  fill(b.bias, Capacity<1, 1>::bias, 63);
  scales(Capacity<1, 1>::s_w);
  for (index_t rows : kLinearRows)
    for (index_t in : kLinearIns)
      for (index_t out : kLinearOuts)
        for (Fuse act : {Fuse::none, Fuse::relu, Fuse::gelu, Fuse::gelu_tanh})
          for (int with_bias = 0; with_bias < 2; ++with_bias)
            run("linear_w8a8", b.x, rows, in, qb.qw, out, with_bias ? b.bias : nullptr, act);
  for (index_t rows : kLongRows)
    for (index_t out : kLongOuts)
      run("linear_w8a8 (long reduction)", b.x, rows, kLongIn, qb.qw, out, b.bias, Fuse::none);
  // weights at an odd address (the Cortex-M4F tiles' ldrd and Helium's gathers need them 4-aligned:
  // another path)
  for (index_t rows : {1, 2, 3})
    for (index_t in : {5, 64})
      for (index_t out : {4, 17, 65}) {
        static_assert(quad_padded(64) * 65 + 1 <= Capacity<1, 1>::qw);
        run("linear_w8a8 (weights not word-aligned)", b.x, rows, in, qb.qw + 1, out, b.bias, Fuse::relu);
      }
  // special rows
  const float inf = std::numeric_limits<float>::infinity();
  for (index_t in : kQuantSpecialIns)
    for (index_t out : kQuantSpecialOuts) {
      float* x = b.x;
      fill(x, kQuantSpecialRows * in, 64 + static_cast<std::uint32_t>(in));
      for (index_t i = 0; i < in; ++i) {
        x[1 * in + i] = (i % 2 ? -0.0f : 0.0f);                                   // zeros: q = 0, s_x = 0
        x[5 * in + i] = static_cast<float>(static_cast<int>(i % 10) - 5) + 0.5f;  // ties: a = 127, 127/a = 1
        x[6 * in + i] *= 3e38f;                                                   // huge (127/a is tiny, normal)
        x[7 * in + i] = -0.3f;                                                    // constant: q = -127
        x[9 * in + i] *= 1e-37f;   // below kMinQuantizedMax: q = 0, s_x = 0 (127 / a would overflow)
        x[10 * in + i] *= 1e-38f;  // denormals, beside kMinQuantizedMax below: q = 0 or ±1
      }
      x[10 * in + in / 2] = kMinQuantizedMax;
      x[2 * in + in / 2] = std::numeric_limits<float>::quiet_NaN();  // the row's outputs are NaN
      x[3 * in + in - 1] = inf;
      x[4 * in] = -inf;
      x[5 * in + in / 3] = 127.0f;
      x[8 * in + in - 1] = 5.0f;  // the largest value last (after the vectors' first blocks)
      for (Fuse act : {Fuse::none, Fuse::relu})
        for (int with_bias = 0; with_bias < 2; ++with_bias)
          run("linear_w8a8 (special rows)", x, kQuantSpecialRows, in, qb.qw, out, with_bias ? b.bias : nullptr, act);
    }
  // the reduction near the int32 limit: rows of +1 and -1 against channels of +127 and -127
  if (qb.limit_x) {
    constexpr index_t in = ref::kMaxQuantizedIn, out = kQuantLimitOuts;
    for (index_t i = 0; i < in; ++i) qb.limit_x[i] = 1.0f, qb.limit_x[in + i] = -1.0f;
    for (index_t k = 0; k < in; ++k)
      for (index_t o = 0; o < out; ++o)
        qb.limit_qw[qweight_index(in, out, k, o)] = static_cast<std::int8_t>(o % 3 == 1 ? -127 : 127);
    scales(out);
    for (int with_bias = 0; with_bias < 2; ++with_bias)
      run("linear_w8a8 (reduction near the int32 limit)", qb.limit_x, kQuantLimitRows, in, qb.limit_qw, out,
          with_bias ? b.bias : nullptr, Fuse::none);
  }
  {  // rows around the groups a kernel quantizes at a time (kQuantizedRowGroup, and twice as many on
     // x86's AVX512-VNNI path: x86_int8.hpp)
    constexpr index_t group_in = kQuantGroupIn, group_out = kQuantGroupOuts;
    static_assert(largest(kQuantGroupRows) * group_out <= largest(kLinearRows) * largest(kLinearOuts),
                  "the outputs fit in check_linear's");
    scales(group_out);
    fill(qb.group_x, Capacity<1, 1>::group_x, 77);
    for (index_t k = 0; k < group_in; ++k)
      for (index_t o = 0; o < group_out; ++o)
        qb.group_qw[qweight_index(group_in, group_out, k, o)] = static_cast<std::int8_t>((k * 37 + o * 11) % 255 - 127);
    for (index_t rows : kQuantGroupRows)
      for (Fuse act : {Fuse::none, Fuse::relu})
        run("linear_w8a8 (rows around the quantized groups)", qb.group_x, rows, group_in, qb.group_qw, group_out,
            b.bias, act);
  }
  check_linears_w8a8<K>(env);
}

/// linear_w8a32 (int8 weights, float rows and product) against ref::linear_w8a32, bit for bit: the
/// linear sizes (rows around the register tiles, in around the quads and kW8A32ChunkK, out around
/// the 64-wide panels), each activation, with and without bias; the long reduction (many chunks);
/// weights at an odd address; rows of zeros, NaN, ±inf and huge values, together and each alone
/// (the one-row kernels). The weights' padding bytes are not zero: the kernels must not read them.
template <class K, class Env>
void check_linear_w8a32(Env& env) {
  Buffers& b = env.buf;
  QuantBuffers& qb = env.qbuf;
  auto run = [&](const char* what, const float* x, index_t rows, index_t in, index_t out, const float* bias, Fuse act,
                 const std::int8_t* qw = nullptr) {
    if (!qw) qw = qb.qw;
    for (index_t i = 0; i < rows * out + 8; ++i) b.got[i] = b.want[i] = -7.0f;
    K::linear_w8a32(x, rows, in, qw, qb.s_w, bias, out, b.got, qb.w32_scratch, act);
    ref::linear_w8a32(x, rows, in, qw, qb.s_w, bias, out, b.want, act);
    env.expect(what, b.got, b.want, rows * out + 8,
               {{"rows", rows}, {"in", in}, {"out", out}, {"act", index_t(act)}, {"bias", index_t(bias != nullptr)}},
               act == Fuse::gelu && env.flushes_denormals);
  };
  fill(b.x, Capacity<1, 1>::x, 71);
  fill_i8(qb.qw, Capacity<1, 1>::qw, 72);
  fill(b.bias, Capacity<1, 1>::bias, 73);
  for (index_t o = 0; o < Capacity<1, 1>::s_w; ++o) qb.s_w[o] = static_cast<float>(o % 5 + 1) * 0.0043f;
  for (index_t rows : kLinearRows)
    for (index_t in : kLinearIns)
      for (index_t out : kLinearOuts)
        for (Fuse act : {Fuse::none, Fuse::relu, Fuse::gelu, Fuse::gelu_tanh})
          for (int with_bias = 0; with_bias < 2; ++with_bias)
            run("linear_w8a32", b.x, rows, in, out, with_bias ? b.bias : nullptr, act);
  for (index_t rows : kLongRows)
    for (index_t out : kLongOuts) run("linear_w8a32 (long reduction)", b.x, rows, kLongIn, out, b.bias, Fuse::none);
  for (index_t rows : {1, 3})  // weights at an odd address (the Cortex-M4F one-row kernel loads words)
    for (index_t in : {5, 17, 64})
      for (index_t out : {13, 64, 65}) {
        static_assert(quad_padded(64) * 65 + 1 <= Capacity<1, 1>::qw);
        run("linear_w8a32 (weights not word-aligned)", b.x, rows, in, out, b.bias, Fuse::none, qb.qw + 1);
      }
  const float inf = std::numeric_limits<float>::infinity();
  for (index_t in : kQuantSpecialIns)
    for (index_t out : kQuantSpecialOuts) {
      float* x = b.x;
      fill(x, kQuantSpecialRows * in, 74 + static_cast<std::uint32_t>(in));
      for (index_t i = 0; i < in; ++i) {
        x[1 * in + i] = (i % 2 ? -0.0f : 0.0f);
        x[6 * in + i] *= 3e38f;  // sums that overflow
      }
      x[2 * in + in / 2] = std::numeric_limits<float>::quiet_NaN();
      x[3 * in + in - 1] = inf;
      x[4 * in] = -inf;
      for (Fuse act : {Fuse::none, Fuse::relu})
        for (int with_bias = 0; with_bias < 2; ++with_bias)
          run("linear_w8a32 (special rows)", x, kQuantSpecialRows, in, out, with_bias ? b.bias : nullptr, act);
      for (index_t r = 0; r < kQuantSpecialRows; ++r)  // each alone: a decoding step's one-row kernels
        run("linear_w8a32 (a special row alone)", x + r * in, 1, in, out, b.bias, Fuse::relu);
    }
}

/// linear_block over blocks of the reduction and of the outputs (what FeedForward does with its
/// chunks of hidden units, panel-aligned or not, each block continuing the sums of the previous
/// one) gives linear's bits.
template <class K, class Env>
void check_linear_blocks(Env& env) {
  Buffers& b = env.buf;
  fill(b.x, Capacity<1, 1>::x, 41);
  fill(b.w, Capacity<1, 1>::w, 42);
  fill(b.bias, Capacity<1, 1>::bias, 43);
  for (index_t rows : kBlockRows)
    for (index_t in : kBlockIns)
      for (index_t out : kBlockOuts)
        for (index_t col_block : kBlockColumns) {
          ref::linear(b.x, rows, in, b.w, b.bias, out, b.want, Fuse::relu);
          const Cuts cuts = reduction_cuts(in);
          for (index_t o0 = 0; o0 < out; o0 += col_block) {
            const index_t cols = out - o0 < col_block ? out - o0 : col_block;
            for (index_t c = 0; c + 1 < 4; ++c) {
              const index_t k0 = cuts.at[c], k1 = cuts.at[c + 1];
              if (k0 == k1) continue;
              const bool last = k1 == in;
              K::linear_block(b.x + k0, in, rows, k1 - k0, {b.w, in, out, k0, o0}, cols, b.got + o0, out,
                              last ? b.bias + o0 : nullptr, k0 > 0, last ? Fuse::relu : Fuse::none);
            }
          }
          env.expect("linear_block", b.got, b.want, rows * out,
                     {{"rows", rows}, {"in", in}, {"out", out}, {"column block", col_block}}, false);
        }
}

/// attention_rows and attention_rows_weights for groups of rows (outputs aliasing the query rows,
/// as in the layers), and attention_row, at every mask kind and fill, up to the runner's buffers.
template <class K, class Env>
void check_attention(Env& env) {
  Buffers& b = env.buf;
  const auto fits = [&](index_t hd, index_t n_keys) { return hd <= env.max_head_dim && n_keys <= env.max_keys; };
  // the fill only matters where a row has keys masked out of its range: holes, none left
  const auto fill_matters = [](MaskKind kind) {
    return kind == MaskKind::holes || kind == MaskKind::none_by_end || kind == MaskKind::none_by_allow ||
           kind == MaskKind::torch;
  };
  for (index_t hd : kHeadDims)
    for (index_t rows : kAttentionRowCases)
      for (index_t n_keys : kKeyCounts)
        for (MaskKind kind : kMaskKinds)
          for (MaskFill mf : kMaskFills) {
            if (!fits(hd, n_keys)) continue;
            if (mf == MaskFill::neg_1e9 && !fill_matters(kind)) continue;
            const index_t d_model = hd + 5;        // heads inside a wider row, as in multi-head
            const index_t kt_stride = n_keys + 2;  // Kᵀ rows inside a wider cache, as when decoding
            fill(b.kt, hd * kt_stride, 22 + static_cast<std::uint32_t>(hd), 1.5f);
            fill(b.vv, n_keys * d_model, 23);
            fill(b.q, rows * d_model, 21 + static_cast<std::uint32_t>(n_keys), 1.5f);
            make_masks(kind, rows, n_keys, b.allow, b.masks, b.mask_arrays);
            const std::initializer_list<Size> sizes = {
                {"head_dim", hd}, {"rows", rows}, {"keys", n_keys}, {"mask", index_t(kind)}, {"fill", index_t(mf)}};
            // streaming, outputs aliasing the query rows as in the layers
            std::memcpy(b.o_got, b.q, rows * d_model * sizeof(float));
            std::memcpy(b.o_want, b.q, rows * d_model * sizeof(float));
            K::attention_rows(b.o_got, d_model, rows, b.kt, kt_stride, b.vv, d_model, hd, n_keys, b.masks, mf, b.s_got,
                              b.o_got, d_model);
            ref::attention_rows(b.o_want, d_model, rows, b.kt, kt_stride, b.vv, d_model, hd, n_keys, b.masks, mf,
                                b.s_want, b.o_want, d_model);
            env.expect("attention_rows", b.o_got, b.o_want, rows * d_model, sizes, false);
            // with the weights
            std::memcpy(b.o_got, b.q, rows * d_model * sizeof(float));
            std::memcpy(b.o_want, b.q, rows * d_model * sizeof(float));
            K::attention_rows_weights(b.o_got, d_model, rows, b.kt, kt_stride, b.vv, d_model, hd, n_keys, b.masks, mf,
                                      b.s_got, b.o_got, d_model);
            ref::attention_rows_weights(b.o_want, d_model, rows, b.kt, kt_stride, b.vv, d_model, hd, n_keys, b.masks,
                                        mf, b.s_want, b.o_want, d_model);
            env.expect("attention_rows_weights (weights)", b.s_got, b.s_want, rows * n_keys, sizes, false);
            env.expect("attention_rows_weights (outputs)", b.o_got, b.o_want, rows * d_model, sizes, false);
          }
  // attention_rows of the query rows in b.q (the outputs over copies of them, as in the layers) against the
  // reference, every mask as make_masks left it, fill -inf
  const auto expect_rows = [&](const char* what, index_t rows, index_t hd, index_t n_keys, index_t d_model,
                               index_t kt_stride, std::initializer_list<Size> sizes) {
    std::memcpy(b.o_got, b.q, rows * d_model * sizeof(float));
    std::memcpy(b.o_want, b.q, rows * d_model * sizeof(float));
    K::attention_rows(b.o_got, d_model, rows, b.kt, kt_stride, b.vv, d_model, hd, n_keys, b.masks, MaskFill::neg_inf,
                      b.s_got, b.o_got, d_model);
    ref::attention_rows(b.o_want, d_model, rows, b.kt, kt_stride, b.vv, d_model, hd, n_keys, b.masks, MaskFill::neg_inf,
                        b.s_want, b.o_want, d_model);
    env.expect(what, b.o_got, b.o_want, rows * d_model, sizes, false);
  };
  // scores spread wider than exp's range (s - max below -87.34, exp's +0) in the row groups: the
  // kernels that leave exp's select out where the block's scores cannot reach it must keep it here
  for (index_t rows : {2, 4, 6, 13, 16})
    for (index_t n_keys : {10, 33, 64}) {
      const index_t hd = 16, d_model = hd + 5, kt_stride = n_keys + 2;
      if (!fits(hd, n_keys)) continue;
      fill(b.kt, hd * kt_stride, 31, 12.0f);
      fill(b.vv, n_keys * d_model, 32);
      fill(b.q, rows * d_model, 33 + static_cast<std::uint32_t>(n_keys), 12.0f);
      make_masks(MaskKind::all, rows, n_keys, b.allow, b.masks, b.mask_arrays);
      const std::initializer_list<Size> sizes = {{"head_dim", hd}, {"rows", rows}, {"keys", n_keys}, {"wide", 1}};
      expect_rows("attention_rows, wide scores", rows, hd, n_keys, d_model, kt_stride, sizes);
    }
  // special values in the queries, keys and values (NaN, ±inf, -0, scores that overflow), in the row
  // groups, the targets' own group kernels, AVX-512's rows in lanes (9 to 16 rows over at most as many
  // keys) and its softmax steps in lanes over key blocks (16 rows over 33 keys). A NaN score among finite ones makes
  // its row NaN (its exp is NaN): Helium's exp took it for a score below exp's range and gave +0 (MVE's `lt` holds for
  // unordered compares), found by this case
  for (index_t hd : {8, 16})
    for (index_t rows : {6, 9, 16})
      for (index_t n_keys : {5, 9, 33}) {
        const index_t d_model = hd + 5, kt_stride = n_keys + 2;
        if (!fits(hd, n_keys)) continue;
        const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
        fill(b.kt, hd * kt_stride, 41, 1.5f);
        fill(b.vv, n_keys * d_model, 42);
        fill(b.q, rows * d_model, 43 + static_cast<std::uint32_t>(hd), 1.5f);
        b.q[0 * d_model + 1] = nan;    // row 0: every score NaN
        b.q[1 * d_model + 0] = inf;    // row 1: ±inf scores (or NaN where the key's element is 0)
        b.q[2 * d_model + 2] = 3e38f;  // row 2: products that overflow
        for (index_t d = 0; d < hd; ++d) b.q[3 * d_model + d] = -0.0f;  // row 3: scores ±0, NaN at key 2
        b.kt[1 * kt_stride + 2] = -inf;                                 // key 2: ±inf scores (-0 · -inf: NaN)
        b.vv[3 * d_model + 1] = inf;                                    // key 3's values: +inf and NaN
        b.vv[3 * d_model + 4] = nan;
        for (MaskKind kind : {MaskKind::causal, MaskKind::all}) {  // (all: the targets' groups of one key_end)
          make_masks(kind, rows, n_keys, b.allow, b.masks, b.mask_arrays);
          const std::initializer_list<Size> sizes = {
              {"head_dim", hd}, {"rows", rows}, {"keys", n_keys}, {"mask", index_t(kind)}, {"special", 1}};
          expect_rows("attention_rows, special values", rows, hd, n_keys, d_model, kt_stride, sizes);
        }
      }
  // AVX-512's softmax steps in lanes over key blocks at every head size they take (16 rows of a multiple
  // of 16 dimensions up to 64; kHeadDims has no 48), over a partial block, whole blocks and spans
  for (index_t hd : {16, 48, 64})
    for (index_t n_keys : {17, 48, 129})
      for (MaskKind kind : {MaskKind::all, MaskKind::padding}) {
        const index_t rows = 16, d_model = hd + 5, kt_stride = n_keys + 2;
        if (!fits(hd, n_keys)) continue;
        fill(b.kt, hd * kt_stride, 51 + static_cast<std::uint32_t>(hd), 1.5f);
        fill(b.vv, n_keys * d_model, 52);
        fill(b.q, rows * d_model, 53 + static_cast<std::uint32_t>(n_keys), 1.5f);
        make_masks(kind, rows, n_keys, b.allow, b.masks, b.mask_arrays);
        const std::initializer_list<Size> sizes = {
            {"head_dim", hd}, {"rows", rows}, {"keys", n_keys}, {"mask", index_t(kind)}, {"lane blocks", 1}};
        expect_rows("attention_rows, lane blocks", rows, hd, n_keys, d_model, kt_stride, sizes);
      }
  // single rows, the one-row entry point, into a separate output
  for (index_t hd : kHeadDims)
    for (index_t n_keys : kKeyCounts)
      for (MaskKind kind : kMaskKinds)
        for (MaskFill mf : kMaskFills) {
          if (!fits(hd, n_keys)) continue;
          fill(b.kt, hd * (n_keys + 2), 8, 1.5f);
          fill(b.vv, n_keys * (hd + 3), 9);
          fill(b.q, hd, 7, 1.5f);
          make_masks(kind, 1, n_keys, b.allow, b.masks, b.mask_arrays);
          K::attention_row(b.q, b.kt, n_keys + 2, b.vv, hd + 3, hd, n_keys, b.masks[0], mf, b.s_got, b.o_got);
          ref::attention_row(b.q, b.kt, n_keys + 2, b.vv, hd + 3, hd, n_keys, b.masks[0], mf, b.s_want, b.o_want);
          env.expect("attention_row", b.o_got, b.o_want, hd,
                     {{"head_dim", hd}, {"keys", n_keys}, {"mask", index_t(kind)}, {"fill", index_t(mf)}}, false);
        }
  // the heads of one query row (attention_heads, a decoding step): the outputs aliasing the query
  // row, as in the layers; heads · head_dim within the buffers' widest head
  for (index_t heads : kAttentionHeadCounts)
    for (index_t hd : kHeadDims)
      for (index_t n_keys : kKeyCounts)
        for (MaskKind kind : kMaskKinds)
          for (MaskFill mf : kMaskFills) {
            if (heads * hd > env.max_head_dim || n_keys > env.max_keys) continue;
            if (mf == MaskFill::neg_1e9 && !fill_matters(kind)) continue;
            const index_t width = heads * hd, v_stride = width + 3, kt_stride = n_keys + 2;
            fill(b.kt, width * kt_stride, 31 + static_cast<std::uint32_t>(heads), 1.5f);
            fill(b.vv, n_keys * v_stride, 32);
            fill(b.q, width, 33 + static_cast<std::uint32_t>(n_keys), 1.5f);
            make_masks(kind, 1, n_keys, b.allow, b.masks, b.mask_arrays);
            std::memcpy(b.o_got, b.q, width * sizeof(float));
            std::memcpy(b.o_want, b.q, width * sizeof(float));
            K::attention_heads(b.o_got, heads, b.kt, kt_stride, b.vv, v_stride, hd, n_keys, b.masks[0], mf, b.s_got,
                               b.o_got);
            ref::attention_heads(b.o_want, heads, b.kt, kt_stride, b.vv, v_stride, hd, n_keys, b.masks[0], mf, b.s_want,
                                 b.o_want);
            env.expect(
                "attention_heads", b.o_got, b.o_want, width,
                {{"heads", heads}, {"head_dim", hd}, {"keys", n_keys}, {"mask", index_t(kind)}, {"fill", index_t(mf)}},
                false);
          }
  // the heads of several query rows in one call (attention_rows_heads, the layers' heads when one call
  // takes all of a head's rows): each head's rows as a call of its own, outputs aliasing the queries;
  // AVX-512's rows in lanes take 9 to 16 rows of 8 or 16 dimensions over at most as many keys, two heads of
  // 8 side by side (an odd head alone)
  for (index_t heads : {1, 2, 3, 4, 5})
    for (index_t hd : {4, 8, 16})
      for (index_t rows : kAttentionRowCases)
        for (index_t n_keys : {1, 7, 10, 16, 17, 33})
          for (MaskKind kind : {MaskKind::all, MaskKind::padding, MaskKind::causal, MaskKind::holes}) {
            if (heads * hd > env.max_head_dim || n_keys > env.max_keys) continue;
            const index_t width = heads * hd, d_model = width + 3, kt_stride = n_keys + 2;
            fill(b.kt, width * kt_stride, 41 + static_cast<std::uint32_t>(heads), 1.5f);
            fill(b.vv, n_keys * d_model, 42);
            // causal: key 1, which row 0 alone does not see, with a value of +inf in each head (the rows
            // that see it output +inf there; row 0 must not see it: a kernel that runs the keys every
            // row sees unmasked has to stop before it)
            if (kind == MaskKind::causal && n_keys > 1)
              for (index_t h = 0; h < heads; ++h)
                b.vv[d_model + h * hd + h % hd] = std::numeric_limits<float>::infinity();
            fill(b.q, rows * d_model, 43 + static_cast<std::uint32_t>(n_keys), 1.5f);
            make_masks(kind, rows, n_keys, b.allow, b.masks, b.mask_arrays);
            std::memcpy(b.o_got, b.q, rows * d_model * sizeof(float));
            std::memcpy(b.o_want, b.q, rows * d_model * sizeof(float));
            K::attention_rows_heads(b.o_got, d_model, rows, heads, b.kt, kt_stride, b.vv, d_model, hd, n_keys, b.masks,
                                    MaskFill::neg_inf, b.s_got, b.o_got, d_model);
            for (index_t h = 0; h < heads; ++h) {
              const index_t off = h * hd;
              ref::attention_rows(b.o_want + off, d_model, rows, b.kt + off * kt_stride, kt_stride, b.vv + off, d_model,
                                  hd, n_keys, b.masks, MaskFill::neg_inf, b.s_want, b.o_want + off, d_model);
            }
            const std::initializer_list<Size> sizes = {
                {"heads", heads}, {"head_dim", hd}, {"rows", rows}, {"keys", n_keys}, {"mask", index_t(kind)}};
            env.expect("attention_rows_heads", b.o_got, b.o_want, rows * d_model, sizes, false);
            // the same heads from K's rows (attention_lane_rows_heads: AVX-512's rows in lanes without Kᵀ) where
            // the variant takes the call: attention_rows_heads' outputs; where it declines, nothing written
            for (index_t j = 0; j < n_keys; ++j)
              for (index_t d = 0; d < width; ++d) b.x[j * d_model + d] = b.kt[d * kt_stride + j];
            std::memcpy(b.o_got, b.q, rows * d_model * sizeof(float));
            const bool took = K::attention_lane_rows_heads(b.o_got, d_model, rows, heads, b.x, d_model, b.vv, d_model,
                                                           hd, n_keys, b.masks, false, b.o_got, d_model);
            env.expect(took ? "attention_lane_rows_heads" : "attention_lane_rows_heads (declined)", b.o_got,
                       took ? b.o_want : b.q, rows * d_model, sizes, false);
            // every row the same prefix (all, padding): the same call with row 0's mask alone (one_mask), which
            // is all the kernel may read; the same outputs, declined or not as above
            if (kind == MaskKind::all || kind == MaskKind::padding) {
              const ref::RowMask one[1] = {b.masks[0]};
              std::memcpy(b.o_got, b.q, rows * d_model * sizeof(float));
              const bool took_one = K::attention_lane_rows_heads(b.o_got, d_model, rows, heads, b.x, d_model, b.vv,
                                                                 d_model, hd, n_keys, one, true, b.o_got, d_model);
              const float took_f = took, took_one_f = took_one;
              env.expect("attention_lane_rows_heads, one mask (takes the calls it takes with every row's)", &took_one_f,
                         &took_f, 1, sizes, false);
              env.expect(
                  took_one ? "attention_lane_rows_heads, one mask" : "attention_lane_rows_heads, one mask (declined)",
                  b.o_got, took_one ? b.o_want : b.q, rows * d_model, sizes, false);
            }
          }
}

/// The w8a8 attention (attention_rows_w8a8) against ref::attention_rows_w8a8, and quantize_rows
/// against ref::quantize_row, at every mask kind and fill: Q, K and V rows quantized per head inside
/// wider rows (as the layers store them), a V row of zeros (scale 0) and a K row of one value among
/// the keys. Int8 data in qb.qw (Capacity::qw), scales in b.w.
template <class K, class Env>
void check_attention_w8a8(Env& env) {
  Buffers& b = env.buf;
  QuantBuffers& qb = env.qbuf;
  constexpr index_t kHeads[] = {1, 3, 8, 16, 17, 64};
  constexpr index_t kRows[] = {1, 3, 13, kAttentionInt8ManyRows};
  const auto fill_matters = [](MaskKind kind) {
    return kind == MaskKind::holes || kind == MaskKind::none_by_end || kind == MaskKind::none_by_allow ||
           kind == MaskKind::torch;
  };
  for (index_t hd : kHeads)
    for (index_t n_keys : kKeyCounts) {
      if (hd > env.max_head_dim || n_keys > env.max_keys) continue;
      const index_t d_model = hd + 5;
      std::int8_t* k8 = qb.qw;
      std::int8_t* v8 = k8 + n_keys * d_model;
      std::int8_t* q8 = v8 + n_keys * d_model;
      float* s_q = b.w;
      float* s_k = s_q + env.max_rows;
      float* s_v = s_k + n_keys;
      float* kr = b.x;  // K rows (not transposed)
      fill(kr, n_keys * d_model, 32 + static_cast<std::uint32_t>(hd), 1.5f);
      fill(b.vv, n_keys * d_model, 33);
      for (index_t d = 0; d < hd; ++d) b.vv[(n_keys / 2) * d_model + d] = 0.0f;   // a V row of zeros
      for (index_t d = 0; d < hd; ++d) kr[(n_keys / 3) * d_model + d] *= 1e-37f;  // a K row below kMinQuantizedMax
      for (index_t d = 0; d < hd; ++d) kr[(n_keys - 1) * d_model + d] = 0.25f;    // a constant K row
      // quantize_rows against the reference, into the layers' layout (the bytes between the rows'
      // head_dim ones not written), then rows holding an infinity or a NaN
      std::memset(k8, 0x5A, n_keys * d_model);
      K::quantize_rows(kr, d_model, n_keys, hd, k8, d_model, s_k);
      const auto first_bad = [&](const float* x, index_t n, const std::int8_t* qx, const float* s8) {
        for (index_t j = 0; j < n; ++j) {
          std::int8_t want[largest(kHeadDims)];
          const float s = ref::quantize_row(x + j * d_model, hd, want);
          if (std::memcmp(&s, s8 + j, sizeof s) != 0 || std::memcmp(want, qx + j * d_model, hd) != 0) return j;
          for (index_t d = hd; d < d_model; ++d)
            if (qx[j * d_model + d] != 0x5A) return j;
        }
        return n;
      };
      b.got[0] = static_cast<float>(first_bad(kr, n_keys, k8, s_k)), b.want[0] = static_cast<float>(n_keys);
      env.expect("quantize_rows (bytes and scales)", b.got, b.want, 1, {{"head_dim", hd}, {"keys", n_keys}}, false);
      {
        float* odd = b.o_got;  // rows d_model apart: an infinity, a NaN, finite values
        fill(odd, 3 * d_model, 34, 1.5f);
        odd[hd / 2] = -std::numeric_limits<float>::infinity();
        odd[d_model + hd - 1] = std::numeric_limits<float>::quiet_NaN();
        float s3[3];
        std::memset(v8, 0x5A, 3 * d_model);
        K::quantize_rows(odd, d_model, 3, hd, v8, d_model, s3);
        b.got[0] = static_cast<float>(first_bad(odd, 3, v8, s3)), b.want[0] = 3.0f;
        env.expect("quantize_rows (an infinity, a NaN)", b.got, b.want, 1, {{"head_dim", hd}}, false);
      }
      K::quantize_rows(b.vv, d_model, n_keys, hd, v8, d_model, s_v);
      for (index_t rows : kRows)
        for (MaskKind kind : kMaskKinds)
          for (MaskFill mf : kMaskFills) {
            if (mf == MaskFill::neg_1e9 && !fill_matters(kind)) continue;
            // (the many rows: where the hosts have room, at two key counts)
            if (rows > largest(kAttentionRowCases) && (rows > env.max_rows || (n_keys != 33 && n_keys != 70))) continue;
            fill(b.q, rows * d_model, 31 + static_cast<std::uint32_t>(n_keys), 1.5f);
            K::quantize_rows(b.q, d_model, rows, hd, q8, d_model, s_q);
            make_masks(kind, rows, n_keys, b.allow, b.masks, b.mask_arrays);
            K::attention_rows_w8a8(q8, d_model, s_q, rows, k8, d_model, s_k, v8, d_model, s_v, hd, n_keys, b.masks, mf,
                                   b.s_got, b.o_got, d_model);
            ref::attention_rows_w8a8(q8, d_model, s_q, rows, k8, d_model, s_k, v8, d_model, s_v, hd, n_keys, b.masks,
                                     mf, b.s_want, b.o_want, d_model);
            // (the columns between heads are not written: compare the heads' own)
            for (index_t r = 0; r < rows; ++r)
              for (index_t d = hd; d < d_model; ++d) b.o_got[r * d_model + d] = b.o_want[r * d_model + d] = 0.0f;
            env.expect(
                "attention_rows_w8a8", b.o_got, b.o_want, rows * d_model,
                {{"head_dim", hd}, {"rows", rows}, {"keys", n_keys}, {"mask", index_t(kind)}, {"fill", index_t(mf)}},
                false);
          }
      // a key whose row held an infinity (quantize_rows' scale NaN, so NaN scores for it): the rows that
      // see it come out NaN, as the reference's (its exp is NaN), in the targets' own kernels too
      if (n_keys >= 2)
        for (index_t rows : {3, 13})
          for (MaskKind kind : {MaskKind::all, MaskKind::causal}) {
            const float s_k1 = s_k[1];
            s_k[1] = std::numeric_limits<float>::quiet_NaN();
            fill(b.q, rows * d_model, 35 + static_cast<std::uint32_t>(n_keys), 1.5f);
            K::quantize_rows(b.q, d_model, rows, hd, q8, d_model, s_q);
            make_masks(kind, rows, n_keys, b.allow, b.masks, b.mask_arrays);
            K::attention_rows_w8a8(q8, d_model, s_q, rows, k8, d_model, s_k, v8, d_model, s_v, hd, n_keys, b.masks,
                                   MaskFill::neg_inf, b.s_got, b.o_got, d_model);
            ref::attention_rows_w8a8(q8, d_model, s_q, rows, k8, d_model, s_k, v8, d_model, s_v, hd, n_keys, b.masks,
                                     MaskFill::neg_inf, b.s_want, b.o_want, d_model);
            for (index_t r = 0; r < rows; ++r)
              for (index_t d = hd; d < d_model; ++d) b.o_got[r * d_model + d] = b.o_want[r * d_model + d] = 0.0f;
            env.expect("attention_rows_w8a8, a key's scale NaN", b.o_got, b.o_want, rows * d_model,
                       {{"head_dim", hd}, {"rows", rows}, {"keys", n_keys}, {"mask", index_t(kind)}}, false);
            s_k[1] = s_k1;
          }
    }
}

/// Row operations at every row length: LayerNorm (one row, and rows in groups), log_softmax,
/// activations, add, exp, log; exp over its whole range, dense.
template <class K, class Env>
void check_rows(Env& env) {
  Buffers& b = env.buf;
  for (index_t n : kRowLengths) {
    fill(b.x, n, 11, 3.0f);
    fill(b.w, n, 12);
    fill(b.bias, n, 13);
    for (LayerNormKind kind : {LayerNormKind::torch, LayerNormKind::annotated}) {
      if (kind == LayerNormKind::annotated && n < 2) continue;
      K::layer_norm_row(b.x, b.w, b.bias, n, kind, 1e-5f, b.got);
      ref::layer_norm_row(b.x, b.w, b.bias, n, kind, 1e-5f, b.want);
      env.expect("layer_norm_row", b.got, b.want, n, {{"n", n}, {"kind", index_t(kind)}}, false);
      // several rows at once (one group of up to 16; more: groups of 8 and a remainder), each the
      // same as alone
      for (index_t rows : kLayerNormRowCounts) {
        fill(b.x + n, rows * n, 16, 3.0f);
        K::layer_norm_rows(b.x + n, rows, b.w, b.bias, n, kind, 1e-5f, b.got);
        for (index_t r = 0; r < rows; ++r)
          ref::layer_norm_row(b.x + n + r * n, b.w, b.bias, n, kind, 1e-5f, b.want + r * n);
        env.expect("layer_norm_rows", b.got, b.want, rows * n, {{"n", n}, {"rows", rows}, {"kind", index_t(kind)}},
                   false);
      }
      // the residual step: LayerNorm of a + x, the output over a (add_run) and over x (add_run_into's y
      // aliasing x); one row, and the groups' row counts
      for (index_t rows : {index_t(1), kLayerNormRowCounts[0], kLayerNormRowCounts[1], kLayerNormRowCounts[2]}) {
        for (int over_x = 0; over_x < 2; ++over_x) {
          fill(b.got, rows * n, 19, 3.0f);
          fill(b.x, rows * n, 20, 3.0f);
          std::memcpy(b.want, b.got, rows * n * sizeof(float));
          ref::add(b.want, b.x, rows * n);
          for (index_t r = 0; r < rows; ++r)
            ref::layer_norm_row(b.want + r * n, b.w, b.bias, n, kind, 1e-5f, b.want + r * n);
          float* y = over_x ? b.x : b.got;
          K::add_layer_norm_rows(b.got, b.x, rows, b.w, b.bias, n, kind, 1e-5f, y);
          env.expect("add_layer_norm_rows", y, b.want, rows * n,
                     {{"n", n}, {"rows", rows}, {"kind", index_t(kind)}, {"y over x", index_t(over_x)}}, false);
        }
      }
    }
    fill(b.got, n, 14, 20.0f);
    std::memcpy(b.want, b.got, n * sizeof(float));
    K::log_softmax_row(b.got, n);
    ref::log_softmax_row(b.want, n);
    env.expect("log_softmax_row", b.got, b.want, n, {{"n", n}}, false);
    for (Activation a : {Activation::relu, Activation::gelu, Activation::gelu_tanh}) {
      fill(b.got, n, 15, 6.0f);
      std::memcpy(b.want, b.got, n * sizeof(float));
      K::activation(a, b.got, n);
      ref::activation(a, b.want, n);
      env.expect("activation", b.got, b.want, n, {{"n", n}, {"activation", index_t(a)}}, false);
    }
    fill(b.got, n, 17, 3.0f);
    std::memcpy(b.want, b.got, n * sizeof(float));
    fill(b.x, n, 18, 3.0f);
    K::add(b.got, b.x, n);
    ref::add(b.want, b.x, n);
    env.expect("add", b.got, b.want, n, {{"n", n}}, false);
    fill(b.x, n, 16, 90.0f);
    K::exp(b.x, b.got, n);
    ref::exp(b.x, b.want, n);
    env.expect("exp", b.got, b.want, n, {{"n", n}}, false);
    for (index_t i = 0; i < n; ++i) b.x[i] = std::fabs(b.x[i]) * 1e3f;
    K::log(b.x, b.got, n);
    ref::log(b.x, b.want, n);
    env.expect("log", b.got, b.want, n, {{"n", n}}, false);
  }
  const index_t dense = Capacity<1, 1>::kDense;
  for (index_t i = 0; i < dense; ++i) b.x[i] = -100.0f + 200.0f * static_cast<float>(i) / static_cast<float>(dense);
  K::exp(b.x, b.got, dense);
  ref::exp(b.x, b.want, dense);
  env.expect("exp (dense -100..100)", b.got, b.want, dense, {{"n", dense}}, false);
}

/// exp, both GELUs and log of special values (0, -0, ±inf, NaN, huge, tiny; denormal inputs left out where
/// the variant flushes them: the one documented exception to bit-identity).
template <class K, class Env>
void check_specials(Env& env) {
  Buffers& b = env.buf;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {0.0f,    -0.0f,  inf,     -inf,   nan,   88.7f,  88.73f, -87.3f, -87.34f,
                            -100.0f, 1e-40f, -1e-40f, 1e-30f, 3e38f, -3e38f, 1.0f,   -1.0f,  0.5f};
  index_t n = 0;
  for (float v : specials) {
    const bool denormal = v != 0.0f && v < 1.17549435e-38f && v > -1.17549435e-38f;
    if (!(denormal && env.flushes_denormals)) b.x[n++] = v;
  }
  K::exp(b.x, b.got, n);
  ref::exp(b.x, b.want, n);
  env.expect("exp (special values)", b.got, b.want, n, {{"n", n}}, false);
  K::gelu(b.x, b.got, n);
  ref::gelu(b.x, b.want, n);
  env.expect("gelu (special values)", b.got, b.want, n, {{"n", n}}, false);
  std::memcpy(b.got, b.x, n * sizeof(float));
  std::memcpy(b.want, b.x, n * sizeof(float));
  K::activation(Activation::gelu_tanh, b.got, n);
  ref::activation(Activation::gelu_tanh, b.want, n);
  env.expect("tanh gelu (special values)", b.got, b.want, n, {{"n", n}}, false);
  K::log(b.x, b.got, n);
  ref::log(b.x, b.want, n);
  env.expect("log (special values)", b.got, b.want, n, {{"n", n}}, false);
}

}  // namespace stf_checks
