// What bench_peers and the peer test share: deterministic weights bound through params.visit, the
// same weights handed to a peer by name, the input, and the work counted per forward call.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../bench_common.hpp"
#include "peer_api.hpp"

namespace stf_peers {

using stf_bench::AlignedFloats;
using stf_bench::random_input;
using stf_bench::random_params;

/// Plain row-major copies of the weights statiformer stores in column panels (peers read plain
/// matrices).
using PlainCopies = std::vector<std::vector<float>>;

/// Where a peer wants one parameter: its schema name, the peer's pointer, its element count.
struct PeerSlot {
  const char* name;
  const float** target;
  stf::index_t size;
};

/// Hands every parameter `params.visit` names to the peer's pointer of the same name in `slots`;
/// matrices stored in column panels are handed over as plain row-major [in, out] copies kept in
/// `copies`. False if a name is unknown, missing, bound twice or has another element count.
template <class Params, std::size_t N>
bool bind_peer_slots(Params& params, const std::array<PeerSlot, N>& slots, PlainCopies& copies) {
  bool ok = true;
  std::size_t bound = 0;
  params.visit(
      [&](const stf::Name& name, stf::ParamRef r) {
        for (const PeerSlot& s : slots) {
          if (std::strcmp(s.name, name.c_str()) != 0) continue;
          ok = ok && r.size() == s.size && *s.target == nullptr;
          *s.target = *r.data;
          if (r.transposed && r.panel) {  // stored [cols, rows] in column panels
            std::vector<float>& plain = copies.emplace_back(r.size());
            for (stf::index_t i = 0; i < r.cols; ++i)
              for (stf::index_t o = 0; o < r.rows; ++o)
                plain[i * r.rows + o] = (*r.data)[stf::stored_index(r.cols, r.rows, r.panel, i, o)];
            *s.target = plain.data();
          }
          ++bound;
          return;
        }
        ok = false;  // a parameter the peer does not know
      },
      {});
  return ok && bound == N;
}

/// The slots of an encoder layer's parameters by their schema names (PyTorch's state_dict names,
/// with in_proj split into q/k/v): self-attention, feed-forward, two norms.
inline std::array<PeerSlot, 16> encoder_slots(EncoderWeights& w, stf::index_t D, stf::index_t F) {
  return {{
      {"self_attn.q.weight", &w.q_weight, D * D},
      {"self_attn.q.bias", &w.q_bias, D},
      {"self_attn.k.weight", &w.k_weight, D * D},
      {"self_attn.k.bias", &w.k_bias, D},
      {"self_attn.v.weight", &w.v_weight, D * D},
      {"self_attn.v.bias", &w.v_bias, D},
      {"self_attn.o.weight", &w.o_weight, D * D},
      {"self_attn.o.bias", &w.o_bias, D},
      {"ff.linear1.weight", &w.linear1_weight, F * D},
      {"ff.linear1.bias", &w.linear1_bias, F},
      {"ff.linear2.weight", &w.linear2_weight, D * F},
      {"ff.linear2.bias", &w.linear2_bias, D},
      {"norm1.weight", &w.norm1_weight, D},
      {"norm1.bias", &w.norm1_bias, D},
      {"norm2.weight", &w.norm2_weight, D},
      {"norm2.bias", &w.norm2_bias, D},
  }};
}

/// Hands the parameters bound to a stf::EncoderLayer to a peer, by their schema names; matrices
/// stored in column panels are handed over as plain row-major copies kept in `copies`. False if a
/// name is unknown, missing or has another element count.
template <class Layer>
bool peer_weights_of(typename Layer::Params& params, EncoderWeights& w, PlainCopies& copies) {
  return bind_peer_slots(params, encoder_slots(w, Layer::d_model, Layer::d_ff), copies);
}

/// The same for a stf::DecoderLayer: the encoder layer's slots, cross-attention and a third norm.
template <class Layer>
bool decoder_peer_weights_of(typename Layer::Params& params, DecoderWeights& dw, PlainCopies& copies) {
  constexpr stf::index_t D = Layer::d_model;
  const std::array<PeerSlot, 16> layer = encoder_slots(dw.layer, D, Layer::d_ff);
  const PeerSlot cross[] = {
      {"cross_attn.q.weight", &dw.cross_q_weight, D * D},
      {"cross_attn.q.bias", &dw.cross_q_bias, D},
      {"cross_attn.k.weight", &dw.cross_k_weight, D * D},
      {"cross_attn.k.bias", &dw.cross_k_bias, D},
      {"cross_attn.v.weight", &dw.cross_v_weight, D * D},
      {"cross_attn.v.bias", &dw.cross_v_bias, D},
      {"cross_attn.o.weight", &dw.cross_o_weight, D * D},
      {"cross_attn.o.bias", &dw.cross_o_bias, D},
      {"norm3.weight", &dw.norm3_weight, D},
      {"norm3.bias", &dw.norm3_bias, D},
  };
  std::array<PeerSlot, 26> slots{};
  std::copy(layer.begin(), layer.end(), slots.begin());
  std::copy(std::begin(cross), std::end(cross), slots.begin() + layer.size());
  return bind_peer_slots(params, slots, copies);
}

/// The oneDNN peer's tolerance against stf::EncoderLayer, relative to max|y| (test_dnnl_peer and
/// the check before EncoderLayer/onednn is timed).
constexpr double kDnnlTolerance = 1e-5;

/// How far a peer's output is from stf::EncoderLayer's on the same input and valid length.
struct PeerDiff {
  double max_abs = 0, max_ref = 0;  // max|y_peer - y_stf|, max|y_stf|
  bool finite = true;               // no NaN or infinity on either side
  double relative() const { return max_abs / max_ref; }
  bool within(double tolerance) const { return finite && max_ref > 0 && relative() <= tolerance; }
};

/// Runs `layer` (its weights bound) and `peer` on the benchmark input times `input_scale` with
/// `valid` valid tokens and compares their outputs element by element. With the benchmark weights
/// (in [-0.1, 0.1)) and input (in [-1, 1)) the attention scores are small and the softmax nearly
/// flat, so that errors in Q or K barely reach the output; an input scaled by 8 makes the scores 64×
/// larger, the softmax peaked, and such errors visible.
template <class Layer>
PeerDiff peer_diff(const Layer& layer, EncoderPeer& peer, stf::index_t valid, float input_scale = 1.0f) {
  constexpr stf::index_t S = Layer::seq_len, D = Layer::d_model;
  auto x = random_input(S * D);
  for (float& v : x) v *= input_scale;
  std::vector<float> y_stf(S * D), y_peer(S * D), scratch(Layer::scratch_floats);
  layer.run(x.data(), y_stf.data(), valid, scratch.data());
  peer.forward(x.data(), y_peer.data(), static_cast<int>(valid));
  PeerDiff d;
  for (stf::index_t i = 0; i < S * D; ++i) {
    d.finite = d.finite && std::isfinite(y_peer[i]) && std::isfinite(y_stf[i]);
    d.max_abs = std::fmax(d.max_abs, std::fabs(double(y_peer[i]) - double(y_stf[i])));
    d.max_ref = std::fmax(d.max_ref, std::fabs(double(y_stf[i])));
  }
  return d;
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

/// Floating-point operations of one decoder-layer step at position pos (pos + 1 cached target
/// positions, M memory rows whose keys and values are already in the cache), matrix products only:
///   self-attention Q, K, V, O of the new row  4 · 2·D²
///   its scores and values                     2 · 2·(pos + 1)·D
///   cross-attention Q, O                      2 · 2·D²
///   its scores and values                     2 · 2·M·D
///   linear1, linear2                          2 · 2·D·F
///   total = 12·D² + 4·(pos + 1)·D + 4·M·D + 4·D·F
constexpr double decoder_step_flops(double pos, double M, double D, double F) {
  return 12 * D * D + 4 * (pos + 1) * D + 4 * M * D + 4 * D * F;
}

/// Bytes an encoder-layer forward must touch at least once: every parameter (float32) read, the
/// input [S, D] read and the output [S, D] written. Intermediates are not counted.
constexpr double encoder_bytes(double param_count, double S, double D) { return 4 * (param_count + 2 * S * D); }

}  // namespace stf_peers
