// Kernel check firmware: the variant this core runs (stf::ActiveKernels: mve on the M55, scalar on
// the M4F and M7) against the reference kernels (stf::ref), bit for bit, on pseudo-random data at
// the cases of the one case list (tests/support/kernel_cases.hpp), through the checks written once
// in tests/support/kernel_checks.hpp, which the Catch2 suite (tests/unit/test_kernels.cpp) runs on
// the Linux targets; this is the oracle for the Cortex-M kernels, whose asm and intrinsics only run
// here. Prints the op and sizes of the first mismatch and exits 1.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <type_traits>

#include <boost/hana/for_each.hpp>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/reference.hpp>
#include <statiformer/kernels/registry.hpp>

#include "firmware.h"
#include "kernel_cases.hpp"
#include "kernel_checks.hpp"

namespace {
using namespace stf;
using namespace stf_cases;
using K = ActiveKernels;
using Cap = stf_checks::Capacity<kFirmwareMaxHeadDim, kFirmwareMaxKeys>;

alignas(16) float x[Cap::x], w[Cap::w], bias[Cap::bias], got[Cap::y], want[Cap::y];
alignas(16) float q[Cap::q], kt[Cap::kt], vv[Cap::v], s_got[Cap::scratch], s_want[Cap::scratch];
alignas(16) float o_got[Cap::q], o_want[Cap::q];
std::uint8_t allow[Cap::allow];
std::int8_t qw[Cap::qw], q_scratch[Cap::q_scratch], q_row[Cap::q_row];
alignas(16) float s_w[Cap::s_w], w32_scratch[Cap::w32_scratch], group_x[Cap::group_x];
std::int8_t group_qw[Cap::group_qw];
ref::RowMask masks[Cap::rows];
ref::MaskArrays mask_arrays[Cap::rows];
unsigned long checks = 0;

/// The checks' runner here (tests/support/kernel_checks.hpp): static buffers up to the firmware's
/// attention limits; the first difference prints the operation, the case and the element's bits,
/// and exits 1.
struct FirmwareEnv {
  stf_checks::Buffers buf{x, w, bias, got, want, q, kt, vv, s_got, s_want, o_got, o_want, allow, masks, mask_arrays};
  // MVE arithmetic flushes denormals to zero (qemu runs it with the Arm "standard FPSCR value",
  // like armv7 NEON: the documented exception of README.md), so results through a denormal may
  // differ.
  bool flushes_denormals = std::strcmp(K::name(), "mve") == 0;
  index_t max_head_dim = kFirmwareMaxHeadDim, max_keys = kFirmwareMaxKeys, max_rows = Cap::rows;
  // int8: no room for the case near the int32 limit (~0.8 MB; the hosts run it)
  stf_checks::QuantBuffers qbuf{qw, q_scratch, q_row, s_w, nullptr, nullptr, w32_scratch, group_x, group_qw};

  void expect(const char* op, const float* a, const float* b, index_t n, std::initializer_list<stf_checks::Size> sizes,
              bool flushed) {
    ++checks;
    const index_t i = stf_checks::first_difference(a, b, n, flushed, false);  // (NaNs too: bit for bit)
    if (i == n) return;
    std::uint32_t ga, wa;
    std::memcpy(&ga, a + i, 4);
    std::memcpy(&wa, b + i, 4);
    fw_puts("MISMATCH in ");
    fw_puts(op);
    fw_puts(" (");
    fw_puts(K::name());
    fw_puts(" vs reference):");
    for (const stf_checks::Size& s : sizes) {
      fw_putc(' ');
      fw_puts(s.name);
      fw_putc('=');
      fw_put_u(s.value, 0);
    }
    fw_puts(": element ");
    fw_put_u(i, 0);
    fw_puts(" is 0x");
    fw_put_hex(ga, 8);
    fw_puts(", the reference 0x");
    fw_put_hex(wa, 8);
    fw_puts("\n");
    fw_exit(1);
  }
};

/// The variant that each operation's selection (kernels/<op>/select.hpp) names for every variant of
/// this build (kernels/registry.hpp) must be listed in the registry and be this core's own where
/// the core has one: cortex_m4f for the scalar variant (every core here has a single-precision
/// FPU), helium for mve; generic for softmax, which has no target variant, and for the scalar
/// variant's transpose (only mve has its own). A
/// selection that falls back to generic here, where the target's kernels exist, prints and exits 1.
void check_selections() {
  boost::hana::for_each(kernel_registry::variants, [](auto t) {
    using Tag = typename decltype(t)::type;
    const std::string_view own = std::is_same_v<Tag, isa::mve> ? "helium" : "cortex_m4f";
    const std::string_view own8 = std::is_same_v<Tag, isa::mve> ? "int8_helium" : "int8_cortex_m4f";
    constexpr auto selected = kernel_registry::selected<Tag>();
    fw_puts("  selection for ");
    fw_puts(Kernels<Tag>::name());
    fw_puts(":");
    for (const kernel_registry::Selected& s : selected) {
      fw_putc(' ');
      fw_puts(s.op.data());  // (the views are of string literals)
      fw_putc('=');
      fw_puts(s.variant.data());
    }
    fw_putc('\n');
    for (const kernel_registry::Selected& s : selected) {
      // (the int8 products: int8_cortex_m4f on the scalar variant, every core here has the DSP
      // extension; int8_helium on mve; the int8 attention: int8_cortex_m4f on the scalar variant,
      // int8_helium on mve)
      const bool generic_only = s.op == "softmax" || (s.op == "transpose" && !std::is_same_v<Tag, isa::mve>);
      const std::string_view expected = s.variant.starts_with("int8_") ? own8 : generic_only ? "generic" : own;
      if (s.variant == expected && kernel_registry::find(s.op, s.variant)) continue;
      fw_puts("WRONG SELECTION for ");
      fw_puts(s.op.data());
      fw_puts(" on ");
      fw_puts(Kernels<Tag>::name());
      fw_puts(": ");
      fw_puts(s.variant.data());
      fw_puts(", expected ");
      fw_puts(expected.data());
      fw_puts(" (listed in kernels/registry.hpp)\n");
      fw_exit(1);
    }
  });
}
}  // namespace

int main() {
  fw_puts("kernel check on " STF_FW_CORE ": variant ");
  fw_puts(K::name());
  fw_puts(stf::kKernelsSizeFirst ? " (kernels: size-first)" : " (kernels: speed-first)");  // (kernels/api.hpp)
  fw_puts(" vs the reference, bit for bit\n");
  check_selections();
  FirmwareEnv env;
  stf_checks::check_dot_sum<K>(env);
  stf_checks::check_rows<K>(env);
  stf_checks::check_specials<K>(env);
  fw_puts("  dot, sum, layer_norm_row(s), add + LN, log_softmax_row, activation, add, exp, log, special values: ok\n");
  stf_checks::check_transpose<K>(env);
  fw_puts("  transpose: ok\n");
  stf_checks::check_linear<K>(env);
  fw_puts("  linear: ok\n");
  stf_checks::check_linear_w8a8<K>(env);
  fw_puts("  linear_w8a8 (int8): ok\n");
  stf_checks::check_attention_w8a8<K>(env);
  fw_puts("  quantize_rows, attention_rows_w8a8 (int8): ok\n");
  stf_checks::check_linear_w8a32<K>(env);
  fw_puts("  linear_w8a32 (int8 weights): ok\n");
  stf_checks::check_linear_blocks<K>(env);
  fw_puts("  linear_block over blocks of the reduction and of the outputs: ok\n");
  stf_checks::check_attention<K>(env);
  fw_puts(
      "  attention_rows, attention_rows_weights, attention_row, attention_heads, attention_rows_heads,\n"
      "  attention_lane_rows_heads: ok\n");
  fw_puts(stf::kKernelsSizeFirst ? "size-first: all " : "all ");
  fw_put_u(checks, 0);
  fw_puts(" comparisons equal\n");
  return 0;
}
