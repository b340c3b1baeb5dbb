// Every kernel variant of this build (kernels/registry.hpp) gives the same bits as the reference,
// at every case of the shared case list (tests/support/kernel_cases.hpp: sizes around the 16-lane
// block, the register tiles, the weight panels, the key blocks and spans, masks; the firmware check
// examples/firmware/kernel_check.cpp runs the same list on the Cortex-M kernels); variants the CPU
// cannot run are skipped at run time. Plus the accuracy of the library's own exp, log and GELU
// against libm.
#include <catch2/catch.hpp>

#include <boost/hana/for_each.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <statiformer/kernels/reference.hpp>
#include <statiformer/kernels/registry.hpp>

#include "../support/kernel_cases.hpp"
#include "../support/test_data.hpp"
#include "isa_cpuid.hpp"

using namespace stf;

namespace {
using stf_test::data;
using namespace stf_cases;

bool same_bits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  std::uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

/// Index of the first element whose bits differ, or -1.
long first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (index_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return static_cast<long>(i);
  return -1;
}

/// Whether variant K flushes denormal results to zero: armv7 NEON, the one documented exception.
template <class K>
bool flushes_denormals() {
#if defined(__arm__) && !defined(__aarch64__)
  return std::string(K::name()) == "neon";
#else
  return false;
#endif
}

/// first_difference, except that where `flush` a zero of the same sign may stand for a result
/// whose computation went through a denormal (GELU's erfc of a large negative input: the result
/// is then below about 1e-36).
long first_difference_flushed(const std::vector<float>& got, const std::vector<float>& want, bool flush) {
  for (index_t i = 0; i < got.size(); ++i) {
    const bool flushed =
        flush && std::fabs(want[i]) < 1e-36f && got[i] == 0.0f && std::signbit(got[i]) == std::signbit(want[i]);
    if (!flushed && !same_bits(got[i], want[i])) return static_cast<long>(i);
  }
  return -1;
}

/// Runs f on every variant of the registry this CPU can run. Whether it can is decided from cpuid
/// and xgetbv (isa_cpuid.hpp), and the variant's own supported() must agree: a supported() that
/// says false on a CPU that has the ISA would skip its tests, one that says true on a CPU without
/// it would let layers call it. A variant is skipped only where the CPU truly lacks its ISA.
template <class F>
void for_each_variant(F&& f) {
  boost::hana::for_each(kernel_registry::variants, [&](auto t) {
    using K = Kernels<typename decltype(t)::type>;
    const stf_test::CpuVerdict cpu = stf_test::cpu_can_run(K::name());
    INFO("variant " << K::name() << ": supported() says " << (K::supported() ? "yes" : "no") << ", cpuid says "
                    << (cpu.can_run ? "yes" : "no") << " (" << cpu.why << ")");
    CHECK(K::supported() == cpu.can_run);
    if (cpu.can_run) f(K{});
  });
}
}  // namespace

// The log says which variants this run tests and why any is skipped (Catch2 prints warnings of
// passing tests too: ctest -V, or Testing/Temporary/LastTest.log).
TEST_CASE("kernel variants: which ones this CPU runs (cpuid), and supported() agrees", "[kernels][isa]") {
  int ran = 0;
  boost::hana::for_each(kernel_registry::variants, [&](auto t) {
    using K = Kernels<typename decltype(t)::type>;
    const stf_test::CpuVerdict cpu = stf_test::cpu_can_run(K::name());
    if (cpu.can_run)
      WARN("variant " << K::name() << " runs: " << cpu.why);
    else
      WARN("variant " << K::name() << " skipped: " << cpu.why);
    INFO("variant " << K::name() << ": supported() says " << (K::supported() ? "yes" : "no"));
    CHECK(K::supported() == cpu.can_run);
    ran += cpu.can_run;
  });
  CHECK(ran >= 1);
}

TEST_CASE("kernel variants: dot and sum equal the reference bit for bit", "[kernels]") {
  for_each_variant([](auto k) {
    using K = decltype(k);
    for (index_t n : kRowLengths) {
      const auto a = data(n, 1 + static_cast<std::uint32_t>(n)), b = data(n, 99 + static_cast<std::uint32_t>(n));
      INFO(K::name() << " n=" << n);
      CHECK(same_bits(K::dot(a.data(), b.data(), n), ref::dot(a.data(), b.data(), n)));
      CHECK(same_bits(K::sum(a.data(), n), ref::sum(a.data(), n)));
    }
  });
}

TEST_CASE("kernel variants: transpose equals the reference, padded strides, nothing written outside", "[kernels]") {
  for_each_variant([&](auto k) {
    using K = decltype(k);
    for (index_t rows : kTransposeSizes) {
      for (index_t cols : kTransposeSizes) {
        for (index_t pad : kTransposePads) {
          const index_t ld_src = cols + pad, ld_dst = rows + pad;
          const auto src = data(rows * ld_src, static_cast<std::uint32_t>(rows * 131 + cols));
          std::vector<float> got(cols * ld_dst, -7.0f), want(cols * ld_dst, -7.0f);
          K::transpose(src.data(), rows, cols, ld_src, got.data(), ld_dst);
          ref::transpose(src.data(), rows, cols, ld_src, want.data(), ld_dst);
          INFO(K::name() << " rows=" << rows << " cols=" << cols << " pad=" << pad);
          CHECK(first_difference(got, want) == -1);
        }
      }
    }
  });
}

TEST_CASE("kernel variants: linear (with bias, fused activations) equals the reference", "[kernels]") {
  for_each_variant([](auto k) {
    using K = decltype(k);
    for (index_t rows : kLinearRows)
      for (index_t in : kLinearIns)
        for (index_t out : kLinearOuts)
          for (Fuse act : {Fuse::none, Fuse::relu, Fuse::gelu})
            for (bool with_bias : {true, false}) {
              const auto x = data(rows * in, 3), w = data(out * in, 4), b = data(out, 5);
              std::vector<float> got(rows * out), want(rows * out);
              const float* bias = with_bias ? b.data() : nullptr;
              K::linear(x.data(), rows, in, w.data(), bias, out, got.data(), act);
              ref::linear(x.data(), rows, in, w.data(), bias, out, want.data(), act);
              INFO(K::name() << " rows=" << rows << " in=" << in << " out=" << out << " act=" << int(act)
                             << " bias=" << with_bias);
              // GELU of a large negative input is a denormal, which armv7 NEON flushes
              const long bad = first_difference_flushed(got, want, act == Fuse::gelu && flushes_denormals<K>());
              INFO("first difference at " << bad << ": got " << (bad >= 0 ? got[bad] : 0.0f) << " want "
                                          << (bad >= 0 ? want[bad] : 0.0f));
              CHECK(bad == -1);
            }
  });
}

TEST_CASE("kernel variants: linear with a long reduction (several k blocks on every ISA) equals the reference",
          "[kernels]") {
  for_each_variant([](auto k) {
    using K = decltype(k);
    for (index_t rows : kLongRows)
      for (index_t out : kLongOuts) {
        const index_t in = kLongIn;
        const auto x = data(rows * in, 31), w = data(out * in, 32), b = data(out, 33);
        std::vector<float> got(rows * out), want(rows * out);
        K::linear(x.data(), rows, in, w.data(), b.data(), out, got.data(), Fuse::none);
        ref::linear(x.data(), rows, in, w.data(), b.data(), out, want.data(), Fuse::none);
        INFO(K::name() << " rows=" << rows << " out=" << out);
        CHECK(first_difference(got, want) == -1);
      }
  });
}

TEST_CASE("kernel variants: linear_block over blocks of the reduction and of the outputs gives linear's bits",
          "[kernels]") {
  // what FeedForward does with its chunks of hidden units: blocks of columns (panel-aligned or
  // not) and of reduction steps, each continuing the sums of the previous one
  for_each_variant([](auto k) {
    using K = decltype(k);
    for (index_t rows : kBlockRows)
      for (index_t in : kBlockIns)
        for (index_t out : kBlockOuts)
          for (index_t col_block : kBlockColumns) {
            const auto x = data(rows * in, 41), w = data(out * in, 42), b = data(out, 43);
            std::vector<float> got(rows * out), want(rows * out);
            ref::linear(x.data(), rows, in, w.data(), b.data(), out, want.data(), Fuse::relu);
            const Cuts cuts = reduction_cuts(in);
            for (index_t o0 = 0; o0 < out; o0 += col_block) {
              const index_t cols = out - o0 < col_block ? out - o0 : col_block;
              for (index_t c = 0; c + 1 < 4; ++c) {
                const index_t k0 = cuts.at[c], k1 = cuts.at[c + 1];
                if (k0 == k1) continue;
                const bool last = k1 == in;
                K::linear_block(x.data() + k0, in, rows, k1 - k0, {w.data(), in, out, k0, o0}, cols, got.data() + o0,
                                out, last ? b.data() + o0 : nullptr, k0 > 0, last ? Fuse::relu : Fuse::none);
              }
            }
            INFO(K::name() << " rows=" << rows << " in=" << in << " out=" << out << " column block=" << col_block);
            CHECK(first_difference(got, want) == -1);
          }
  });
}

TEST_CASE("kernel variants: attention rows equal the reference, every mask, streaming and with weights", "[kernels]") {
  for_each_variant([](auto k) {
    using K = decltype(k);
    for (index_t hd : kHeadDims)
      for (index_t n_keys : kKeyCounts)
        for (MaskKind mask_kind : kMaskKinds)
          for (MaskFill fill : kMaskFills) {
            const index_t stride = hd + 3;         // rows of V inside a wider matrix, as in multi-head
            const index_t kt_stride = n_keys + 2;  // Kᵀ rows inside a wider cache, as when decoding
            const auto q = data(hd, 7), kt = data(hd * kt_stride, 8), vv = data(n_keys * stride, 9);
            std::vector<std::uint8_t> allow(n_keys);
            ref::RowMask mask;
            make_masks(mask_kind, 1, n_keys, allow.data(), &mask);
            INFO(K::name() << " head_dim=" << hd << " keys=" << n_keys << " mask=" << int(mask_kind)
                           << " fill=" << int(fill));
            // streaming
            std::vector<float> s1(attention_scratch_floats(1, n_keys, hd)), s2(s1.size()), o1(hd), o2(hd);
            K::attention_row(q.data(), kt.data(), kt_stride, vv.data(), stride, hd, n_keys, mask, fill, s1.data(),
                             o1.data());
            ref::attention_row(q.data(), kt.data(), kt_stride, vv.data(), stride, hd, n_keys, mask, fill, s2.data(),
                               o2.data());
            CHECK(first_difference(o1, o2) == -1);
            // with the weights
            std::vector<float> p1(n_keys), p2(n_keys);
            K::attention_rows_weights(q.data(), hd, 1, kt.data(), kt_stride, vv.data(), stride, hd, n_keys, &mask, fill,
                                      p1.data(), o1.data(), hd);
            ref::attention_row_weights(q.data(), kt.data(), kt_stride, vv.data(), stride, hd, n_keys, mask, fill,
                                       p2.data(), o2.data());
            CHECK(first_difference(p1, p2) == -1);
            CHECK(first_difference(o1, o2) == -1);
          }
  });
}

TEST_CASE("kernel variants: groups of attention rows (causal, padded, aliased outputs) equal the reference",
          "[kernels]") {
  for_each_variant([](auto k) {
    using K = decltype(k);
    for (index_t hd : kHeadDims)
      for (index_t rows : kAttentionRowCases)
        for (index_t n_keys : kKeyCounts)
          for (MaskKind mask_kind : kMaskKinds) {
            const index_t d_model = hd + 5;  // heads inside a wider row, as in multi-head attention
            const index_t kt_stride = n_keys + 1;
            const auto qsrc = data(rows * d_model, 21), kt = data(hd * kt_stride, 22), vv = data(n_keys * d_model, 23);
            std::vector<std::uint8_t> allow(rows * n_keys);
            std::vector<ref::RowMask> masks(rows);
            make_masks(mask_kind, rows, n_keys, allow.data(), masks.data());
            INFO(K::name() << " head_dim=" << hd << " rows=" << rows << " keys=" << n_keys
                           << " mask=" << int(mask_kind));
            for (MaskFill fill : kMaskFills) {
              auto got = qsrc, want = qsrc;  // outputs alias the query rows, as in the layers
              std::vector<float> s1(attention_scratch_floats(rows, n_keys, hd)), s2(s1.size());
              K::attention_rows(got.data(), d_model, rows, kt.data(), kt_stride, vv.data(), d_model, hd, n_keys,
                                masks.data(), fill, s1.data(), got.data(), d_model);
              ref::attention_rows(want.data(), d_model, rows, kt.data(), kt_stride, vv.data(), d_model, hd, n_keys,
                                  masks.data(), fill, s2.data(), want.data(), d_model);
              CHECK(first_difference(got, want) == -1);
              got = qsrc, want = qsrc;
              std::vector<float> p1(rows * n_keys), p2(rows * n_keys);
              K::attention_rows_weights(got.data(), d_model, rows, kt.data(), kt_stride, vv.data(), d_model, hd, n_keys,
                                        masks.data(), fill, p1.data(), got.data(), d_model);
              ref::attention_rows_weights(want.data(), d_model, rows, kt.data(), kt_stride, vv.data(), d_model, hd,
                                          n_keys, masks.data(), fill, p2.data(), want.data(), d_model);
              CHECK(first_difference(p1, p2) == -1);
              CHECK(first_difference(got, want) == -1);
            }
          }
  });
}

TEST_CASE("kernel variants: layer norm, log_softmax, activations, exp, log equal the reference", "[kernels]") {
  for_each_variant([](auto k) {
    using K = decltype(k);
    for (index_t n : kRowLengths) {
      INFO(K::name() << " n=" << n);
      const auto x = data(n, 11, 3.0f), g = data(n, 12), b = data(n, 13);
      for (LayerNormKind kind : {LayerNormKind::torch, LayerNormKind::annotated}) {
        if (kind == LayerNormKind::annotated && n < 2) continue;
        std::vector<float> got(n), want(n);
        K::layer_norm_row(x.data(), g.data(), b.data(), n, kind, 1e-5f, got.data());
        ref::layer_norm_row(x.data(), g.data(), b.data(), n, kind, 1e-5f, want.data());
        CHECK(first_difference(got, want) == -1);
        // several rows at once (one group of up to 16; more: groups of 8 and a remainder), each
        // the same as alone
        for (index_t rows : kLayerNormRowCounts) {
          const auto xs = data(rows * n, 16, 3.0f);
          std::vector<float> got_rows(rows * n), want_rows(rows * n);
          K::layer_norm_rows(xs.data(), rows, g.data(), b.data(), n, kind, 1e-5f, got_rows.data());
          for (index_t r = 0; r < rows; ++r)
            ref::layer_norm_row(xs.data() + r * n, g.data(), b.data(), n, kind, 1e-5f, want_rows.data() + r * n);
          CHECK(first_difference(got_rows, want_rows) == -1);
        }
      }
      auto got = data(n, 14, 20.0f), want = got;
      K::log_softmax_row(got.data(), n);
      ref::log_softmax_row(want.data(), n);
      CHECK(first_difference(got, want) == -1);
      for (Activation a : {Activation::relu, Activation::gelu}) {
        got = data(n, 15, 6.0f);
        want = got;
        K::activation(a, got.data(), n);
        ref::activation(a, want.data(), n);
        CHECK(first_difference(got, want) == -1);
      }
      auto src = data(n, 16, 90.0f);
      K::exp(src.data(), got.data(), n);
      ref::exp(src.data(), want.data(), n);
      CHECK(first_difference(got, want) == -1);
      for (float& v : src) v = std::fabs(v) * 1e3f;
      K::log(src.data(), got.data(), n);
      ref::log(src.data(), want.data(), n);
      CHECK(first_difference(got, want) == -1);
    }
  });
}

TEST_CASE("kernel variants: special values (0, -0, ±inf, NaN, huge, tiny) give the reference's bits", "[kernels]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> all_specials = {0.0f,    -0.0f,  inf,     -inf,   nan,   88.7f,  88.73f, -87.3f, -87.34f,
                                           -100.0f, 1e-40f, -1e-40f, 1e-30f, 3e38f, -3e38f, 1.0f,   -1.0f,  0.5f};
  for_each_variant([&](auto k) {
    using K = decltype(k);
    std::vector<float> specials = all_specials;
#if defined(__arm__) && !defined(__aarch64__)
    // armv7 NEON arithmetic always flushes denormals to zero (the one documented exception to
    // bit-identity): its variant is checked on every other value here.
    if (std::string(K::name()) == "neon")
      specials.erase(std::remove_if(specials.begin(), specials.end(),
                                    [](float v) { return v != 0.0f && std::fabs(v) < 1.17549435e-38f; }),
                     specials.end());
#endif
    const index_t n = specials.size();
    std::vector<float> got(n), want(n);
    K::exp(specials.data(), got.data(), n);
    ref::exp(specials.data(), want.data(), n);
    CHECK(first_difference(got, want) == -1);
    K::gelu(specials.data(), got.data(), n);
    ref::gelu(specials.data(), want.data(), n);
    CHECK(first_difference(got, want) == -1);
    K::log(specials.data(), got.data(), n);
    ref::log(specials.data(), want.data(), n);
    CHECK(first_difference(got, want) == -1);
  });
}

TEST_CASE("own exp, log and GELU are accurate (vs double-precision libm)", "[kernels][math]") {
  double worst_exp = 0, worst_log = 0, worst_gelu = 0;
  for (int i = 0; i <= 200000; ++i) {
    const float x = -87.0f + 175.0f * static_cast<float>(i) / 200000.0f;
    float y;
    ref::exp(&x, &y, 1);
    worst_exp = std::max(worst_exp, std::fabs(y - std::exp(double(x))) / std::exp(double(x)));
    const float u = std::ldexp(1.0f + static_cast<float>(i) / 200000.0f, (i % 200) - 100);
    ref::log(&u, &y, 1);
    const double lu = std::log(double(u));
    worst_log = std::max(worst_log, std::fabs(y - lu) / std::max(std::fabs(lu), 1e-3));
    const float g = -10.0f + 20.0f * static_cast<float>(i) / 200000.0f;
    ref::gelu(&g, &y, 1);
    // the argument -x/√2 is rounded to float, as PyTorch's own float GELU does; measure the rest
    const float arg = g * -0.707106781186547524f;
    const double want = 0.5 * g * std::erfc(double(arg));
    worst_gelu = std::max(worst_gelu, std::fabs(y - want) / std::max(std::fabs(want), 1e-30));
  }
  INFO("max relative error: exp " << worst_exp << ", log " << worst_log << ", gelu " << worst_gelu);
  CHECK(worst_exp < 2.5e-7);
  CHECK(worst_log < 2.5e-7);
  CHECK(worst_gelu < 1e-6);
  float y;
  const float zero = 0.0f, neg = -1.0f, ninf = -std::numeric_limits<float>::infinity();
  ref::log(&zero, &y, 1);
  CHECK(y == ninf);
  ref::log(&neg, &y, 1);
  CHECK(std::isnan(y));
  ref::exp(&ninf, &y, 1);
  CHECK(y == 0.0f);
}
