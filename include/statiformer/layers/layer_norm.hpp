// statiformer — LayerNorm, both flavours (see LayerNormKind).
#pragma once

#include <statiformer/kernels/api.hpp>
#include <statiformer/layers/node.hpp>
#include <statiformer/layers/params.hpp>

namespace stf {

template <index_t DModel, LayerNormKind Kind = LayerNormKind::torch>
struct LayerNorm {
  static_assert(check::layernorm_dmodel<Kind == LayerNormKind::annotated, DModel>());
  static constexpr index_t d_model = DModel;
  static constexpr LayerNormKind kind = Kind;
  /// nn.LayerNorm's default 1e-5; the annotated transformer's 1e-6.
  static constexpr float eps = Kind == LayerNormKind::torch ? 1e-5f : 1e-6f;
  static constexpr const char* name = "LayerNorm";
  static constexpr index_t scratch_floats = 0;

  struct Params {
    using Owner = LayerNorm;  ///< whose hyperparameters these are (io/hparams.hpp)
    CVec<DModel> weight, bias;
    static constexpr index_t param_count = 2 * DModel;
    template <class F>
    void visit(F&& f, const Name& prefix) {
      f(prefix / "weight", param_ref(weight));
      f(prefix / "bias", param_ref(bias));
    }
  };
  Params params;

  template <class X, class Y>
  void forward(const X& x, Y&& y) const {
    static_assert(check::input_dmodel<cols_of<X>, DModel>());
    static_assert(check::input_dmodel<cols_of<Y>, DModel>());
    static_assert(check::input_seq_len<rows_of<Y>, rows_of<X>>());
    run(data_of(x), rows_of<X>, data_of(y));
  }
  // Sequential node
  static constexpr index_t in_cols = DModel, out_cols = DModel;
  static constexpr bool in_place = true;
  Status apply(const float* in, float* out, float*, const RunContext& ctx) const {
    run(in, ctx.rows, out);
    return Status::ok;
  }

  /// rows of x → rows of y (y may alias x).
  void run(const float* x, index_t rows, float* y) const {
    ActiveKernels::layer_norm_rows(x, rows, params.weight.data, params.bias.data, DModel, Kind, eps, y);
  }
  /// y = LN(y + x): the residual step of a post-norm layer.
  void add_run(float* y, const float* x, index_t rows) const {
    ActiveKernels::add(y, x, rows * DModel);
    run(y, rows, y);
  }
};

}  // namespace stf
