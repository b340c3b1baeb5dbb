// The Eigen decoder step computes what stf::DecoderLayer::step computes: the same random weights
// bound to both (params.visit), the same memory and target rows, every position of the cache in
// turn, at both DecoderStep benchmark shapes, with the benchmark's input and with it scaled by 8
// (peaked attention: errors in Q or K then reach the output, see stf_peers::peer_diff).
// Passes when max|y_eigen - y_stf| <= 1e-5 · max|y_stf| at every position.
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../plan.hpp"
#include "common.hpp"

namespace {
using stf::index_t;

constexpr double kTolerance = 1e-5;

template <index_t T, index_t M, index_t D, index_t H, index_t F>
bool check_shape() {
  using Layer = stf::DecoderLayer<T, M, D, H, F>;
  auto layer = std::make_unique<Layer>();
  const auto storage = stf_peers::random_params(layer->params);
  stf_peers::DecoderWeights w;
  stf_peers::PlainCopies plain;
  if (!stf_peers::decoder_peer_weights_of<Layer>(layer->params, w, plain)) {
    std::printf("FAIL (%zu,%zu,%zu,%zu,%zu): the peer's weights do not bind by name\n", T, M, D, H, F);
    return false;
  }
  auto peer = stf_peers::make_eigen_decoder_step({int(T), int(M), int(D), int(H), int(F)}, w);
  auto cache = std::make_unique<typename Layer::Cache>();
  std::vector<float> y_stf(D), y_eigen(D), scratch(Layer::step_scratch_floats);

  bool ok = true;
  for (const float input_scale : {1.0f, 8.0f}) {
    auto rows = stf_peers::random_input((T + M) * D);  // T target rows, then the M memory rows
    for (float& v : rows) v *= input_scale;
    const float* memory = rows.data() + T * D;
    layer->prepare_memory(memory, *cache);
    peer->prepare_memory(memory);
    double max_abs = 0, max_ref = 0;
    bool finite = true;
    for (index_t pos = 0; pos < T; ++pos) {
      layer->step(rows.data() + pos * D, pos, M, *cache, y_stf.data(), scratch.data());
      peer->step(rows.data() + pos * D, int(pos), y_eigen.data());
      for (index_t i = 0; i < D; ++i) {
        finite = finite && std::isfinite(y_eigen[i]) && std::isfinite(y_stf[i]);
        max_abs = std::fmax(max_abs, std::fabs(double(y_eigen[i]) - double(y_stf[i])));
        max_ref = std::fmax(max_ref, std::fabs(double(y_stf[i])));
      }
    }
    const double rel = max_abs / max_ref;
    const bool pass = finite && max_ref > 0 && rel <= kTolerance;
    std::printf(
        "%s (T,M,D,H,F)=(%zu,%zu,%zu,%zu,%zu) input x%g, positions 0..%zu: max|diff| %.3g, max|y| %.3g, "
        "relative %.3g\n",
        pass ? "ok  " : "FAIL", T, M, D, H, F, double(input_scale), T - 1, max_abs, max_ref, rel);
    ok = ok && pass;
  }
  return ok;
}
}  // namespace

int main() {
  std::printf(
      "Eigen decoder step vs stf::DecoderLayer::step (post-norm, ReLU), tolerance %.0e relative to max|y|\n%s\n",
      kTolerance, stf_peers::eigen_build_info());
  namespace plan = stf_bench::plan;
  bool ok = true;
  plan::for_each<plan::kDecoderSteps>([&]<plan::DecoderStepShape Sh>() {
    ok = check_shape<Sh.positions, Sh.memory, Sh.d_model, Sh.n_heads, Sh.d_ff>() && ok;
  });
  return ok ? 0 : 1;
}
