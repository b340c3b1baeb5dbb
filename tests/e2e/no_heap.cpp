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

extern "C" void* __libc_malloc(std::size_t);
extern "C" void* __libc_calloc(std::size_t, std::size_t);
extern "C" void* __libc_realloc(void*, std::size_t);
extern "C" void* __libc_memalign(std::size_t, std::size_t);
extern "C" void __libc_free(void*);

namespace {
bool g_counting = false;
std::size_t g_allocations = 0;
void note() {
  if (g_counting) ++g_allocations;
}
}  // namespace

extern "C" {
void* malloc(std::size_t n) {
  note();
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t m) {
  note();
  return __libc_calloc(n, m);
}
void* realloc(void* p, std::size_t n) {
  note();
  return __libc_realloc(p, n);
}
void* aligned_alloc(std::size_t a, std::size_t n) {
  note();
  return __libc_memalign(a, n);
}
int posix_memalign(void** p, std::size_t a, std::size_t n) {
  note();
  *p = __libc_memalign(a, n);
  return *p ? 0 : 12;
}
void free(void* p) { __libc_free(p); }
}
void* operator new(std::size_t n) {
  note();
  return __libc_malloc(n ? n : 1);
}
void* operator new[](std::size_t n) {
  note();
  return __libc_malloc(n ? n : 1);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  note();
  return __libc_malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  note();
  return __libc_malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t a) {
  note();
  return __libc_memalign(static_cast<std::size_t>(a), n);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  note();
  return __libc_memalign(static_cast<std::size_t>(a), n);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }

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
  g_counting = true;
  void* probe = std::malloc(16);
  int* probe2 = new int(3);
  g_counting = false;
  std::free(probe);
  delete probe2;
  expect(g_allocations == 2, "the counter sees malloc and operator new");

  g_allocations = 0;
  g_counting = true;
  const bool bound =
      bind_table(classifier, classifier_example::weights::table) && bind_table(demo.params, stf_demo::weights::table);
  const int tokens[8] = {2, 15, 8, 15, 4, 9, 0, 0};
  const bool forward_ok = classifier.forward(nullptr, RunContext{tokens, 6}) == Status::ok;
  const int src[5] = {stf_demo::kDigit0 + 3, stf_demo::kDigit0 + 1, stf_demo::kDigit0 + 4, stf_demo::kDigit0 + 1,
                      stf_demo::kDigit0 + 5};
  int out[stf_demo::kTgtLen];
  index_t n = 0;
  bool decode_ok = true;
  for (int rep = 0; rep < 3; ++rep)
    decode_ok = decode_ok && demo.greedy_decode(src, 5, stf_demo::kBos, stf_demo::kEos, out, n) == Status::ok;
  g_counting = false;

  expect(bound, "weights bound from the exported tables");
  expect(forward_ok, "classifier forward");
  expect(decode_ok && n == 7, "demo greedy decoding (BOS + 5 digits + EOS)");
  std::printf("heap allocations during load + forward + decode: %zu\n", g_allocations);
  expect(g_allocations == 0, "zero heap allocations");
  std::printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
