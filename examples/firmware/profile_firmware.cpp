// Profiling firmware (not a test, not built by default): one forward of stf::EncoderLayer at the
// shape given by STF_PROFILE_SHAPE (0: (10,16,2,32), 1: (32,64,4,128), 2: (64,64,4,256)), between
// calls to the markers profile_begin/profile_end, for an instruction trace by function:
//   examples/firmware/profile.py build/cortex-m55 1
#include <cmath>
#include <cstdint>

#include <statiformer/statiformer.hpp>

#include "firmware.h"

#ifndef STF_PROFILE_SHAPE
#define STF_PROFILE_SHAPE 1
#endif

extern "C" [[gnu::noinline]] void profile_begin() { asm volatile("" ::: "memory"); }
extern "C" [[gnu::noinline]] void profile_end() { asm volatile("" ::: "memory"); }

namespace {
using namespace stf;
constexpr index_t kMaxParams = 64 * 1024;
alignas(kTensorAlign) float pool[kMaxParams];
std::uint32_t rng_state = 0x2545F491u;
float uniform(float a) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return a * (static_cast<float>(rng_state >> 8) * (2.0f / 16777216.0f) - 1.0f);
}

template <index_t S, index_t D, index_t H, index_t F>
int run() {
  using Layer = EncoderLayer<S, D, H, F, LayerOptions{.norm = NormPlacement::post}>;
  static Layer layer{};
  static Tensor<S, D> x, y;
  alignas(kTensorAlign) static float scratch[Layer::scratch_floats];
  index_t used = 0;
  layer.params.visit(
      [&](const Name&, ParamRef p) {
        *p.data = pool + used;
        used += p.size();
      },
      Name{});
  for (index_t i = 0; i < used; ++i) pool[i] = uniform(1.0f / std::sqrt(static_cast<float>(D)));
  for (float& v : x.data) v = uniform(1.0f);
  profile_begin();
  const Status s = layer.forward(x, y, S, scratch);
  profile_end();
  return s == Status::ok ? 0 : 1;
}
}  // namespace

int main() {
#if STF_PROFILE_SHAPE == 0
  return run<10, 16, 2, 32>();
#elif STF_PROFILE_SHAPE == 1
  return run<32, 64, 4, 128>();
#else
  return run<64, 64, 4, 256>();
#endif
}
