// examples/exported/gpt_main.cpp (README, "One compile"): runs the decoder-only model tools/export.py
// --emit-model wrote into my_gpt.hpp on the prompt stored with it: bound by name at run time (bind)
// and with the parameters bound at compile time (bound_model_params), each through prefill,
// greedy generation and steps, compared with PyTorch's log-probabilities and tokens.
#include <cstdio>

#include "my_gpt.hpp"

namespace {

bool report(const char* how, const my_gpt::CheckResult& r) {
  const bool ok = r.status == stf::Status::ok && r.max_error <= 1e-4f && r.tokens_equal;
  std::printf("%s: max |log-prob error| %.3g, %zu greedy tokens %s PyTorch's: %s\n", how,
              static_cast<double>(r.max_error), r.tokens, r.tokens_equal ? "equal to" : "DIFFER from",
              ok ? "matches PyTorch" : "DIFFERS from PyTorch");
  return ok;
}

}  // namespace

int main() {
  static my_gpt::Model by_name, at_compile_time;  // static: the caches and arena live in .bss
  if (const stf::BindResult r = my_gpt::bind(by_name.params); !r) {
    std::printf("bind failed: %s (%s)\n", stf::to_string(r.status), r.name.c_str());
    return 1;
  }
  at_compile_time.params = my_gpt::bound_model_params;
  const bool a = report("bound by name", my_gpt::check(by_name));
  const bool b = report("bound at compile time", my_gpt::check(at_compile_time));
  return a && b ? 0 : 1;
}
