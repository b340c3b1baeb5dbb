// statiformer gpt example: a character-level decoder-only model (tools/train_gpt.py: GPT blocks,
// d_model 48, 4 heads, 2 layers, 64 positions, trained on Debian's GPL-3 text), compiled in with
// its weights (gpt_char_model.hpp, written by tools/export.py --emit-model), bound at compile time.
//
//   gpt                          check against PyTorch, then continue a few built-in prompts
//   gpt --prompt "TEXT"          continue TEXT (1 to 64 printable ASCII characters)
//   gpt --ids 52,72,73           continue token ids (0 = newline, 1..95 = ' '..'~')
//   gpt --new N                  how many characters to generate (default 48; fewer where the 64
//                                positions end)
//   gpt --seed S --temperature T --top-k K   the sampled continuation's settings (default 1, 0.8, 8)
//
// Prints the check (max |log-prob error| against PyTorch's stored ones, whether the greedy tokens
// are PyTorch's; exits 1 if not within 1e-4 or a token differs), each prompt's greedy and seeded
// sampled continuations, and the footprint. Bad input is one line on stderr and exit status 2.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <statiformer/statiformer.hpp>

#include "gpt_char_model.hpp"

namespace {
using namespace stf;
using Model = gpt_char::Model;
Model model;  // static: arena and K/V caches live in .bss

/// The vocabulary of tools/train_gpt.py: 0 = '\n', 1..95 = ' '..'~'; -1: not in it.
int to_token(char c) { return c == '\n' ? 0 : (c >= ' ' && c <= '~' ? c - 31 : -1); }
char to_char(int t) { return t == 0 ? '\n' : static_cast<char>(t + 31); }

void print_text(const int* ids, index_t n) {
  for (index_t i = 0; i < n; ++i) {
    const char c = to_char(ids[i]);
    if (c == '\n')
      std::fputs("\\n", stdout);
    else
      std::putchar(c);
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: gpt [--prompt TEXT | --ids I,J,...] [--new N] [--seed S] [--temperature T] [--top-k K]\n");
  return 2;
}

bool parse_long(const char* s, long lo, long hi, long& v) {
  char* end = nullptr;
  v = std::strtol(s, &end, 10);
  return *s && !*end && v >= lo && v <= hi;
}

/// Greedy and sampled continuations of prompt[0, n); false (after a message) if the library refuses.
bool continue_prompt(const int* prompt, index_t n, index_t max_new, const Sampler& sampled) {
  static int out[Model::seq_len + 1];
  index_t len = 0;
  std::printf("prompt   \"");
  print_text(prompt, n);
  std::printf("\"\n");
  for (const Sampler& s : {Sampler::argmax(), sampled}) {
    if (const Status st = model.generate(prompt, n, max_new, out, len, s); st != Status::ok) {
      std::fprintf(stderr, "gpt: generate refused the prompt: %s\n", to_string(st));
      return false;
    }
    std::printf(s.greedy ? "greedy   \"" : "sampled  \"");
    print_text(out, len);
    std::printf("\"\n");
  }
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  static int prompt[Model::seq_len + 1];
  index_t n = 0;
  bool given = false;
  long max_new = 48, seed = 1, top_k = 8;
  float temperature = 0.8f;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) return usage();
    ++i;
    if (std::strcmp(a, "--prompt") == 0) {
      const std::size_t len = std::strlen(v);
      if (len == 0 || len > Model::seq_len) {
        std::fprintf(stderr, "gpt: a prompt of %zu characters: the model holds 1 to %zu\n", len, Model::seq_len);
        return 2;
      }
      for (std::size_t k = 0; k < len; ++k) {
        const int t = to_token(v[k]);
        if (t < 0) {
          std::fprintf(stderr, "gpt: prompt character %zu (byte 0x%02x) is not in the vocabulary (printable ASCII)\n",
                       k, static_cast<unsigned>(static_cast<unsigned char>(v[k])));
          return 2;
        }
        prompt[k] = t;
      }
      n = len;
      given = true;
    } else if (std::strcmp(a, "--ids") == 0) {
      // the ids go to the library as they are: it checks the range (Status::token_out_of_range)
      n = 0;
      for (const char* p = v; *p;) {
        char* end = nullptr;
        const long id = std::strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || id < -1000000 || id > 1000000) return usage();
        if (n == Model::seq_len) {
          std::fprintf(stderr, "gpt: more than %zu token ids: the model holds 1 to %zu\n", Model::seq_len,
                       Model::seq_len);
          return 2;
        }
        prompt[n++] = static_cast<int>(id);
        p = *end ? end + 1 : end;
      }
      if (n == 0) return usage();
      given = true;
    } else if (std::strcmp(a, "--new") == 0) {
      if (!parse_long(v, 1, static_cast<long>(Model::seq_len), max_new)) return usage();
    } else if (std::strcmp(a, "--seed") == 0) {
      if (!parse_long(v, 0, 2147483647L, seed)) return usage();
    } else if (std::strcmp(a, "--top-k") == 0) {
      if (!parse_long(v, 1, static_cast<long>(Model::vocab), top_k)) return usage();
    } else if (std::strcmp(a, "--temperature") == 0) {
      char* end = nullptr;
      temperature = std::strtof(v, &end);
      if (!*v || *end || !(temperature > 0.0f && temperature <= 100.0f)) return usage();
    } else {
      return usage();
    }
  }

  model.params = gpt_char::bound_model_params;  // bound at compile time: no name lookup
  std::printf(
      "statiformer gpt: a character-level decoder-only model (%zu layers, d_model %zu, %zu heads, "
      "%zu positions, %zu tokens)\n\n",
      Model::n_layers, Model::d_model, Model::Layer::n_heads, Model::seq_len, Model::vocab);

  const gpt_char::CheckResult r = gpt_char::check(model);
  const bool ok = r.status == Status::ok && r.max_error <= 1e-4f && r.tokens_equal;
  std::printf(
      "check against PyTorch: max |log-prob error| %.3g over the prompt and %zu steps; %zu greedy tokens %s "
      "PyTorch's (its smallest top-2 gap %.3g): %s\n\n",
      static_cast<double>(r.max_error), gpt_char::test_new_tokens, r.tokens,
      r.tokens_equal ? "equal to" : "DIFFER from", static_cast<double>(gpt_char::test_min_margin),
      ok ? "matches PyTorch" : "DIFFERS from PyTorch");

  const Sampler sampled = Sampler::sample(temperature, static_cast<index_t>(top_k), static_cast<std::uint64_t>(seed));
  // as many new tokens as asked, within the capacity (every fed token needs a position)
  const auto room = [max_new](index_t len) {
    const index_t left = len <= Model::seq_len ? Model::seq_len + 1 - len : 0;
    return static_cast<index_t>(max_new) < left ? static_cast<index_t>(max_new) : left;
  };
  if (given) {
    if (!continue_prompt(prompt, n, room(n), sampled)) return 2;
  } else {
    for (const char* text : {"This License ", "You may convey ", "the GNU General "}) {
      n = 0;
      for (const char* c = text; *c; ++c) prompt[n++] = to_token(*c);
      if (!continue_prompt(prompt, n, room(n), sampled)) return 2;
      std::printf("\n");
    }
  }

  std::printf(
      "\nfootprint (constexpr): %zu parameters, weights %zu B + PE table %zu B (flash); arena %zu B + K/V "
      "caches %zu B (RAM); model object %zu B\n",
      Model::param_count, Model::weight_bytes, Model::const_bytes, Model::arena_bytes, Model::state_bytes,
      sizeof(Model));
  return ok ? 0 : 1;
}
