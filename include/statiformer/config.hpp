// statiformer — basic vocabulary shared by every header: index type, alignment, status codes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stf {

/// Type of every shape parameter (SeqLen, DModel, NHeads, ...) and of runtime lengths.
using index_t = std::size_t;

/// Alignment of every tensor the library owns (a cache line; enough for AVX-512 loads).
inline constexpr index_t kTensorAlign = 64;

/// Result of every operation that can fail at run time on user data. Nothing is thrown; a call
/// that returns anything but `Status::ok` has written nothing to its outputs.
enum class [[nodiscard]] Status : std::uint8_t{
    ok = 0,
    invalid_length,         ///< a valid length of 0, or larger than the compile-time capacity
    token_out_of_range,     ///< a token id < 0 or >= Vocab
    capacity_exceeded,      ///< decoding past the compile-time target capacity
    missing_weight,         ///< a parameter of the schema was not found by name
    weight_shape_mismatch,  ///< a parameter was found with a different element count
    duplicate_weight,       ///< two weights with the same name were offered
    unexpected_weight,      ///< a weight table holds a name the schema does not know
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
  }
  return "unknown status";
}

/// Enumerations of the modules' compile-time options.
enum class Activation : std::uint8_t { relu, gelu };
enum class NormPlacement : std::uint8_t { post, pre };
/// `torch`: nn.LayerNorm (biased variance, eps inside the sqrt, eps 1e-5).
/// `annotated`: the annotated transformer's (unbiased std, eps added to the std, eps 1e-6).
enum class LayerNormKind : std::uint8_t { torch, annotated };
/// Value written into masked attention scores before the softmax. Both give identical results
/// unless every key of a query row is masked; see kernels/attention.hpp for that case.
enum class MaskFill : std::uint8_t { neg_inf, neg_1e9 };

}  // namespace stf
