// A fingerprint of the demo model's numerics, printed by the host demo and the firmware on every
// target: the 64-bit FNV-1a hash of the bytes of the per-step log-probabilities ([Vocab] floats per
// step, in order) of one greedy decoding. Equal hashes mean bit-identical outputs.
#pragma once

#include <cstddef>
#include <cstdint>

#include <statiformer/config.hpp>

namespace stf_demo {

inline constexpr std::uint64_t kFnv1aOffset = 14695981039346656037ull, kFnv1aPrime = 1099511628211ull;

/// The committed hash for the input "3 1 4 1 5": the same on x86-64 (scalar, AVX2, AVX-512), aarch64,
/// armv7, riscv64 and Cortex-M4/M7/M55, because every kernel variant follows one canonical order
/// (include/statiformer/kernels/api.hpp). A change here is a change of the arithmetic.
inline constexpr std::uint64_t kCommittedLogprobHash = 0x79fc619f2f7fc2abull;
/// The same for the int8 models (demo_weights_w8a8.hpp, demo_weights_w8a32.hpp; kernels/QUANTIZATION.md):
/// integer sums are exact and every float step keeps the canonical order, so they too are the same on
/// every target.
inline constexpr std::uint64_t kCommittedLogprobHashW8a8 = 0x572a7d5205436543ull,
                               kCommittedLogprobHashW8a32 = 0x62c1c8aba5de78adull;

inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = kFnv1aOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnv1aPrime;
  return h;
}

/// Greedy-decodes src[0..len) step by step (as greedy_decode does) and hashes every step's
/// log-probabilities; steps receives the number of steps.
template <class Model>
stf::Status logprob_hash(Model& model, const int* src, stf::index_t len, int bos, int eos, std::uint64_t& hash,
                         stf::index_t& steps) {
  if (stf::Status st = model.encode(src, len); st != stf::Status::ok) return st;
  float logprobs[Model::tgt_vocab];
  hash = kFnv1aOffset;
  steps = 0;
  int token = bos;
  for (stf::index_t n = 1; n < Model::tgt_len; ++n) {
    if (stf::Status st = model.step(token, logprobs); st != stf::Status::ok) return st;
    hash = fnv1a(logprobs, sizeof logprobs, hash);
    ++steps;
    stf::index_t best = 0;
    for (stf::index_t v = 1; v < Model::tgt_vocab; ++v) best = logprobs[v] > logprobs[best] ? v : best;
    token = static_cast<int>(best);
    if (token == eos) break;
  }
  return stf::Status::ok;
}

}  // namespace stf_demo
