// The demo model with its weights in a .safetensors file compiled into the binary
// (stf_embed_weights, cmake/EmbedWeights.cmake): tools/export.py wrote the file from
// tools/demo_model.pt; stf::load_safetensors checks it and binds the tensors in place (the file's
// data region is 64-byte aligned, so no copy and no RAM for the weights). A damaged file is
// rejected with a message and leaves the model as it was.
#include <cstdio>
#include <cstring>

#include <statiformer/io/safetensors.hpp>

#include "../demo/demo_model.hpp"
#include "../demo/logprob_hash.hpp"
#include "stf_demo_safetensors.hpp"

namespace dm = stf_demo;

namespace {
dm::Model model;  // static: arena and K/V cache are inside the object
}  // namespace

int main() {
  // No storage: every tensor must be bound in place.
  const stf::LoadResult r =
      stf::load_safetensors(model.params, stf_demo_safetensors, stf_demo_safetensors_size, nullptr, 0);
  if (!r) {
    std::printf("load failed: %s: %s\n", stf::to_string(r.error), r.message);
    return 1;
  }
  std::printf("loaded %zu parameters (%zu bytes) in place from the embedded %zu-byte safetensors file\n",
              static_cast<std::size_t>(dm::Model::param_count), static_cast<std::size_t>(dm::Model::weight_bytes),
              stf_demo_safetensors_size);

  // A truncated file is rejected, naming the tensor; the model keeps the weights it has.
  const stf::LoadResult bad =
      stf::load_safetensors(model.params, stf_demo_safetensors, stf_demo_safetensors_size - 4, nullptr, 0);
  std::printf("truncated file: %s: %s\n", stf::to_string(bad.error), bad.message);
  if (bad) return 1;

  const int src[] = {dm::kDigit0 + 3, dm::kDigit0 + 1, dm::kDigit0 + 4, dm::kDigit0 + 1, dm::kDigit0 + 5};
  std::uint64_t hash = 0;
  stf::index_t steps = 0;
  if (dm::logprob_hash(model, src, 5, dm::kBos, dm::kEos, hash, steps) != stf::Status::ok) return 1;
  const bool same = hash == dm::kCommittedLogprobHash;
  std::printf("logprob hash of \"3 1 4 1 5\" (%zu steps): 0x%016llx, %s the compiled-in weights' committed hash\n",
              static_cast<std::size_t>(steps), static_cast<unsigned long long>(hash),
              same ? "equal to" : "DIFFERENT from");
  return same ? 0 : 1;
}
