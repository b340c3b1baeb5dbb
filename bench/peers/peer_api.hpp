// Peer implementations of an encoder layer, behind an interface that includes neither Eigen nor
// statiformer. The Eigen peer is compiled in its own translation unit (eigen_peer.cpp) with the flags
// an Eigen user would pick (STF_BENCH_PEER_FLAGS, default -march=native), while the statiformer side
// of the benchmark is compiled like any statiformer user (bench_layers' flags).
#pragma once

#include <memory>
#include <string>

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

/// (SeqLen, MemLen, DModel, NHeads, DFf) of an nn.TransformerDecoderLayer stepped through a K/V
/// cache: at most SeqLen target positions, MemLen memory rows.
struct DecoderShape {
  int seq_len, mem_len, d_model, n_heads, d_ff;
};

/// The parameters of a post-norm nn.TransformerDecoderLayer, laid out as EncoderWeights: `layer`
/// holds self-attention (q/k/v/o), the feed-forward and norm1, norm2; cross-attention and norm3
/// come beside it. Not owned.
struct DecoderWeights {
  EncoderWeights layer;
  const float *cross_q_weight = nullptr, *cross_q_bias = nullptr;  // [D, D], [D]
  const float *cross_k_weight = nullptr, *cross_k_bias = nullptr;
  const float *cross_v_weight = nullptr, *cross_v_bias = nullptr;
  const float *cross_o_weight = nullptr, *cross_o_bias = nullptr;
  const float *norm3_weight = nullptr, *norm3_bias = nullptr;
};

/// One decoder layer of fixed shape, decoding one token at a time through its own K/V cache
/// (post-norm, ReLU, all memory rows valid).
class DecoderStepPeer {
 public:
  virtual ~DecoderStepPeer() = default;
  /// Projects the memory [MemLen, DModel] (row-major) into the cross-attention keys and values.
  virtual void prepare_memory(const float* memory) = 0;
  /// Row x [DModel], the target at position pos (< SeqLen; positions < pos already stepped), to
  /// row y, writing this position's self-attention key and value into the cache.
  virtual void step(const float* x, int pos, float* y) = 0;
};

/// The Eigen 3.4 step (eigen_step.hpp), single-threaded.
std::unique_ptr<DecoderStepPeer> make_eigen_decoder_step(const DecoderShape& shape, const DecoderWeights& weights);

/// How the oneDNN peer runs attention: batched matmuls over the heads (one primitive call for all
/// heads' scores, one for their values) or one 2-D matmul per head.
enum class DnnlAttention { batched, per_head };

/// The oneDNN 2.6 implementation (dnnl_peer.cpp), one thread (omp_set_num_threads(1)); where the
/// build found no oneDNN (STF_BENCH_HAVE_DNNL undefined) these are not defined. `info`, if given,
/// receives the implementations the primitives chose.
std::unique_ptr<EncoderPeer> make_dnnl_encoder(const EncoderShape& shape, const EncoderWeights& weights,
                                               DnnlAttention attention, std::string* info = nullptr);

/// "oneDNN 2.6.3 (hash), CPU runtime OpenMP, threads: 1, ISA: ..." — the library the peer runs on.
const char* dnnl_build_info();

}  // namespace stf_peers
