// Prints the parameter schema (JSON, include/statiformer/io/schema.hpp) of a model type:
//   stf_schema MODEL      MODEL: demo, enc_stack, dec_stack, enc_stack_transposed,
//                         dec_stack_transposed, demo_transposed, tiny, tiny_transposed, hp,
//                         gpt_hp, causal_stack_hp, enc_stack_hp, enc_w8a8, gpt_w8a8, classifier_w8a8
// tools/export.py reads it; tests/io/schemas/ holds the committed output (checked by a ctest).
#include <cstdio>
#include <cstring>

#include <statiformer/io/schema.hpp>

#include "models.hpp"

namespace {

template <class Params>
int print(const char* model) {
  static Params params{};
  return stf::write_schema_json(params, stdout, model) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stf_io;
  const char* m = argc == 2 ? argv[1] : "";
  if (!std::strcmp(m, "demo")) return print<Demo::Params>(m);
  if (!std::strcmp(m, "enc_stack")) return print<EncStack::Params>(m);
  if (!std::strcmp(m, "dec_stack")) return print<DecStack::Params>(m);
  if (!std::strcmp(m, "demo_transposed")) return print<LinearsTransposed<Demo::Params>>(m);
  if (!std::strcmp(m, "enc_stack_transposed")) return print<LinearsTransposed<EncStack::Params>>(m);
  if (!std::strcmp(m, "dec_stack_transposed")) return print<LinearsTransposed<DecStack::Params>>(m);
  if (!std::strcmp(m, "tiny")) return print<TinyParams>(m);
  if (!std::strcmp(m, "tiny_transposed")) return print<LinearsTransposed<TinyParams>>(m);
  if (!std::strcmp(m, "hp")) return print<HpModel::Params>(m);
  if (!std::strcmp(m, "gpt_hp")) return print<GptHp::Params>(m);
  if (!std::strcmp(m, "causal_stack_hp")) return print<CausalStackHp::Params>(m);
  if (!std::strcmp(m, "enc_stack_hp")) return print<EncStackHp::Params>(m);
  if (!std::strcmp(m, "enc_w8a8")) return print<EncStackW8a8::Params>(m);
  if (!std::strcmp(m, "gpt_w8a8")) return print<GptW8a8::Params>(m);
  if (!std::strcmp(m, "classifier_w8a8")) return print<ClassifierW8a8>(m);
  std::fprintf(stderr,
               "usage: stf_schema MODEL\n  MODEL: demo, enc_stack, dec_stack, demo_transposed, enc_stack_transposed, "
               "dec_stack_transposed, tiny, tiny_transposed, hp, gpt_hp, causal_stack_hp, enc_stack_hp, enc_w8a8, "
               "gpt_w8a8, classifier_w8a8\n");
  return 2;
}
