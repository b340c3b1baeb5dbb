// The seeds' transformer classifier: token embedding·√D + positional encoding → 2 post-norm
// encoder layers → a per-token classifier, as one static graph. Weights and the input come from a
// PyTorch model (generated header); the program prints the model summary and each token's class,
// and fails if any logit differs from PyTorch's by more than 1e-5 relative.
#include <cmath>
#include <cstdio>

#include <statiformer/statiformer.hpp>

#include "classifier_model.hpp"
#include "classifier_weights.hpp"

namespace {
using namespace stf;
using namespace classifier_example;

Model model;  // static storage: arena included, nothing on the heap
}  // namespace

int main() {
  namespace ex = classifier_example;
  const BindResult bound = bind_table(model, ex::weights::table);
  if (!bound) {
    std::printf("bind failed: %s: %s\n", bound.name.c_str(), to_string(bound.status));
    return 1;
  }
  Model::summary([](const char* line) { std::puts(line); });

  int tokens[kSeqLen];
  for (index_t i = 0; i < kSeqLen; ++i) tokens[i] = static_cast<int>(ex::io::tokens.data[i]);
  const index_t valid = static_cast<index_t>(ex::io::valid_len.data[0]);
  if (Status st = model.forward(nullptr, RunContext{tokens, valid}); st != Status::ok) {
    std::printf("forward failed: %s\n", to_string(st));
    return 1;
  }

  const CMat<kSeqLen, kClasses> logits = model.output();
  int bad = 0;
  std::printf("\ntoken  class  logits (statiformer; PyTorch max |diff|)\n");
  for (index_t s = 0; s < valid; ++s) {
    index_t best = 0;
    double max_diff = 0;
    for (index_t c = 0; c < kClasses; ++c) {
      best = logits(s, c) > logits(s, best) ? c : best;
      const double want = ex::io::y.data[s * kClasses + c];
      const double diff = std::fabs(logits(s, c) - want);
      max_diff = diff > max_diff ? diff : max_diff;
      bad += diff > 1e-5 * std::fabs(want) + 1e-5;
    }
    std::printf("%5d  %5zu  ", tokens[s], best);
    for (index_t c = 0; c < kClasses; ++c) std::printf("%+.5f ", static_cast<double>(logits(s, c)));
    std::printf("; %.2e\n", max_diff);
  }
  std::printf("%s\n", bad ? "MISMATCH with PyTorch" : "matches PyTorch (1e-5)");
  return bad ? 1 : 0;
}
