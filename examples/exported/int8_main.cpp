// examples/exported/int8_main.cpp (README, "int8: --quantize"): runs the int8 model tools/export.py
// --emit-model --quantize wrote into my_int8.hpp on the input stored with it, bound by name and
// bound at compile time, against PyTorch's float output, and prints its flash footprint next to
// the float model's. Fails beyond issue 23's target for w8a8 (2 % of max |PyTorch output|).
#include <cstdio>

#include "my_int8.hpp"

int main() {
  static my_int8::Model model;
  if (const stf::BindResult r = my_int8::bind(model.params); !r) {
    std::printf("bind failed: %s (%s)\n", stf::to_string(r.status), r.name.c_str());
    return 1;
  }
  const float by_name = my_int8::check(model) / my_int8::test_output_max_abs;
  const float at_compile_time = my_int8::check(my_int8::bound_model) / my_int8::test_output_max_abs;
  const bool ok = by_name <= 0.02f && at_compile_time <= 0.02f && by_name == at_compile_time;
  // the same stack in float32, for the footprint
  using Layer = my_int8::Model::Layer;
  static constexpr stf::LayerOptions float_options = [] {
    stf::LayerOptions o = Layer::options;
    o.format = stf::NumberFormat::f32;
    return o;
  }();
  using Float =
      stf::EncoderStack<stf::EncoderLayer<Layer::seq_len, Layer::d_model, Layer::n_heads, Layer::d_ff, float_options>,
                        my_int8::Model::n_layers, my_int8::Model::final_norm>;
  std::printf("weights (constexpr): %ld B int8, %ld B as float32\n",
              static_cast<long>(stf::param_bytes_of<my_int8::Model::Params>()),
              static_cast<long>(stf::param_bytes_of<Float::Params>()));
  std::printf(
      "max abs error relative to max |PyTorch float output|: %.3g (bound by name), %.3g (bound at compile time): "
      "%s\n",
      static_cast<double>(by_name), static_cast<double>(at_compile_time),
      ok ? "within the int8 target (2 %)" : "BEYOND the int8 target (2 %)");
  return ok ? 0 : 1;
}
