// The safetensors loader (include/statiformer/io/safetensors.hpp) against the malformed-file corpus
// (tools/gen_corpus.py), every prefix and every single-byte header mutation of a valid file, and
// its guarantees: zero-copy where aligned, copies into the model's storage otherwise, F16/BF16
// conversion, all-or-nothing, messages that name the tensor and the expected and found values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <statiformer/io/bind.hpp>
#include <statiformer/io/safetensors.hpp>

#include "../../tools/schema/models.hpp"
#include "io_files.hpp"

using namespace stf;
using stf_io::LinearsTransposed;
using stf_io::TinyParams;
using stf_io_test::read_file;

namespace {

struct CorpusCase {
  const char* name;
  LoadError error;
};
#define STF_CORPUS(name, error) {#name, LoadError::error},
constexpr CorpusCase kCorpus[] = {
#include "corpus/corpus.inc"
};
#undef STF_CORPUS

/// The values a Params' pointers currently see, in visit order (nullptr params: empty).
template <class Params>
std::vector<std::vector<float>> values_of(Params& p) {
  std::vector<std::vector<float>> out;
  p.visit(
      [&](const Name&, ParamRef ref) {
        out.emplace_back();
        if (*ref.data) out.back().assign(*ref.data, *ref.data + ref.size());
      },
      Name{});
  return out;
}
template <class Params>
std::vector<const float*> pointers_of(Params& p) {
  std::vector<const float*> out;
  p.visit([&](const Name&, ParamRef ref) { out.push_back(*ref.data); }, Name{});
  return out;
}

/// valid_f32's values, as the tiny model must see them after any successful load of the corpus
/// (tools/gen_corpus.py's TENSORS: multiples of 1/8, exact in F16 and BF16).
std::vector<std::vector<float>> expected_tiny() {
  std::vector<float> weight;
  for (int i = 0; i < 12; ++i) weight.push_back(static_cast<float>(i * 5 % 17 - 8) / 8.0f);
  return {weight, {0.125f, -0.25f, 0.375f}, {1.0f, 1.125f, 0.875f}, {-0.125f, 0.0f, 0.5f}};
}

}  // namespace

TEST_CASE("the corpus holds at least 40 malformed files and each is rejected with its declared error",
          "[io][loader][corpus]") {
  index_t malformed = 0;
  for (const CorpusCase& c : kCorpus) {
    const std::vector<unsigned char> bytes = read_file(std::string("corpus/") + c.name + ".safetensors");
    INFO("corpus file " << c.name << " (" << bytes.size() << " bytes), expected " << to_string(c.error));
    REQUIRE((!bytes.empty() || std::strcmp(c.name, "empty") == 0));
    static TinyParams params;
    static ParamStorage<TinyParams> storage;
    params = TinyParams{};
    const LoadResult r = load_safetensors(params, bytes.data(), bytes.size(), storage);
    INFO("got " << to_string(r.error) << ": " << r.message);
    CHECK(r.error == c.error);
    if (c.error == LoadError::ok) {
      CHECK(values_of(params) == expected_tiny());
    } else {
      ++malformed;
      CHECK(std::strlen(r.message) > 0);
      for (const float* p : pointers_of(params)) CHECK(p == nullptr);  // nothing bound
    }
  }
  CHECK(malformed >= 40);
}

namespace {
struct HpCase {
  const char* name;
  LoadError error;
  const char* message;  ///< what the message starts with
};
#define STF_HP_CORPUS(name, error, message) {#name, LoadError::error, message},
constexpr HpCase kHpCorpus[] = {
#include "corpus/hp_corpus.inc"
};
#undef STF_HP_CORPUS
}  // namespace

TEST_CASE("a file whose hyperparameters differ from the model's is rejected naming the field and both values",
          "[io][loader][corpus][hparams]") {
  using Hp = stf_io::HpModel::Params;
  static Hp params;
  static ParamStorage<Hp> storage;
  const std::vector<unsigned char> valid = read_file("corpus/hp_valid.safetensors");
  REQUIRE(load_safetensors(params, valid.data(), valid.size(), storage).error == LoadError::ok);
  const std::vector<const float*> bound = pointers_of(params);
  const auto values = values_of(params);
  index_t fields = 0;
  for (const HpCase& c : kHpCorpus) {
    const std::vector<unsigned char> bytes = read_file(std::string("corpus/") + c.name + ".safetensors");
    INFO("corpus file " << c.name << ", expected " << to_string(c.error) << ": " << c.message);
    REQUIRE(!bytes.empty());
    const LoadResult r = load_safetensors(params, bytes.data(), bytes.size(), storage, {.copy = true});
    INFO("got " << to_string(r.error) << ": " << r.message);
    CHECK(r.error == c.error);
    CHECK(std::strncmp(r.message, c.message, std::strlen(c.message)) == 0);
    if (c.error == LoadError::ok) {
      CHECK(values_of(params) == values);
      REQUIRE(load_safetensors(params, valid.data(), valid.size(), storage).error == LoadError::ok);
      continue;
    }
    fields += std::strstr(c.message, ": file ") != nullptr;
    CHECK(pointers_of(params) == bound);                         // untouched: still bound in place to the valid file
    CHECK(std::strstr(c.message, r.tensor.c_str()) != nullptr);  // r.tensor is the key
  }
  CHECK(fields >= 20);

  // a file without hyperparameters loads only when the caller accepts it; a wrong one never does
  const std::vector<unsigned char> none = read_file("corpus/hp_none.safetensors");
  const std::vector<unsigned char> nhead = read_file("corpus/hp_nhead.safetensors");
  CHECK(load_safetensors(params, none.data(), none.size(), storage, {.require_hyperparameters = false}).error ==
        LoadError::ok);
  CHECK(values_of(params) == values);
  CHECK(load_safetensors(params, nhead.data(), nhead.size(), storage, {.require_hyperparameters = false}).error ==
        LoadError::hyperparameter);
}

namespace {
struct GptCase {
  const char* name;
  const char* model;  ///< gpt, causal_stack or enc_stack (tools/schema/models.hpp)
  LoadError error;
  const char* message;  ///< what the message starts with
};
#define STF_GPT_CORPUS(name, model, error, message) {#name, #model, LoadError::error, message},
constexpr GptCase kGptCorpus[] = {
#include "corpus/gpt_corpus.inc"
};
#undef STF_GPT_CORPUS

/// Loads bytes into a fresh model of the case's kind; on success also checks the values arrived.
LoadResult load_gpt_case(const GptCase& c, const std::vector<unsigned char>& bytes) {
  auto load = [&]<class P>(P& params) {
    static ParamStorage<P> storage;
    params = P{};
    return load_safetensors(params, bytes.data(), bytes.size(), storage, {.copy = true});
  };
  static stf_io::GptHp::Params gpt;
  static stf_io::CausalStackHp::Params causal;
  static stf_io::EncStackHp::Params enc;
  if (std::strcmp(c.model, "gpt") == 0) return load(gpt);
  if (std::strcmp(c.model, "causal_stack") == 0) return load(causal);
  return load(enc);
}
}  // namespace

TEST_CASE("a decoder-only file is checked field by field, and causal and encoder layers do not load into each other",
          "[io][loader][corpus][hparams][decoder_only]") {
  index_t fields = 0, causal = 0;
  for (const GptCase& c : kGptCorpus) {
    const std::vector<unsigned char> bytes = read_file(std::string("corpus/") + c.name + ".safetensors");
    INFO("corpus file " << c.name << " into " << c.model << ", expected " << to_string(c.error) << ": " << c.message);
    REQUIRE(!bytes.empty());
    const LoadResult r = load_gpt_case(c, bytes);
    INFO("got " << to_string(r.error) << ": " << r.message);
    CHECK(r.error == c.error);
    CHECK(std::strncmp(r.message, c.message, std::strlen(c.message)) == 0);
    if (c.error == LoadError::ok) continue;
    fields += std::strstr(c.message, ": file ") != nullptr;
    causal += std::strstr(c.message, "layers.0.causal") != nullptr;
    CHECK(std::strstr(c.message, r.tensor.c_str()) != nullptr);  // r.tensor is the key
  }
  CHECK(fields >= 20);
  CHECK(causal == 4);  // a wrong value, missing, an encoder file into a causal stack, and the converse

  // hyperparameters not required: a file that carries the encoder stack's, without the marker, still
  // does not load into the causal stack (the caller vouches for files without hyperparameters only)
  const std::vector<unsigned char> enc_file = read_file("corpus/gpt_enc_into_causal.safetensors");
  REQUIRE(!enc_file.empty());
  static stf_io::CausalStackHp::Params causal_params;
  static ParamStorage<stf_io::CausalStackHp::Params> storage;
  const LoadResult r =
      load_safetensors(causal_params, enc_file.data(), enc_file.size(), storage, {.require_hyperparameters = false});
  INFO(r.message);
  CHECK(r.error == LoadError::hyperparameter);
  const char* expected = "hyperparameter layers.0.causal: not in the file, model true (the file carries";
  CHECK(std::strncmp(r.message, expected, std::strlen(expected)) == 0);
}

TEST_CASE("bind_table: an encoder stack's table does not bind into a causal stack, nor the converse",
          "[io][bind][hparams][decoder_only]") {
  using Causal = stf_io::CausalStackHp::Params;
  using Enc = stf_io::EncStackHp::Params;
  STATIC_REQUIRE(Causal::param_count == Enc::param_count);  // the same names and shapes
  // a table of each: the same arrays, each with its own type's hyperparameter records
  static float values[Causal::param_count] = {};
  static std::vector<std::string> names;
  static std::vector<WeightEntry> weights;
  static Causal c;
  float* at = values;
  c.visit(
      [&](const Name& name, ParamRef ref) {
        names.emplace_back(name.c_str());
        weights.push_back({nullptr, at, ref.size()});
        at += ref.size();
      },
      Name{});
  auto table_of = [&]<class P>(const P*, std::vector<std::string>& text) {
    std::vector<WeightEntry> t = weights;
    for (std::size_t i = 0; i < t.size(); ++i) t[i].name = names[i].c_str();
    for_each_hparam(hparam_table<P>, [&](const char* k, const char* v) { text.push_back(std::string(k) + "=" + v); });
    for (const std::string& s : text) t.push_back({s.c_str(), nullptr, 0});
    return t;
  };
  static std::vector<std::string> causal_text, enc_text;
  causal_text.reserve(64);
  enc_text.reserve(64);
  const std::vector<WeightEntry> causal_table = table_of(static_cast<const Causal*>(nullptr), causal_text);
  const std::vector<WeightEntry> enc_table = table_of(static_cast<const Enc*>(nullptr), enc_text);
  constexpr std::size_t kWeights = 16 + 2;  // the layer's 16 tensors and the final norm's 2
  REQUIRE(causal_table.size() == kWeights + hparam_table<Causal>.count);
  REQUIRE(enc_table.size() == kWeights + hparam_table<Enc>.count);
  static WeightEntry ct[kWeights + hparam_table<Causal>.count], et[kWeights + hparam_table<Enc>.count];
  std::copy(causal_table.begin(), causal_table.end(), ct);
  std::copy(enc_table.begin(), enc_table.end(), et);

  static Causal causal_params;
  static Enc enc_params;
  REQUIRE(bind_table(causal_params, ct).status == Status::ok);  // each into its own
  REQUIRE(bind_table(enc_params, et).status == Status::ok);
  causal_params = Causal{};
  enc_params = Enc{};
  const BindResult into_causal = bind_table(causal_params, et);
  CHECK(into_causal.status == Status::hyperparameter_mismatch);
  CHECK(std::string(into_causal.name.c_str()) == "layers.0.causal");
  CHECK(into_causal.file_value == nullptr);
  CHECK(std::string(into_causal.model_value ? into_causal.model_value : "") == "true");
  const BindResult into_enc = bind_table(enc_params, ct);
  CHECK(into_enc.status == Status::hyperparameter_mismatch);
  CHECK(std::string(into_enc.name.c_str()) == "layers.0.causal");
  CHECK(std::string(into_enc.file_value ? into_enc.file_value : "") == "true");
  CHECK(into_enc.model_value == nullptr);
}

TEST_CASE("F32 tensors are bound in place where float-aligned, copied into the storage otherwise", "[io][loader]") {
  static TinyParams params;
  static ParamStorage<TinyParams> storage;
  std::vector<unsigned char> bytes = read_file("corpus/valid_f32.safetensors");
  REQUIRE(load_safetensors(params, bytes.data(), bytes.size(), storage).error == LoadError::ok);
  for (const float* p : pointers_of(params)) {
    CHECK(reinterpret_cast<const unsigned char*>(p) >= bytes.data());
    CHECK(reinterpret_cast<const unsigned char*>(p) < bytes.data() + bytes.size());
  }
  // zero-copy needs no storage at all
  params = TinyParams{};
  REQUIRE(load_safetensors(params, bytes.data(), bytes.size(), nullptr, 0).error == LoadError::ok);
  CHECK(values_of(params) == expected_tiny());

  // LoadOptions::copy: every tensor in the storage, at its offset in visit order
  REQUIRE(load_safetensors(params, bytes.data(), bytes.size(), storage, {.copy = true}).error == LoadError::ok);
  CHECK(pointers_of(params) ==
        std::vector<const float*>{storage.data, storage.data + 12, storage.data + 15, storage.data + 18});
  CHECK(values_of(params) == expected_tiny());

  // the same file at an odd address: copies
  std::vector<unsigned char> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  params = TinyParams{};
  const LoadResult no_storage = load_safetensors(params, shifted.data() + 1, bytes.size(), nullptr, 0);
  CHECK(no_storage.error == LoadError::needs_storage);
  CHECK(pointers_of(params) == std::vector<const float*>(4, nullptr));
  REQUIRE(load_safetensors(params, shifted.data() + 1, bytes.size(), storage).error == LoadError::ok);
  CHECK(pointers_of(params)[0] == storage.data);
  CHECK(values_of(params) == expected_tiny());
  // storage too small
  CHECK(load_safetensors(params, shifted.data() + 1, bytes.size(), storage.data, 20).error == LoadError::needs_storage);
}

TEST_CASE("F16 and BF16 tensors are converted into the storage", "[io][loader]") {
  for (const char* name : {"corpus/valid_f16.safetensors", "corpus/valid_bf16.safetensors"}) {
    INFO(name);
    static TinyParams params;
    static ParamStorage<TinyParams> storage;
    params = TinyParams{};
    const std::vector<unsigned char> bytes = read_file(name);
    CHECK(load_safetensors(params, bytes.data(), bytes.size(), nullptr, 0).error == LoadError::needs_storage);
    REQUIRE(load_safetensors(params, bytes.data(), bytes.size(), storage).error == LoadError::ok);
    CHECK(pointers_of(params)[0] == storage.data);
    CHECK(values_of(params) == expected_tiny());
  }
}

TEST_CASE("a failed load changes nothing: previous pointers and storage contents stay", "[io][loader]") {
  static TinyParams params;
  static ParamStorage<TinyParams> storage;
  const std::vector<unsigned char> good = read_file("corpus/valid_f32.safetensors");
  REQUIRE(load_safetensors(params, good.data(), good.size(), storage, {.copy = true}).error == LoadError::ok);
  const auto before = pointers_of(params);
  const std::vector<float> stored(storage.data, storage.data + TinyParams::param_count);
  for (const CorpusCase& c : kCorpus) {
    if (c.error == LoadError::ok) continue;
    const std::vector<unsigned char> bytes = read_file(std::string("corpus/") + c.name + ".safetensors");
    INFO(c.name);
    REQUIRE(load_safetensors(params, bytes.data(), bytes.size(), storage, {.copy = true}).error == c.error);
    CHECK(pointers_of(params) == before);
    CHECK(std::vector<float>(storage.data, storage.data + TinyParams::param_count) == stored);
  }
}

TEST_CASE("NaN rejection is optional", "[io][loader]") {
  static TinyParams params;
  static ParamStorage<TinyParams> storage;
  const std::vector<unsigned char> bytes = read_file("corpus/nan_weight.safetensors");
  CHECK(load_safetensors(params, bytes.data(), bytes.size(), storage).error == LoadError::non_finite);
  REQUIRE(load_safetensors(params, bytes.data(), bytes.size(), storage, {.reject_non_finite = false}).error ==
          LoadError::ok);
  CHECK(params.proj_weight.data[5] != params.proj_weight.data[5]);
}

TEST_CASE("messages name the tensor and the expected and found values", "[io][loader]") {
  static TinyParams params;
  static ParamStorage<TinyParams> storage;
  auto load = [&](const char* name) {
    const std::vector<unsigned char> bytes = read_file(std::string("corpus/") + name + ".safetensors");
    return load_safetensors(params, bytes.data(), bytes.size(), storage);
  };
  LoadResult r = load("shape_torch_transposed");
  CHECK(std::string(r.tensor.c_str()) == "proj.weight");
  CHECK(std::string(r.message) == "tensor 'proj.weight': stored shape [3, 4] expected, found [4, 3]");
  r = load("dtype_f64");
  CHECK(std::string(r.message) == "tensor 'proj.bias': dtype F32, F16 or BF16 expected, found 'F64'");
  r = load("missing_name");
  CHECK(std::string(r.message) == "parameter 'norm.bias' is not in the file");
  r = load("renamed_tensor");
  CHECK(std::string(r.message) == "tensor 'norm.beta' is not a parameter of the model");
  r = load("offsets_wrong_size");
  CHECK(std::string(r.message) ==
        "tensor 'norm.bias': data_offsets [72, 80]: expected 12 bytes (F32) inside the 84-byte data region");
  CHECK(r.expected == 12);
  CHECK(r.found == 8);
  r = load("overlap");
  CHECK(std::string(r.message) == "tensors 'norm.weight' [60, 72) and 'norm.bias' [60, 72) overlap");
  r = load("gap_between");
  CHECK(std::string(r.message) == "tensors cover 84 of the 88 bytes of the data region");
  r = load("nan_weight");
  CHECK(std::string(r.message) == "tensor 'proj.weight': element 5 is NaN, expected a finite value");
  r = load("torch_layout_no_metadata");
  CHECK(std::string(r.message).find("PyTorch layout") != std::string::npos);
}

TEST_CASE("a transposed parameter wants the transposed stored shape: a PyTorch-layout file does not load",
          "[io][loader][transposed]") {
  static LinearsTransposed<TinyParams> params;
  static ParamStorage<TinyParams> storage;
  const std::vector<unsigned char> bytes = read_file("corpus/valid_f32.safetensors");
  const LoadResult r = load_safetensors(params, bytes.data(), bytes.size(), storage.data, TinyParams::param_count);
  CHECK(r.error == LoadError::shape);
  CHECK(std::string(r.message) ==
        "tensor 'proj.weight': stored shape [4, 3] expected (the transpose of PyTorch's), found [3, 4]");
  // the corpus file whose proj.weight says [4, 3] is what this model stores
  const std::vector<unsigned char> t = read_file("corpus/shape_torch_transposed.safetensors");
  CHECK(load_safetensors(params, t.data(), t.size(), storage.data, TinyParams::param_count).error == LoadError::ok);
}

TEST_CASE("every prefix of a valid file is rejected", "[io][loader][prefix]") {
  static TinyParams params;
  static ParamStorage<TinyParams> storage;
  for (const char* name : {"corpus/valid_f32.safetensors", "corpus/valid_f16.safetensors",
                           "corpus/valid_unaligned_data.safetensors", "data/enc_stack.safetensors"}) {
    const std::vector<unsigned char> bytes = read_file(name);
    REQUIRE(!bytes.empty());
    index_t rejected = 0;
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      std::vector<unsigned char> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
      params = TinyParams{};
      if (std::strcmp(name, "data/enc_stack.safetensors") == 0) {
        static stf_io::EncStack::Params enc;
        static ParamStorage<stf_io::EncStack::Params> enc_storage;
        rejected += load_safetensors(enc, prefix.data(), n, enc_storage).error != LoadError::ok;
      } else {
        rejected += load_safetensors(params, prefix.data(), n, storage).error != LoadError::ok;
      }
    }
    INFO(name);
    CHECK(rejected == bytes.size());
  }
}

TEST_CASE("every single-byte mutation of a valid header is rejected or loads exactly what it describes",
          "[io][loader][mutation]") {
  static TinyParams params;
  static ParamStorage<TinyParams> storage;
  const std::vector<unsigned char> bytes = read_file("corpus/valid_f32.safetensors");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  const auto want = expected_tiny();
  std::vector<unsigned char> m = bytes;
  index_t loads = 0, accepted = 0, wrong = 0;
  for (std::size_t pos = 0; pos < 8 + header_len; ++pos) {
    for (int v = 0; v < 256; ++v) {
      if (v == bytes[pos]) continue;
      m[pos] = static_cast<unsigned char>(v);
      params = TinyParams{};
      const LoadResult r = load_safetensors(params, m.data(), m.size(), storage);
      ++loads;
      if (r) {
        ++accepted;
        // no single byte can move a tensor (offsets must still tile the data region) or rename
        // one into another: whatever loads is the valid file's bytes, under the same names
        if (values_of(params) != want) {
          ++wrong;
          UNSCOPED_INFO("byte " << pos << " -> " << v << " loaded different values");
        }
      } else if (pointers_of(params) != std::vector<const float*>(4, nullptr)) {
        ++wrong;
        UNSCOPED_INFO("byte " << pos << " -> " << v << " failed but bound something");
      }
    }
    m[pos] = bytes[pos];
  }
  std::printf("mutations: %zu header bytes x 255 values = %zu loads, %zu accepted (whitespace and the like)\n",
              static_cast<std::size_t>(8 + header_len), static_cast<std::size_t>(loads),
              static_cast<std::size_t>(accepted));
  CHECK(wrong == 0);
  CHECK(loads == (8 + header_len) * 255);
}
