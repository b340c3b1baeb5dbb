// A post-norm transformer encoder layer in plain Eigen 3.4, float32, single-threaded: the baseline a
// competent Eigen user would write for nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward,
// dropout=0, activation=relu, batch_first=True) in eval mode, one sequence:
//
//   x1 = LayerNorm1(x + MHA(x, x, x, key_padding))
//   y  = LayerNorm2(x1 + linear2(relu(linear1(x1))))
//
// Weights are mapped in place as plain row-major [in, out] matrices (the transpose of PyTorch's; y = x W + b
// as one GEMM per projection), activations live in buffers allocated once at construction, and every product is written
// with noalias(). Keys at positions >= valid_len are dropped from the score and value products (the same result as
// masking them with -inf).
#pragma once

#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE
#endif
#include <Eigen/Dense>
#include <cmath>

#include "peer_api.hpp"

namespace stf_peers {

class EigenEncoderLayer final : public EncoderPeer {
 public:
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ConstMatrixMap = Eigen::Map<const Matrix>;
  using MatrixMap = Eigen::Map<Matrix>;
  using ConstRowMap = Eigen::Map<const Eigen::RowVectorXf>;
  static constexpr float kLayerNormEps = 1e-5f;

  EigenEncoderLayer(const EncoderShape& s, const EncoderWeights& w)
      : s_(s),
        head_dim_(s.d_model / s.n_heads),
        wq_(w.q_weight, s.d_model, s.d_model),
        wk_(w.k_weight, s.d_model, s.d_model),
        wv_(w.v_weight, s.d_model, s.d_model),
        wo_(w.o_weight, s.d_model, s.d_model),
        w1_(w.linear1_weight, s.d_model, s.d_ff),
        w2_(w.linear2_weight, s.d_ff, s.d_model),
        bq_(w.q_bias, s.d_model),
        bk_(w.k_bias, s.d_model),
        bv_(w.v_bias, s.d_model),
        bo_(w.o_bias, s.d_model),
        b1_(w.linear1_bias, s.d_ff),
        b2_(w.linear2_bias, s.d_model),
        g_norm1_(w.norm1_weight, s.d_model),
        b_norm1_(w.norm1_bias, s.d_model),
        g_norm2_(w.norm2_weight, s.d_model),
        b_norm2_(w.norm2_bias, s.d_model),
        q_(s.seq_len, s.d_model),
        k_(s.seq_len, s.d_model),
        v_(s.seq_len, s.d_model),
        ctx_(s.seq_len, s.d_model),
        x1_(s.seq_len, s.d_model),
        out_(s.seq_len, s.d_model),
        hidden_(s.seq_len, s.d_ff),
        scores_(s.seq_len, s.seq_len),
        row_stat_(s.seq_len) {}

  void forward(const float* x, float* y, int valid_len) override {
    const Eigen::Index S = s_.seq_len, D = s_.d_model, hd = head_dim_, valid = valid_len;
    const ConstMatrixMap X(x, S, D);

    // ---- multi-head self-attention
    q_.noalias() = X * wq_;
    q_.rowwise() += bq_;
    q_ *= 1.0f / std::sqrt(static_cast<float>(hd));  // scale q, as PyTorch does
    k_.noalias() = X * wk_;
    k_.rowwise() += bk_;
    v_.noalias() = X * wv_;
    v_.rowwise() += bv_;
    for (Eigen::Index h = 0; h < s_.n_heads; ++h) {
      auto p = scores_.leftCols(valid);
      p.noalias() = q_.middleCols(h * hd, hd) * k_.middleCols(h * hd, hd).topRows(valid).transpose();
      row_stat_ = p.rowwise().maxCoeff();  // softmax over the valid keys of each row
      p.colwise() -= row_stat_;
      p.array() = p.array().exp();
      row_stat_ = p.rowwise().sum();
      p.array().colwise() /= row_stat_.array();
      ctx_.middleCols(h * hd, hd).noalias() = p * v_.middleCols(h * hd, hd).topRows(valid);
    }
    out_.noalias() = ctx_ * wo_;
    out_.rowwise() += bo_;

    // ---- x1 = LN1(x + attn)
    x1_ = X + out_;
    layer_norm(x1_, g_norm1_, b_norm1_);

    // ---- y = LN2(x1 + FF(x1))
    hidden_.noalias() = x1_ * w1_;
    hidden_.rowwise() += b1_;
    hidden_ = hidden_.cwiseMax(0.0f);
    out_.noalias() = hidden_ * w2_;
    out_.rowwise() += b2_;
    out_ += x1_;
    layer_norm(out_, g_norm2_, b_norm2_);
    MatrixMap(y, S, D) = out_;
  }

 private:
  /// nn.LayerNorm over each row in place: biased variance, eps inside the square root.
  void layer_norm(Matrix& z, const ConstRowMap& gain, const ConstRowMap& bias) {
    const auto n = static_cast<float>(z.cols());
    row_stat_ = z.rowwise().mean();
    z.colwise() -= row_stat_;
    row_stat_ = (z.rowwise().squaredNorm() / n).array() + kLayerNormEps;
    row_stat_ = row_stat_.array().sqrt().inverse();
    z.array().colwise() *= row_stat_.array();
    z.array().rowwise() *= gain.array();
    z.rowwise() += bias;
  }

  EncoderShape s_;
  Eigen::Index head_dim_;
  ConstMatrixMap wq_, wk_, wv_, wo_, w1_, w2_;
  ConstRowMap bq_, bk_, bv_, bo_, b1_, b2_, g_norm1_, b_norm1_, g_norm2_, b_norm2_;
  Matrix q_, k_, v_, ctx_, x1_, out_, hidden_, scores_;
  Eigen::VectorXf row_stat_;
};

}  // namespace stf_peers
