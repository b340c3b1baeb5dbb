// The LayerOptions a golden case describes: the annotated flavour is always the annotated
// transformer's layer (pre-norm, its LayerNorm, -1e9); otherwise PyTorch's nn.Transformer*Layer.
#pragma once

#include <statiformer/layers/options.hpp>

namespace stf::test {
constexpr LayerOptions golden_options(bool norm_first, LayerNormKind ln, Activation act = Activation::relu) {
  if (ln == LayerNormKind::annotated) return kAnnotated;
  return {norm_first ? NormPlacement::pre : NormPlacement::post, act, ln, true, MaskFill::neg_inf};
}
/// nn.Transformer*Layer's options with its layer_norm_eps.
constexpr LayerOptions golden_options_eps(bool norm_first, Activation act, float eps) {
  LayerOptions o = golden_options(norm_first, LayerNormKind::torch, act);
  o.layer_norm_eps = eps;
  return o;
}
}  // namespace stf::test
