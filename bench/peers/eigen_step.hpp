// One incremental step of a post-norm transformer decoder layer in plain Eigen 3.4, float32,
// single-threaded: what a competent Eigen user writes for generation with a K/V cache, for the
// weights of nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout=0, activation=relu,
// batch_first=True) in eval mode. One new row x at position pos:
//
//   x1 = LayerNorm1(x + SelfAttn(x over the cached positions 0..pos))
//   x2 = LayerNorm2(x1 + CrossAttn(x1 over the M memory rows))
//   y  = LayerNorm3(x2 + linear2(relu(linear1(x2))))
//
// Weights are mapped in place as plain row-major [in, out] matrices (y = x W + b, one GEMV per
// projection); the self-attention K/V cache [SeqLen, DModel] and the memory's projected K/V [MemLen,
// DModel] are allocated once at construction, the memory's projected once per memory
// (prepare_memory); every product is written with noalias().
#pragma once

#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE
#endif
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "peer_api.hpp"

namespace stf_peers {

class EigenDecoderStep final : public DecoderStepPeer {
 public:
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ConstMatrixMap = Eigen::Map<const Matrix>;
  using ConstRowMap = Eigen::Map<const Eigen::RowVectorXf>;
  using RowMap = Eigen::Map<Eigen::RowVectorXf>;
  static constexpr float kLayerNormEps = 1e-5f;

  EigenDecoderStep(const DecoderShape& s, const DecoderWeights& w)
      : s_(s),
        head_dim_(s.d_model / s.n_heads),
        scale_(1.0f / std::sqrt(static_cast<float>(s.d_model / s.n_heads))),
        wq_(w.layer.q_weight, s.d_model, s.d_model),
        wk_(w.layer.k_weight, s.d_model, s.d_model),
        wv_(w.layer.v_weight, s.d_model, s.d_model),
        wo_(w.layer.o_weight, s.d_model, s.d_model),
        cwq_(w.cross_q_weight, s.d_model, s.d_model),
        cwk_(w.cross_k_weight, s.d_model, s.d_model),
        cwv_(w.cross_v_weight, s.d_model, s.d_model),
        cwo_(w.cross_o_weight, s.d_model, s.d_model),
        w1_(w.layer.linear1_weight, s.d_model, s.d_ff),
        w2_(w.layer.linear2_weight, s.d_ff, s.d_model),
        bq_(w.layer.q_bias, s.d_model),
        bk_(w.layer.k_bias, s.d_model),
        bv_(w.layer.v_bias, s.d_model),
        bo_(w.layer.o_bias, s.d_model),
        cbq_(w.cross_q_bias, s.d_model),
        cbk_(w.cross_k_bias, s.d_model),
        cbv_(w.cross_v_bias, s.d_model),
        cbo_(w.cross_o_bias, s.d_model),
        b1_(w.layer.linear1_bias, s.d_ff),
        b2_(w.layer.linear2_bias, s.d_model),
        g_norm1_(w.layer.norm1_weight, s.d_model),
        b_norm1_(w.layer.norm1_bias, s.d_model),
        g_norm2_(w.layer.norm2_weight, s.d_model),
        b_norm2_(w.layer.norm2_bias, s.d_model),
        g_norm3_(w.norm3_weight, s.d_model),
        b_norm3_(w.norm3_bias, s.d_model),
        k_cache_(s.seq_len, s.d_model),
        v_cache_(s.seq_len, s.d_model),
        mem_k_(s.mem_len, s.d_model),
        mem_v_(s.mem_len, s.d_model),
        q_(s.d_model),
        ctx_(s.d_model),
        out_(s.d_model),
        x1_(s.d_model),
        hidden_(s.d_ff),
        scores_(std::max(s.seq_len, s.mem_len)) {}

  void prepare_memory(const float* memory) override {
    const ConstMatrixMap m(memory, s_.mem_len, s_.d_model);
    mem_k_.noalias() = m * cwk_;
    mem_k_.rowwise() += cbk_;
    mem_v_.noalias() = m * cwv_;
    mem_v_.rowwise() += cbv_;
  }

  void step(const float* x, int pos, float* y) override {
    const ConstRowMap X(x, s_.d_model);
    const Eigen::Index n = pos + 1;  // cached positions the new row attends over, itself included

    // ---- self-attention over the cache: the new key and value written in place at pos
    q_.noalias() = X * wq_;
    q_ += bq_;
    k_cache_.row(pos).noalias() = X * wk_;
    k_cache_.row(pos) += bk_;
    v_cache_.row(pos).noalias() = X * wv_;
    v_cache_.row(pos) += bv_;
    attend(k_cache_.topRows(n), v_cache_.topRows(n));
    out_.noalias() = ctx_ * wo_;
    out_ += bo_;
    x1_ = X + out_;
    layer_norm(x1_, g_norm1_, b_norm1_);

    // ---- cross-attention over the memory's keys and values
    q_.noalias() = x1_ * cwq_;
    q_ += cbq_;
    attend(mem_k_, mem_v_);
    out_.noalias() = ctx_ * cwo_;
    out_ += cbo_;
    x1_ += out_;
    layer_norm(x1_, g_norm2_, b_norm2_);

    // ---- feed-forward
    hidden_.noalias() = x1_ * w1_;
    hidden_ += b1_;
    hidden_ = hidden_.cwiseMax(0.0f);
    out_.noalias() = hidden_ * w2_;
    out_ += b2_;
    out_ += x1_;
    layer_norm(out_, g_norm3_, b_norm3_);
    RowMap(y, s_.d_model) = out_;
  }

 private:
  /// ctx_ = per head softmax(q_h K_hᵀ / √hd) V_h over the rows of keys/values.
  template <class K, class V>
  void attend(const K& keys, const V& values) {
    const Eigen::Index hd = head_dim_, n = keys.rows();
    auto p = scores_.head(n);
    for (Eigen::Index h = 0; h < s_.n_heads; ++h) {
      p.noalias() = q_.segment(h * hd, hd) * keys.middleCols(h * hd, hd).transpose();
      p *= scale_;
      p.array() = (p.array() - p.maxCoeff()).exp();
      p /= p.sum();
      ctx_.segment(h * hd, hd).noalias() = p * values.middleCols(h * hd, hd);
    }
  }

  /// nn.LayerNorm over the row in place: biased variance, eps inside the square root.
  static void layer_norm(Eigen::RowVectorXf& z, const ConstRowMap& gain, const ConstRowMap& bias) {
    z.array() -= z.mean();
    const float inv = 1.0f / std::sqrt(z.squaredNorm() / static_cast<float>(z.size()) + kLayerNormEps);
    z = (z.array() * inv * gain.array() + bias.array()).matrix();
  }

  DecoderShape s_;
  Eigen::Index head_dim_;
  float scale_;
  ConstMatrixMap wq_, wk_, wv_, wo_, cwq_, cwk_, cwv_, cwo_, w1_, w2_;
  ConstRowMap bq_, bk_, bv_, bo_, cbq_, cbk_, cbv_, cbo_, b1_, b2_;
  ConstRowMap g_norm1_, b_norm1_, g_norm2_, b_norm2_, g_norm3_, b_norm3_;
  Matrix k_cache_, v_cache_, mem_k_, mem_v_;
  Eigen::RowVectorXf q_, ctx_, out_, x1_, hidden_, scores_;
};

}  // namespace stf_peers
