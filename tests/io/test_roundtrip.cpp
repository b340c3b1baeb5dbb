// PyTorch module → tools/export.py → C++ model → the same outputs as PyTorch, for an encoder stack,
// a decoder stack and the trained demo encoder-decoder (fixtures: tools/gen_io_fixtures.py from
// tests/io/plan.json). Each model is bound twice, from the generated header (bind_table) and from
// the .safetensors file (load_safetensors); both must compute the same bits. The transposed
// exports must hold exactly the transposes of the PyTorch-layout ones.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <statiformer/io/safetensors.hpp>

#include "../../tools/schema/models.hpp"
#include "data/dec_stack_weights.hpp"
#include "data/enc_stack_weights.hpp"
#include "io_files.hpp"

using namespace stf;
using stf_io::LinearsTransposed;
using stf_io_test::read_file;

namespace {

stf::test::GoldenCase fixture(const std::string& name) {
  stf::test::GoldenCase c = stf_io_test::load_fixture(name);
  REQUIRE(c.name == name);
  return c;
}

/// A file's bytes, kept alive for the zero-copy pointers into them.
const std::vector<unsigned char>& file(const std::string& relative) {
  static std::vector<std::vector<unsigned char>> keep;
  keep.push_back(read_file(relative));
  REQUIRE(!keep.back().empty());
  return keep.back();
}

template <class Params>
std::vector<std::vector<float>> values_of(Params& p) {
  std::vector<std::vector<float>> out;
  p.visit([&](const Name&, ParamRef ref) { out.emplace_back(*ref.data, *ref.data + ref.size()); }, Name{});
  return out;
}

/// The export against the transposed schema holds, for every matrix whose stored layout differs from
/// the plain model's, the transpose of the plain export's, and every other tensor unchanged. (Once
/// LinearParams itself stores weights transposed, both schemas agree and everything is compared as is.)
template <class Params>
void check_transposed_export(const std::string& name, Params& plain) {
  static LinearsTransposed<Params> t;
  static ParamStorage<Params> storage;
  const auto& bytes = file("data/" + name + "_transposed.safetensors");
  const LoadResult r = load_safetensors(t, bytes.data(), bytes.size(), storage.data, Params::param_count);
  INFO(r.message);
  REQUIRE(r.error == LoadError::ok);

  std::vector<ParamRef> refs_t, refs_p;
  t.visit([&](const Name&, ParamRef ref) { refs_t.push_back(ref); }, Name{});
  plain.visit([&](const Name&, ParamRef ref) { refs_p.push_back(ref); }, Name{});
  REQUIRE(refs_t.size() == refs_p.size());
  index_t transposed = 0, mismatches = 0;
  for (std::size_t i = 0; i < refs_t.size(); ++i) {
    const float* a = *refs_t[i].data;
    const float* b = *refs_p[i].data;
    const index_t rows = refs_p[i].rows, cols = refs_p[i].cols;
    if (refs_t[i].transposed != refs_p[i].transposed) {
      ++transposed;
      // b is [rows, cols] (PyTorch's), a its transpose [cols, rows] in column panels
      for (index_t row = 0; row < rows; ++row)
        for (index_t col = 0; col < cols; ++col)
          mismatches +=
              std::memcmp(&a[stored_index(cols, rows, refs_t[i].panel, col, row)], &b[row * cols + col], 4) != 0;
    } else {
      mismatches += std::memcmp(a, b, refs_p[i].size() * sizeof(float)) != 0;
    }
  }
  std::printf("%s: %zu matrices exported transposed, each exactly the transpose\n", name.c_str(),
              static_cast<std::size_t>(transposed));
  CHECK(mismatches == 0);
  if (transposed > 0) {
    // the PyTorch-layout file does not load into the transposed model (its square matrices included)
    const auto& wrong = file("data/" + name + ".safetensors");
    CHECK(load_safetensors(t, wrong.data(), wrong.size(), storage.data, Params::param_count).error == LoadError::shape);
  }
}

/// Loads `path` into `loaded` (copies into `storage`) and binds `table` (the generated header) into
/// `bound`; REQUIREs both, and CHECKs they hold the same floats.
template <class Params, index_t N>
void load_and_bind(Params& loaded, ParamStorage<Params>& storage, const char* path, Params& bound,
                   const WeightEntry (&table)[N]) {
  const auto& bytes = file(path);
  const LoadResult r = load_safetensors(loaded, bytes.data(), bytes.size(), storage);
  INFO(r.message);
  REQUIRE(r.error == LoadError::ok);
  REQUIRE(bind_table(bound, table).status == Status::ok);
  CHECK(values_of(loaded) == values_of(bound));
}

}  // namespace

TEST_CASE("round trip: nn.TransformerEncoder → export → EncoderStack equals PyTorch", "[io][roundtrip]") {
  using Stack = stf_io::EncStack;
  const auto c = fixture("enc_stack");
  constexpr index_t S = Stack::seq_len, D = Stack::d_model;
  const index_t valid = c.scalar("valid_len");
  static Stack from_header, from_file;
  static ParamStorage<Stack::Params> storage;
  static float scratch[Stack::scratch_floats];
  load_and_bind(from_file.params, storage, "data/enc_stack.safetensors", from_header.params, stf_io_enc_stack::table);

  Tensor<S, D> y1{}, y2{};
  const CMat<S, D> x(c.data("x", S * D));
  REQUIRE(from_header.forward(x, y1, valid, scratch) == Status::ok);
  REQUIRE(from_file.forward(x, y2, valid, scratch) == Status::ok);
  CHECK(std::memcmp(y1.data, y2.data, sizeof y1.data) == 0);
  stf::test::check_close(c, "y (safetensors)", y2.data, c.data("y", S * D), S * D);

  check_transposed_export("enc_stack", from_header.params);
}

TEST_CASE("round trip: nn.TransformerDecoder → export → DecoderStack equals PyTorch", "[io][roundtrip]") {
  using Stack = stf_io::DecStack;
  const auto c = fixture("dec_stack");
  constexpr index_t S = Stack::seq_len, M = Stack::mem_len, D = Stack::d_model;
  const index_t valid = c.scalar("mem_valid_len");
  static Stack from_header, from_file;
  static ParamStorage<Stack::Params> storage;
  static float scratch[Stack::scratch_floats];
  load_and_bind(from_file.params, storage, "data/dec_stack.safetensors", from_header.params, stf_io_dec_stack::table);

  Tensor<S, D> y1{}, y2{};
  const CMat<S, D> x(c.data("x", S * D));
  const CMat<M, D> memory(c.data("memory", M * D));
  REQUIRE(from_header.forward(x, memory, y1, valid, scratch) == Status::ok);
  REQUIRE(from_file.forward(x, memory, y2, valid, scratch) == Status::ok);
  CHECK(std::memcmp(y1.data, y2.data, sizeof y1.data) == 0);
  stf::test::check_close(c, "y (safetensors)", y2.data, c.data("y", S * D), S * D);

  check_transposed_export("dec_stack", from_header.params);
}

TEST_CASE("round trip: the trained demo (tools/demo_model.pt) → export → EncoderDecoder equals PyTorch",
          "[io][roundtrip][demo]") {
  using Demo = stf_io::Demo;
  namespace dm = stf_demo;
  const auto c = fixture("demo");
  static Demo model, reference;
  static ParamStorage<Demo::Params> storage;
  // the exporter writes the very floats tools/train_demo.py wrote into examples/demo/demo_weights.hpp
  load_and_bind(model.params, storage, "data/demo.safetensors", reference.params, dm::weights::table);

  for (index_t i = 0; c.has("src_" + std::to_string(i)); ++i) {
    const std::string k = std::to_string(i);
    const std::vector<int> src = c.ints("src_" + k);
    const index_t len = c.scalar("src_valid_len_" + k);
    const std::vector<int> want = c.ints("decoded_" + k);
    std::vector<int> got(dm::kTgtLen, dm::kPad);
    index_t n = 0;
    REQUIRE(model.greedy_decode(src.data(), len, dm::kBos, dm::kEos, got.data(), n) == Status::ok);
    got.resize(n);
    CHECK(got == want);
    // the per-step log-probabilities, teacher-forced along PyTorch's decoding
    REQUIRE(model.encode(src.data(), len) == Status::ok);
    std::vector<float> logprobs((want.size() - 1) * dm::kVocab);
    for (std::size_t t = 0; t + 1 < want.size(); ++t)
      REQUIRE(model.step(want[t], logprobs.data() + t * dm::kVocab) == Status::ok);
    stf::test::check_close(c, "logprobs_" + k, logprobs.data(), c.data("logprobs_" + k, logprobs.size()),
                           logprobs.size());
  }
}

namespace {
template <class Params>
bool unbound(Params& p) {
  bool none = true;
  p.visit([&](const Name&, ParamRef ref) { none = none && *ref.data == nullptr; }, Name{});
  return none;
}
}  // namespace

TEST_CASE("bind_table compares the generated header's hyperparameter records with the model's", "[io][bind][hparams]") {
  using Params = stf_io::EncStack::Params;
  static Params params, other;
  const auto& table = stf_io_enc_stack::table;
  constexpr index_t N = sizeof table / sizeof table[0];
  index_t records = 0;
  for (const WeightEntry& e : table) records += e.data == nullptr;
  CHECK(records == hparam_table<Params>.count);  // tools/export.py wrote one record per hyperparameter
  REQUIRE(bind_table(params, table).status == Status::ok);
  const auto bound = values_of(params);

  // every record, changed in turn: the key and both values are reported, nothing is bound
  static WeightEntry changed[N];
  static char names[N][Name::capacity + 8];
  index_t rejected = 0;
  for (index_t i = 0; i < N; ++i) {
    if (table[i].data) continue;
    for (index_t j = 0; j < N; ++j) changed[j] = table[j];
    const char* eq = std::strchr(table[i].name, '=');
    std::snprintf(names[i], sizeof names[i], "%.*s=x%s", static_cast<int>(eq - table[i].name), table[i].name, eq + 1);
    changed[i].name = names[i];
    other = Params{};
    const BindResult r = bind_table(other, changed);
    INFO(table[i].name);
    CHECK(r.status == Status::hyperparameter_mismatch);
    CHECK(std::strncmp(r.name.c_str(), table[i].name, static_cast<std::size_t>(eq - table[i].name)) == 0);
    CHECK(r.file_value != nullptr);
    CHECK(r.model_value != nullptr);
    if (r.file_value && r.model_value) {
      CHECK(std::string("x") + r.model_value == r.file_value);
    }
    CHECK(unbound(other));  // untouched
    rejected += r.status == Status::hyperparameter_mismatch;
  }
  CHECK(rejected == records);

  // a record missing, a record the model does not have, one given twice
  for (index_t j = 0; j < N; ++j) changed[j] = table[j];
  changed[N - 1] = {"layers.0.dropout=0.1", nullptr, 0};  // replaces the last record
  BindResult r = bind_table(other, changed);
  CHECK(r.status == Status::hyperparameter_mismatch);
  CHECK(r.file_value == nullptr);  // the replaced record's key: not in the table
  static WeightEntry twice[N + 1];
  for (index_t j = 0; j < N; ++j) twice[j] = table[j];
  twice[N] = table[N - 1];
  r = bind_table(other, twice);
  CHECK(r.status == Status::hyperparameter_mismatch);
  CHECK(r.found == 2);
  static WeightEntry extra[N + 1];
  for (index_t j = 0; j < N; ++j) extra[j] = table[j];
  extra[N] = {"layers.0.dropout=0.1", nullptr, 0};
  r = bind_table(other, extra);
  CHECK(r.status == Status::hyperparameter_mismatch);
  CHECK(std::string(r.name.c_str()) == "layers.0.dropout");
  CHECK(unbound(other));

  // a table without records (an older header) binds by names and sizes, as documented
  constexpr index_t T = N - hparam_table<Params>.count;
  static WeightEntry bare[T];
  index_t n = 0;
  for (const WeightEntry& e : table)
    if (e.data && n < T) bare[n++] = e;
  REQUIRE(n == T);
  other = Params{};
  REQUIRE(bind_table(other, bare).status == Status::ok);
  CHECK(values_of(other) == bound);
}

TEST_CASE("the hyperparameters carry the model's LayerNorm eps and tanh GELU, and a file's other eps is rejected",
          "[io][bind][hparams]") {
  // the same shapes as stf_io::EncStack (the fixture's 1e-05 model), its norms' eps 1e-3
  using Eps3 = EncoderStack<EncoderLayer<5, 8, 2, 100, LayerOptions{.layer_norm_eps = 1e-3f}>, 2, true>;
  using Tanh = EncoderStack<EncoderLayer<5, 8, 2, 100, LayerOptions{.activation = Activation::gelu_tanh}>, 2, true>;
  const auto value = [](const auto& table, const char* key) {
    std::string found;
    for_each_hparam(table, [&](const char* k, const char* v) {
      if (std::strcmp(k, key) == 0) found = v;
    });
    return found;
  };
  CHECK(value(hparam_table<Eps3::Params>, "layers.0.layer_norm_eps") == "1e-03");
  CHECK(value(hparam_table<Eps3::Params>, "layers.1.layer_norm_eps") == "1e-03");
  CHECK(value(hparam_table<Eps3::Params>, "norm.eps") == "1e-03");
  CHECK(value(hparam_table<Tanh::Params>, "layers.0.activation") == "gelu_tanh");
  CHECK(value(hparam_table<Tanh::Params>, "norm.eps") == "1e-05");
  CHECK(value(hparam_table<LayerNorm<8, LayerNormKind::torch, 1e-12f>::Params>, "eps") == "1e-12");
  CHECK(value(hparam_table<LayerNorm<8, LayerNormKind::annotated>::Params>, "eps") == "1e-06");
  // the default eps is the kind's: the same type as before the option existed
  STATIC_REQUIRE(std::is_same_v<Tanh::Norm, LayerNorm<8>>);
  STATIC_REQUIRE(LayerOptions{.layer_norm = LayerNormKind::annotated}.layer_norm_eps == 1e-6f);

  static Eps3::Params eps3;
  const BindResult r = bind_table(eps3, stf_io_enc_stack::table);
  CHECK(r.status == Status::hyperparameter_mismatch);
  CHECK(std::string(r.name.c_str()) == "layers.0.layer_norm_eps");
  REQUIRE(r.file_value != nullptr);
  REQUIRE(r.model_value != nullptr);
  CHECK(std::string(r.file_value) == "1e-05");
  CHECK(std::string(r.model_value) == "1e-03");
  static Tanh::Params tanh_params;
  const BindResult t = bind_table(tanh_params, stf_io_enc_stack::table);
  CHECK(t.status == Status::hyperparameter_mismatch);
  CHECK(std::string(t.name.c_str()) == "layers.0.activation");
}
