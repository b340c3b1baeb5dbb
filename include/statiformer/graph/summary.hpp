// statiformer — model summaries (torchinfo-like, built at compile time) and the printers of
// summaries and profiles, as a text table or CSV, without the heap and without stdio.
//
// A summary has one row per named layer, named as the prefix of its parameters
// (`encoder.layers.0`, the names the loaders bind and the profiler records): its input and output
// shapes, the parameters it owns, their bytes, its mult-adds and its output's bytes, and the
// model's constexpr footprint. `Sequential::summary_table()` and `EncoderDecoder::summary_table()`
// build it; `Model::summary(sink)` prints it.
//
// Mult-adds are the multiply-accumulates of the matrix products at the full compile-time shape:
// a linear layer over R rows, R·In·Out; attention, Q·Kᵀ and P·V, 2·SeqQ·SeqK·DModel over all heads
// (masked keys included). Element-wise work (bias, softmax, LayerNorm, activations, embedding
// lookups, positional encodings) is not counted.
//
// Printers write one line at a time through sink(const char* line) (no newline in the line), the
// callback `Model::summary` has always taken. They format integers themselves (no printf), so they
// run on the firmware too.
#pragma once

#include <cstdint>
#include <type_traits>

#include <statiformer/layers/embedding.hpp>
#include <statiformer/layers/heads.hpp>
#include <statiformer/layers/node.hpp>
#include <statiformer/layers/stack.hpp>
#include <statiformer/profiler.hpp>

namespace stf {

// ---- mult-adds --------------------------------------------------------------------------------

namespace cost {
/// x Wᵀ over `rows` rows: rows · In · Out.
constexpr index_t linear(index_t rows, index_t in, index_t out) { return rows * in * out; }
/// Q·Kᵀ and P·V of all heads: 2 · q_rows · keys · DModel.
constexpr index_t attention(index_t q_rows, index_t keys, index_t d_model) { return 2 * q_rows * keys * d_model; }
/// Multi-head attention: the Q and O projections of q_rows, the K and V projections of kv_rows,
/// attention over `keys` keys.
constexpr index_t multi_head(index_t q_rows, index_t kv_rows, index_t keys, index_t d_model) {
  return 2 * linear(q_rows, d_model, d_model) + 2 * linear(kv_rows, d_model, d_model) +
         attention(q_rows, keys, d_model);
}
constexpr index_t feed_forward(index_t rows, index_t d_model, index_t d_ff) {
  return linear(rows, d_model, d_ff) + linear(rows, d_ff, d_model);
}
/// One incremental decoder step at a position with `keys` target keys (itself included): the
/// self-attention projections of one row and its attention, the cross-attention's Q and O (its K
/// and V of the memory are computed once per memory: memory_kv) and its attention, the FF.
constexpr index_t decoder_step(index_t keys, index_t mem_keys, index_t d_model, index_t d_ff) {
  return multi_head(1, 1, keys, d_model) + 2 * linear(1, d_model, d_model) + attention(1, mem_keys, d_model) +
         feed_forward(1, d_model, d_ff);
}
/// A decoder layer's cross-attention keys and values of a memory of mem_rows rows.
constexpr index_t memory_kv(index_t mem_rows, index_t d_model) { return 2 * linear(mem_rows, d_model, d_model); }
}  // namespace cost

/// The mult-adds of a layer type over `rows` rows. `known` is false for a type the library does
/// not know, unless it declares `static constexpr index_t mult_adds` itself (its count at its shape).
template <class L>
struct LayerCost {
  static constexpr bool known = requires { L::mult_adds; };
  static constexpr index_t mult_adds(index_t) {
    if constexpr (known)
      return L::mult_adds;
    else
      return 0;
  }
};
template <fixed_string P, Node L>
struct LayerCost<Named<P, L>> : LayerCost<L> {};
template <index_t SeqQ, index_t SeqK, index_t DModel, index_t NHeads, bool HasBias, NumberFormat F, bool A8>
struct LayerCost<MultiHeadAttention<SeqQ, SeqK, DModel, NHeads, HasBias, F, A8>> {
  static constexpr bool known = true;
  static constexpr index_t mult_adds(index_t) { return cost::multi_head(SeqQ, SeqK, SeqK, DModel); }
};
template <index_t SeqLen, index_t DModel, index_t DFf, Activation Act, bool OutAct, NumberFormat F>
struct LayerCost<FeedForward<SeqLen, DModel, DFf, Act, OutAct, F>> {
  static constexpr bool known = true;
  static constexpr index_t mult_adds(index_t) { return cost::feed_forward(SeqLen, DModel, DFf); }
};
template <index_t SeqLen, index_t DModel, index_t NHeads, index_t DFf, LayerOptions Opt>
struct LayerCost<EncoderLayer<SeqLen, DModel, NHeads, DFf, Opt>> {
  static constexpr bool known = true;
  static constexpr index_t mult_adds(index_t) {
    return cost::multi_head(SeqLen, SeqLen, SeqLen, DModel) + cost::feed_forward(SeqLen, DModel, DFf);
  }
};
template <index_t SeqLen, index_t MemLen, index_t DModel, index_t NHeads, index_t DFf, LayerOptions Opt>
struct LayerCost<DecoderLayer<SeqLen, MemLen, DModel, NHeads, DFf, Opt>> {
  static constexpr bool known = true;
  /// The whole-sequence forward (teacher forcing).
  static constexpr index_t mult_adds(index_t) {
    return cost::multi_head(SeqLen, SeqLen, SeqLen, DModel) + cost::multi_head(SeqLen, MemLen, MemLen, DModel) +
           cost::feed_forward(SeqLen, DModel, DFf);
  }
};
template <index_t DModel, LayerNormKind Kind, LayerNormEps Eps>
struct LayerCost<LayerNorm<DModel, Kind, Eps>> {
  static constexpr bool known = true;
  static constexpr index_t mult_adds(index_t) { return 0; }
};
template <index_t Vocab, index_t DModel>
struct LayerCost<Embedding<Vocab, DModel>> {
  static constexpr bool known = true;
  static constexpr index_t mult_adds(index_t) { return 0; }
};
template <index_t MaxLen, index_t DModel>
struct LayerCost<PositionalEncoding<MaxLen, DModel>> {
  static constexpr bool known = true;
  static constexpr index_t mult_adds(index_t) { return 0; }
};
template <index_t DModel, index_t Out, bool LogSoftmax>
struct LayerCost<ProjectionHead<DModel, Out, LogSoftmax>> {
  static constexpr bool known = true;
  static constexpr index_t mult_adds(index_t rows) { return cost::linear(rows, DModel, Out); }
};
template <class Layer, index_t NLayers, bool FinalNorm>
struct LayerCost<EncoderStack<Layer, NLayers, FinalNorm>> {
  static constexpr bool known = true;
  static constexpr index_t mult_adds(index_t rows) { return NLayers * LayerCost<Layer>::mult_adds(rows); }
};

// ---- summary rows ----------------------------------------------------------------------------

/// A row's input or output: up to 3 dimensions; `tokens`: token ids rather than floats.
struct RowShape {
  index_t dims[3] = {};
  index_t rank = 0;
  bool tokens = false;
  static constexpr RowShape matrix(index_t rows, index_t cols) { return {{rows, cols, 0}, 2, false}; }
  static constexpr RowShape token_ids(index_t n) { return {{n, 0, 0}, 1, true}; }
  constexpr index_t elements() const {
    index_t e = 1;
    for (index_t k = 0; k < rank; ++k) e *= dims[k];
    return e;
  }
};

/// One named layer of a summary.
struct SummaryRow {
  LayerPath path;                 ///< the prefix of its parameters ("encoder.layers.0")
  const char* type = "";          ///< "EncoderLayer"
  const char* phase = "forward";  ///< when it runs: "forward"; an encoder-decoder's "encode" or "step"
  RowShape in, out;
  index_t params = 0;  ///< parameters it owns (every parameter of the model is in exactly one row)
  index_t mult_adds = 0;
  bool mult_adds_known = true;          ///< false: a layer type whose mult-adds the library does not know
  bool reads_params_elsewhere = false;  ///< it uses parameters another row owns (printed "-")
  /// Bytes of those parameters where they are not 4 each (a layer with int8 weights: its
  /// param_bytes_of<Params>()); 0: 4 bytes a parameter.
  index_t weight_bytes = 0;
  constexpr index_t param_bytes() const { return weight_bytes ? weight_bytes : params * sizeof(float); }
  constexpr index_t output_bytes() const { return out.elements() * (out.tokens ? sizeof(int) : sizeof(float)); }
};

/// The model's constexpr footprint, as its `weight_bytes`, `arena_bytes`... say.
struct Footprint {
  index_t param_count = 0;
  index_t weight_bytes = 0;
  index_t const_bytes = 0;  ///< constant tables in flash (the positional-encoding table)
  index_t arena_bytes = 0;
  index_t arena_unplanned_bytes = 0;
  index_t state_bytes = 0;  ///< K/V caches
};

template <index_t NRows>
struct ModelSummary {
  static constexpr index_t size = NRows;
  SummaryRow rows[NRows] = {};
  Footprint footprint;

  constexpr index_t params() const {
    index_t n = 0;
    for (const SummaryRow& r : rows) n += r.params;
    return n;
  }
  constexpr index_t param_bytes() const {
    index_t n = 0;
    for (const SummaryRow& r : rows) n += r.param_bytes();
    return n;
  }
  /// Summed over the rows of one phase (all rows: null).
  constexpr index_t mult_adds(const char* phase = nullptr) const {
    index_t n = 0;
    for (const SummaryRow& r : rows) n += phase == nullptr || same_text(r.phase, phase) ? r.mult_adds : 0;
    return n;
  }
  constexpr index_t output_bytes() const {
    index_t n = 0;
    for (const SummaryRow& r : rows) n += r.output_bytes();
    return n;
  }
  /// The row named `name` ("encoder.layers.1"), or null.
  constexpr const SummaryRow* find(const char* name) const {
    for (const SummaryRow& r : rows) {
      char text[160] = {};
      r.path.write(text, sizeof text);
      if (same_text(text, name)) return &r;
    }
    return nullptr;
  }
  static constexpr bool same_text(const char* a, const char* b) {
    while (*a && *a == *b) ++a, ++b;
    return *a == *b;
  }
};

namespace summary_detail {
template <class L>
concept Stack = requires {
  typename L::Layer;
  typename L::Norm;
  L::n_layers;
  L::final_norm;
};
}  // namespace summary_detail

/// Rows a Sequential node contributes: one per layer (and final norm) of a stack, else one.
template <class L>
constexpr index_t node_summary_rows() {
  if constexpr (summary_detail::Stack<L>)
    return L::n_layers + (L::final_norm ? 1 : 0);
  else
    return 1;
}

/// Writes node L's rows (node_summary_rows<L>()) at out, for `rows` rows named under `path`.
template <class L>
constexpr void node_summary(SummaryRow* out, const LayerPath& path, index_t rows) {
  if constexpr (summary_detail::Stack<L>) {
    using Layer = typename L::Layer;
    using Norm = typename L::Norm;
    const RowShape x = RowShape::matrix(rows, L::d_model);
    for (index_t i = 0; i < L::n_layers; ++i)
      out[i] = {path / "layers" / i,
                Layer::name,
                "forward",
                x,
                x,
                Layer::Params::param_count,
                LayerCost<Layer>::mult_adds(rows),
                LayerCost<Layer>::known,
                false,
                param_bytes_of<typename Layer::Params>()};
    if constexpr (L::final_norm)
      out[L::n_layers] = {path / "norm", Norm::name, "forward", x, x, Norm::Params::param_count, 0, true};
  } else {
    const RowShape in = L::in_cols == 0 ? RowShape::token_ids(rows) : RowShape::matrix(rows, L::in_cols);
    out[0] = {path,
              L::name,
              "forward",
              in,
              RowShape::matrix(rows, L::out_cols),
              L::Params::param_count,
              LayerCost<L>::mult_adds(rows),
              LayerCost<L>::known,
              false,
              param_bytes_of<typename L::Params>()};
  }
}

// ---- printing ---------------------------------------------------------------------------------

/// A line sink by reference, type-erased so the printers are compiled once per program.
class LineSink {
 public:
  template <class Sink>
  LineSink(Sink& sink)  // NOLINT: implicit on purpose
      : object_(const_cast<std::remove_const_t<Sink>*>(&sink)),
        call_([](void* s, const char* line) { (*static_cast<Sink*>(s))(line); }) {}
  void operator()(const char* line) const { call_(object_, line); }

 private:
  void* object_;
  void (*call_)(void*, const char*);
};

namespace summary_detail {

/// The path's name, or "(root)" for a layer whose parameters have no prefix (Named<"", ...>).
inline const char* printed_name(const LayerPath& p, char (&buf)[160]) {
  return p.write(buf, sizeof buf) ? buf : "(root)";
}

/// One output line, formatted without printf (integers only) into a fixed buffer; text past the
/// capacity is cut.
class Line {
 public:
  static constexpr index_t capacity = 255;
  Line& text(const char* s) {
    while (*s) put(*s++);
    return *this;
  }
  Line& put(char c) {
    if (len_ < capacity) buf_[len_++] = c;
    buf_[len_] = '\0';
    return *this;
  }
  /// s, then spaces up to `width` (at least one space if s is as wide or wider).
  Line& left(const char* s, index_t width) {
    const index_t start = len_;
    text(s);
    do put(' ');
    while (len_ - start < width);
    return *this;
  }
  /// s right-aligned in `width`, after one space at least.
  Line& right(const char* s, index_t width) {
    index_t n = 0;
    while (s[n]) ++n;
    put(' ');
    for (index_t k = n; k + 1 < width; ++k) put(' ');
    return text(s);
  }
  Line& number(std::uint64_t v) {
    char digits[24];
    return text(format(v, digits));
  }
  Line& number(std::uint64_t v, index_t width) {
    char digits[24];
    return right(format(v, digits), width);
  }
  /// permille as "12.3" (one decimal).
  Line& tenths(std::uint64_t permille) {
    number(permille / 10);
    put('.');
    return put(static_cast<char>('0' + permille % 10));
  }
  Line& shape(const RowShape& s, bool csv) {
    if (!csv) put('[');
    for (index_t k = 0; k < s.rank; ++k) {
      if (k) text(csv ? "x" : ", ");
      number(s.dims[k]);
    }
    if (!csv) put(']');
    return *this;
  }
  /// A CSV field: s, or s in double quotes (its quotes doubled) if it holds a comma or a quote.
  Line& csv(const char* s) {
    bool quote = false;
    for (const char* c = s; *c; ++c) quote = quote || *c == ',' || *c == '"';
    if (!quote) return text(s);
    put('"');
    for (const char* c = s; *c; ++c) {
      if (*c == '"') put('"');
      put(*c);
    }
    return put('"');
  }
  index_t size() const { return len_; }
  const char* c_str() const { return buf_; }
  void send(const LineSink& sink) {
    sink(buf_);
    len_ = 0;
    buf_[0] = '\0';
  }

  static const char* format(std::uint64_t v, char (&digits)[24]) {
    char* p = digits + 23;
    *p = '\0';
    do {
      *--p = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    return p;
  }

 private:
  char buf_[capacity + 1] = {};
  index_t len_ = 0;
};

inline std::uint64_t permille(std::uint64_t part, std::uint64_t whole) {
  return whole ? (part * 1000 + whole / 2) / whole : 0;
}

// column widths of the summary table
inline constexpr index_t kName = 30, kType = 20, kPhase = 8, kShape = 14, kNum = 12;

inline void summary_table(const SummaryRow* rows, index_t n, const Footprint& fp, const LineSink& sink) {
  Line line;
  line.left("layer", kName).left("type", kType).left("phase", kPhase).left("input", kShape).left("output", kShape);
  line.right("params", kNum).right("param B", kNum).right("mult-adds", kNum).right("output B", kNum).send(sink);
  index_t params = 0, param_bytes = 0, out_bytes = 0;
  const char* phases[4] = {};
  index_t phase_adds[4] = {}, n_phases = 0;
  for (index_t i = 0; i < n; ++i) {
    const SummaryRow& r = rows[i];
    char name[160], shape_in[48], shape_out[48];
    Line s;
    s.shape(r.in, false);
    for (index_t k = 0; k <= s.size(); ++k) shape_in[k] = s.c_str()[k];
    Line t;
    t.shape(r.out, false);
    for (index_t k = 0; k <= t.size(); ++k) shape_out[k] = t.c_str()[k];
    line.left(printed_name(r.path, name), kName)
        .left(r.type, kType)
        .left(r.phase, kPhase)
        .left(shape_in, kShape)
        .left(shape_out, kShape);
    if (r.reads_params_elsewhere)
      line.right("-", kNum).right("-", kNum);
    else
      line.number(r.params, kNum).number(r.param_bytes(), kNum);
    if (r.mult_adds_known)
      line.number(r.mult_adds, kNum);
    else
      line.right("?", kNum);
    line.number(r.output_bytes(), kNum).send(sink);
    params += r.params;
    param_bytes += r.reads_params_elsewhere ? 0 : r.param_bytes();
    out_bytes += r.output_bytes();
    index_t p = 0;
    while (p < n_phases && !ModelSummary<1>::same_text(phases[p], r.phase)) ++p;
    if (p == n_phases && n_phases < 4) phases[n_phases++] = r.phase;
    if (p < 4) phase_adds[p] += r.mult_adds;
  }
  line.left("total", kName + kType + kPhase + 2 * kShape);
  line.number(params, kNum).number(param_bytes, kNum);
  if (n_phases == 1)
    line.number(phase_adds[0], kNum);
  else
    line.right("", kNum);
  line.number(out_bytes, kNum).send(sink);
  if (n_phases > 1) {
    line.text("mult-adds:");
    for (index_t p = 0; p < n_phases; ++p) line.text(p ? ", " : " ").text(phases[p]).put(' ').number(phase_adds[p]);
    line.send(sink);
  }
  line.text("parameters ").number(fp.param_count).text(": weights ").number(fp.weight_bytes).text(" B");
  if (fp.const_bytes) line.text(" + constant tables ").number(fp.const_bytes).text(" B");
  line.text(" (flash)").send(sink);
  line.text("RAM: arena ").number(fp.arena_bytes).text(" B (planned; ").number(fp.arena_unplanned_bytes);
  line.text(" B without reuse)");
  if (fp.state_bytes) line.text(" + K/V caches ").number(fp.state_bytes).text(" B");
  line.send(sink);
}

inline void summary_csv(const SummaryRow* rows, index_t n, const LineSink& sink) {
  Line line;
  line.text("layer,type,phase,input,output,params,param_bytes,mult_adds,output_bytes").send(sink);
  index_t params = 0, param_bytes = 0;
  for (index_t i = 0; i < n; ++i) {
    const SummaryRow& r = rows[i];
    char name[160];
    line.csv(printed_name(r.path, name)).put(',').csv(r.type).put(',').csv(r.phase).put(',');
    line.shape(r.in, true).put(',').shape(r.out, true).put(',');
    line.number(r.params).put(',').number(r.param_bytes()).put(',');
    if (r.mult_adds_known) line.number(r.mult_adds);
    line.put(',').number(r.output_bytes()).send(sink);
    params += r.params;
    param_bytes += r.param_bytes();
  }
  line.text("total,,,,,").number(params).put(',').number(param_bytes).text(",,").send(sink);
}

// column widths of the profile table
inline constexpr index_t kCalls = 8, kTicks = 14, kShare = 8;

template <class Prof>
void profile_rows(const Prof& prof, const char* unit, std::uint64_t runs, bool csv, const LineSink& sink) {
  std::uint64_t total = 0;
  for (index_t i = 0; i < prof.size(); ++i) total += prof[i].ticks;
  if (runs == 0) runs = 1;
  Line line;
  if (csv) {
    line.text("layer,calls,").text(unit).put(',').text(unit).text("_per_run,share_percent").send(sink);
  } else {
    char per_run[32] = {};
    Line u;
    u.text(unit).text("/run");
    for (index_t k = 0; k <= u.size() && k < sizeof per_run - 1; ++k) per_run[k] = u.c_str()[k];
    line.left("layer", kName).right("calls", kCalls).right(unit, kTicks).right(per_run, kTicks);
    line.right("share", kShare).send(sink);
  }
  for (index_t i = 0; i < prof.size(); ++i) {
    const auto& e = prof[i];
    if (csv) {
      char name[160];
      line.csv(printed_name(e.path, name))
          .put(',')
          .number(e.calls)
          .put(',')
          .number(e.ticks)
          .put(',')
          .number(e.ticks / runs)
          .put(',');
      line.tenths(permille(e.ticks, total)).send(sink);
    } else {
      char name[160];
      line.left(printed_name(e.path, name), kName)
          .number(e.calls, kCalls)
          .number(e.ticks, kTicks)
          .number(e.ticks / runs, kTicks);
      Line s;
      s.tenths(permille(e.ticks, total)).put('%');
      line.right(s.c_str(), kShare).send(sink);
    }
  }
  if (csv) {
    line.text("total,,").number(total).put(',').number(total / runs).text(",100.0").send(sink);
    line.text("dropped,").number(prof.dropped()).put(',').number(prof.dropped_ticks()).text(",,").send(sink);
  } else {
    line.left("total", kName).right("", kCalls).number(total, kTicks).number(total / runs, kTicks).send(sink);
    line.text("dropped: ").number(prof.dropped()).text(" measurements (").number(prof.dropped_ticks()).put(' ');
    line.text(unit).text(") of layers beyond the profiler's ").number(Prof::capacity).text(" rows").send(sink);
  }
}

}  // namespace summary_detail

/// The summary as a text table: a header, one line per row, a total line (params, their bytes,
/// mult-adds of a single phase, output bytes), the mult-adds per phase when there are several, the
/// flash and RAM footprint.
template <index_t N, class Sink>
void print_summary(const ModelSummary<N>& s, Sink&& sink) {
  summary_detail::summary_table(s.rows, N, s.footprint, LineSink(sink));
}

/// The summary as CSV: `layer,type,phase,input,output,params,param_bytes,mult_adds,output_bytes`
/// (shapes as 10x32; mult_adds empty where unknown; a field with a comma or quote is quoted), then
/// `total,,,,,<params>,<bytes>,,`.
template <index_t N, class Sink>
void print_summary_csv(const ModelSummary<N>& s, Sink&& sink) {
  summary_detail::summary_csv(s.rows, N, LineSink(sink));
}

/// How profile ticks are printed: their unit's name, and the runs the profile covers (the
/// per-run column is ticks / runs, rounded down).
struct ProfileFormat {
  const char* unit = "ticks";
  std::uint64_t runs = 1;
};

/// A Profiler's rows as a text table: layer, calls, ticks, ticks per run, share of the recorded
/// total (one decimal), a total line and the count of dropped measurements.
template <class Prof, class Sink>
void print_profile(const Prof& prof, Sink&& sink, ProfileFormat f = {}) {
  summary_detail::profile_rows(prof, f.unit, f.runs, false, LineSink(sink));
}

/// The same as CSV: `layer,calls,<unit>,<unit>_per_run,share_percent`, then
/// `total,,<ticks>,<per run>,100.0` and `dropped,<measurements>,<ticks>,,`.
template <class Prof, class Sink>
void print_profile_csv(const Prof& prof, Sink&& sink, ProfileFormat f = {}) {
  summary_detail::profile_rows(prof, f.unit, f.runs, true, LineSink(sink));
}

}  // namespace stf
