// statiformer — compile-time options of encoder and decoder layers, as one named aggregate:
//   EncoderLayer<SeqLen, DModel, NHeads, DFf, LayerOptions{.norm = NormPlacement::pre}>
#pragma once

#include <statiformer/config.hpp>

namespace stf {

struct LayerOptions {
  NormPlacement norm = NormPlacement::post;  ///< post: nn.Transformer*Layer default
  Activation activation = Activation::relu;
  LayerNormKind layer_norm = LayerNormKind::torch;
  bool bias = true;                   ///< biases of the attention projections
  MaskFill fill = MaskFill::neg_inf;  ///< see AttentionMask
  /// The layers' LayerNorm eps (nn.Transformer*Layer's layer_norm_eps), and the stacks' final norm's. Default:
  /// the kind's own (1e-5 torch, 1e-6 annotated), so `LayerOptions{.layer_norm = LayerNormKind::annotated}`
  /// has 1e-6; another value: `.layer_norm_eps = 1e-12f` (finite, >= 0).
  float layer_norm_eps = default_layer_norm_eps(layer_norm);
  /// The number format of the layer's linears (NumberFormat; kernels/QUANTIZATION.md):
  /// `.format = NumberFormat::w8a8` stores int8 weights with per-output scales.
  NumberFormat format = NumberFormat::f32;
  /// w8a8 only: Q·Kᵀ and P·V in int8 too (the whole scheme of kernels/QUANTIZATION.md, "Attention":
  /// Q, K and V rows quantized per head and row, int32 sums, the softmax float). Off, the attention
  /// of a w8a8 layer is float. On DecoderLayer and CausalLayer it also makes their K/V caches int8
  /// (Int8AttentionCache, about 3.2-3.6x smaller). Its kernels (int8_x86, int8_cortex_m4f, int8_helium,
  /// the generic code elsewhere) are slower than the float attention's on every target measured
  /// (ARCHITECTURE.md, "Number formats").
  bool int8_attention = false;
};

/// The annotated transformer's layers: pre-norm, its LayerNorm (eps 1e-6), -1e9 mask fill.
inline constexpr LayerOptions kAnnotated{NormPlacement::pre, Activation::relu, LayerNormKind::annotated, true,
                                         MaskFill::neg_1e9};

constexpr index_t max_of(index_t a, index_t b) { return a > b ? a : b; }

}  // namespace stf
