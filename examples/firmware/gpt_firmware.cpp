// The gpt example (examples/gpt: a character-level decoder-only model trained by
// tools/train_gpt.py, its header written by tools/export.py --emit-model) as bare-metal firmware on
// qemu-system-arm: the parameters bound at compile time (gpt_char::bound_model_params: no name
// lookup, no binding code), the header's check against PyTorch (log-probabilities of the prompt and
// of every greedy step, and the greedy tokens), the greedy continuation as text, the instruction
// counts of the prefill and of each generated token (SysTick under qemu -icount), the footprint and
// the stack high-water mark. Exits 1 on a mismatch.
#include <cstdint>

#include <statiformer/statiformer.hpp>

#include "../gpt/gpt_char_model.hpp"
#include "cycles.hpp"
#include "firmware.h"

namespace {
using namespace stf;
using Model = gpt_char::Model;
Model model;  // static: arena and K/V caches live in .bss

void put_text(const int* ids, index_t n) {
  for (index_t i = 0; i < n; ++i) {
    if (ids[i] == 0)
      fw_puts("\\n");
    else
      fw_putc(static_cast<char>(ids[i] + 31));  // tools/train_gpt.py: 1..95 = ' '..'~'
  }
}

/// Exact instructions of f() (summed over the SysTick phases, see cycles.hpp); false if not exact.
template <class F>
bool instructions(F&& f, std::uint64_t& count) {
  std::uint64_t ticks = 0;
  fw::for_each_phase([&] {
    const std::uint64_t t0 = fw::systick_now();
    f();
    ticks += fw::systick_now() - t0;
  });
  return fw::exact_instructions(ticks, count);
}
}  // namespace

int main() {
  fw_puts("statiformer gpt firmware on " STF_FW_CORE " (qemu-system-arm -M " STF_FW_MACHINE "): ");
  fw_put_u(Model::n_layers, 0);
  fw_puts(" causal layers, d_model ");
  fw_put_u(Model::d_model, 0);
  fw_puts(", ");
  fw_put_u(Model::Layer::n_heads, 0);
  fw_puts(" heads, ");
  fw_put_u(Model::seq_len, 0);
  fw_puts(" positions, ");
  fw_put_u(Model::vocab, 0);
  fw_puts(" tokens; parameters bound at compile time\n");
  model.params = gpt_char::bound_model_params;

  const gpt_char::CheckResult r = gpt_char::check(model);
  const bool ok = r.status == Status::ok && r.max_error <= 1e-4f && r.tokens_equal;
  fw_puts("check against PyTorch: max |log-prob error| ");
  fw_put_f(static_cast<double>(r.max_error) * 1e9, 0, 0);
  fw_puts("e-9 over the prompt and ");
  fw_put_u(gpt_char::test_new_tokens, 0);
  fw_puts(" steps; ");
  fw_put_u(r.tokens, 0);
  fw_puts(r.tokens_equal ? " greedy tokens equal to PyTorch's: " : " greedy tokens DIFFER from PyTorch's: ");
  fw_puts(ok ? "matches PyTorch\n" : "MISMATCH with PyTorch\n");

  static int out[gpt_char::test_new_tokens];
  index_t n = 0;
  if (model.generate(gpt_char::test_prompt, gpt_char::test_prompt_len, gpt_char::test_new_tokens, out, n) != Status::ok)
    return 1;
  fw_puts("greedy: \"");
  put_text(gpt_char::test_prompt, gpt_char::test_prompt_len);
  fw_puts("|");
  put_text(out, n);
  fw_puts("\"\n");
  // seeded sampling as examples/gpt's default (temperature 0.8, top-k 8, seed 1, 48 tokens): the
  // same text on every target (a ctest compares it with the host's)
  static int sampled[48];
  if (model.generate(gpt_char::test_prompt, gpt_char::test_prompt_len, 48, sampled, n, Sampler::sample(0.8f, 8, 1)) !=
      Status::ok)
    return 1;
  fw_puts("sampled (temperature 0.8, top-k 8, seed 1): \"");
  put_text(sampled, n);
  fw_puts("\"\n");

  // Instruction counts: the prompt's prefill, and generate of kNew tokens (its prefill + kNew - 1
  // steps + argmax); their difference per step is a generated token's cost.
  constexpr index_t kNew = 16;
  fw::systick_start();
  std::uint64_t prefill = 0, generate = 0;
  bool exact = instructions([] { (void)model.prefill(gpt_char::test_prompt, gpt_char::test_prompt_len); }, prefill);
  exact = instructions(
              [] {
                index_t m = 0;
                (void)model.generate(gpt_char::test_prompt, gpt_char::test_prompt_len, kNew, out, m);
              },
              generate) &&
          exact;
  fw_puts("instructions on " STF_FW_CORE " (qemu -icount shift=0): prefill of the ");
  fw_put_u(gpt_char::test_prompt_len, 0);
  fw_puts("-token prompt ");
  fw_put_u(prefill, 0);
  fw_puts(" (");
  fw_put_u(prefill / gpt_char::test_prompt_len, 0);
  fw_puts(" per token); generating ");
  fw_put_u(kNew, 0);
  fw_puts(" tokens ");
  fw_put_u(generate, 0);
  fw_puts(", ");
  fw_put_u((generate - prefill) / (kNew - 1), 0);
  fw_puts(" per generated token (positions ");
  fw_put_u(gpt_char::test_prompt_len, 0);
  fw_puts(" to ");
  fw_put_u(gpt_char::test_prompt_len + kNew - 2, 0);
  fw_puts(")\n");
  if (!exact) fw_puts("  WARNING: a phase sum was not a whole number of instructions (runs differed)\n");

  fw_puts("footprint (constexpr): ");
  fw_put_u(Model::param_count, 0);
  fw_puts(" parameters, weights ");
  fw_put_u(Model::weight_bytes, 0);
  fw_puts(" B + PE table ");
  fw_put_u(Model::const_bytes, 0);
  fw_puts(" B (flash); arena ");
  fw_put_u(Model::arena_bytes, 0);
  fw_puts(" B + K/V caches ");
  fw_put_u(Model::state_bytes, 0);
  fw_puts(" B (RAM); model object ");
  fw_put_u(sizeof(Model), 0);
  fw_puts(" B\nstack high-water: ");
  fw_put_u(fw_stack_high_water(), 0);
  fw_puts(" B of ");
  fw_put_u(fw_stack_size(), 0);
  fw_puts(" B\n");
  return ok && exact ? 0 : 1;
}
