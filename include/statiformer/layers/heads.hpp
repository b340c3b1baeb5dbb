// statiformer — output heads: per-token classifier (logits) and generator (log_softmax).
#pragma once

#include <statiformer/kernels/api.hpp>
#include <statiformer/layers/node.hpp>
#include <statiformer/layers/params.hpp>

namespace stf {

/// y = x Wᵀ + b per token, [rows, DModel] → [rows, Out], then log_softmax if LogSoftmax.
template <index_t DModel, index_t Out, bool LogSoftmax>
struct ProjectionHead {
  static constexpr index_t d_model = DModel, out_features = Out;
  static constexpr index_t n_classes = Out, vocab = Out;
  static constexpr const char* name = LogSoftmax ? "Generator" : "Classifier";
  static constexpr index_t scratch_floats = 0;
  struct Params {
    LinearParams<DModel, Out> proj;
    static constexpr index_t param_count = LinearParams<DModel, Out>::param_count;
    template <class F>
    void visit(F&& f, const Name& prefix) {
      proj.visit(f, prefix / "proj");
    }
  };
  Params params;

  // Sequential node
  static constexpr index_t in_cols = DModel, out_cols = Out;
  static constexpr bool in_place = false;
  Status apply(const float* in, float* out, float*, const RunContext& ctx) const {
    run(in, ctx.rows, out);
    return Status::ok;
  }

  void run(const float* x, index_t rows, float* y) const {
    ActiveKernels::linear(x, rows, DModel, params.proj.weight.data, params.proj.bias.data, Out, y);
    if constexpr (LogSoftmax)
      for (index_t r = 0; r < rows; ++r) ActiveKernels::log_softmax_row(y + r * Out, Out);
  }
};

/// Per-token logits: [SeqLen, DModel] → [SeqLen, NClasses].
template <index_t DModel, index_t NClasses>
using Classifier = ProjectionHead<DModel, NClasses, false>;

/// log_softmax(x Wᵀ + b): [rows, DModel] → [rows, Vocab] log-probabilities (the annotated
/// transformer's Generator).
template <index_t DModel, index_t Vocab>
using Generator = ProjectionHead<DModel, Vocab, true>;

}  // namespace stf
