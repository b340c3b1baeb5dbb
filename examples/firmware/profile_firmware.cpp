// Profiling firmware (not a test, not built by default): one forward of stf::EncoderLayer at the
// shape given by STF_PROFILE_SHAPE (0: (10,16,2,32), 1: (32,64,4,128), 2: (64,64,4,256)), between
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
template <index_t S, index_t D, index_t H, index_t F>
int run() {
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
#if STF_PROFILE_SHAPE == 0
  return run<10, 16, 2, 32>();
#elif STF_PROFILE_SHAPE == 1
  return run<32, 64, 4, 128>();
#else
  return run<64, 64, 4, 256>();
#endif
}
