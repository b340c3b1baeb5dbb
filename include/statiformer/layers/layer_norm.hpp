// statiformer — LayerNorm, both flavours (see LayerNormKind), with the kind's eps or another.
#pragma once

#include <statiformer/kernels/api.hpp>
#include <statiformer/layers/node.hpp>
#include <statiformer/layers/params.hpp>

namespace stf {

/// Eps: nn.LayerNorm's eps (torch: added to the variance) or the annotated transformer's (added to
/// the std); by default the kind's own, nn.LayerNorm's 1e-5, the annotated transformer's 1e-6.
/// A LayerNorm eps as a template argument: a class holding the float, because clang 14 takes no
/// template parameter of type float (it takes a class that holds one). It converts from a float, so
/// `LayerNorm<D, Kind, 1e-3f>` is written as before.
struct LayerNormEps {
  float value;
  constexpr LayerNormEps(float v) : value(v) {}  // NOLINT(google-explicit-constructor): the point
};

template <index_t DModel, LayerNormKind Kind = LayerNormKind::torch, LayerNormEps Eps = default_layer_norm_eps(Kind)>
struct LayerNorm {
  static_assert(check::layernorm_dmodel<Kind == LayerNormKind::annotated, DModel>());
  static_assert(Eps.value >= 0.0f && Eps.value <= 3.40282347e38f, "LayerNorm: eps must be a finite number >= 0");
  static constexpr index_t d_model = DModel;
  static constexpr LayerNormKind kind = Kind;
  static constexpr float eps = Eps.value;
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
    ActiveKernels::add_layer_norm_rows(y, x, rows, params.weight.data, params.bias.data, DModel, Kind, eps, y);
  }
  /// y = LN(t + x), t overwritten (its sums, or as it was): the first residual step of a post-norm
  /// layer, whose sublayer output t is scratch, without a copy of x into y first. t + x, not x + t: the
  /// same sums (only a NaN meeting a NaN may keep the other payload). y may alias x.
  void add_run_into(const float* x, float* t, index_t rows, float* y) const {
    ActiveKernels::add_layer_norm_rows(t, x, rows, params.weight.data, params.bias.data, DModel, Kind, eps, y);
  }
};

}  // namespace stf
