// The LayerOptions a golden case describes: the annotated flavour is always the annotated
// transformer's layer (pre-norm, its LayerNorm, -1e9); otherwise PyTorch's nn.Transformer*Layer.
#pragma once

#include <statiformer/layers/options.hpp>

namespace stf::test {
constexpr LayerOptions golden_options(bool norm_first, LayerNormKind ln, Activation act = Activation::relu) {
  if (ln == LayerNormKind::annotated) return kAnnotated;
  return {norm_first ? NormPlacement::pre : NormPlacement::post, act, ln, true, MaskFill::neg_inf};
}
}  // namespace stf::test
