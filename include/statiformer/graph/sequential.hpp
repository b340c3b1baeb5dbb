// statiformer — a static graph: a sequence of heterogeneous layer types composed at compile time.
//
// Boost.Hana holds the heterogeneous layers and walks them; shape arithmetic, the shape-flow check
// and the memory plan are plain constexpr over arrays built from the layer types.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include <boost/hana/at.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/range.hpp>
#include <boost/hana/tuple.hpp>

#include <statiformer/graph/memory_plan.hpp>
#include <statiformer/graph/summary.hpp>
#include <statiformer/layers/node.hpp>
#include <statiformer/layers/params.hpp>
#include <statiformer/profiler.hpp>
#include <statiformer/shape/checks.hpp>
#include <statiformer/tensor.hpp>

namespace stf {

template <index_t SeqLen, Node... Layers>
class Sequential {
  static constexpr index_t n = sizeof...(Layers);
  static_assert(n >= 1, "Sequential: at least one layer");
  static constexpr std::array<index_t, n> in_cols{Layers::in_cols...};
  static constexpr std::array<index_t, n> out_cols{Layers::out_cols...};
  static constexpr std::array<bool, n> in_place{Layers::in_place...};

  template <index_t... I>
  static constexpr bool check_chain(std::index_sequence<I...>) {
    return (check::layer_chain<I, SeqLen, out_cols[I], SeqLen, in_cols[I + 1]>() && ... && true);
  }
  static_assert(check_chain(std::make_index_sequence<n - 1>{}));

  /// owner[i]: the node whose output buffer node i writes (itself, or its input's owner if in place).
  static constexpr std::array<index_t, n> owner = [] {
    std::array<index_t, n> o{};
    for (index_t i = 0; i < n; ++i) o[i] = (i > 0 && in_place[i] && in_cols[i] == out_cols[i]) ? o[i - 1] : i;
    return o;
  }();

 public:
  static constexpr index_t seq_len = SeqLen, n_layers = n;
  static constexpr index_t input_cols = in_cols[0], output_cols = out_cols[n - 1];
  static constexpr bool token_input = input_cols == 0;

  /// Buffers 0..n-1: the output of node i (empty if it writes its input's buffer); n..2n-1: the
  /// scratch of node i. Step i runs node i; the last output stays alive after the last step.
  static constexpr MemoryPlan<2 * n> plan = [] {
    std::array<BufferUse, 2 * n> uses{};
    constexpr std::array<index_t, n> scratch{Layers::scratch_floats...};
    for (index_t i = 0; i < n; ++i) {
      uses[i] = {owner[i] == i ? SeqLen * out_cols[i] : 0, i, i};
      uses[n + i] = {scratch[i], i, i};
    }
    for (index_t i = 0; i < n; ++i) {
      index_t last = i + 1 < n ? i + 1 : n;  // read by the next node (or by the caller)
      uses[owner[i]].last = uses[owner[i]].last > last ? uses[owner[i]].last : last;
    }
    return plan_memory<2 * n>(uses);
  }();

  static constexpr index_t param_count = (Layers::Params::param_count + ... + 0);
  static constexpr index_t weight_bytes = (param_bytes_of<typename Layers::Params>() + ... + 0);
  static constexpr index_t arena_bytes = plan.arena_floats * sizeof(float);
  static constexpr index_t arena_unplanned_bytes = plan.sum_floats * sizeof(float);

  boost::hana::tuple<Layers...> layers;

  /// Node k's name in profiles and summaries: its `Named` prefix (or its index), as in `visit`.
  template <index_t K>
  static constexpr LayerPath node_path() {
    return path_of<std::tuple_element_t<K, std::tuple<Layers...>>>(K);
  }

  /// Every parameter, prefixed by the node's `Named` prefix (or its index).
  template <class F>
  void visit(F&& f, const Name& prefix = {}) {
    boost::hana::for_each(boost::hana::make_range(boost::hana::size_c<0>, boost::hana::size_c<n>), [&](auto i) {
      auto& layer = boost::hana::at(layers, i);
      using L = std::remove_cvref_t<decltype(layer)>;
      if constexpr (requires { L::prefix; })
        layer.params.visit(f, prefix / L::prefix);
      else
        layer.params.visit(f, prefix / static_cast<index_t>(i));
    });
  }

  /// Runs every node. `input`: [SeqLen, input_cols] floats, or null for a token-source first node
  /// (then ctx.tokens). Nothing is written if a check fails.
  template <class Prof = NullProfiler>
  Status forward(const float* input, const RunContext& ctx, Prof&& prof = Prof{}) {
    if (ctx.valid_len == 0 || ctx.valid_len > SeqLen) return Status::invalid_length;
    Status status = Status::ok;
    RunContext c = ctx;
    c.rows = SeqLen;
    boost::hana::for_each(boost::hana::make_range(boost::hana::size_c<0>, boost::hana::size_c<n>), [&](auto i) {
      if (status != Status::ok) return;
      constexpr index_t k = decltype(i)::value;
      const float* in = k == 0 ? input : arena_ + plan.offset[owner[k == 0 ? 0 : k - 1]];
      const auto& layer = boost::hana::at(layers, i);
      float* out = arena_ + plan.offset[owner[k]];
      float* scratch = arena_ + plan.offset[n + k];
      const LayerPath path = node_path<k>();
      if constexpr (requires { layer.apply(in, out, scratch, c, prof, path); }) {
        status = layer.apply(in, out, scratch, c, prof, path);  // a stack: a row per layer
      } else {
        prof.begin(path);
        status = layer.apply(in, out, scratch, c);
        prof.end(path);
      }
    });
    return status;
  }

  /// The last node's output of the last successful forward.
  CMat<SeqLen, output_cols> output() const { return CMat<SeqLen, output_cols>(arena_ + plan.offset[owner[n - 1]]); }

  /// One row per named node (per layer of a stack): see graph/summary.hpp.
  static constexpr index_t summary_rows = (node_summary_rows<Layers>() + ... + 0);
  static constexpr ModelSummary<summary_rows> summary_table() {
    ModelSummary<summary_rows> s{};
    index_t r = 0, k = 0;
    ((node_summary<Layers>(s.rows + r, path_of<Layers>(k), SeqLen), r += node_summary_rows<Layers>(), ++k), ...);
    s.footprint = {param_count, weight_bytes, 0, arena_bytes, arena_unplanned_bytes, 0};
    return s;
  }

  /// Prints the torchinfo-like summary table, one line at a time through sink(const char*); no heap.
  template <class Sink>
  static void summary(Sink&& sink) {
    static constexpr auto table = summary_table();
    static_assert(table.params() == param_count, "Sequential: every parameter is in one summary row");
    print_summary(table, sink);
  }

 private:
  template <class L>
  static constexpr LayerPath path_of(index_t k) {
    if constexpr (requires { L::prefix; })
      return LayerPath(L::prefix);
    else
      return LayerPath() / k;
  }
  alignas(kTensorAlign) float arena_[plan.arena_floats > 0 ? plan.arena_floats : 1] = {};
};

}  // namespace stf
