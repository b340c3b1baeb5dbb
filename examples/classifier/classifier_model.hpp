// The transformer classifier as a type, shared by the host example, the firmware and the tests:
// token embedding·√D + positional encoding → 2 post-norm encoder layers → per-token classes.
// Trained by tools/train_classifier.py (each token's class: how many times it occurs in the sequence,
// capped at 5, minus 1); its weights in three number formats are generated headers
// (classifier_weights.hpp, classifier_weights_w8a8.hpp, classifier_weights_w8a32.hpp).
#pragma once

#include <statiformer/statiformer.hpp>

namespace classifier_example {

inline constexpr stf::index_t kSeqLen = 8, kVocab = 20, kDModel = 16, kHeads = 2, kDFf = 32, kLayers = 2, kClasses = 5;

/// The model in a number format: Format applies to the encoder layers' linears (the embedding and
/// the classifier stay float; kernels/QUANTIZATION.md).
template <stf::NumberFormat Format>
using ModelIn = stf::Sequential<
    kSeqLen,                                                   //
    stf::Named<"src_embed", stf::Embedding<kVocab, kDModel>>,  //
    stf::PositionalEncoding<kSeqLen, kDModel>,                 //
    stf::Named<"encoder",
               stf::EncoderStack<stf::EncoderLayer<kSeqLen, kDModel, kHeads, kDFf, stf::LayerOptions{.format = Format}>,
                                 kLayers>>,
    stf::Named<"", stf::Classifier<kDModel, kClasses>>>;

using Model = ModelIn<stf::NumberFormat::f32>;
using ModelW8a8 = ModelIn<stf::NumberFormat::w8a8>;
using ModelW8a32 = ModelIn<stf::NumberFormat::w8a32>;

// Budgets a firmware engineer would pin:
static_assert(Model::weight_bytes <= 32 * 1024, "weights must fit the flash budget");
static_assert(Model::arena_bytes <= 4 * 1024, "activations must fit the RAM budget");
static_assert(ModelW8a8::weight_bytes < Model::weight_bytes / 2, "int8 linears: less than half the flash");

}  // namespace classifier_example
