// examples/exported/main.cpp (README, "One compile"): runs the model tools/export.py --emit-model
// wrote into my_model.hpp on the input stored with it, bound by name at run time (bind) and bound
// at compile time (bound_model), and compares each with PyTorch's output.
#include <cstdio>

#include "my_model.hpp"

int main() {
  static my_model::Model model;  // static: the model's views live in .bss
  if (const stf::BindResult r = my_model::bind(model.params); !r) {
    std::printf("bind failed: %s (%s)\n", stf::to_string(r.status), r.name.c_str());
    return 1;
  }
  const float by_name = my_model::check(model) / my_model::test_output_max_abs;
  const float at_compile_time = my_model::check(my_model::bound_model) / my_model::test_output_max_abs;
  const bool ok = by_name <= 1e-5f && at_compile_time <= 1e-5f;
  std::printf(
      "max abs error relative to max |PyTorch output|: %.3g (bound by name), %.3g (bound at compile time): %s\n",
      static_cast<double>(by_name), static_cast<double>(at_compile_time),
      ok ? "matches PyTorch" : "DIFFERS from PyTorch");
  return ok ? 0 : 1;
}
