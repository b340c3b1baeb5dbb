// What bench_peers and the peer test share: deterministic weights bound through params.visit, the
// same weights handed to a peer by name, the input, and the work counted per forward call.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "peer_api.hpp"

namespace stf_peers {

/// Fills every parameter of `params` with pseudo-random values in [-0.1, 0.1) and binds it; the
/// returned storage must outlive the parameters. The generator (a 32-bit LCG, state 12345, values
/// in visit order) is the one bench_layers uses and bench/peers/torch_bench.py reproduces.
template <class Params>
std::vector<float> random_params(Params& params) {
  stf::index_t total = 0;
  params.visit([&](const stf::Name&, stf::ParamRef r) { total += r.size(); }, {});
  std::vector<float> storage(total);
  std::uint32_t state = 12345;
  for (float& v : storage) {
    state = state * 1664525u + 1013904223u;
    v = (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.2f;
  }
  stf::index_t offset = 0;
  params.visit(
      [&](const stf::Name&, stf::ParamRef r) {
        *r.data = storage.data() + offset;
        offset += r.size();
      },
      {});
  return storage;
}

/// An input [n] in [-1, 1), the same as bench_layers'.
inline std::vector<float> random_input(stf::index_t n) {
  std::vector<float> x(n);
  for (stf::index_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 7919) % 101) / 50.0f - 1.0f;
  return x;
}

/// Hands the parameters bound to a stf::EncoderLayer to a peer, by their schema names (PyTorch's
/// state_dict names, with in_proj split into q/k/v). False if a name is unknown, missing or has
/// another element count.
template <class Layer>
bool peer_weights_of(typename Layer::Params& params, EncoderWeights& w) {
  constexpr stf::index_t D = Layer::d_model, F = Layer::d_ff;
  struct Slot {
    const char* name;
    const float* EncoderWeights::*member;
    stf::index_t size;
  };
  const Slot slots[] = {
      {"self_attn.q.weight", &EncoderWeights::q_weight, D * D},
      {"self_attn.q.bias", &EncoderWeights::q_bias, D},
      {"self_attn.k.weight", &EncoderWeights::k_weight, D * D},
      {"self_attn.k.bias", &EncoderWeights::k_bias, D},
      {"self_attn.v.weight", &EncoderWeights::v_weight, D * D},
      {"self_attn.v.bias", &EncoderWeights::v_bias, D},
      {"self_attn.o.weight", &EncoderWeights::o_weight, D * D},
      {"self_attn.o.bias", &EncoderWeights::o_bias, D},
      {"ff.linear1.weight", &EncoderWeights::linear1_weight, F * D},
      {"ff.linear1.bias", &EncoderWeights::linear1_bias, F},
      {"ff.linear2.weight", &EncoderWeights::linear2_weight, D * F},
      {"ff.linear2.bias", &EncoderWeights::linear2_bias, D},
      {"norm1.weight", &EncoderWeights::norm1_weight, D},
      {"norm1.bias", &EncoderWeights::norm1_bias, D},
      {"norm2.weight", &EncoderWeights::norm2_weight, D},
      {"norm2.bias", &EncoderWeights::norm2_bias, D},
  };
  bool ok = true;
  std::size_t bound = 0;
  params.visit(
      [&](const stf::Name& name, stf::ParamRef r) {
        for (const Slot& s : slots) {
          if (std::strcmp(s.name, name.c_str()) != 0) continue;
          ok = ok && r.size() == s.size && w.*s.member == nullptr;
          w.*s.member = *r.data;
          ++bound;
          return;
        }
        ok = false;  // a parameter the peer does not know
      },
      {});
  return ok && bound == sizeof(slots) / sizeof(slots[0]);
}

/// Floating-point operations of one encoder-layer forward over S tokens (all valid), counting a
/// multiply-add as 2 and only the matrix products:
///   Q, K, V, O projections  4 · 2·S·D·D
///   scores Q·Kᵀ (all heads) 2·S·S·D
///   weights · V             2·S·S·D
///   linear1, linear2        2 · 2·S·D·F
///   total = 8·S·D² + 4·S²·D + 4·S·D·F
/// Biases, softmax, ReLU, residuals and LayerNorms (O(S·D + H·S²)) are left out.
constexpr double encoder_flops(double S, double D, double F) { return 8 * S * D * D + 4 * S * S * D + 4 * S * D * F; }

/// Bytes an encoder-layer forward must touch at least once: every parameter (float32) read, the
/// input [S, D] read and the output [S, D] written. Intermediates are not counted.
constexpr double encoder_bytes(double param_count, double S, double D) { return 4 * (param_count + 2 * S * D); }

}  // namespace stf_peers
