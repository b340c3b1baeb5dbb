// The Eigen peer computes what stf::EncoderLayer computes: the same random weights bound to both
// (params.visit), the same input, full and padded valid lengths, at every benchmark shape.
// Passes when max|y_eigen - y_stf| <= 1e-4 · max|y_stf| for every case.
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../plan.hpp"
#include "common.hpp"

namespace {
using stf::index_t;

constexpr double kTolerance = 1e-4;

template <index_t S, index_t D, index_t H, index_t F>
bool check_shape() {
  using Layer = stf::EncoderLayer<S, D, H, F>;
  auto layer = std::make_unique<Layer>();
  const auto storage = stf_peers::random_params(layer->params);
  stf_peers::EncoderWeights w;
  stf_peers::PlainCopies plain;
  if (!stf_peers::peer_weights_of<Layer>(layer->params, w, plain)) {
    std::printf("FAIL (%zu,%zu,%zu,%zu): the peer's weights do not bind by name\n", S, D, H, F);
    return false;
  }
  auto peer = stf_peers::make_eigen_encoder({int(S), int(D), int(H), int(F)}, w);
  const auto x = stf_peers::random_input(S * D);
  std::vector<float> y_stf(S * D), y_eigen(S * D), scratch(Layer::scratch_floats);

  bool ok = true;
  for (const index_t valid : {S, S - S / 4, index_t{1}}) {
    layer->run(x.data(), y_stf.data(), valid, scratch.data());
    peer->forward(x.data(), y_eigen.data(), int(valid));
    double max_abs = 0, max_ref = 0;
    bool finite = true;
    for (index_t i = 0; i < S * D; ++i) {
      finite = finite && std::isfinite(y_eigen[i]) && std::isfinite(y_stf[i]);
      max_abs = std::fmax(max_abs, std::fabs(double(y_eigen[i]) - double(y_stf[i])));
      max_ref = std::fmax(max_ref, std::fabs(double(y_stf[i])));
    }
    const double rel = max_abs / max_ref;
    const bool pass = finite && max_ref > 0 && rel <= kTolerance;
    std::printf("%s (S,D,H,F)=(%zu,%zu,%zu,%zu) valid=%zu: max|diff| %.3g, max|y| %.3g, relative %.3g\n",
                pass ? "ok  " : "FAIL", S, D, H, F, valid, max_abs, max_ref, rel);
    ok = ok && pass;
  }
  return ok;
}
}  // namespace

int main() {
  std::printf("Eigen peer vs stf::EncoderLayer (post-norm, ReLU), tolerance %.0e relative to max|y|\n%s\n", kTolerance,
              stf_peers::eigen_build_info());
  namespace plan = stf_bench::plan;
  bool ok = true;
  plan::for_each<plan::kEncoderLayers>(
      [&]<plan::EncoderShape Sh>() { ok = check_shape<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff>() && ok; });
  return ok ? 0 : 1;
}
