// Kernel check firmware: the variant this core runs (stf::ActiveKernels: mve on the M55, scalar on
// the M4F and M7) against the reference kernels (stf::ref), bit for bit (memcmp of the outputs),
// on pseudo-random data at the cases of the shared case list (tests/support/kernel_cases.hpp: sizes
// around the register tiles, the 16-lane blocks, the weight panels and the 32-key attention blocks;
// masks). The Catch2 suite (tests/unit/test_kernels.cpp) runs the same list on the Linux targets;
// this is the oracle for the Cortex-M kernels, whose asm and intrinsics only run here.
// Prints the op and sizes of the first mismatch and exits 1.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <type_traits>

#include <boost/hana/for_each.hpp>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/reference.hpp>
#include <statiformer/kernels/registry.hpp>

#include "firmware.h"
#include "kernel_cases.hpp"

namespace {
using namespace stf;
using namespace stf_cases;
using K = ActiveKernels;

// Largest cases of the list: linear, linear_block and the long reduction; attention up to the
// firmware's limits (larger ones are skipped).
constexpr index_t kLinRows = largest(kLinearRows), kLinIn = largest(kLinearIns), kLinOut = largest(kLinearOuts);
constexpr index_t kBlkRows = largest(kBlockRows), kBlkIn = largest(kBlockIns), kBlkOut = largest(kBlockOuts);
constexpr index_t kLongRowsMax = largest(kLongRows), kLongOut = largest(kLongOuts);
// floats of x (rows × in), w (in × out) and y (rows × out) of each kind of linear case
constexpr index_t kLinX = kLinRows * kLinIn;
constexpr index_t kBlkX = kBlkRows * kBlkIn;
constexpr index_t kLongX = kLongRowsMax * kLongIn;
constexpr index_t kLinW = kLinIn * kLinOut;
constexpr index_t kBlkW = kBlkIn * kBlkOut;
constexpr index_t kLongW = kLongIn * kLongOut;
constexpr index_t kLinY = kLinRows * kLinOut;
constexpr index_t kBlkY = kBlkRows * kBlkOut;
constexpr index_t kDense = 1024;  // exp over its whole range
constexpr index_t kMaxX = std::max({kLinX, kBlkX, kLongX});
constexpr index_t kMaxW = std::max({kLinW, kBlkW, kLongW});
constexpr index_t kMaxBias = std::max({kLinOut, kBlkOut, kLongOut});
constexpr index_t kMaxY = std::max({kLinY, kBlkY, kDense});
constexpr index_t kMaxRows = largest(kAttentionRowCases), kMaxKeys = kFirmwareMaxKeys,
                  kMaxHeadDim = kFirmwareMaxHeadDim;
constexpr index_t kMaxModel = kMaxHeadDim + 5;
alignas(16) float x[kMaxX], w[kMaxW], bias[kMaxBias], got[kMaxY + 8], want[kMaxY + 8];
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
  fill(x, kMaxX, 3, 1.0f);
  fill(w, kMaxW, 4, 1.0f);
  fill(bias, kMaxBias, 5, 1.0f);
  for (index_t rows : kLinearRows)
    for (index_t in : kLinearIns)
      for (index_t out : kLinearOuts)
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
  // a long reduction: several k blocks
  for (index_t rows : kLongRows)
    for (index_t out : kLongOuts) {
      K::linear(x, rows, kLongIn, w, bias, out, got, Fuse::none);
      ref::linear(x, rows, kLongIn, w, bias, out, want, Fuse::none);
      expect_same("linear (long reduction)", got, want, rows * out, {{"rows", rows}, {"in", kLongIn}, {"out", out}});
    }
}

/// linear_block over blocks of the reduction and of the outputs (what FeedForward does with its
/// chunks of hidden units, panel-aligned or not, each block continuing the sums of the previous
/// one) gives linear's bits.
void check_linear_blocks() {
  fill(x, kMaxX, 41, 1.0f);
  fill(w, kMaxW, 42, 1.0f);
  fill(bias, kMaxBias, 43, 1.0f);
  for (index_t rows : kBlockRows)
    for (index_t in : kBlockIns)
      for (index_t out : kBlockOuts)
        for (index_t col_block : kBlockColumns) {
          ref::linear(x, rows, in, w, bias, out, want, Fuse::relu);
          const Cuts cuts = reduction_cuts(in);
          for (index_t o0 = 0; o0 < out; o0 += col_block) {
            const index_t cols = out - o0 < col_block ? out - o0 : col_block;
            for (index_t c = 0; c + 1 < 4; ++c) {
              const index_t k0 = cuts.at[c], k1 = cuts.at[c + 1];
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

void check_attention() {
  // the list's attention cases up to this firmware's buffers
  const auto fits = [](index_t hd, index_t n_keys) { return hd <= kMaxHeadDim && n_keys <= kMaxKeys; };
  // the fill only matters where a row has keys masked out of its range: holes, none left
  const auto fill_matters = [](MaskKind kind) {
    return kind == MaskKind::holes || kind == MaskKind::none_by_end || kind == MaskKind::none_by_allow;
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
            fill(kt, hd * kt_stride, 22 + static_cast<std::uint32_t>(hd), 1.5f);
            fill(vv, n_keys * d_model, 23, 1.0f);
            fill(q, rows * d_model, 21 + static_cast<std::uint32_t>(n_keys), 1.5f);
            make_masks(kind, rows, n_keys, allow, masks);
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
  for (index_t hd : kHeadDims)
    for (index_t n_keys : kKeyCounts)
      for (MaskKind kind : kMaskKinds)
        for (MaskFill mf : kMaskFills) {
          if (!fits(hd, n_keys)) continue;
          fill(kt, hd * (n_keys + 2), 8, 1.5f);
          fill(vv, n_keys * (hd + 3), 9, 1.0f);
          fill(q, hd, 7, 1.5f);
          make_masks(kind, 1, n_keys, allow, masks);
          K::attention_row(q, kt, n_keys + 2, vv, hd + 3, hd, n_keys, masks[0], mf, s_got, o_got);
          ref::attention_row(q, kt, n_keys + 2, vv, hd + 3, hd, n_keys, masks[0], mf, s_want, o_want);
          expect_same("attention_row", o_got, o_want, hd,
                      {{"head_dim", hd}, {"keys", n_keys}, {"mask", index_t(kind)}, {"fill", index_t(mf)}});
        }
}

void check_rows() {
  for (index_t n : kRowLengths) {
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
/// this build (kernels/registry.hpp) must be listed in the registry and be this core's own where
/// the core has one: cortex_m4f for the scalar variant (every core here has a single-precision
/// FPU), helium for mve; generic for softmax and transpose, which have no target variant. A
/// selection that falls back to generic here, where the target's kernels exist, prints and exits 1.
void check_selections() {
  boost::hana::for_each(kernel_registry::variants, [](auto t) {
    using Tag = typename decltype(t)::type;
    const std::string_view own = std::is_same_v<Tag, isa::mve> ? "helium" : "cortex_m4f";
    constexpr auto selected = kernel_registry::selected<Tag>();
    fw_puts("  selection for ");
    fw_puts(Kernels<Tag>::name());
    fw_puts(":");
    for (const kernel_registry::Selected& s : selected) {
      fw_putc(' ');
      fw_puts(s.op.data());  // (the views are of string literals)
      fw_putc('=');
      fw_puts(s.variant.data());
    }
    fw_putc('\n');
    for (const kernel_registry::Selected& s : selected) {
      const std::string_view expected = s.op == "softmax" || s.op == "transpose" ? "generic" : own;
      if (s.variant == expected && kernel_registry::find(s.op, s.variant)) continue;
      fw_puts("WRONG SELECTION for ");
      fw_puts(s.op.data());
      fw_puts(" on ");
      fw_puts(Kernels<Tag>::name());
      fw_puts(": ");
      fw_puts(s.variant.data());
      fw_puts(", expected ");
      fw_puts(expected.data());
      fw_puts(" (listed in kernels/registry.hpp)\n");
      fw_exit(1);
    }
  });
}
}  // namespace

int main() {
  fw_puts("kernel check on " STF_FW_CORE ": variant ");
  fw_puts(K::name());
  fw_puts(stf::kKernelsSizeFirst ? " (kernels: size-first)" : " (kernels: speed-first)");  // (kernels/api.hpp)
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
  fw_puts(stf::kKernelsSizeFirst ? "size-first: all " : "all ");
  fw_put_u(checks, 0);
  fw_puts(" comparisons equal\n");
  return 0;
}
