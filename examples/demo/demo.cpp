// statiformer demo: a small encoder-decoder, trained in PyTorch to reverse digit sequences
// (tools/train_demo.py), compiled in with its weights (demo_weights.hpp), greedy-decoded with a
// key/value cache, with no heap.
//
//   demo                      decode a few built-in inputs
//   demo --input "3 1 4 1 5"  decode one input (1 to 10 digits)
//   demo --repeat N           run every inference N times (same output; latency averaged)
//   demo --csv                the summary and the per-layer latency as CSV instead of tables
//   demo --int8               the same model with int8 linears (w8a8: weights and the linears' inputs
//                             int8; demo_weights_w8a8.hpp), --w8a32 with int8 weights only
//                             (kernels/QUANTIZATION.md)
//
// Prints each decoding (and fails if it is not the reversed input), the model summary with the
// weight and arena bytes, and the per-layer latency on this machine (the library's printers,
// graph/summary.hpp; rows named as the weights are: encoder.layers.0, ...).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <statiformer/statiformer.hpp>

#include "demo_model.hpp"
#include "demo_weights_w8a32.hpp"
#include "demo_weights_w8a8.hpp"
#include "logprob_hash.hpp"

namespace {
using namespace stf;
namespace dm = stf_demo;

using dm::Input;
using dm::parse_digits;
// static: arenas and caches live in .bss
dm::Model model_f32;
stf_demo_w8a8::Model model_w8a8;
stf_demo_w8a32::Model model_w8a32;

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
template <class Model>
int run(Model& model, BindResult bound, const char* format, std::uint64_t committed_hash, const Input* inputs,
        index_t n_inputs, long repeat, bool csv);
}  // namespace

int main(int argc, char** argv) {
  Input inputs[8];
  index_t n_inputs = 0;
  long repeat = 1;
  bool csv = false;
  const char* format = "float32";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
      if (n_inputs == 8 || !parse_digits(argv[++i], inputs[n_inputs])) {
        std::fprintf(stderr, "demo: --input takes 1 to %zu digits 0-9, e.g. --input \"3 1 4 1 5\"\n", dm::kSrcLen);
        return 2;
      }
      ++n_inputs;
    } else if (std::strcmp(argv[i], "--csv") == 0) {
      csv = true;
    } else if (std::strcmp(argv[i], "--int8") == 0) {
      format = "w8a8";
    } else if (std::strcmp(argv[i], "--w8a32") == 0) {
      format = "w8a32";
    } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      char* end = nullptr;
      repeat = std::strtol(argv[++i], &end, 10);
      if (*end || repeat < 1 || repeat > 1000000) {
        std::fprintf(stderr, "demo: --repeat takes a count from 1 to 1000000\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: demo [--input \"3 1 4 1 5\"]... [--repeat N] [--csv] [--int8 | --w8a32]\n");
      return 2;
    }
  }
  if (n_inputs == 0) {
    const char* defaults[] = {"3 1 4 1 5", "2 7 1 8 2 8 1 8 2 8", "9", "0 1 2 3 4 5 6 7 8 9", "6 6 6 0"};
    for (const char* d : defaults) (void)parse_digits(d, inputs[n_inputs++]);
  }

  if (std::strcmp(format, "w8a8") == 0)
    return run(model_w8a8, stf_demo_w8a8::bind(model_w8a8.params), format, dm::kCommittedLogprobHashW8a8, inputs,
               n_inputs, repeat, csv);
  if (std::strcmp(format, "w8a32") == 0)
    return run(model_w8a32, stf_demo_w8a32::bind(model_w8a32.params), format, dm::kCommittedLogprobHashW8a32, inputs,
               n_inputs, repeat, csv);
  return run(model_f32, bind_table(model_f32.params, dm::weights::table), format, dm::kCommittedLogprobHash, inputs,
             n_inputs, repeat, csv);
}

namespace {
/// Binds, decodes each input, checks the hash of the first (when it is the reference input "3 1 4 1
/// 5"), prints the summary and the per-layer latency: the demo in one number format.
template <class Model>
int run(Model& model, BindResult bound, const char* number_format, std::uint64_t committed_hash, const Input* inputs,
        index_t n_inputs, long repeat, bool csv) {
  if (!bound) {
    std::fprintf(stderr, "demo: binding weights failed at %s: %s\n", bound.name.c_str(), to_string(bound.status));
    return 1;
  }

  std::printf(
      "statiformer demo: reverse a digit sequence (encoder-decoder, %zu+%zu layers, d_model %zu, %zu heads; %s)\n\n",
      dm::kNLayers, dm::kNLayers, dm::kDModel, dm::kNHeads, number_format);
  Profiler prof(now_ns);
  int wrong = 0;
  for (index_t k = 0; k < n_inputs; ++k) {
    const Input& in = inputs[k];
    int src[dm::kSrcLen] = {};
    for (index_t i = 0; i < in.len; ++i) src[i] = dm::kDigit0 + in.digits[i];
    int out[dm::kTgtLen];
    index_t n = 0, n_first = 0;
    int first[dm::kTgtLen];
    for (long rep = 0; rep < repeat; ++rep) {
      if (Status st = model.greedy_decode(src, in.len, dm::kBos, dm::kEos, out, n, prof); st != Status::ok) {
        std::fprintf(stderr, "demo: decoding failed: %s\n", to_string(st));
        return 1;
      }
      if (rep == 0) {
        n_first = n;
        std::memcpy(first, out, sizeof out);
      } else if (n != n_first || std::memcmp(first, out, n * sizeof(int)) != 0) {
        std::fprintf(stderr, "demo: repetition %ld decoded differently\n", rep);
        return 1;
      }
    }
    // the answer: BOS, the digits reversed, EOS
    bool ok = n == in.len + 2 && out[0] == dm::kBos && out[n - 1] == dm::kEos;
    for (index_t i = 0; ok && i < in.len; ++i) ok = out[1 + i] == dm::kDigit0 + in.digits[in.len - 1 - i];
    wrong += !ok;
    std::printf("  input  ");
    for (index_t i = 0; i < in.len; ++i) std::printf("%d ", in.digits[i]);
    std::printf("%*s->  output ", static_cast<int>(2 * (dm::kSrcLen - in.len)), "");
    for (index_t i = 1; i < n; ++i) {
      if (out[i] == dm::kEos)
        std::printf("<eos>");
      else if (out[i] >= dm::kDigit0)
        std::printf("%d ", out[i] - dm::kDigit0);
      else
        std::printf("<%d> ", out[i]);
    }
    std::printf("  %s\n", ok ? "correct" : "WRONG");
  }

  {  // the cross-target fingerprint of the numerics (the firmware prints the same line)
    int src[dm::kSrcLen] = {};
    for (index_t i = 0; i < inputs[0].len; ++i) src[i] = dm::kDigit0 + inputs[0].digits[i];
    std::uint64_t hash = 0;
    index_t steps = 0;
    if (dm::logprob_hash(model, src, inputs[0].len, dm::kBos, dm::kEos, hash, steps) != Status::ok) return 1;
    std::printf("\nlogprob hash of \"");
    for (index_t i = 0; i < inputs[0].len; ++i) std::printf(i ? " %d" : "%d", inputs[0].digits[i]);
    std::printf("\" (FNV-1a 64 of the per-step log-probabilities, %zu steps): 0x%016llx\n", steps,
                static_cast<unsigned long long>(hash));
    const bool reference_input = inputs[0].len == 5 && inputs[0].digits[0] == 3 && inputs[0].digits[1] == 1 &&
                                 inputs[0].digits[2] == 4 && inputs[0].digits[3] == 1 && inputs[0].digits[4] == 5;
    if (reference_input && hash != committed_hash) {
      std::printf("the log-probabilities differ from the committed hash 0x%016llx\n",
                  static_cast<unsigned long long>(committed_hash));
      return 1;
    }
  }

  auto print_line = [](const char* line) { std::printf("  %s\n", line); };
  auto print_csv = [](const char* line) { std::printf("%s\n", line); };
  const ProfileFormat format{"ns", static_cast<std::uint64_t>(repeat) * n_inputs};
  if (csv) {
    std::printf("\nmodel summary (CSV)\n");
    print_summary_csv(Model::summary_table(), print_csv);
    std::printf("\nper-layer latency on this machine (CSV; ns_per_run: per inference)\n");
    print_profile_csv(prof, print_csv, format);
  } else {
    std::printf("\nmodel summary\n");
    Model::summary(print_line);
    std::printf(
        "\nper-layer latency on this machine (ns/run: mean per inference over %zu inferences; decoder rows sum all "
        "steps)\n",
        static_cast<index_t>(format.runs));
    print_profile(prof, print_line, format);
  }
  std::printf("\n%s\n", wrong ? "SOME DECODINGS ARE WRONG" : "all decodings correct");
  return wrong ? 1 : 0;
}
}  // namespace
