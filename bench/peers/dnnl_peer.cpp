// The oneDNN peer: a post-norm transformer encoder layer composed from oneDNN 2.6 primitives
// (Debian libdnnl-dev), float32, one thread — what a performance-minded x86 user would build for
// nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0, activation=relu,
// batch_first=True) in eval mode, one sequence:
//
//   qkv     = x · [Wq Wk Wv] + [bq bk bv]                      one matmul, bias as the primitive's bias
//   scores  = (Q_h · K_hᵀ) / sqrt(hd) (+ key mask)   per head  matmul, the scale as output scale, the
//                                                              mask (0 / -inf) as a binary-add post-op
//   p       = softmax(scores) over the keys                    softmax primitive, all heads at once
//   ctx_h   = p_h · V_h                              per head  matmul, written into its columns of ctx
//   x1      = LayerNorm1(x + ctx · Wo + bo)                    matmul, bias + residual (binary add) post-op;
//                                                              layer normalization primitive
//   y       = LayerNorm2(x1 + relu(x1 · W1 + b1) · W2 + b2)    matmul with ReLU (eltwise post-op);
//                                                              matmul with residual (binary add)
//
// Every weight is reordered once, at construction, to the layout its matmul prefers
// (format_tag::any); every primitive and memory object is created at construction; forward() only
// points the input/output memories at the caller's buffers and executes. Attention runs either as
// batched matmuls (batch = heads, strided views into qkv) or as one 2-D matmul per head; both are
// kept (DnnlAttention) because which one is faster is a measurement (bench/peers/README.md).
// The Debian build threads with OpenMP: make_dnnl_encoder sets omp_set_num_threads(1) before any
// primitive is created.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "peer_api.hpp"

namespace stf_peers {
namespace {

using dnnl::memory;
using dims = memory::dims;
using tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

const char* cpu_isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

class DnnlEncoderLayer final : public EncoderPeer {
 public:
  static constexpr float kLayerNormEps = 1e-5f;

  DnnlEncoderLayer(const EncoderShape& s, const EncoderWeights& w, DnnlAttention attention)
      : s_(s), attention_(attention), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    const memory::dim S = s.seq_len, D = s.d_model, H = s.n_heads, F = s.d_ff, hd = D / H;

    // ---- activations: plain row-major buffers, owned here (x and y are the caller's)
    const memory::desc sd_md({S, D}, f32, tag::ab);
    x_ = memory(sd_md, engine_, DNNL_MEMORY_NONE);
    y_ = memory(sd_md, engine_, DNNL_MEMORY_NONE);
    const memory qkv = buffer({S, 3 * D}), ctx = buffer({S, D}), attn = buffer({S, D}), x1 = buffer({S, D}),
                 hidden = buffer({S, F}), ff = buffer({S, D}), scores = buffer({H, S, S});
    auto* qkv_data = static_cast<float*>(qkv.get_data_handle());
    auto* ctx_data = static_cast<float*>(ctx.get_data_handle());
    auto* scores_data = static_cast<float*>(scores.get_data_handle());

    // ---- QKV: one [S, D] · [D, 3D] product; Wq, Wk, Wv side by side
    std::vector<float> wqkv(idx(D * 3 * D)), bqkv(idx(3 * D));
    const float* wparts[3] = {w.q_weight, w.k_weight, w.v_weight};
    const float* bparts[3] = {w.q_bias, w.k_bias, w.v_bias};
    for (memory::dim p = 0; p < 3; ++p)
      for (memory::dim i = 0; i < D; ++i) {
        for (memory::dim o = 0; o < D; ++o) wqkv[idx(i * 3 * D + p * D + o)] = wparts[p][i * D + o];
        bqkv[idx(p * D + i)] = bparts[p][i];
      }
    const Exec qkv_step = dense(x_, wqkv.data(), bqkv.data(), dnnl::post_ops{}, memory(), qkv);

    // ---- attention: scores = Q_h·K_hᵀ/sqrt(hd) (+ mask), softmax, ctx_h = p_h·V_h
    // batched: [H, S, hd] views of qkv (head h's Q at column h·hd, K at D + h·hd, V at 2D + h·hd);
    // per head: the same as [S, hd] views, one product per head
    const bool batched = attention == DnnlAttention::batched;
    const memory::dim views = batched ? 1 : H;
    const dims lead = batched ? dims{H} : dims{};
    auto md = [&](dims shape, dims strides) {
      dims full_shape = lead, full_strides = batched ? dims{hd} : dims{};
      full_shape.insert(full_shape.end(), shape.begin(), shape.end());
      full_strides.insert(full_strides.end(), strides.begin(), strides.end());
      return memory::desc(full_shape, f32, full_strides);
    };
    const memory::desc q_md = md({S, hd}, {3 * D, 1}), kt_md = md({hd, S}, {1, 3 * D}),  // Kᵀ: K read transposed
        v_md = md({S, hd}, {3 * D, 1}), ctx_md = md({S, hd}, {D, 1});
    const memory::desc scores_md =
        batched ? memory::desc({H, S, S}, f32, dims{S * S, S, 1}) : memory::desc({S, S}, f32, dims{S, 1});
    const memory::desc mask_md = batched ? memory::desc({1, 1, S}, f32, tag::abc) : memory::desc({1, S}, f32, tag::ab);
    mask_ = memory(mask_md, engine_);
    dnnl::primitive_attr scaled, scaled_masked;
    scaled.set_output_scales(0, {1.0f / std::sqrt(static_cast<float>(hd))});
    scaled_masked.set_output_scales(0, {1.0f / std::sqrt(static_cast<float>(hd))});
    dnnl::post_ops mask_op;
    mask_op.append_binary(dnnl::algorithm::binary_add, mask_md);
    scaled_masked.set_post_ops(mask_op);
    const dnnl::matmul::primitive_desc scores_pd({q_md, kt_md, scores_md}, scaled, engine_);
    const dnnl::matmul scores_prim(scores_pd),
        scores_masked_prim(dnnl::matmul::primitive_desc({q_md, kt_md, scores_md}, scaled_masked, engine_));
    const dnnl::matmul::primitive_desc values_pd({scores_md, v_md, ctx_md}, engine_);
    const dnnl::matmul values_prim(values_pd);
    std::vector<Exec> score_steps, score_masked_steps, value_steps;
    for (memory::dim h = 0; h < views; ++h) {
      const memory q(q_md, engine_, qkv_data + h * hd), kt(kt_md, engine_, qkv_data + D + h * hd),
          v(v_md, engine_, qkv_data + 2 * D + h * hd), c(ctx_md, engine_, ctx_data + h * hd),
          p(scores_md, engine_, scores_data + h * S * S);
      score_steps.push_back({scores_prim, {{DNNL_ARG_SRC, q}, {DNNL_ARG_WEIGHTS, kt}, {DNNL_ARG_DST, p}}});
      score_masked_steps.push_back({scores_masked_prim,
                                    {{DNNL_ARG_SRC, q},
                                     {DNNL_ARG_WEIGHTS, kt},
                                     {DNNL_ARG_DST, p},
                                     {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mask_}}});
      value_steps.push_back({values_prim, {{DNNL_ARG_SRC, p}, {DNNL_ARG_WEIGHTS, v}, {DNNL_ARG_DST, c}}});
    }
    const dnnl::softmax_forward::primitive_desc softmax_pd({dnnl::prop_kind::forward_inference, scores.get_desc(), 2},
                                                           engine_);
    const Exec softmax_step{dnnl::softmax_forward(softmax_pd), {{DNNL_ARG_SRC, scores}, {DNNL_ARG_DST, scores}}};

    // ---- attn = ctx · Wo + bo + x (the residual as a binary-add post-op); x1 = LN1(attn)
    dnnl::post_ops residual;
    residual.append_binary(dnnl::algorithm::binary_add, sd_md);
    const Exec out_step = dense(ctx, w.o_weight, w.o_bias, residual, x_, attn);
    const Exec norm1_step = layer_norm(attn, w.norm1_weight, w.norm1_bias, x1);

    // ---- hidden = relu(x1 · W1 + b1); ff = hidden · W2 + b2 + x1; y = LN2(ff)
    dnnl::post_ops relu;
    relu.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    const Exec linear1_step = dense(x1, w.linear1_weight, w.linear1_bias, relu, memory(), hidden);
    const Exec linear2_step = dense(hidden, w.linear2_weight, w.linear2_bias, residual, x1, ff);
    const Exec norm2_step = layer_norm(ff, w.norm2_weight, w.norm2_bias, y_);

    // ---- the two plans: all keys valid, and with the key mask
    for (int masked = 0; masked < 2; ++masked) {
      std::vector<Exec>& plan = masked ? plan_masked_ : plan_;
      plan.push_back(qkv_step);
      for (const Exec& e : masked ? score_masked_steps : score_steps) plan.push_back(e);
      plan.push_back(softmax_step);
      for (const Exec& e : value_steps) plan.push_back(e);
      for (const Exec& e : {out_step, norm1_step, linear1_step, linear2_step, norm2_step}) plan.push_back(e);
    }
    info_ = std::string("matmul: ") + dense_info_ + "; attention " + (batched ? "batched over heads: " : "per head: ") +
            scores_pd.impl_info_str() + " / " + values_pd.impl_info_str() + "; softmax: " + softmax_pd.impl_info_str() +
            "; layer norm: " + norm_info_;
  }

  void forward(const float* x, float* y, int valid_len) override {
    x_.set_data_handle(const_cast<float*>(x));  // only ever read: x is a source, never a destination
    y_.set_data_handle(y);
    const bool masked = valid_len < s_.seq_len;
    if (masked) {
      auto* m = static_cast<float*>(mask_.get_data_handle());
      for (int j = 0; j < s_.seq_len; ++j) m[j] = j < valid_len ? 0.0f : -std::numeric_limits<float>::infinity();
    }
    for (const Exec& e : masked ? plan_masked_ : plan_) e.prim.execute(stream_, e.args);
    stream_.wait();
  }

  const std::string& info() const { return info_; }

 private:
  /// One primitive with all its arguments (memory objects are handles: x_ and y_ follow
  /// set_data_handle).
  struct Exec {
    dnnl::primitive prim;
    std::unordered_map<int, memory> args;
  };

  static std::size_t idx(memory::dim i) { return static_cast<std::size_t>(i); }

  /// A plain row-major f32 buffer owned by its memory object.
  memory buffer(const dims& shape) {
    return memory(memory::desc(shape, f32, shape.size() == 2 ? tag::ab : tag::abc), engine_);
  }

  /// dst [M, N] = src [M, K] · W [K, N] + b, then `ops` (a binary one reads `post_src`); W (plain
  /// row-major [K, N]) reordered once into the layout the primitive chose for format_tag::any.
  Exec dense(const memory& src, const float* w, const float* b, const dnnl::post_ops& ops, const memory& post_src,
             const memory& dst) {
    const memory::dim K = src.get_desc().dims()[1], N = dst.get_desc().dims()[1];
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    const memory::desc w_any({K, N}, f32, tag::any), b_md({1, N}, f32, tag::ab);
    const dnnl::matmul::primitive_desc pd({src.get_desc(), w_any, b_md, dst.get_desc()}, attr, engine_);
    dense_info_ = pd.impl_info_str();
    memory user_w({{K, N}, f32, tag::ab}, engine_, const_cast<float*>(w));
    memory packed(pd.weights_desc(), engine_), bias(b_md, engine_);
    dnnl::reorder(user_w, packed).execute(stream_, user_w, packed);
    stream_.wait();
    std::copy(b, b + N, static_cast<float*>(bias.get_data_handle()));
    Exec e{dnnl::matmul(pd),
           {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}}};
    if (post_src) e.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = post_src;
    return e;
  }

  /// dst = LayerNorm(src) over each row, with gain and bias (copied), eps 1e-5.
  Exec layer_norm(const memory& src, const float* gain, const float* bias, const memory& dst) {
    const dnnl::layer_normalization_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, src.get_desc(), kLayerNormEps,
         dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift},
        engine_);
    norm_info_ = pd.impl_info_str();
    const memory::dim D = src.get_desc().dims()[1];
    memory g({{D}, f32, tag::a}, engine_), sh({{D}, f32, tag::a}, engine_);
    std::copy(gain, gain + D, static_cast<float*>(g.get_data_handle()));
    std::copy(bias, bias + D, static_cast<float*>(sh.get_data_handle()));
    return {dnnl::layer_normalization_forward(pd),
            {{DNNL_ARG_SRC, src}, {DNNL_ARG_SCALE, g}, {DNNL_ARG_SHIFT, sh}, {DNNL_ARG_DST, dst}}};
  }

  EncoderShape s_;
  DnnlAttention attention_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  memory x_, y_, mask_;
  std::vector<Exec> plan_, plan_masked_;
  std::string dense_info_, norm_info_, info_;
};

}  // namespace
}  // namespace stf_peers

namespace stf_peers {

std::unique_ptr<EncoderPeer> make_dnnl_encoder(const EncoderShape& shape, const EncoderWeights& weights,
                                               DnnlAttention attention, std::string* info) {
  omp_set_num_threads(1);  // before any primitive is created: they size their work by it
  auto layer = std::make_unique<DnnlEncoderLayer>(shape, weights, attention);
  if (info) *info = layer->info();
  return layer;
}

const char* dnnl_build_info() {
  static const std::string text = [] {
    omp_set_num_threads(1);
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           " (" + v->hash + "), CPU runtime " + (v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other") +
           ", threads: " + std::to_string(omp_get_max_threads()) +
           " (omp_set_num_threads(1)), ISA: " + cpu_isa_name(dnnl::get_effective_cpu_isa());
  }();
  return text.c_str();
}

}  // namespace stf_peers
