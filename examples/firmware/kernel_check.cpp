// Kernel check firmware: the variant this core runs (stf::ActiveKernels: mve on the M55, scalar on
// the M4F and M7) against the reference kernels (stf::ref), bit for bit (memcmp of the outputs),
// on pseudo-random data at sizes around the register tiles, the 16-lane blocks and the 32-key
// attention blocks. The Catch2 suite (tests/unit/test_kernels.cpp) does the same on the Linux
// targets; this is the oracle for the Cortex-M kernels, whose asm and intrinsics only run here.
// Prints the op and sizes of the first mismatch and exits 1.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include <boost/hana/for_each.hpp>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/select.hpp>
#include <statiformer/kernels/elementwise/select.hpp>
#include <statiformer/kernels/norm/select.hpp>
#include <statiformer/kernels/product/select.hpp>
#include <statiformer/kernels/reference.hpp>
#include <statiformer/kernels/registry.hpp>

#include "firmware.h"

namespace {
using namespace stf;
using K = ActiveKernels;

// Largest cases: linear 13 rows × 200 in × 130 out; attention 13 rows × 70 keys × head_dim 32.
constexpr index_t kMaxX = 13 * 200, kMaxW = 200 * 130, kMaxY = 13 * 130;
constexpr index_t kMaxRows = 13, kMaxKeys = 70, kMaxHeadDim = 32, kMaxModel = kMaxHeadDim + 5;
alignas(16) float x[kMaxX], w[kMaxW], bias[130], got[kMaxY + 8], want[kMaxY + 8];
alignas(16) float q[kMaxRows * kMaxModel], kt[kMaxHeadDim * (kMaxKeys + 2)], vv[kMaxKeys * kMaxModel];
alignas(16) float s_got[attention_scratch_floats(kMaxRows, kMaxKeys, kMaxHeadDim) + kMaxRows * kMaxKeys],
    s_want[attention_scratch_floats(kMaxRows, kMaxKeys, kMaxHeadDim) + kMaxRows * kMaxKeys];
alignas(16) float o_got[kMaxRows * kMaxModel], o_want[kMaxRows * kMaxModel];
std::uint8_t allow[kMaxRows * kMaxKeys];
ref::RowMask masks[kMaxRows];
unsigned long checks = 0;
// MVE arithmetic flushes denormals to zero (qemu runs it with the Arm "standard FPSCR value", like
// armv7 NEON: the documented exception of README.md), so results through a denormal may differ.
const bool kFlushesDenormals = std::strcmp(K::name(), "mve") == 0;

void fill(float* v, index_t n, std::uint32_t seed, float scale) {
  for (index_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = (static_cast<float>(seed >> 8) / 16777216.0f - 0.5f) * 2.0f * scale;
  }
}

struct Size {  // a name and value for the mismatch message
  const char* name;
  index_t value;
};

/// Compares n floats bit for bit; on a difference prints the op, the sizes and the first differing
/// element, and exits 1.
/// flushed: a zero of the same sign may stand for a reference result below 1e-36 in magnitude (GELU
/// of a large negative input goes through a denormal, which MVE flushes to zero).
void expect_same(const char* op, const float* a, const float* b, index_t n, std::initializer_list<Size> sizes,
                 bool flushed = false) {
  ++checks;
  if (std::memcmp(a, b, n * sizeof(float)) == 0) return;
  index_t i = 0;
  for (; i < n; ++i) {
    const bool zeroed =
        flushed && a[i] == 0.0f && std::signbit(a[i]) == std::signbit(b[i]) && b[i] < 1e-36f && b[i] > -1e-36f;
    if (!zeroed && std::memcmp(a + i, b + i, sizeof(float)) != 0) break;
  }
  if (i == n) return;
  std::uint32_t ga, wa;
  std::memcpy(&ga, a + i, 4);
  std::memcpy(&wa, b + i, 4);
  fw_puts("MISMATCH in ");
  fw_puts(op);
  fw_puts(" (");
  fw_puts(K::name());
  fw_puts(" vs reference):");
  for (const Size& s : sizes) {
    fw_putc(' ');
    fw_puts(s.name);
    fw_putc('=');
    fw_put_u(s.value, 0);
  }
  fw_puts(": element ");
  fw_put_u(i, 0);
  fw_puts(" is 0x");
  fw_put_hex(ga, 8);
  fw_puts(", the reference 0x");
  fw_put_hex(wa, 8);
  fw_puts("\n");
  fw_exit(1);
}

void check_linear() {
  // rows around the tiles (MVE 3 rows, scalar 6), outputs around the vector panels (MVE 2 × 4
  // lanes, scalar 4, single rows wider), inputs across the reduction blocks (128 steps)
  static constexpr index_t ins[] = {1, 2, 3, 4, 5, 8, 16, 17, 33, 64, 100, 200};
  static constexpr index_t outs[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 24, 33, 64, 65, 130};
  fill(x, kMaxX, 3, 1.0f);
  fill(w, kMaxW, 4, 1.0f);
  fill(bias, 130, 5, 1.0f);
  for (index_t rows = 1; rows <= 13; ++rows)
    for (index_t in : ins)
      for (index_t out : outs)
        for (Fuse act : {Fuse::none, Fuse::relu, Fuse::gelu})
          for (int with_bias = 0; with_bias < 2; ++with_bias) {
            const float* b = with_bias ? bias : nullptr;
            // guard floats past the end: a store beyond the outputs shows up as a difference
            for (index_t i = 0; i < rows * out + 8; ++i) got[i] = want[i] = -7.0f;
            K::linear(x, rows, in, w, b, out, got, act);
            ref::linear(x, rows, in, w, b, out, want, act);
            expect_same("linear", got, want, rows * out + 8,
                        {{"rows", rows}, {"in", in}, {"out", out}, {"act", index_t(act)}, {"bias", index_t(with_bias)}},
                        act == Fuse::gelu && kFlushesDenormals);
          }
}

/// linear_block over blocks of the reduction and of the outputs (what FeedForward does with its
/// chunks of hidden units, panel-aligned or not, each block continuing the sums of the previous
/// one) gives linear's bits.
void check_linear_blocks() {
  fill(x, kMaxX, 41, 1.0f);
  fill(w, kMaxW, 42, 1.0f);
  fill(bias, 130, 43, 1.0f);
  for (index_t rows : {1, 2, 5, 13})
    for (index_t in : {7, 100, 200})
      for (index_t out : {5, 64, 130})
        for (index_t col_block : {index_t{50}, kWeightPanel, 2 * kWeightPanel}) {
          ref::linear(x, rows, in, w, bias, out, want, Fuse::relu);
          const index_t cuts[] = {0, in / 3, in - in / 4, in};
          for (index_t o0 = 0; o0 < out; o0 += col_block) {
            const index_t cols = out - o0 < col_block ? out - o0 : col_block;
            for (index_t c = 0; c + 1 < 4; ++c) {
              const index_t k0 = cuts[c], k1 = cuts[c + 1];
              if (k0 == k1) continue;
              const bool last = k1 == in;
              K::linear_block(x + k0, in, rows, k1 - k0, {w, in, out, k0, o0}, cols, got + o0, out,
                              last ? bias + o0 : nullptr, k0 > 0, last ? Fuse::relu : Fuse::none);
            }
          }
          expect_same("linear_block", got, want, rows * out,
                      {{"rows", rows}, {"in", in}, {"out", out}, {"column block", col_block}});
        }
}

/// Masks of `rows` query rows over n_keys keys: 0 all keys, 1 padding (the first half), 2 holes
/// (some rows with none), 3 every key masked, 4 causal, 5 causal after a prefix (queries appended
/// to a cache: across the key blocks).
void make_masks(int kind, index_t rows, index_t n_keys) {
  for (index_t i = 0; i < rows * n_keys; ++i) allow[i] = (i % 4 != 2) && (i % 7 != 3);
  for (index_t r = 0; r < rows; ++r) {
    masks[r] = {n_keys, nullptr};
    if (kind == 1) masks[r].key_end = (n_keys + 1) / 2;
    if (kind == 2) masks[r].allow = allow + r * n_keys;
    if (kind == 2 && r == 1) {
      for (index_t j = 0; j < n_keys; ++j) allow[r * n_keys + j] = 0;
    }
    if (kind == 3) masks[r].key_end = 0;
    if (kind == 4) masks[r].key_end = r + 1 < n_keys ? r + 1 : n_keys;
    if (kind == 5) masks[r].key_end = n_keys > rows ? n_keys - rows + r + 1 : r + 1;
  }
}

void check_attention() {
  static constexpr index_t head_dims[] = {1, 2, 3, 4, 5, 8, 9, 16, 17, 32};
  static constexpr index_t row_counts[] = {1, 2, 3, 4, 5, 6, 7, 10, 13};
  static constexpr index_t key_counts[] = {1, 2, 7, 16, 17, 31, 32, 33, 40, 63, 64, 65, 70};
  for (index_t hd : head_dims)
    for (index_t rows : row_counts)
      for (index_t n_keys : key_counts)
        for (int kind = 0; kind < 6; ++kind)
          for (MaskFill mf : {MaskFill::neg_inf, MaskFill::neg_1e9}) {
            if (mf == MaskFill::neg_1e9 && kind != 2 && kind != 3) continue;  // fill only matters there
            const index_t d_model = hd + 5;        // heads inside a wider row, as in multi-head
            const index_t kt_stride = n_keys + 2;  // Kᵀ rows inside a wider cache, as when decoding
            fill(kt, hd * kt_stride, 22 + static_cast<std::uint32_t>(hd), 1.5f);
            fill(vv, n_keys * d_model, 23, 1.0f);
            fill(q, rows * d_model, 21 + static_cast<std::uint32_t>(n_keys), 1.5f);
            make_masks(kind, rows, n_keys);
            const std::initializer_list<Size> sizes = {
                {"head_dim", hd}, {"rows", rows}, {"keys", n_keys}, {"mask", index_t(kind)}, {"fill", index_t(mf)}};
            // streaming, outputs aliasing the query rows as in the layers
            std::memcpy(o_got, q, rows * d_model * sizeof(float));
            std::memcpy(o_want, q, rows * d_model * sizeof(float));
            K::attention_rows(o_got, d_model, rows, kt, kt_stride, vv, d_model, hd, n_keys, masks, mf, s_got, o_got,
                              d_model);
            ref::attention_rows(o_want, d_model, rows, kt, kt_stride, vv, d_model, hd, n_keys, masks, mf, s_want,
                                o_want, d_model);
            expect_same("attention_rows", o_got, o_want, rows * d_model, sizes);
            // with the weights
            std::memcpy(o_got, q, rows * d_model * sizeof(float));
            std::memcpy(o_want, q, rows * d_model * sizeof(float));
            K::attention_rows_weights(o_got, d_model, rows, kt, kt_stride, vv, d_model, hd, n_keys, masks, mf, s_got,
                                      o_got, d_model);
            ref::attention_rows_weights(o_want, d_model, rows, kt, kt_stride, vv, d_model, hd, n_keys, masks, mf,
                                        s_want, o_want, d_model);
            expect_same("attention_rows_weights (weights)", s_got, s_want, rows * n_keys, sizes);
            expect_same("attention_rows_weights (outputs)", o_got, o_want, rows * d_model, sizes);
          }
  // single rows, the one-row entry point
  for (index_t hd : head_dims)
    for (index_t n_keys : key_counts)
      for (int kind = 0; kind < 4; ++kind) {
        fill(kt, hd * (n_keys + 2), 8, 1.5f);
        fill(vv, n_keys * (hd + 3), 9, 1.0f);
        fill(q, hd, 7, 1.5f);
        make_masks(kind, 1, n_keys);
        K::attention_row(q, kt, n_keys + 2, vv, hd + 3, hd, n_keys, masks[0], MaskFill::neg_1e9, s_got, o_got);
        ref::attention_row(q, kt, n_keys + 2, vv, hd + 3, hd, n_keys, masks[0], MaskFill::neg_1e9, s_want, o_want);
        expect_same("attention_row", o_got, o_want, hd, {{"head_dim", hd}, {"keys", n_keys}, {"mask", index_t(kind)}});
      }
}

void check_rows() {
  static constexpr index_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 100};
  for (index_t n : sizes) {
    fill(x, n, 11, 3.0f);
    fill(w, n, 12, 1.0f);
    fill(bias, n, 13, 1.0f);
    for (LayerNormKind kind : {LayerNormKind::torch, LayerNormKind::annotated}) {
      if (kind == LayerNormKind::annotated && n < 2) continue;
      K::layer_norm_row(x, w, bias, n, kind, 1e-5f, got);
      ref::layer_norm_row(x, w, bias, n, kind, 1e-5f, want);
      expect_same("layer_norm_row", got, want, n, {{"n", n}, {"kind", index_t(kind)}});
    }
    fill(got, n, 14, 20.0f);
    std::memcpy(want, got, n * sizeof(float));
    K::log_softmax_row(got, n);
    ref::log_softmax_row(want, n);
    expect_same("log_softmax_row", got, want, n, {{"n", n}});
    for (Activation a : {Activation::relu, Activation::gelu}) {
      fill(got, n, 15, 6.0f);
      std::memcpy(want, got, n * sizeof(float));
      K::activation(a, got, n);
      ref::activation(a, want, n);
      expect_same("activation", got, want, n, {{"n", n}, {"gelu", index_t(a == Activation::gelu)}});
    }
    fill(got, n, 17, 3.0f);
    std::memcpy(want, got, n * sizeof(float));
    fill(x, n, 18, 3.0f);
    K::add(got, x, n);
    ref::add(want, x, n);
    expect_same("add", got, want, n, {{"n", n}});
    fill(x, n, 16, 90.0f);
    K::exp(x, got, n);
    ref::exp(x, want, n);
    expect_same("exp", got, want, n, {{"n", n}});
  }
  // exp over its whole range, dense, and its special values
  constexpr index_t kDense = 1024;  // (got and want hold kMaxY + 8)
  for (index_t i = 0; i < kDense; ++i) x[i] = -100.0f + 200.0f * static_cast<float>(i) / kDense;
  K::exp(x, got, kDense);
  ref::exp(x, want, kDense);
  expect_same("exp (dense -100..100)", got, want, kDense, {{"n", kDense}});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {0.0f,    -0.0f,  inf,     -inf,   nan,   88.7f,  88.73f, -87.3f, -87.34f,
                            -100.0f, 1e-40f, -1e-40f, 1e-30f, 3e38f, -3e38f, 1.0f,   -1.0f,  0.5f};
  // (denormal inputs left out where the variant flushes them)
  float kept[sizeof specials / sizeof specials[0]];
  index_t kSpecials = 0;
  for (float v : specials) {
    const bool denormal = v != 0.0f && v < 1.17549435e-38f && v > -1.17549435e-38f;
    if (!(denormal && kFlushesDenormals)) kept[kSpecials++] = v;
  }
  K::exp(kept, got, kSpecials);
  ref::exp(kept, want, kSpecials);
  expect_same("exp (special values)", got, want, kSpecials, {{"n", kSpecials}});
  K::gelu(kept, got, kSpecials);
  ref::gelu(kept, want, kSpecials);
  expect_same("gelu (special values)", got, want, kSpecials, {{"n", kSpecials}});
}

/// The variant that each operation's selection (kernels/<op>/select.hpp) names for every variant of
/// this build (kernels/registry.hpp) must be this core's own: cortex_m4f for the scalar variant
/// (every core here has a single-precision FPU), helium for mve. A selection that falls back to
/// generic here, where the target's kernels exist, prints and exits 1.
void check_selections() {
  boost::hana::for_each(kernel_registry::variants, [](auto t) {
    using Tag = typename decltype(t)::type;
    const char* expected = std::is_same_v<Tag, isa::mve> ? "helium" : "cortex_m4f";
    const char* ops[] = {"product", "attention", "elementwise", "norm"};
    const char* got_names[] = {
        kernels_detail::ProductSelect<Tag>::variant, kernels_detail::AttentionSelect<Tag>::variant,
        kernels_detail::ElementwiseSelect<Tag>::variant, kernels_detail::NormSelect<Tag>::variant};
    fw_puts("  selection for ");
    fw_puts(Kernels<Tag>::name());
    fw_puts(":");
    for (int i = 0; i < 4; ++i) {
      fw_putc(' ');
      fw_puts(ops[i]);
      fw_putc('=');
      fw_puts(got_names[i]);
    }
    fw_putc('\n');
    for (int i = 0; i < 4; ++i) {
      if (std::strcmp(got_names[i], expected) == 0) continue;
      fw_puts("WRONG SELECTION for ");
      fw_puts(ops[i]);
      fw_puts(" on ");
      fw_puts(Kernels<Tag>::name());
      fw_puts(": ");
      fw_puts(got_names[i]);
      fw_puts(", expected ");
      fw_puts(expected);
      fw_putc('\n');
      fw_exit(1);
    }
  });
}
}  // namespace

int main() {
  fw_puts("kernel check on " STF_FW_CORE ": variant ");
  fw_puts(K::name());
  fw_puts(" vs the reference, bit for bit\n");
  check_selections();
  check_rows();
  fw_puts("  layer_norm_row, log_softmax_row, activation, add, exp: ok\n");
  check_linear();
  fw_puts("  linear: ok\n");
  check_linear_blocks();
  fw_puts("  linear_block over blocks of the reduction and of the outputs: ok\n");
  check_attention();
  fw_puts("  attention_rows, attention_rows_weights, attention_row: ok\n");
  fw_puts("all ");
  fw_put_u(checks, 0);
  fw_puts(" comparisons equal\n");
  return 0;
}
