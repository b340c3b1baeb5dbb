// statiformer — the benchmark plan: the shapes at which the whole-layer benchmarks run, written once.
// bench_layers (the layer and its parts), bench_peers and bench_stf_<isa> (statiformer, Eigen and oneDNN,
// the int8 layer, the products alone), bench/ab/ab.sh's pairs, the peers' correctness tests and
// bench/peers/torch_bench.py (which reads this file) all take their shapes from here, so that a shape
// added here appears in every table of bench/run_bench.sh's report at once (bench/peers/README.md).
// Only the standard library: ab.sh compiles this file against an old statiformer tree too.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

namespace stf_bench::plan {

/// One post-norm encoder layer over seq_len valid tokens: d_model, n_heads heads, d_ff hidden units.
struct EncoderShape {
  std::size_t seq_len, d_model, n_heads, d_ff;
};
/// One decoding step through a post-norm decoder layer's K/V cache at the last of `positions` target
/// positions (positions - 1 of them cached), cross-attending to `memory` rows.
struct DecoderStepShape {
  std::size_t positions, memory, d_model, n_heads, d_ff;
};

/// The encoder layer's shapes: the classic small layer, the sizes firmware models use ((16,32,4,64) and
/// (25,64,4,128)), and up to the 128-row layers of issue 26's peak targets. torch_bench.py reads the
/// entries as written here (one `EncoderShape{...}` each).
inline constexpr std::array kEncoderLayers{
    EncoderShape{10, 16, 2, 32},     EncoderShape{16, 32, 4, 64},   EncoderShape{25, 64, 4, 128},
    EncoderShape{32, 64, 4, 256},    EncoderShape{64, 128, 4, 512}, EncoderShape{128, 256, 8, 1024},
    EncoderShape{128, 512, 8, 2048},
};
/// The decoder step's shapes (one `DecoderStepShape{...}` each, as torch_bench.py reads them).
inline constexpr std::array kDecoderSteps{
    DecoderStepShape{16, 16, 32, 4, 64},
    DecoderStepShape{25, 25, 64, 4, 128},
};

/// f.template operator()<Plan[I]>() for I in order (for_each).
template <const auto& Plan, class F, std::size_t... I>
void for_each_at(F& f, std::index_sequence<I...>) {
  (f.template operator()<Plan[I]>(), ...);
}
/// f.template operator()<Shape>() for every shape of Plan in order (Plan: kEncoderLayers or
/// kDecoderSteps; f: a lambda with a template head, []<plan::EncoderShape Sh>() { ... }).
template <const auto& Plan, class F>
void for_each(F&& f) {
  for_each_at<Plan>(f, std::make_index_sequence<Plan.size()>{});
}

}  // namespace stf_bench::plan
