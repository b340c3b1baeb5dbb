// statiformer — output heads: per-token classifier (logits) and generator (log_softmax).
#pragma once

#include <statiformer/graph/node.hpp>
#include <statiformer/kernels/reference.hpp>
#include <statiformer/layers/params.hpp>

namespace stf {

/// y = x Wᵀ + b per token: [SeqLen, DModel] → [SeqLen, NClasses] logits.
template <index_t DModel, index_t NClasses>
struct Classifier {
  static constexpr index_t d_model = DModel, n_classes = NClasses;
  static constexpr const char* name = "Classifier";
  static constexpr index_t scratch_floats = 0;
  struct Params {
    LinearParams<DModel, NClasses> proj;
    static constexpr index_t param_count = LinearParams<DModel, NClasses>::param_count;
    template <class F>
    void visit(F&& f, const Name& prefix) {
      proj.visit(f, prefix / "proj");
    }
  };
  Params params;
  // Sequential node
  static constexpr index_t in_cols = DModel, out_cols = NClasses;
  static constexpr bool in_place = false;
  Status apply(const float* in, float* out, float*, const RunContext& ctx) const {
    run(in, ctx.rows, out);
    return Status::ok;
  }
  void run(const float* x, index_t rows, float* y) const {
    ref::linear(x, rows, DModel, params.proj.weight.data, params.proj.bias.data, NClasses, y);
  }
};

/// y = log_softmax(x Wᵀ + b) per token: [rows, DModel] → [rows, Vocab] log-probabilities.
template <index_t DModel, index_t Vocab>
struct Generator {
  static constexpr index_t d_model = DModel, vocab = Vocab;
  static constexpr const char* name = "Generator";
  static constexpr index_t scratch_floats = 0;
  struct Params {
    LinearParams<DModel, Vocab> proj;
    static constexpr index_t param_count = LinearParams<DModel, Vocab>::param_count;
    template <class F>
    void visit(F&& f, const Name& prefix) {
      proj.visit(f, prefix / "proj");
    }
  };
  Params params;
  // Sequential node
  static constexpr index_t in_cols = DModel, out_cols = Vocab;
  static constexpr bool in_place = false;
  Status apply(const float* in, float* out, float*, const RunContext& ctx) const {
    run(in, ctx.rows, out);
    return Status::ok;
  }
  void run(const float* x, index_t rows, float* y) const {
    ref::linear(x, rows, DModel, params.proj.weight.data, params.proj.bias.data, Vocab, y);
    for (index_t r = 0; r < rows; ++r) ref::log_softmax_row(y + r * Vocab, Vocab);
  }
};

}  // namespace stf
