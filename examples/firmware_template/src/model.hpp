// The model: its C++ type is the contract with the weights. Replace it with yours.
//
// This one is nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=8, nhead=2,
// dim_feedforward=100), num_layers=2, norm=nn.LayerNorm(8)), post-norm, over 5 tokens, written as
// a static graph so that each layer can be timed. Its parameter names (layers.0.self_attn.q.weight,
// ..., norm.bias) are the ones the exporter writes for it:
//   stf_schema enc_stack > model.schema.json     (or stf::write_schema_json(model, stdout) on a host)
//   /usr/bin/python3 tools/export.py encoder.pt model.schema.json --map torch --safetensors model.safetensors
// model/model.safetensors is that export (the project's round-trip fixture enc_stack).
#pragma once

#include <statiformer/statiformer.hpp>

namespace app {

inline constexpr stf::index_t kSeqLen = 5, kDModel = 8, kHeads = 2, kDFf = 100;
using Layer = stf::EncoderLayer<kSeqLen, kDModel, kHeads, kDFf, stf::LayerOptions{}>;
using Model = stf::Sequential<kSeqLen, stf::Named<"layers.0", Layer>, stf::Named<"layers.1", Layer>,
                              stf::Named<"norm", stf::LayerNorm<kDModel>>>;

// The budgets, checked by the compiler: change them to your part's flash and RAM.
static_assert(Model::weight_bytes <= 64 * 1024, "the weights must fit the flash budget");
static_assert(Model::arena_bytes <= 8 * 1024, "the activations must fit the RAM budget");

}  // namespace app
