// Every kernel variant of this build (kernels/registry.hpp) gives the same bits as the reference,
// at every case of the one case list (tests/support/kernel_cases.hpp: sizes around the 16-lane
// block, the register tiles, the weight panels, the key blocks and spans, masks), through the
// checks written once in tests/support/kernel_checks.hpp, which the Cortex-M firmware
// (examples/firmware/kernel_check.cpp) runs too; variants the CPU cannot run are skipped at run
// time. Plus the accuracy of the library's own exp, log and GELU against libm.
#include <catch2/catch.hpp>

#include <boost/hana/for_each.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <statiformer/kernels/reference.hpp>
#include <statiformer/kernels/registry.hpp>

#include "../support/kernel_cases.hpp"
#include "../support/kernel_checks.hpp"
#include "isa_cpuid.hpp"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

using namespace stf;

namespace {
using namespace stf_cases;

/// Whether variant K flushes denormal results to zero: armv7 NEON, the one documented exception.
template <class K>
bool flushes_denormals() {
#if defined(__arm__) && !defined(__aarch64__)
  return std::string(K::name()) == "neon";
#else
  return false;
#endif
}

/// The checks' runner here (tests/support/kernel_checks.hpp): buffers for the hosts' largest cases,
/// a difference is a failed CHECK that names the variant, the operation, the case and the element.
template <class K>
struct CatchEnv {
  using Cap = stf_checks::Capacity<largest(kHeadDims), largest(kKeyCounts), kAttentionInt8ManyRows>;
  std::vector<float> x = std::vector<float>(Cap::x), w = std::vector<float>(Cap::w),
                     bias = std::vector<float>(Cap::bias), got = std::vector<float>(Cap::y),
                     want = std::vector<float>(Cap::y), q = std::vector<float>(Cap::q),
                     kt = std::vector<float>(Cap::kt), vv = std::vector<float>(Cap::v),
                     s_got = std::vector<float>(Cap::scratch), s_want = std::vector<float>(Cap::scratch),
                     o_got = std::vector<float>(Cap::q), o_want = std::vector<float>(Cap::q);
  std::vector<std::uint8_t> allow_bytes = std::vector<std::uint8_t>(Cap::allow);
  std::vector<ref::RowMask> row_masks = std::vector<ref::RowMask>(Cap::rows);
  std::vector<ref::MaskArrays> mask_arrays = std::vector<ref::MaskArrays>(Cap::rows);
  stf_checks::Buffers buf{x.data(),     w.data(),      bias.data(),        got.data(),       want.data(),
                          q.data(),     kt.data(),     vv.data(),          s_got.data(),     s_want.data(),
                          o_got.data(), o_want.data(), allow_bytes.data(), row_masks.data(), mask_arrays.data()};
  // int8 (check_linear_w8a8), with the case near the int32 limit
  std::vector<std::int8_t> qw = std::vector<std::int8_t>(Cap::qw),
                           q_scratch = std::vector<std::int8_t>(std::max(Cap::q_scratch, Cap::limit_scratch)),
                           q_row = std::vector<std::int8_t>(std::max(Cap::q_row, ref::kMaxQuantizedIn)),
                           limit_qw = std::vector<std::int8_t>(Cap::limit_qw);
  std::vector<float> s_w = std::vector<float>(Cap::s_w), limit_x = std::vector<float>(Cap::limit_x),
                     w32_scratch = std::vector<float>(Cap::w32_scratch), group_x = std::vector<float>(Cap::group_x);
  std::vector<std::int8_t> group_qw = std::vector<std::int8_t>(Cap::group_qw);
  stf_checks::QuantBuffers qbuf{qw.data(),       q_scratch.data(),   q_row.data(),   s_w.data(),     limit_x.data(),
                                limit_qw.data(), w32_scratch.data(), group_x.data(), group_qw.data()};
  bool flushes_denormals = ::flushes_denormals<K>();
  index_t max_head_dim = largest(kHeadDims), max_keys = largest(kKeyCounts);
  index_t max_rows = kAttentionInt8ManyRows;

  void expect(const char* op, const float* g, const float* wnt, index_t n,
              std::initializer_list<stf_checks::Size> sizes, bool flushed) {
    // (two NaNs are equal whatever their payload bits)
    const index_t i = stf_checks::first_difference(g, wnt, n, flushed, true);
    if (i == n) {
      SUCCEED();
      return;
    }
    std::ostringstream m;
    m << K::name() << " " << op << ":";
    for (const stf_checks::Size& s : sizes) m << " " << s.name << "=" << s.value;
    m << ": element " << i << " is " << g[i] << ", the reference " << wnt[i];
    FAIL_CHECK(m.str());
  }
};

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
template <class Check>
void run_check(Check check) {
  for_each_variant([&](auto k) {
    using K = decltype(k);
    CatchEnv<K> env;
    check(k, env);
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
  run_check([](auto k, auto& env) { stf_checks::check_dot_sum<decltype(k)>(env); });
}

TEST_CASE("kernel variants: transpose equals the reference, padded strides, nothing written outside", "[kernels]") {
  run_check([](auto k, auto& env) { stf_checks::check_transpose<decltype(k)>(env); });
}

TEST_CASE("kernel variants: linear (bias, fused activations, a long reduction) equals the reference", "[kernels]") {
  run_check([](auto k, auto& env) { stf_checks::check_linear<decltype(k)>(env); });
}

// A linear of no outputs writes nothing (x86's one-tile shortcut once took it for a tile of one vector).
TEST_CASE("kernel variants: a linear of no outputs writes nothing", "[kernels]") {
  for_each_variant([](auto k) {
    using K = decltype(k);
    std::vector<float> x(13 * 16, 0.5f), w(16 * 64, 0.25f), bias(64, 1.0f), y(13 * 64, -7.0f);
    for (index_t rows : {1, 2, 10, 13}) {
      K::linear(x.data(), rows, 16, w.data(), bias.data(), 0, y.data(), Fuse::relu);
      index_t touched = 0;
      for (float v : y) touched += v != -7.0f;
      INFO(K::name() << ": " << rows << " rows");
      CHECK(touched == 0);
    }
  });
}

TEST_CASE(
    "kernel variants: linear_w8a8 (int8: sizes, activations, special rows, the int32 limit) and linears_w8a8 equal the "
    "reference",
    "[kernels][int8]") {
  run_check([](auto k, auto& env) { stf_checks::check_linear_w8a8<decltype(k)>(env); });
}

TEST_CASE(
    "kernel variants: linear_w8a32 (int8 weights, float product: sizes, activations, special rows) equals the "
    "reference",
    "[kernels][int8]") {
  run_check([](auto k, auto& env) { stf_checks::check_linear_w8a32<decltype(k)>(env); });
}

TEST_CASE("kernel variants: quantize_rows and attention_rows_w8a8 (int8 attention: masks, fills) equal the reference",
          "[kernels][int8]") {
  run_check([](auto k, auto& env) { stf_checks::check_attention_w8a8<decltype(k)>(env); });
}

#if defined(__x86_64__)
// The x86 variants' vpmaddwd code (what CPUs without VNNI run; kernels/product/x86_int8.hpp) on this
// CPU too, whatever it has: the same check with VNNI turned off.
TEST_CASE("kernel variants: linear_w8a8 without VNNI (vpmaddwd on int16) equals the reference", "[kernels][int8]") {
  struct Restore {
    ~Restore() { kernels_detail::x86::int8_allow_vnni = true; }
  } restore;
  kernels_detail::x86::int8_allow_vnni = false;
  run_check([](auto k, auto& env) { stf_checks::check_linear_w8a8<decltype(k)>(env); });
}
// The same for the x86 w8a8 attention (kernels/attention/x86_int8.hpp): its sums by vpmaddwd.
TEST_CASE("kernel variants: attention_rows_w8a8 without VNNI (vpmaddwd) equals the reference", "[kernels][int8]") {
  struct Restore {
    ~Restore() { kernels_detail::x86::int8_allow_vnni = true; }
  } restore;
  kernels_detail::x86::int8_allow_vnni = false;
  run_check([](auto k, auto& env) { stf_checks::check_attention_w8a8<decltype(k)>(env); });
}
#endif

#if defined(__aarch64__) && defined(__linux__)
namespace stf_test {
// tests/unit/int8_neon_dotprod.cpp (compiled with +dotprod)
void int8_neon_sdot_linears_w8a8(const float* x, index_t rows, index_t in, const W8a8Linear* linears, index_t count,
                                 std::int8_t* scratch);
bool int8_neon_sdot_attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows,
                                        const std::int8_t* k, index_t k_stride, const float* s_k, const std::int8_t* v,
                                        index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                                        const stf::ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                        index_t out_stride);
}  // namespace stf_test

// The neon variant's sdot tiles (what a build with +dotprod selects; kernels/product/neon_int8.hpp)
// on every aarch64 build, where the CPU (or qemu-aarch64's default CPU, max) has the dot product
// instructions; the build's own neon variant, above, runs the smull tiles unless its flags have +dotprod.
TEST_CASE("kernel variants: linear_w8a8 and linears_w8a8 of neon with sdot (+dotprod) equal the reference",
          "[kernels][int8]") {
  if (!(getauxval(AT_HWCAP) & HWCAP_ASIMDDP)) {
    WARN("skipped: this CPU has no dot product instructions (HWCAP_ASIMDDP)");
    return;
  }
  struct NeonSdot {
    static const char* name() { return "neon (int8 sdot)"; }
    static void linear_w8a8(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w,
                            const float* bias, index_t out, float* y, std::int8_t* scratch, Fuse act = Fuse::none) {
      const W8a8Linear one{qw, s_w, bias, out, y, act};
      stf_test::int8_neon_sdot_linears_w8a8(x, rows, in, &one, 1, scratch);
    }
    static void linears_w8a8(const float* x, index_t rows, index_t in, const W8a8Linear* linears, index_t count,
                             std::int8_t* scratch) {
      stf_test::int8_neon_sdot_linears_w8a8(x, rows, in, linears, count, scratch);
    }
  };
  CatchEnv<NeonSdot> env;
  stf_checks::check_linear_w8a8<NeonSdot>(env);
}

// The same for the w8a8 attention's sdot code (kernels/attention/neon_int8.hpp): what it declines
// runs the library's attention_rows_w8a8, as the generic code would.
TEST_CASE("kernel variants: attention_rows_w8a8 of neon with sdot (+dotprod) equals the reference", "[kernels][int8]") {
  if (!(getauxval(AT_HWCAP) & HWCAP_ASIMDDP)) {
    WARN("skipped: this CPU has no dot product instructions (HWCAP_ASIMDDP)");
    return;
  }
  struct NeonSdotAttention : Kernels<isa::neon> {
    static const char* name() { return "neon (int8 attention sdot)"; }
    static void attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows,
                                    const std::int8_t* k, index_t k_stride, const float* s_k, const std::int8_t* v,
                                    index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                                    const stf::ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                    index_t out_stride) {
      if (!stf_test::int8_neon_sdot_attention_rows_w8a8(q, q_stride, s_q, n_rows, k, k_stride, s_k, v, v_stride, s_v,
                                                        head_dim, n_keys, masks, fill, p, out, out_stride))
        Kernels<isa::neon>::attention_rows_w8a8(q, q_stride, s_q, n_rows, k, k_stride, s_k, v, v_stride, s_v, head_dim,
                                                n_keys, masks, fill, p, out, out_stride);
    }
  };
  CatchEnv<NeonSdotAttention> env;
  stf_checks::check_attention_w8a8<NeonSdotAttention>(env);
}
#endif

TEST_CASE("kernel variants: linear_block over blocks of the reduction and of the outputs gives linear's bits",
          "[kernels]") {
  run_check([](auto k, auto& env) { stf_checks::check_linear_blocks<decltype(k)>(env); });
}

TEST_CASE("kernel variants: attention rows, groups and single, every mask and fill, streaming and with weights",
          "[kernels]") {
  run_check([](auto k, auto& env) { stf_checks::check_attention<decltype(k)>(env); });
}

TEST_CASE("kernel variants: layer norm, log_softmax, activations, add, exp, log equal the reference", "[kernels]") {
  run_check([](auto k, auto& env) { stf_checks::check_rows<decltype(k)>(env); });
}

TEST_CASE("kernel variants: special values (0, -0, ±inf, NaN, huge, tiny) give the reference's bits", "[kernels]") {
  run_check([](auto k, auto& env) { stf_checks::check_specials<decltype(k)>(env); });
}

/// The tanh GELU of the float64 formula 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³), in its exact equivalent
/// x / (1 + e^(-2u)) (1 + tanh(u) cancels in float64 too, for u < -18).
static double gelu_tanh_f64(double x) {
  const double u = std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}

// Measured (x86 and every variant: the same bits): 1.8 ulp for x >= 0; 15.1 ulp on [-3, 3]; 170.9 ulp on [-10, 10]
// (at x = -9.30). For x < 0 the result is x · e^(2u) / (1 + e^(2u)): the rounding errors of -2u's few float steps
// (each within half an ulp of |2u|, up to 88) pass to the result relatively, |2u| · 2^-24 each.
TEST_CASE(
    "own tanh GELU: within 2 ulp of the float64 formula for x in [0, 10], 16 on [-3, 3], 176 on [-10, 10], "
    "bounded, never NaN",
    "[kernels][math]") {
  const auto tanh_gelu = [](float x) {
    ref::activation(Activation::gelu_tanh, &x, 1);
    return x;
  };
  // the equivalence the float64 oracle uses, where the tanh form has digits to spare
  for (double x = -4.0; x <= 4.0; x += 0.01) {
    const double u = std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
    CHECK(std::fabs(0.5 * x * (1.0 + std::tanh(u)) - gelu_tanh_f64(x)) <= 1e-13 * std::max(std::fabs(x), 1e-3));
  }
  double worst_pos = 0, worst_near = 0, worst_far = 0, worst_far_x = 0;
  for (int i = 0; i <= 400000; ++i) {
    // (below -10.04, e^(-2u) overflows: the result is -0, the exact one under 3e-38)
    const float x = -10.0f + 20.0f * static_cast<float>(i) / 400000.0f;
    const double want = gelu_tanh_f64(double(x));
    if (want == 0.0) {
      CHECK(tanh_gelu(x) == 0.0f);
      continue;
    }
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    const double err = std::fabs(double(tanh_gelu(x)) - want) / ulp;
    if (x >= 0.0f) worst_pos = std::max(worst_pos, err);
    if (std::fabs(x) <= 3.0f) worst_near = std::max(worst_near, err);
    if (err > worst_far) worst_far = err, worst_far_x = x;
  }
  INFO("max ulp error: 0 <= x <= 10: " << worst_pos << "; |x| <= 3: " << worst_near << "; -10 <= x <= 10: " << worst_far
                                       << " (at x = " << worst_far_x << ")");
  CHECK(worst_pos <= 2.0);
  CHECK(worst_near <= 16.0);
  CHECK(worst_far <= 176.0);
  // every finite x: x's sign (or zero), |y| <= |x|, never NaN; ±0 keep their sign, +inf stays
  const float big = 3.40282347e38f;
  for (float x : {0.0f,   -0.0f,  1e-45f, -1e-45f, 1e-40f, -1e-40f, 1.17549435e-38f, -1e-20f, 1e-20f, -9.0f, -10.1f,
                  -10.3f, -20.0f, -1e10f, 1e10f,   -1e20f, 1e20f,   3e38f,           -3e38f,  big,    -big}) {
    const float y = tanh_gelu(x);
    INFO("x = " << x << ", y = " << y);
    CHECK(!std::isnan(y));
    CHECK(std::fabs(y) <= std::fabs(x));
    CHECK((y == 0.0f || std::signbit(y) == std::signbit(x)));
    if (x > 10.0f) CHECK(y == x);
  }
  CHECK(std::signbit(tanh_gelu(-0.0f)));
  CHECK(tanh_gelu(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
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

TEST_CASE("row tiles and head groups: EvenParts cuts as even_part does, as evenly as the parts go", "[kernels]") {
  using kernels_detail::even_part;
  using kernels_detail::EvenParts;
  STATIC_REQUIRE(EvenParts(32, 6)[0] == 6);  // 6 6 5 5 5 5
  STATIC_REQUIRE(EvenParts(32, 6)[2] == 5);
  for (index_t most = 1; most <= 16; ++most)
    for (index_t total = 0; total <= 200; ++total) {
      INFO("total " << total << ", parts of at most " << most);
      const EvenParts cut(total, most);
      index_t parts = 0, smallest = most, largest = 0;
      for (index_t rem = total; rem > 0; ++parts) {
        const index_t n = even_part(rem, most);
        REQUIRE(cut[parts] == n);
        REQUIRE(n >= 1);
        REQUIRE(n <= most);
        REQUIRE(n <= (parts ? cut[parts - 1] : most));  // the larger first
        smallest = n < smallest ? n : smallest;
        largest = n > largest ? n : largest;
        rem -= n;
      }
      REQUIRE(parts == (total + most - 1) / most);  // as few parts as parts of `most` take
      if (parts) REQUIRE(largest - smallest <= 1);
    }
}
