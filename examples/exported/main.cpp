// examples/exported/main.cpp (README, "One compile"): runs the model tools/export.py --emit-model
// wrote into my_model.hpp on the input stored with it, and compares with PyTorch's output.
#include <cstdio>

#include "my_model.hpp"

int main() {
  static my_model::Model model;  // static: the weights' pointers and the model live in .bss
  if (const stf::BindResult r = my_model::bind(model.params); !r) {
    std::printf("bind failed: %s (%s)\n", stf::to_string(r.status), r.name.c_str());
    return 1;
  }
  const float err = my_model::check(model);
  const float rel = err / my_model::test_output_max_abs;
  std::printf("max abs error %.3g, relative to max |PyTorch output| %.3g: %s\n", static_cast<double>(err),
              static_cast<double>(rel), rel <= 1e-5f ? "matches PyTorch" : "DIFFERS from PyTorch");
  return rel <= 1e-5f ? 0 : 1;
}
