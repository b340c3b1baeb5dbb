// Loading weights performs no heap allocation: every allocation entry point is replaced by a counter
// (tests/support/heap_counter.cpp), and the count must stay zero while load_safetensors checks and
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
#include "../support/heap_counter.hpp"
#include "io_files.hpp"

using stf::test::heap::allocations;
using stf::test::heap::counting;

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
  counting = true;
  void* volatile probe = std::malloc(16);  // (volatile: the pair may not be optimized away)
  counting = false;
  std::free(probe);
  if (allocations != 1) {
    std::printf("FAIL: the counter does not see malloc\n");
    return 1;
  }
  const std::vector<unsigned char> demo_file = stf_io_test::read_file("data/demo.safetensors");
  std::vector<std::vector<unsigned char>> corpus;
  for (const CorpusCase& c : kCorpus)
    corpus.push_back(stf_io_test::read_file(std::string("corpus/") + c.name + ".safetensors"));

  allocations = 0;
  counting = true;
  bool ok =
      stf::load_safetensors(demo.params, demo_file.data(), demo_file.size(), nullptr, 0).error == stf::LoadError::ok;
  ok = ok &&
       stf::load_safetensors(demo.params, demo_file.data(), demo_file.size(), demo_storage, {.copy = true}).error ==
           stf::LoadError::ok;
  int matched = 0;
  for (std::size_t i = 0; i < corpus.size(); ++i)
    matched += stf::load_safetensors(tiny, corpus[i].data(), corpus[i].size(), tiny_storage).error == kCorpus[i].error;
  counting = false;

  std::printf("demo loaded in place and copied: %s; corpus files with their expected result: %d of %zu\n",
              ok ? "ok" : "FAILED", matched, corpus.size());
  std::printf("heap allocations during loading: %zu\n", allocations);
  return ok && matched == static_cast<int>(corpus.size()) && allocations == 0 ? 0 : 1;
}
