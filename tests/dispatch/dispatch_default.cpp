// A program built as a user builds without -march (tests/dispatch/CMakeLists.txt strips the build's
// -march from it and links a copy of the library built the same way): its layers call
// Kernels<isa::dispatch>, which runs AVX-512, AVX2 or scalar as the CPU or STF_ISA says. ctest runs
// it once per STF_ISA value; each run checks
//  1. the variant it runs is the one STF_ISA forces when the CPU can run it, else the best the CPU
//     runs (cpuid + xgetbv, simd/dispatch.hpp, cross-checked against __builtin_cpu_supports), and
//     name() and dispatch_choice() say so; the first call (which chooses) allocates nothing;
//  2. the choice rule on every simulated CPU (none, AVX2, AVX-512) and request;
//  3. every dispatching entry point gives the reference's bits (stf::ref): the kernel checks every
//     variant's test runs (tests/support/kernel_checks.hpp, over the case list kernel_cases.hpp),
//     here on Kernels<isa::dispatch>;
//  4. the demo model, a whole encoder-decoder on the dispatching kernels, gives the committed
//     logprob hash (examples/demo/logprob_hash.hpp), the same bits on every target and variant.
// Exit status 0 when all hold; the failures are printed.
#include <algorithm>
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
#include "../support/kernel_checks.hpp"

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

  // the first call chooses: no heap allocation, even when it prints why STF_ISA is ignored. It is a
  // kernel's, which goes through the table of first calls (variant_dispatch.cpp's kFirstCall) and
  // must give the chosen variant's result.
  const float a[3] = {1.5f, -2.0f, 0.25f}, b[3] = {4.0f, 0.5f, -8.0f};
  test::heap::allocations = 0;
  test::heap::counting = true;
  const float first = K::dot(a, b, 3);
  const std::string name = K::name();
  test::heap::counting = false;
  check(test::heap::allocations == 0,
        "the first dispatching call allocated " + str(test::heap::allocations) + " times");
  check(first == ref::dot(a, b, 3), "the first dispatching call (dot, which chooses) gave " + std::to_string(first) +
                                        ", the reference " + std::to_string(ref::dot(a, b, 3)));

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
/// The shared kernel checks' runner (tests/support/kernel_checks.hpp, as tests/unit/test_kernels.cpp's
/// CatchEnv, without Catch2): the hosts' largest cases; a difference is a failure that names the
/// operation, the case and the element (two NaNs are equal whatever their payload bits).
struct DispatchEnv {
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
  bool flushes_denormals = false;
  index_t max_head_dim = largest(kHeadDims), max_keys = largest(kKeyCounts);
  index_t max_rows = kAttentionInt8ManyRows;

  void expect(const char* op, const float* g, const float* wnt, index_t n,
              std::initializer_list<stf_checks::Size> sizes, bool flushed) {
    ++cases;
    const index_t i = stf_checks::first_difference(g, wnt, n, flushed, true);
    if (i == n) return;
    std::string what = op + std::string(":");
    for (const stf_checks::Size& size : sizes) what += std::string(" ") + size.name + "=" + str(size.value);
    char at[96];
    std::snprintf(at, sizeof at, ": element %zu is %a, the reference %a", static_cast<std::size_t>(i), double(g[i]),
                  double(wnt[i]));
    fail(what + at);
  }
};

void check_kernels() {
  DispatchEnv env;
  stf_checks::check_dot_sum<K>(env);
  stf_checks::check_transpose<K>(env);
  stf_checks::check_linear<K>(env);
  stf_checks::check_linear_w8a8<K>(env);
  stf_checks::check_linear_w8a32<K>(env);
  stf_checks::check_linear_blocks<K>(env);
  stf_checks::check_attention<K>(env);
  stf_checks::check_rows<K>(env);
  stf_checks::check_specials<K>(env);
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
  check_kernels();
  check_demo();
  std::printf("dispatch_default: %s kernels: %ld cases, %d failed\n", K::name(), cases, failures);
  return failures == 0 ? 0 : 1;
}
