// statiformer — basic vocabulary shared by every header: index type, alignment, the stored layout
// of weights, status codes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stf {

/// Type of every shape parameter (SeqLen, DModel, NHeads, ...) and of runtime lengths.
using index_t = std::size_t;

/// Alignment of every tensor the library owns (a cache line; enough for AVX-512 loads).
inline constexpr index_t kTensorAlign = 64;

/// Columns of one weight panel: the stored layout of every linear layer's weight. A linear layer's weight is stored as
/// Wᵀ [In, Out] cut into column panels of kWeightPanel outputs (the last one narrower when Out is not a multiple), each
/// panel [In, width] row-major and contiguous, panel after panel. A register tile streams one panel: the rows of a
/// block of reduction steps are consecutive in memory, so the block stays in L1 whatever Out is (a plain [In, Out]
/// matrix at a power-of-two Out puts every row of a block in the same few cache sets). A weight of at most kWeightPanel
/// outputs is plain row-major [In, Out]. Part of the stored layout exporters write (schema version 2).
inline constexpr index_t kWeightPanel = 64;

/// Index of element [r, c] of a matrix stored [rows, cols] in column panels of `panel` columns
/// (0: plain row-major): what the kernels, binders and exporters converting a plain matrix use.
constexpr index_t stored_index(index_t rows, index_t cols, index_t panel, index_t r, index_t c) {
  if (panel == 0 || cols <= panel) return r * cols + c;
  const index_t p0 = c / panel * panel;  // first column of c's panel
  const index_t width = cols - p0 < panel ? cols - p0 : panel;
  return p0 * rows + r * width + (c - p0);
}

/// Index of Wᵀ[k, o] in a [in, out] weight stored in column panels (see kWeightPanel).
constexpr index_t weight_index(index_t in, index_t out, index_t k, index_t o) {
  return stored_index(in, out, kWeightPanel, k, o);
}

/// Reduction steps of an int8 weight held in one 32-bit word (kernels/QUANTIZATION.md): int8 weights are stored like
/// float ones, Wᵀ [In, Out] in column panels of kWeightPanel outputs, but with In in groups of four adjacent bytes per
/// output ("k-quads", XNNPACK's c4 packing): w[k..k+3, o] is one word, what x86 VNNI `vpdpbusd`, aarch64 `sdot` and a
/// Cortex-M4 `sxtb16` + `smlad` pair consume. In is padded with zero bytes to a multiple of kQuadK.
inline constexpr index_t kQuadK = 4;

/// In of an int8 weight as stored: padded to a multiple of kQuadK.
constexpr index_t quad_padded(index_t in) { return (in + kQuadK - 1) / kQuadK * kQuadK; }

/// Index of Wᵀ[k, o] in an int8 [in, out] weight stored in k-quads (see kQuadK); quad_padded(in) · out bytes in all.
constexpr index_t qweight_index(index_t in, index_t out, index_t k, index_t o) {
  const index_t in4 = quad_padded(in);
  const index_t p0 = o / kWeightPanel * kWeightPanel;  // first output of o's panel
  const index_t width = out - p0 < kWeightPanel ? out - p0 : kWeightPanel;
  return p0 * in4 + (k / kQuadK) * (width * kQuadK) + (o - p0) * kQuadK + k % kQuadK;
}

/// Result of every operation that can fail at run time on user data. Nothing is thrown; a call
/// that returns anything but `Status::ok` has written nothing to its outputs.
enum class [[nodiscard]] Status : std::uint8_t{
    ok = 0,
    invalid_length,           ///< a valid length of 0, or larger than the compile-time capacity
    token_out_of_range,       ///< a token id < 0 or >= Vocab
    capacity_exceeded,        ///< decoding past the compile-time target capacity
    missing_weight,           ///< a parameter of the schema was not found by name
    weight_shape_mismatch,    ///< a parameter was found with a different element count
    duplicate_weight,         ///< two weights with the same name were offered
    unexpected_weight,        ///< a weight table holds a name the schema does not know
    hyperparameter_mismatch,  ///< a weight table's hyperparameter differs from the model's, or is missing
    invalid_sampler,          ///< sampling settings out of range (top_k not in [1, Vocab], temperature not > 0)
    invalid_mask,             ///< masks that contradict the valid length, leave a row no key, or cannot be run
    weight_dtype_mismatch,    ///< a float weight offered for an int8 parameter (NumberFormat), or the reverse
};

/// Human-readable text of a status (static storage, never null).
constexpr const char* to_string(Status s) noexcept {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::invalid_length:
      return "invalid length (0 or larger than the compile-time capacity)";
    case Status::token_out_of_range:
      return "token id out of range [0, Vocab)";
    case Status::capacity_exceeded:
      return "decoding past the compile-time capacity";
    case Status::missing_weight:
      return "a parameter of the schema is missing";
    case Status::weight_shape_mismatch:
      return "a parameter has the wrong number of elements";
    case Status::duplicate_weight:
      return "a parameter name appears twice";
    case Status::unexpected_weight:
      return "a weight name is not part of the model's schema";
    case Status::hyperparameter_mismatch:
      return "a hyperparameter of the weights differs from the model's";
    case Status::invalid_sampler:
      return "sampling settings out of range (top_k in [1, Vocab], temperature finite and > 0)";
    case Status::invalid_mask:
      return "masks contradict the valid length, leave a row with no key, or cannot be run incrementally";
    case Status::weight_dtype_mismatch:
      return "a parameter has the wrong dtype (float where the model stores int8, or the reverse)";
  }
  return "unknown status";
}

/// Enumerations of the modules' compile-time options.
/// Activation: `gelu` the exact (erf) GELU, nn.GELU(); `gelu_tanh` nn.GELU(approximate='tanh').
enum class Activation : std::uint8_t { relu, gelu, gelu_tanh };
enum class NormPlacement : std::uint8_t { post, pre };
/// `torch`: nn.LayerNorm (biased variance, eps inside the sqrt, eps 1e-5).
/// `annotated`: the annotated transformer's (unbiased std, eps added to the std, eps 1e-6).
enum class LayerNormKind : std::uint8_t { torch, annotated };
/// The kind's own eps (nn.LayerNorm's 1e-5, the annotated transformer's 1e-6): the default of
/// LayerOptions::layer_norm_eps and of LayerNorm's Eps.
constexpr float default_layer_norm_eps(LayerNormKind k) { return k == LayerNormKind::torch ? 1e-5f : 1e-6f; }
/// Value written into masked attention scores before the softmax. Both give identical results
/// unless every key of a query row is masked; see kernels/attention.hpp for that case.
enum class MaskFill : std::uint8_t { neg_inf, neg_1e9 };
/// The number format of a layer's matrix products (kernels/QUANTIZATION.md):
///   f32    float32 weights and activations (the default);
///   w8a32  int8 weights, one scale per output channel; activations float;
///   w8a8   int8 weights and int8 inputs of the linears, one scale per row computed at run time.
/// Softmax, LayerNorm, activations and residual adds stay float32 in every format; the attention's
/// Q·Kᵀ and P·V (and a K/V cache) too, unless LayerOptions::int8_attention (w8a8) makes them int8.
enum class NumberFormat : std::uint8_t { f32, w8a32, w8a8 };
constexpr bool is_int8(NumberFormat f) { return f != NumberFormat::f32; }

}  // namespace stf
