// libFuzzer harness for the safetensors loader (include/statiformer/io/safetensors.hpp), built with
// clang and ASan + UBSan by `./run fuzz SECONDS` (tests/fuzz/CMakeLists.txt). Seeds: tests/io/corpus.
//
// Each input is loaded into three models (the tiny model, the same with a transposed weight, and an
// encoder stack), with and without copies. Besides the sanitizers, it checks the loader's contract:
// a failed load binds nothing; a successful one binds every parameter into the input's data region
// or the storage, and a copied parameter holds the values its bytes describe.
#include <cstdint>
#include <cstring>

#include <statiformer/io/safetensors.hpp>

#include "../../tools/schema/models.hpp"

namespace {

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

template <class Params>
void load_and_check(const std::uint8_t* data, std::size_t size, bool copy) {
  static Params params;
  static stf::ParamStorage<Params> storage;
  params = Params{};
  const stf::LoadResult r = stf::load_safetensors(params, data, size, storage, {.copy = copy});
  FUZZ_CHECK(r.message[sizeof r.message - 1] == '\0');
  FUZZ_CHECK(stf::to_string(r.error)[0] != 'u' || r.error == stf::LoadError::unexpected_name);
  stf::index_t offset = 0;
  params.visit(
      [&](const stf::Name&, stf::ParamRef ref) {
        const float* p = *ref.data;
        if (!r) {
          FUZZ_CHECK(p == nullptr);
          return;
        }
        const auto* b = reinterpret_cast<const std::uint8_t*>(p);
        const bool in_file = b >= data && b + ref.size() * sizeof(float) <= data + size;
        const bool in_storage = p == storage.data + offset;
        FUZZ_CHECK(in_file != in_storage);
        FUZZ_CHECK(!copy || in_storage);
        // every value is readable (ASan checks the range), and finite (reject_non_finite)
        for (stf::index_t k = 0; k < ref.size(); ++k) FUZZ_CHECK(p[k] - p[k] == 0.0f);
        offset += ref.size();
      },
      stf::Name{});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  load_and_check<stf_io::TinyParams>(data, size, false);
  load_and_check<stf_io::TinyParams>(data, size, true);
  load_and_check<stf_io::LinearsTransposed<stf_io::TinyParams>>(data, size, false);
  load_and_check<stf_io::EncStack::Params>(data, size, false);
  return 0;
}
