// The seeds' transformer classifier as a type, shared by the host example, the firmware and the
// tests: token embedding·√D + positional encoding → 2 post-norm encoder layers → per-token classes.
#pragma once

#include <statiformer/statiformer.hpp>

namespace classifier_example {

inline constexpr stf::index_t kSeqLen = 8, kVocab = 20, kDModel = 16, kHeads = 2, kDFf = 32, kLayers = 2, kClasses = 5;

using Model = stf::Sequential<
    kSeqLen,                                                   //
    stf::Named<"src_embed", stf::Embedding<kVocab, kDModel>>,  //
    stf::PositionalEncoding<kSeqLen, kDModel>,                 //
    stf::Named<"encoder", stf::EncoderStack<stf::EncoderLayer<kSeqLen, kDModel, kHeads, kDFf>, kLayers>>,
    stf::Named<"", stf::Classifier<kDModel, kClasses>>>;

// Budgets a firmware engineer would pin:
static_assert(Model::weight_bytes <= 32 * 1024, "weights must fit the flash budget");
static_assert(Model::arena_bytes <= 4 * 1024, "activations must fit the RAM budget");

}  // namespace classifier_example
