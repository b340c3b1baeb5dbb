// The exported model (README, "One compile"; my_model.hpp written by tools/export.py --emit-model at
// build time) run on the target under qemu-system-arm: bound by name at run time (STF_BIND_BY_NAME)
// or the header's `bound_model`, bound at compile time. Prints the max error relative to PyTorch's
// largest output, exits 1 beyond 1e-5.
#include <statiformer/statiformer.hpp>

#include "firmware.h"
#include "my_model.hpp"

int main() {
#ifdef STF_BIND_BY_NAME
  static my_model::Model model;
  if (const stf::BindResult r = my_model::bind(model.params); !r) {
    fw_puts("exported: bind failed at ");
    fw_puts(r.name.c_str());
    fw_puts("\n");
    return 1;
  }
  fw_puts("exported model, bound by name: ");
#else
  const my_model::Model& model = my_model::bound_model;
  fw_puts("exported model, bound at compile time: ");
#endif
  const float rel = my_model::check(model) / my_model::test_output_max_abs;
  fw_puts("max abs error relative to PyTorch's ");
  fw_put_f(static_cast<double>(rel) * 1e9, 0, 0);
  fw_puts("e-9: ");
  const bool ok = rel <= 1e-5f;
  fw_puts(ok ? "matches PyTorch\n" : "MISMATCH with PyTorch\n");
  return ok ? 0 : 1;
}
