// One post-norm encoder layer (32, 64, 4, 128) in one number format, for the code-size comparison
// of the formats (issue 23: the int8 path's code no larger than the float path's): the firmware
// fw_layer_<format> carries only the kernels and layers its format runs, so tools/size_by_part.py's
// "library: kernels + layers" of the four ELFs side by side is what each format costs in flash
// besides its weights. STF_LAYER_FORMAT: 0 float32, 1 w8a32, 2 w8a8, 3 w8a8 with the int8 attention.
// Runs one forward on bench_layer.hpp's data and prints y's checksum; exits 1 if it is not finite.
#include <cmath>

#include "bench_layer.hpp"
#include "firmware.h"

namespace {
using stf::NumberFormat;
constexpr NumberFormat kFormat = STF_LAYER_FORMAT == 0   ? NumberFormat::f32
                                 : STF_LAYER_FORMAT == 1 ? NumberFormat::w8a32
                                                         : NumberFormat::w8a8;
using Bench = fw::BenchLayer<32, 64, 4, 128, kFormat, STF_LAYER_FORMAT == 3>;
}  // namespace

int main() {
  Bench::setup();
  if (Bench::layer.forward(Bench::x, Bench::y, 32, Bench::scratch) != stf::Status::ok) {
    fw_puts("forward failed\n");
    return 1;
  }
  double sum = 0;
  for (float v : Bench::y.data) sum += static_cast<double>(v);
  fw_puts("encoder layer (32, 64, 4, 128), " STF_LAYER_FORMAT_NAME ": sum of y ");
  fw_put_f(sum, 6, 0);
  fw_puts(std::isfinite(sum) ? "\n" : " NOT FINITE\n");
  return std::isfinite(sum) ? 0 : 1;
}
