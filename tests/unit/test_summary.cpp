// Profiles and summaries by name (profiler.hpp, graph/summary.hpp): the rows are named as the
// parameters the loaders bind (encoder.layers.1, ...), the summary's totals are the model's
// constexpr footprint, mult-adds follow the hand-derived formulas, the printers' text and CSV
// formats are pinned, and a profiler too small for the model counts what it drops.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../../examples/demo/demo_model.hpp"
#include "../io/io_files.hpp"

using namespace stf;

namespace {
/// Distinct non-null weights for every parameter of `params`.
template <class Params>
std::vector<float> fill_params(Params& params) {
  index_t total = 0;
  params.visit([&](const Name&, ParamRef r) { total += r.size(); }, {});
  std::vector<float> storage(total);
  for (index_t i = 0; i < total; ++i) storage[i] = 0.01f * static_cast<float>((i * 37) % 23) - 0.1f;
  index_t offset = 0;
  params.visit(
      [&](const Name&, ParamRef r) {
        *r.data = storage.data() + offset;
        offset += r.size();
      },
      {});
  return storage;
}

std::string name_of(const LayerPath& p) {
  char text[160];
  p.write(text, sizeof text);
  return text;
}

/// The floats of every visited parameter whose name starts with `prefix` + "." ("" : all).
template <class Params>
index_t floats_under(Params& params, const std::string& prefix) {
  index_t n = 0;
  params.visit(
      [&](const Name& name, ParamRef r) {
        const std::string s = name.c_str();
        if (prefix.empty() || s.rfind(prefix + ".", 0) == 0) n += r.size();
      },
      {});
  return n;
}

/// Lines a printer sends, joined with '\n'.
struct Lines {
  std::string text;
  void operator()(const char* line) {
    text += line;
    text += '\n';
  }
};

// A small graph: a named embedding, an unnamed positional encoding (node 1), a named stack of two
// encoder layers with a final norm, a named classifier.
using Small =
    Sequential<4, Named<"embed", Embedding<6, 8>>, PositionalEncoding<4, 8>,
               Named<"encoder", EncoderStack<EncoderLayer<4, 8, 2, 16>, 2, true>>, Named<"head", Classifier<8, 3>>>;
using Tiny = Transformer<4, 5, 7, 7, 8, 2, 16, 2>;  // 4 source tokens, 5 target positions, 2+2 layers
}  // namespace

TEST_CASE("LayerPath builds the dotted names Name builds, and compares by characters", "[profiler][summary]") {
  const index_t i = 12;
  CHECK(name_of(LayerPath("encoder") / "layers" / i) == (Name("encoder") / "layers" / i).c_str());
  CHECK(name_of(LayerPath() / index_t{3} / "" / "norm") == "3.norm");
  CHECK(name_of(LayerPath("a") / "b" / "c" / "d" / "e") == "a.b.c.d...");  // capacity 4: marked, not silent
  const char copy[] = "encoder";                                           // another address
  CHECK(LayerPath(copy) / "layers" / index_t{1} == LayerPath("encoder") / "layers" / index_t{1});
  CHECK_FALSE(LayerPath("encoder") / "layers" / index_t{1} == LayerPath("encoder") / "layers" / index_t{10});
  CHECK_FALSE(LayerPath("encoder") / "norm" == LayerPath("encoder") / "norms");
  char small[6];
  CHECK(LayerPath("encoder").write(small, sizeof small) == 5);  // cut to the buffer, terminated
  CHECK(std::string(small) == "encod");
}

TEST_CASE("the encoder-decoder's profile rows are the prefixes of the parameters they use", "[profiler][summary]") {
  static Tiny model;
  auto w = fill_params(model.params);
  std::uint64_t ticks = 0;
  Profiler prof([&] { return ++ticks; });
  const int src[4] = {1, 2, 3, 4};
  int out[5];
  index_t n = 0;
  REQUIRE(model.greedy_decode(src, 4, 0, -1, out, n, prof) == Status::ok);
  REQUIRE(n == 5);  // 4 steps
  const std::vector<std::string> want = {"src_embed",
                                         "encoder.layers.0",
                                         "encoder.layers.1",
                                         "encoder.norm",
                                         "decoder.layers.0.cross_attn",
                                         "decoder.layers.1.cross_attn",
                                         "tgt_embed",
                                         "decoder.layers.0",
                                         "decoder.layers.1",
                                         "decoder.norm",
                                         "generator"};
  REQUIRE(prof.size() == want.size());
  for (index_t i = 0; i < prof.size(); ++i) {
    const std::string name = name_of(prof[i].path);
    CHECK(name == want[i]);
    CHECK(floats_under(model.params, name) > 0);  // a prefix of parameter names the loaders bind
    const bool step = i >= 6;
    CHECK(prof[i].calls == (step ? 4u : 1u));
    CHECK(prof[i].ticks == prof[i].calls);  // one tick per begin/end pair with this clock
  }
  CHECK(prof.dropped() == 0);
  // the summary has the same rows, in the same order
  constexpr auto table = Tiny::summary_table();
  REQUIRE(table.size == want.size());
  for (index_t i = 0; i < table.size; ++i) CHECK(name_of(table.rows[i].path) == want[i]);
}

TEST_CASE("a Sequential's profile rows: a row per layer of a stack, named by Named prefixes or indices",
          "[profiler][summary]") {
  static Small model;
  auto w = fill_params(model);
  std::uint64_t ticks = 0;
  Profiler prof([&] { return ticks += 2; });
  const int tokens[4] = {1, 2, 3, 0};
  REQUIRE(model.forward(nullptr, RunContext{tokens, 3}, prof) == Status::ok);
  const std::vector<std::string> want = {"embed", "1", "encoder.layers.0", "encoder.layers.1", "encoder.norm", "head"};
  REQUIRE(prof.size() == want.size());
  for (index_t i = 0; i < prof.size(); ++i) {
    CHECK(name_of(prof[i].path) == want[i]);
    CHECK(prof[i].ticks == 2);
    CHECK(prof[i].calls == 1);
  }
  for (const char* name : {"embed", "encoder.layers.0", "encoder.layers.1", "encoder.norm", "head"})
    CHECK(floats_under(model, name) > 0);
  for (index_t i = 0; i < Small::summary_table().size; ++i)
    CHECK(name_of(Small::summary_table().rows[i].path) == want[i]);
}

TEST_CASE("summary totals are the constexpr footprint, and each row owns the parameters under its name", "[summary]") {
  SECTION("Sequential") {
    static Small model;
    constexpr auto table = Small::summary_table();
    static_assert(table.params() == Small::param_count);
    static_assert(table.param_bytes() == Small::weight_bytes);
    CHECK(table.footprint.arena_bytes == Small::arena_bytes);
    CHECK(table.footprint.arena_unplanned_bytes == Small::arena_unplanned_bytes);
    CHECK(table.params() == floats_under(model, ""));
    for (const SummaryRow& r : table.rows) CHECK(r.params == floats_under(model, name_of(r.path)));
  }
  SECTION("the demo model, against what the safetensors loader binds from tests/io/data/demo.safetensors") {
    using Model = stf_demo::Model;
    static Model model;
    static ParamStorage<Model::Params> storage;
    const std::vector<unsigned char> file = stf_io_test::read_file("data/demo.safetensors");
    REQUIRE(!file.empty());
    // the load succeeds only if the file's names are exactly the names the model visits
    const LoadResult loaded = load_safetensors(model.params, file.data(), file.size(), storage);
    INFO(loaded.message);
    REQUIRE(loaded);
    index_t bound = 0;
    model.params.visit([&](const Name&, ParamRef r) { bound += *r.data ? r.size() : 0; }, {});
    constexpr auto table = Model::summary_table();
    static_assert(table.params() == Model::param_count);
    CHECK(table.params() == bound);
    CHECK(table.param_bytes() == Model::weight_bytes);
    CHECK(table.footprint.const_bytes == Model::const_bytes);
    CHECK(table.footprint.arena_bytes == Model::arena_bytes);
    CHECK(table.footprint.state_bytes == Model::state_bytes);
    for (const SummaryRow& r : table.rows) {
      INFO(name_of(r.path));
      if (r.reads_params_elsewhere)  // the memory's K, V: cross_attn.k and .v, counted in decoder.layers.<i>
        CHECK(floats_under(model.params, name_of(r.path)) > 0);
      else
        CHECK(r.params == floats_under(model.params, name_of(r.path)));
    }
  }
}

TEST_CASE("mult-adds follow the hand-derived formulas", "[summary]") {
  // EncoderLayer<7, 16, 4, 32>: Q, K, V, O projections 4 · 7·16·16 = 7168; Q·Kᵀ and P·V over the 4
  // heads of 4 dims, 2 · 7·7·16 = 1568; FF 7·16·32 + 7·32·16 = 7168.
  CHECK(LayerCost<EncoderLayer<7, 16, 4, 32>>::mult_adds(7) == 15904);
  // Classifier<16, 5> over 8 rows: 8·16·5
  CHECK(LayerCost<Classifier<16, 5>>::mult_adds(8) == 640);
  CHECK(LayerCost<LayerNorm<16>>::mult_adds(7) == 0);
  // Tiny (d_model 8, d_ff 16, 4 source tokens, 5 target positions):
  constexpr auto t = Tiny::summary_table();
  // an encoder layer: 4 · 4·8·8 + 2 · 4·4·8 + 2 · 4·8·16 = 1024 + 256 + 1024
  CHECK(t.find("encoder.layers.1")->mult_adds == 2304);
  // a decoder step at the last position (5 keys): self Q, K, V, O 4 · 8·8, attention 2 · 5·8, cross
  // Q, O 2 · 8·8, attention over 4 memory rows 2 · 4·8, FF 2 · 8·16 = 256 + 80 + 128 + 64 + 256
  CHECK(t.find("decoder.layers.0")->mult_adds == 784);
  // the memory's keys and values per decoder layer: 2 · 4·8·8
  CHECK(t.find("decoder.layers.1.cross_attn")->mult_adds == 512);
  CHECK(t.find("generator")->mult_adds == 8 * 7);
  CHECK(t.mult_adds("encode") == 2 * 2304 + 2 * 512);
  CHECK(t.mult_adds("step") == 2 * 784 + 56);
  CHECK(t.find("decoder.layers.2") == nullptr);
}

TEST_CASE("the summary table and CSV formats", "[summary][format]") {
  Lines table, csv;
  Small::summary(table);
  print_summary_csv(Small::summary_table(), csv);
  CHECK(table.text ==
        "layer                         type                phase   input         output              params     param B"
        "   mult-adds    output B\n"
        "embed                         Embedding           forward [4]           [4, 8]                  48         192"
        "           0         128\n"
        "1                             PositionalEncoding  forward [4, 8]        [4, 8]                   0           0"
        "           0         128\n"
        "encoder.layers.0              EncoderLayer        forward [4, 8]        [4, 8]                 600        2400"
        "        2304         128\n"
        "encoder.layers.1              EncoderLayer        forward [4, 8]        [4, 8]                 600        2400"
        "        2304         128\n"
        "encoder.norm                  LayerNorm           forward [4, 8]        [4, 8]                  16          64"
        "           0         128\n"
        "head                          Classifier          forward [4, 8]        [4, 3]                  27         108"
        "          96          48\n"
        "total                                                                                         1291        5164"
        "        4704         688\n"
        "parameters 1291: weights 5164 B (flash)\n"
        "RAM: arena " +
            std::to_string(Small::arena_bytes) + " B (planned; " + std::to_string(Small::arena_unplanned_bytes) +
            " B without reuse)\n");
  CHECK(csv.text ==
        "layer,type,phase,input,output,params,param_bytes,mult_adds,output_bytes\n"
        "embed,Embedding,forward,4,4x8,48,192,0,128\n"
        "1,PositionalEncoding,forward,4x8,4x8,0,0,0,128\n"
        "encoder.layers.0,EncoderLayer,forward,4x8,4x8,600,2400,2304,128\n"
        "encoder.layers.1,EncoderLayer,forward,4x8,4x8,600,2400,2304,128\n"
        "encoder.norm,LayerNorm,forward,4x8,4x8,16,64,0,128\n"
        "head,Classifier,forward,4x8,4x3,27,108,96,48\n"
        "total,,,,,1291,5164,,\n");
}

TEST_CASE("the profile table and CSV formats, and the count of dropped measurements", "[profiler][format]") {
  std::uint64_t now = 0;
  auto clock = [&] { return now; };
  Profiler<decltype(clock), 2> prof(clock);
  auto measure = [&](const LayerPath& p, std::uint64_t ticks) {
    prof.begin(p);
    now += ticks;
    prof.end(p);
  };
  for (int run = 0; run < 2; ++run) {
    measure(LayerPath("encoder") / "layers" / index_t{0}, 300);
    measure(LayerPath("encoder") / "layers" / index_t{1}, 100);
    measure("generator", 7);  // no room left: dropped, each time
  }
  REQUIRE(prof.size() == 2);
  CHECK(prof.dropped() == 2);
  CHECK(prof.dropped_ticks() == 14);
  Lines table, csv;
  print_profile(prof, table, {"ns", 2});
  print_profile_csv(prof, csv, {"ns", 2});
  CHECK(table.text ==
        "layer                            calls            ns        ns/run   share\n"
        "encoder.layers.0                     2           600           300   75.0%\n"
        "encoder.layers.1                     2           200           100   25.0%\n"
        "total                                            800           400\n"
        "dropped: 2 measurements (14 ns) of layers beyond the profiler's 2 rows\n");
  CHECK(csv.text ==
        "layer,calls,ns,ns_per_run,share_percent\n"
        "encoder.layers.0,2,600,300,75.0\n"
        "encoder.layers.1,2,200,100,25.0\n"
        "total,,800,400,100.0\n"
        "dropped,2,14,,\n");
  prof.reset();
  CHECK(prof.size() == 0);
  CHECK(prof.dropped() == 0);
  // a name with a comma or a quote is one CSV field; an empty path (Named<"", ...>) is "(root)"
  measure("a,\"b\"", 5);
  measure("", 5);
  Lines quoted;
  print_profile_csv(prof, quoted);
  CHECK(quoted.text ==
        "layer,calls,ticks,ticks_per_run,share_percent\n"
        "\"a,\"\"b\"\"\",1,5,5,50.0\n"
        "(root),1,5,5,50.0\n"
        "total,,10,10,100.0\n"
        "dropped,0,0,,\n");
}

TEST_CASE("a profiler too small for the model records the first rows and counts the rest", "[profiler]") {
  static Tiny model;
  auto w = fill_params(model.params);
  std::uint64_t ticks = 0;
  auto clock = [&] { return ++ticks; };
  Profiler<decltype(clock), 3> prof(clock);
  const int src[4] = {1, 2, 3, 4};
  int out[5];
  index_t n = 0;
  REQUIRE(model.greedy_decode(src, 4, 0, -1, out, n, prof) == Status::ok);
  // encode: 6 measurements (src_embed, 2 layers, norm, 2 memory K/V); 4 steps of 5 (tgt_embed,
  // 2 layers, norm, generator): 26, of which the first three rows hold 3
  REQUIRE(prof.size() == 3);
  CHECK(name_of(prof[2].path) == "encoder.layers.1");
  CHECK(prof.dropped() == 23);
  CHECK(prof.dropped_ticks() == 23);
  Lines table;
  print_profile(prof, table);
  CHECK(table.text.find("dropped: 23 measurements (23 ticks) of layers beyond the profiler's 3 rows\n") !=
        std::string::npos);
}
