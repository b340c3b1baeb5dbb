// The oneDNN peer computes what stf::EncoderLayer computes: the same random weights bound to both
// (params.visit), the same input, full and padded valid lengths, at every benchmark shape, with
// attention batched over the heads and per head. Passes when max|y_onednn - y_stf| <= 1e-5 ·
// max|y_stf| for every case, and when a peer given one weight off by 0.01 fails that check (the
// check can see a one-weight error).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../plan.hpp"
#include "common.hpp"

namespace {
using stf::index_t;
using stf_peers::DnnlAttention;

constexpr double kTolerance = stf_peers::kDnnlTolerance;

template <index_t S, index_t D, index_t H, index_t F>
bool check_shape(bool with_negative_control = false) {
  using Layer = stf::EncoderLayer<S, D, H, F>;
  auto layer = std::make_unique<Layer>();
  const auto storage = stf_peers::random_params(layer->params);
  stf_peers::EncoderWeights w;
  stf_peers::PlainCopies plain;
  if (!stf_peers::peer_weights_of<Layer>(layer->params, w, plain)) {
    std::printf("FAIL (%zu,%zu,%zu,%zu): the peer's weights do not bind by name\n", S, D, H, F);
    return false;
  }
  bool ok = true;
  for (const DnnlAttention mode : {DnnlAttention::batched, DnnlAttention::per_head}) {
    const char* mode_name = mode == DnnlAttention::batched ? "batched" : "per head";
    std::string info;
    auto peer = stf_peers::make_dnnl_encoder({int(S), int(D), int(H), int(F)}, w, mode, &info);
    std::printf("(%zu,%zu,%zu,%zu) %s: %s\n", S, D, H, F, mode_name, info.c_str());
    for (const float input_scale : {1.0f, 8.0f})  // 8: peaked attention (see peer_diff)
      for (const index_t valid : {S, S - S / 4, index_t{1}}) {
        const stf_peers::PeerDiff d = stf_peers::peer_diff(*layer, *peer, valid, input_scale);
        const bool pass = d.within(kTolerance);
        std::printf("  %s input x%g valid=%zu: max|diff| %.3g, max|y| %.3g, relative %.3g\n", pass ? "ok  " : "FAIL",
                    double(input_scale), valid, d.max_abs, d.max_ref, d.relative());
        ok = ok && pass;
      }
  }
  if (with_negative_control) {
    // one weight of linear2 off by 0.01 (weights are in [-0.1, 0.1)): the check must see it
    std::vector<float> w2(F * D);
    std::copy(w.linear2_weight, w.linear2_weight + F * D, w2.begin());
    w2[5] += 0.01f;
    stf_peers::EncoderWeights off = w;
    off.linear2_weight = w2.data();
    auto peer = stf_peers::make_dnnl_encoder({int(S), int(D), int(H), int(F)}, off, DnnlAttention::batched);
    const stf_peers::PeerDiff d = stf_peers::peer_diff(*layer, *peer, S);
    const bool caught = !d.within(kTolerance);
    std::printf("%s negative control (%zu,%zu,%zu,%zu), linear2.weight[5] + 0.01: relative %.3g\n",
                caught ? "ok  " : "FAIL", S, D, H, F, d.relative());
    ok = ok && caught;
  }
  return ok;
}
}  // namespace

int main() {
  std::printf("oneDNN peer vs stf::EncoderLayer (post-norm, ReLU), tolerance %.0e relative to max|y|\n%s\n", kTolerance,
              stf_peers::dnnl_build_info());
  namespace plan = stf_bench::plan;
  bool ok = true;
  bool first = true;  // (the negative control once, at the first shape)
  plan::for_each<plan::kEncoderLayers>([&]<plan::EncoderShape Sh>() {
    ok = check_shape<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff>(first) && ok;
    first = false;
  });
  return ok ? 0 : 1;
}
