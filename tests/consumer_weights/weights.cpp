// A user's program: the demo model's type, its weights compiled in by stf_embed_weights, loaded in
// place by stf::load_safetensors, and one greedy decoding whose logprob hash must be the committed one.
#include <statiformer/io/safetensors.hpp>
#include <statiformer/statiformer.hpp>

#include <cstdio>

#include "../../examples/demo/logprob_hash.hpp"
#include "demo_safetensors.hpp"

namespace {
// The trained demo (examples/demo/demo_weights.hpp): vocabulary 13, source 10, target 12, d_model 32,
// 4 heads, d_ff 64, 2 layers; tokens: bos 1, eos 2, digits from 3.
using Model = stf::Transformer<10, 12, 13, 13, 32, 4, 64, 2>;
Model model;
}  // namespace

int main() {
  const stf::LoadResult r = stf::load_safetensors(model.params, demo_safetensors, demo_safetensors_size, nullptr, 0);
  if (!r) {
    std::printf("load failed: %s: %s\n", stf::to_string(r.error), r.message);
    return 1;
  }
  const int src[] = {3 + 3, 3 + 1, 3 + 4, 3 + 1, 3 + 5};
  std::uint64_t hash = 0;
  stf::index_t steps = 0;
  if (stf_demo::logprob_hash(model, src, 5, 1, 2, hash, steps) != stf::Status::ok) return 1;
  std::printf("consumer_weights: logprob hash 0x%016llx (%zu steps)\n", static_cast<unsigned long long>(hash),
              static_cast<std::size_t>(steps));
  return hash == stf_demo::kCommittedLogprobHash ? 0 : 1;
}
