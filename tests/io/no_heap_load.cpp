// Loading weights performs no heap allocation: every allocation entry point is replaced by a counter
// (as tests/e2e/no_heap.cpp does), and the count must stay zero while load_safetensors checks and
// binds the demo's file (in place and copied), converts F16/BF16, and rejects every malformed file
// of the corpus with its message. The files are read before counting starts. Built with
// -fno-exceptions -fno-rtti; not under the sanitizers (they own malloc).
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <statiformer/io/safetensors.hpp>

#include "../../tools/schema/models.hpp"
#include "io_files.hpp"

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
struct CorpusCase {
  const char* name;
  stf::LoadError error;
};
#define STF_CORPUS(name, error) {#name, stf::LoadError::error},
constexpr CorpusCase kCorpus[] = {
#include "corpus/corpus.inc"
};
#undef STF_CORPUS

stf_io::Demo demo;
stf::ParamStorage<stf_io::Demo::Params> demo_storage;
stf_io::TinyParams tiny;
stf::ParamStorage<stf_io::TinyParams> tiny_storage;
}  // namespace

int main() {
  g_counting = true;
  void* probe = std::malloc(16);
  g_counting = false;
  std::free(probe);
  if (g_allocations != 1) {
    std::printf("FAIL: the counter does not see malloc\n");
    return 1;
  }
  const std::vector<unsigned char> demo_file = stf_io_test::read_file("data/demo.safetensors");
  std::vector<std::vector<unsigned char>> corpus;
  for (const CorpusCase& c : kCorpus)
    corpus.push_back(stf_io_test::read_file(std::string("corpus/") + c.name + ".safetensors"));

  g_allocations = 0;
  g_counting = true;
  bool ok =
      stf::load_safetensors(demo.params, demo_file.data(), demo_file.size(), nullptr, 0).error == stf::LoadError::ok;
  ok = ok &&
       stf::load_safetensors(demo.params, demo_file.data(), demo_file.size(), demo_storage, {.copy = true}).error ==
           stf::LoadError::ok;
  int matched = 0;
  for (std::size_t i = 0; i < corpus.size(); ++i)
    matched += stf::load_safetensors(tiny, corpus[i].data(), corpus[i].size(), tiny_storage).error == kCorpus[i].error;
  g_counting = false;

  std::printf("demo loaded in place and copied: %s; corpus files with their expected result: %d of %zu\n",
              ok ? "ok" : "FAILED", matched, corpus.size());
  std::printf("heap allocations during loading: %zu\n", g_allocations);
  return ok && matched == static_cast<int>(corpus.size()) && g_allocations == 0 ? 0 : 1;
}
