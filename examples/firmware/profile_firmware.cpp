// Profiling firmware (not a test, not built by default): one forward of stf::EncoderLayer at the
// firmware plan's shape STF_PROFILE_SHAPE (bench_layer.hpp's kFirmwareShapes: 0 (10,16,2,32),
// 1 (32,64,4,128), 2 (64,64,4,256)), between
// calls to the markers profile_begin/profile_end, for an instruction trace by function:
//   examples/firmware/profile.py build/cortex-m55 1
#include <cmath>
#include <cstdint>

#include <statiformer/statiformer.hpp>

#include "bench_layer.hpp"
#include "firmware.h"

#ifndef STF_PROFILE_SHAPE
#define STF_PROFILE_SHAPE 1
#endif
#ifndef STF_PROFILE_FORMAT  // 0 float32, 1 w8a8, 2 w8a32, 3 w8a8 + int8 attention
#define STF_PROFILE_FORMAT 0
#endif

extern "C" [[gnu::noinline]] void profile_begin() { asm volatile("" ::: "memory"); }
extern "C" [[gnu::noinline]] void profile_end() { asm volatile("" ::: "memory"); }

namespace {
using namespace stf;
template <fw::FirmwareShape Sh>
int run() {
  constexpr index_t S = Sh.seq_len, D = Sh.d_model, H = Sh.n_heads, F = Sh.d_ff;
  constexpr NumberFormat kFormat = STF_PROFILE_FORMAT == 0   ? NumberFormat::f32
                                   : STF_PROFILE_FORMAT == 2 ? NumberFormat::w8a32
                                                             : NumberFormat::w8a8;
  using Bench = fw::BenchLayer<S, D, H, F, kFormat, STF_PROFILE_FORMAT == 3>;
  Bench::setup();
  profile_begin();
  const Status s = Bench::layer.forward(Bench::x, Bench::y, S, Bench::scratch);
  profile_end();
  return s == Status::ok ? 0 : 1;
}
}  // namespace

int main() {
  static_assert(STF_PROFILE_SHAPE >= 0 && STF_PROFILE_SHAPE < fw::kFirmwareShapes.size(),
                "STF_PROFILE_SHAPE indexes the firmware plan (bench_layer.hpp)");
  return run<fw::kFirmwareShapes[STF_PROFILE_SHAPE]>();
}
