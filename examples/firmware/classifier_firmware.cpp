// The classifier example (examples/classifier: embedding + PE + 2 post-norm encoder layers + a
// per-token classifier, as one static graph) as firmware: checks every logit against PyTorch's
// (exported with the weights) to 1e-5 relative, prints each token's class, exits 1 on a mismatch.
#include <cmath>

#include <statiformer/statiformer.hpp>

#include "../classifier/classifier_model.hpp"
#include "../classifier/classifier_weights.hpp"
#include "firmware.h"

namespace {
using namespace stf;
using namespace classifier_example;
Model model;
}  // namespace

int main() {
  namespace ex = classifier_example;
  fw_puts("statiformer classifier firmware on " STF_FW_CORE "\n");
  if (const BindResult bound = bind_table(model, ex::weights::table); !bound) {
    fw_puts("bind failed: ");
    fw_puts(bound.name.c_str());
    fw_puts(": ");
    fw_puts(to_string(bound.status));
    fw_puts("\n");
    return 1;
  }
  int tokens[kSeqLen];
  for (index_t i = 0; i < kSeqLen; ++i) tokens[i] = static_cast<int>(ex::io::tokens.data[i]);
  const index_t valid = static_cast<index_t>(ex::io::valid_len.data[0]);
  if (Status st = model.forward(nullptr, RunContext{tokens, valid}); st != Status::ok) {
    fw_puts("forward failed: ");
    fw_puts(to_string(st));
    fw_puts("\n");
    return 1;
  }

  const CMat<kSeqLen, kClasses> logits = model.output();
  int bad = 0;
  fw_puts("token  class  logits (statiformer); PyTorch max |diff|\n");
  for (index_t s = 0; s < valid; ++s) {
    index_t best = 0;
    double max_diff = 0;
    for (index_t c = 0; c < kClasses; ++c) {
      best = logits(s, c) > logits(s, best) ? c : best;
      const double want = ex::io::y.data[s * kClasses + c];
      const double diff = std::fabs(static_cast<double>(logits(s, c)) - want);
      max_diff = diff > max_diff ? diff : max_diff;
      bad += diff > 1e-5 * std::fabs(want) + 1e-5;
    }
    fw_put_i(tokens[s], 5);
    fw_put_u(best, 7);
    fw_puts("  ");
    for (index_t c = 0; c < kClasses; ++c) {
      fw_put_f(static_cast<double>(logits(s, c)), 5, 9);
      fw_putc(' ');
    }
    fw_puts("; ");
    fw_put_f(max_diff * 1e9, 0, 0);
    fw_puts("e-9\n");
  }
  fw_puts("stack high-water: ");
  fw_put_u(fw_stack_high_water(), 0);
  fw_puts(" B\n");
  fw_puts(bad ? "MISMATCH with PyTorch\n" : "matches PyTorch (1e-5)\n");
  return bad ? 1 : 0;
}
