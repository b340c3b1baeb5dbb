// A program built as a user builds without -march (tests/dispatch/CMakeLists.txt strips the build's
// -march from it and links a copy of the library built the same way): its layers call
// Kernels<isa::dispatch>, which runs AVX-512, AVX2 or scalar as the CPU or STF_ISA says. ctest runs
// it once per STF_ISA value; each run checks
//  1. the variant it runs is the one STF_ISA forces when the CPU can run it, else the best the CPU
//     runs (cpuid + xgetbv, simd/dispatch.hpp, cross-checked against __builtin_cpu_supports), and
//     name() and dispatch_choice() say so; the first call (which chooses) allocates nothing;
//  2. the choice rule on every simulated CPU (none, AVX2, AVX-512) and request;
//  3. every dispatching entry point gives the reference's bits (stf::ref) over the shared case list
//     (tests/support/kernel_cases.hpp; attention cycles through the masks and fills);
//  4. the demo model, a whole encoder-decoder on the dispatching kernels, gives the committed
//     logprob hash (examples/demo/logprob_hash.hpp), the same bits on every target and variant.
// Exit status 0 when all hold; the failures are printed.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <statiformer/kernels/reference.hpp>
#include <statiformer/simd/dispatch.hpp>
#include <statiformer/statiformer.hpp>

#include "../../examples/demo/demo_model.hpp"
#include "../../examples/demo/logprob_hash.hpp"
#include "../support/heap_counter.hpp"
#include "../support/kernel_cases.hpp"

static_assert(std::is_same_v<stf::isa::active, stf::isa::dispatch>,
              "dispatch_default must be compiled without -mavx2 -mfma / -mavx512f (-march): it tests the layers of "
              "such a build");
static_assert(stf::kAttentionCallRows == 2 * stf::kAttentionRowGroup);

using namespace stf;
using namespace stf_cases;
using K = ActiveKernels;

namespace {

int failures = 0;
long cases = 0;

void fail(const std::string& what) {
  if (++failures <= 20) std::printf("FAILED: %s\n", what.c_str());
}
void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

bool same_bits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  std::uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}
/// Compares got with want bit for bit (one case).
void same(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ++cases;
  for (index_t i = 0; i < got.size(); ++i)
    if (!same_bits(got[i], want[i])) {
      char at[96];
      std::snprintf(at, sizeof at, ": first difference at %zu: %a, reference %a", static_cast<std::size_t>(i),
                    double(got[i]), double(want[i]));
      return fail(what + at);
    }
}
std::vector<float> data(index_t n, std::uint32_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  fill(v.data(), n, seed, scale);
  return v;
}
std::string str(index_t v) { return std::to_string(v); }

// ---- 1, 2: the choice ------------------------------------------------------------------------------
bool contains(const char* s, const char* part) { return s && std::strstr(s, part); }

void check_choice() {
  const char* requested = std::getenv("STF_ISA");
  const std::string req = requested ? requested : "";
  const isa::CpuVerdict avx2 = isa::x86_can_run(false), avx512 = isa::x86_can_run(true);
  // the detection against libgcc's, which the variants' supported() use
  __builtin_cpu_init();
  check(avx2.can_run == (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")),
        std::string("cpuid says AVX2 + FMA ") + (avx2.can_run ? "run" : "do not run") + " (" + avx2.why +
            "); __builtin_cpu_supports disagrees");
  check(avx512.can_run == static_cast<bool>(__builtin_cpu_supports("avx512f")),
        std::string("cpuid says AVX-512F ") + (avx512.can_run ? "runs" : "does not run") + " (" + avx512.why +
            "); __builtin_cpu_supports disagrees");
  const std::string best = avx512.can_run ? "avx512" : avx2.can_run ? "avx2" : "scalar";
  const bool can = req == "scalar" || (req == "avx2" && avx2.can_run) || (req == "avx512" && avx512.can_run);
  const bool asked = !req.empty() && req != "auto";
  const std::string want = can ? req : best;

  // the first call chooses: no heap allocation, even when it prints why STF_ISA is ignored
  test::heap::allocations = 0;
  test::heap::counting = true;
  const std::string name = K::name();
  test::heap::counting = false;
  check(test::heap::allocations == 0,
        "the first dispatching call allocated " + str(test::heap::allocations) + " times");

  const isa::DispatchChoice c = isa::dispatch_choice();
  std::printf("dispatch_default: STF_ISA=%s: runs %s (%s)\n", requested ? requested : "(unset)", name.c_str(), c.why);
  check(name == want, "STF_ISA=" + req + ": runs " + name + ", expected " + want);
  check(name == c.name, std::string("name() says ") + name + ", dispatch_choice() " + c.name);
  check(K::supported(), "supported() is false");
  check(c.ignored_request == (asked && !can), "STF_ISA=" + req + ": ignored_request is wrong");
  if (asked && can) check(c.why == "STF_ISA=" + req, std::string("why: ") + c.why);
  if (asked && !can) check(contains(c.why, "STF_ISA=") && contains(c.why, ("running " + best).c_str()), c.why);
  if (!asked) check(contains(c.why, "the best this CPU runs"), c.why);
}

void check_rule() {
  const isa::CpuVerdict yes{true, "has it"}, no{false, "lacks it"};
  struct Cpu {
    isa::CpuVerdict avx2, avx512;
    const char* best;
  };
  const Cpu cpus[] = {{no, no, "scalar"}, {yes, no, "avx2"}, {yes, yes, "avx512"}};
  for (const Cpu& cpu : cpus) {
    char buffer[192];
    for (const char* r : {static_cast<const char*>(nullptr), "", "auto", "scalar", "avx2", "avx512", "AVX2", "sse"}) {
      const std::string req = r ? r : "(unset)";
      const isa::DispatchChoice c = isa::decide_dispatch(r, cpu.avx2, cpu.avx512, buffer, sizeof buffer);
      const bool known = r && (!std::strcmp(r, "scalar") || !std::strcmp(r, "avx2") || !std::strcmp(r, "avx512"));
      const bool can = known && (!std::strcmp(r, "scalar") || (!std::strcmp(r, "avx2") && cpu.avx2.can_run) ||
                                 (!std::strcmp(r, "avx512") && cpu.avx512.can_run));
      const bool asked = r && *r && std::strcmp(r, "auto") != 0;
      const std::string want = can ? r : cpu.best;
      const std::string what = std::string("rule on a CPU whose best is ") + cpu.best + ", STF_ISA=" + req + ": ";
      check(c.name == want, what + "runs " + c.name + ", expected " + want);
      check(c.ignored_request == (asked && !can), what + "ignored_request is wrong");
      check(c.why == buffer, what + "why is not the buffer");
      if (asked && !known) check(contains(c.why, "is not one of scalar, avx2, avx512, auto"), what + c.why);
      if (known && !can) check(contains(c.why, "this CPU cannot run it (lacks it)"), what + c.why);
    }
  }
  char tiny[8];  // a short buffer truncates the message, never overruns
  isa::decide_dispatch("a-very-long-and-wrong-name", no, no, tiny, sizeof tiny);
  check(std::strlen(tiny) == sizeof tiny - 1, "the message does not fit the buffer's 8 bytes exactly");
}

// ---- 3: every entry point against the reference ------------------------------------------------------
void check_rows() {
  for (index_t n : kRowLengths) {
    const std::string at = " n=" + str(n);
    const auto a = data(n, 1 + static_cast<std::uint32_t>(n)), b = data(n, 99 + static_cast<std::uint32_t>(n));
    same({K::dot(a.data(), b.data(), n)}, {ref::dot(a.data(), b.data(), n)}, "dot" + at);
    same({K::sum(a.data(), n)}, {ref::sum(a.data(), n)}, "sum" + at);
    const auto x = data(n, 11, 3.0f), g = data(n, 12), bias = data(n, 13);
    for (LayerNormKind kind : {LayerNormKind::torch, LayerNormKind::annotated}) {
      if (kind == LayerNormKind::annotated && n < 2) continue;
      std::vector<float> got(n), want(n);
      K::layer_norm_row(x.data(), g.data(), bias.data(), n, kind, 1e-5f, got.data());
      ref::layer_norm_row(x.data(), g.data(), bias.data(), n, kind, 1e-5f, want.data());
      same(got, want, "layer_norm_row" + at);
      for (index_t rows : kLayerNormRowCounts) {
        const auto xs = data(rows * n, 16, 3.0f);
        std::vector<float> got_rows(rows * n), want_rows(rows * n);
        K::layer_norm_rows(xs.data(), rows, g.data(), bias.data(), n, kind, 1e-5f, got_rows.data());
        for (index_t r = 0; r < rows; ++r)
          ref::layer_norm_row(xs.data() + r * n, g.data(), bias.data(), n, kind, 1e-5f, want_rows.data() + r * n);
        same(got_rows, want_rows, "layer_norm_rows rows=" + str(rows) + at);
      }
    }
    auto got = data(n, 14, 20.0f), want = got;
    K::log_softmax_row(got.data(), n);
    ref::log_softmax_row(want.data(), n);
    same(got, want, "log_softmax_row" + at);
    for (Activation act : {Activation::relu, Activation::gelu}) {
      got = want = data(n, 15, 6.0f);
      K::activation(act, got.data(), n);
      ref::activation(act, want.data(), n);
      same(got, want, "activation" + at);
    }
    got = want = data(n, 17);
    const auto addend = data(n, 18);
    K::add(got.data(), addend.data(), n);
    ref::add(want.data(), addend.data(), n);
    same(got, want, "add" + at);
    auto src = data(n, 16, 90.0f);
    K::exp(src.data(), got.data(), n);
    ref::exp(src.data(), want.data(), n);
    same(got, want, "exp" + at);
    K::gelu(src.data(), got.data(), n);
    ref::gelu(src.data(), want.data(), n);
    same(got, want, "gelu" + at);
    for (float& v : src) v = std::fabs(v) * 1e3f;
    K::log(src.data(), got.data(), n);
    ref::log(src.data(), want.data(), n);
    same(got, want, "log" + at);
  }
  for (index_t rows : kTransposeSizes)
    for (index_t cols : kTransposeSizes)
      for (index_t pad : kTransposePads) {
        const index_t ld_src = cols + pad, ld_dst = rows + pad;
        const auto src = data(rows * ld_src, static_cast<std::uint32_t>(rows * 131 + cols));
        std::vector<float> got(cols * ld_dst, -7.0f), want(cols * ld_dst, -7.0f);
        K::transpose(src.data(), rows, cols, ld_src, got.data(), ld_dst);
        ref::transpose(src.data(), rows, cols, ld_src, want.data(), ld_dst);
        same(got, want, "transpose " + str(rows) + "x" + str(cols) + " pad " + str(pad));
      }
}

void check_linear() {
  int i = 0;  // the activation and the bias cycle over the cases
  for (index_t rows : kLinearRows)
    for (index_t in : kLinearIns)
      for (index_t out : kLinearOuts) {
        const Fuse act = i % 3 == 0 ? Fuse::none : i % 3 == 1 ? Fuse::relu : Fuse::gelu;
        const bool with_bias = ++i % 2;
        const auto x = data(rows * in, 3), w = data(out * in, 4), b = data(out, 5);
        std::vector<float> got(rows * out), want(rows * out);
        const float* bias = with_bias ? b.data() : nullptr;
        K::linear(x.data(), rows, in, w.data(), bias, out, got.data(), act);
        ref::linear(x.data(), rows, in, w.data(), bias, out, want.data(), act);
        same(got, want, "linear " + str(rows) + "x" + str(in) + "x" + str(out) + " act " + str(int(act)));
      }
  for (index_t rows : kLongRows)
    for (index_t out : kLongOuts) {
      const auto x = data(rows * kLongIn, 31), w = data(out * kLongIn, 32), b = data(out, 33);
      std::vector<float> got(rows * out), want(rows * out);
      K::linear(x.data(), rows, kLongIn, w.data(), b.data(), out, got.data());
      ref::linear(x.data(), rows, kLongIn, w.data(), b.data(), out, want.data(), Fuse::none);
      same(got, want, "linear, long reduction, " + str(rows) + "x" + str(out));
    }
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
              K::linear_block(x.data() + k0, in, rows, k1 - k0, {w.data(), in, out, k0, o0}, cols, got.data() + o0, out,
                              last ? b.data() + o0 : nullptr, k0 > 0, last ? Fuse::relu : Fuse::none);
            }
          }
          same(got, want, "linear_block " + str(rows) + "x" + str(in) + "x" + str(out) + " /" + str(col_block));
        }
}

void check_attention() {
  int i = 0;  // the mask kind and the fill cycle over the cases
  for (index_t hd : kHeadDims)
    for (index_t rows : kAttentionRowCases)
      for (index_t n_keys : kKeyCounts) {
        const MaskKind kind = kMaskKinds[i % 7];
        const MaskFill fill = kMaskFills[(i / 7) % 2];
        ++i;
        const std::string at = " head_dim=" + str(hd) + " rows=" + str(rows) + " keys=" + str(n_keys) +
                               " mask=" + str(int(kind)) + " fill=" + str(int(fill));
        const index_t d_model = hd + 5, kt_stride = n_keys + 1;
        const auto qsrc = data(rows * d_model, 21), kt = data(hd * kt_stride, 22), vv = data(n_keys * d_model, 23);
        std::vector<std::uint8_t> allow(rows * n_keys);
        std::vector<ref::RowMask> masks(rows);
        make_masks(kind, rows, n_keys, allow.data(), masks.data());
        std::vector<float> s1(attention_scratch_floats(rows, n_keys, hd)), s2(s1.size());
        auto got = qsrc, want = qsrc;  // outputs alias the query rows, as in the layers
        K::attention_rows(got.data(), d_model, rows, kt.data(), kt_stride, vv.data(), d_model, hd, n_keys, masks.data(),
                          fill, s1.data(), got.data(), d_model);
        ref::attention_rows(want.data(), d_model, rows, kt.data(), kt_stride, vv.data(), d_model, hd, n_keys,
                            masks.data(), fill, s2.data(), want.data(), d_model);
        same(got, want, "attention_rows" + at);
        const index_t out_stride = hd + 2;  // and into a separate output of another stride
        std::vector<float> o_got(rows * out_stride, -3.0f), o_want(o_got);
        K::attention_rows(qsrc.data(), d_model, rows, kt.data(), kt_stride, vv.data(), d_model, hd, n_keys,
                          masks.data(), fill, s1.data(), o_got.data(), out_stride);
        ref::attention_rows(qsrc.data(), d_model, rows, kt.data(), kt_stride, vv.data(), d_model, hd, n_keys,
                            masks.data(), fill, s2.data(), o_want.data(), out_stride);
        same(o_got, o_want, "attention_rows, output stride " + str(out_stride) + at);
        got = want = qsrc;
        std::vector<float> p1(rows * n_keys), p2(rows * n_keys);
        K::attention_rows_weights(got.data(), d_model, rows, kt.data(), kt_stride, vv.data(), d_model, hd, n_keys,
                                  masks.data(), fill, p1.data(), got.data(), d_model);
        ref::attention_rows_weights(want.data(), d_model, rows, kt.data(), kt_stride, vv.data(), d_model, hd, n_keys,
                                    masks.data(), fill, p2.data(), want.data(), d_model);
        same(p1, p2, "attention_rows_weights, weights" + at);
        same(got, want, "attention_rows_weights" + at);
        std::vector<float> o1(hd), o2(hd);
        K::attention_row(qsrc.data(), kt.data(), kt_stride, vv.data(), d_model, hd, n_keys, masks[0], fill, s1.data(),
                         o1.data());
        ref::attention_row(qsrc.data(), kt.data(), kt_stride, vv.data(), d_model, hd, n_keys, masks[0], fill, s2.data(),
                           o2.data());
        same(o1, o2, "attention_row" + at);
      }
}

// ---- 4: a whole model ---------------------------------------------------------------------------------
stf_demo::Model model;

void check_demo() {
  ++cases;
  const BindResult bound = bind_table(model.params, stf_demo::weights::table);
  if (bound.status != Status::ok) return fail("the demo's weights do not bind");
  const int src[] = {stf_demo::kDigit0 + 3, stf_demo::kDigit0 + 1, stf_demo::kDigit0 + 4, stf_demo::kDigit0 + 1,
                     stf_demo::kDigit0 + 5};
  std::uint64_t hash = 0;
  index_t steps = 0;
  if (stf_demo::logprob_hash(model, src, 5, stf_demo::kBos, stf_demo::kEos, hash, steps) != Status::ok)
    return fail("the demo model failed to decode");
  std::printf("dispatch_default: demo logprob hash 0x%016llx over %zu steps (committed: 0x%016llx)\n",
              static_cast<unsigned long long>(hash), static_cast<std::size_t>(steps),
              static_cast<unsigned long long>(stf_demo::kCommittedLogprobHash));
  check(hash == stf_demo::kCommittedLogprobHash, "the demo's logprob hash is not the committed one");
}

}  // namespace

int main() {
  check_choice();  // first: it makes the first dispatching call
  check_rule();
  check_rows();
  check_linear();
  check_attention();
  check_demo();
  std::printf("dispatch_default: %s kernels: %ld cases, %d failed\n", K::name(), cases, failures);
  return failures == 0 ? 0 : 1;
}
