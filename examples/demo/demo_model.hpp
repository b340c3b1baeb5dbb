// The demo model as a type, shared by the host demo, the firmware and the tests: the trained
// reverse-digits encoder-decoder (tools/train_demo.py) and its input parsing.
#pragma once

#include <statiformer/statiformer.hpp>

#include "demo_weights.hpp"

namespace stf_demo {

using Model = stf::Transformer<kSrcLen, kTgtLen, kVocab, kVocab, kDModel, kNHeads, kDFf, kNLayers>;
static_assert(Model::arena_bytes + Model::state_bytes <= 24 * 1024, "demo RAM budget");
static_assert(weights::detail::same_hparams<Model::Params>(),
              "demo_weights.hpp's hyperparameters differ from Model's (io/hparams.hpp)");

/// Model's parameters bound at compile time (views into demo_weights.hpp's tensors, each size
/// checked by the compiler): constant, in flash. A model takes them by `model.params =
/// bound_model_params;`, with no name lookup (the firmware links no binding code); the model
/// object itself holds its decoding state, so it is not constant.
inline constexpr Model::Params bound_model_params = weights::bound_params<Model::Params>();

/// A source sequence of 1 to kSrcLen digits.
struct Input {
  int digits[kSrcLen];
  stf::index_t len;
};

/// Parses "3 1 4 1 5" (digits, separated by spaces or commas, or not at all); false on anything else,
/// on no digit, or on more than kSrcLen digits.
inline bool parse_digits(const char* text, Input& in) {
  in.len = 0;
  for (const char* p = text; *p; ++p) {
    if (*p == ' ' || *p == ',') continue;
    if (*p < '0' || *p > '9' || in.len == kSrcLen) return false;
    in.digits[in.len++] = *p - '0';
  }
  return in.len > 0;
}

}  // namespace stf_demo
