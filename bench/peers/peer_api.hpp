// Peer implementations of an encoder layer, behind an interface that includes neither Eigen nor
// statiformer. The Eigen peer is compiled in its own translation unit (eigen_peer.cpp) with the flags
// an Eigen user would pick (STF_BENCH_PEER_FLAGS, default -march=native), while the statiformer side
// of the benchmark is compiled like any statiformer user (bench_layers' flags).
#pragma once

#include <memory>

namespace stf_peers {

/// (SeqLen, DModel, NHeads, DFf) of an nn.TransformerEncoderLayer.
struct EncoderShape {
  int seq_len, d_model, n_heads, d_ff;
};

/// The parameters of a post-norm nn.TransformerEncoderLayer as statiformer stores them: row-major
/// linear weights [in, out] (the transpose of PyTorch's [out, in]), separate q/k/v. Not owned.
struct EncoderWeights {
  const float *q_weight = nullptr, *q_bias = nullptr;  // [D, D], [D]
  const float *k_weight = nullptr, *k_bias = nullptr;
  const float *v_weight = nullptr, *v_bias = nullptr;
  const float *o_weight = nullptr, *o_bias = nullptr;              // out_proj
  const float *linear1_weight = nullptr, *linear1_bias = nullptr;  // [F, D], [F]
  const float *linear2_weight = nullptr, *linear2_bias = nullptr;  // [D, F], [D]
  const float *norm1_weight = nullptr, *norm1_bias = nullptr;      // [D]
  const float *norm2_weight = nullptr, *norm2_bias = nullptr;
};

/// One encoder layer of fixed shape, forward over x [SeqLen, DModel] (row-major) into y; keys at
/// positions >= valid_len are masked. y may alias x.
class EncoderPeer {
 public:
  virtual ~EncoderPeer() = default;
  virtual void forward(const float* x, float* y, int valid_len) = 0;
};

/// The Eigen 3.4 implementation (eigen_encoder.hpp), single-threaded.
std::unique_ptr<EncoderPeer> make_eigen_encoder(const EncoderShape& shape, const EncoderWeights& weights);

/// "Eigen 3.4.0; SIMD: ...; flags: ..." — how the Eigen peer was built.
const char* eigen_build_info();

}  // namespace stf_peers
