// Inference performs no heap allocation: every allocation entry point (all operator new forms,
// malloc, calloc, realloc, aligned_alloc, posix_memalign) is replaced by a counter, and the count
// must stay zero across binding the weights, forward, encode and greedy decoding. Built with
// -fno-exceptions -fno-rtti. Not built under the sanitizers (they own malloc).
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>

#include <statiformer/statiformer.hpp>

#include "../../examples/classifier/classifier_model.hpp"
#include "../../examples/classifier/classifier_weights.hpp"
#include "../../examples/demo/demo_model.hpp"
#include "../support/heap_counter.hpp"

using stf::test::heap::allocations;
using stf::test::heap::counting;

namespace {
using namespace stf;
using Classifier = classifier_example::Model;
using Demo = stf_demo::Model;
Classifier classifier;
Demo demo;
int failures = 0, passes = 0;

void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  (ok ? passes : failures) += 1;
}
}  // namespace

int main() {
  // A self-check: the counter does see allocations.
  counting = true;
  void* volatile probe = std::malloc(16);  // (volatile: the pair may not be optimized away)
  int* volatile probe2 = new int(3);
  counting = false;
  std::free(probe);
  delete probe2;
  expect(allocations == 2, "the counter sees malloc and operator new");

  allocations = 0;
  counting = true;
  const bool bound = bind_table(classifier, stf_classifier::table) && bind_table(demo.params, stf_demo::weights::table);
  const int tokens[8] = {2, 15, 8, 15, 4, 9, 0, 0};
  const bool forward_ok = classifier.forward(nullptr, RunContext{tokens, 6}) == Status::ok;
  const int src[5] = {stf_demo::kDigit0 + 3, stf_demo::kDigit0 + 1, stf_demo::kDigit0 + 4, stf_demo::kDigit0 + 1,
                      stf_demo::kDigit0 + 5};
  int out[stf_demo::kTgtLen];
  index_t n = 0;
  bool decode_ok = true;
  for (int rep = 0; rep < 3; ++rep)
    decode_ok = decode_ok && demo.greedy_decode(src, 5, stf_demo::kBos, stf_demo::kEos, out, n) == Status::ok;
  counting = false;

  expect(bound, "weights bound from the exported tables");
  expect(forward_ok, "classifier forward");
  expect(decode_ok && n == 7, "demo greedy decoding (BOS + 5 digits + EOS)");
  std::printf("heap allocations during load + forward + decode: %zu\n", allocations);
  expect(allocations == 0, "zero heap allocations");
  std::printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
