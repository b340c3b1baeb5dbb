// What every benchmark shares: deterministic pseudo-random weights and inputs in 64-byte aligned
// storage, as a model's exported weights (alignas(64) tensors) and arena are.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include <statiformer/statiformer.hpp>

namespace stf_bench {

template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{64}); }
  friend bool operator==(const AlignedAllocator&, const AlignedAllocator&) { return true; }
};

/// Floats starting on a 64-byte boundary.
using AlignedFloats = std::vector<float, AlignedAllocator<float>>;

/// Fills every parameter of `params` with pseudo-random values in [-0.1, 0.1) and binds it, each
/// parameter starting on a 64-byte boundary; the returned storage must outlive the parameters. The
/// values, in visit order, come from a 32-bit LCG (state 12345) that bench/peers/torch_bench.py
/// reproduces.
template <class Params>
AlignedFloats random_params(Params& params) {
  constexpr stf::index_t kAlignFloats = 16;
  stf::index_t total = 0;
  params.visit(
      [&](const stf::Name&, stf::ParamRef r) { total += (r.size() + kAlignFloats - 1) / kAlignFloats * kAlignFloats; },
      {});
  AlignedFloats storage(total);
  std::uint32_t state = 12345;
  stf::index_t offset = 0;
  params.visit(
      [&](const stf::Name&, stf::ParamRef r) {
        float* p = storage.data() + offset;
        for (stf::index_t i = 0; i < r.size(); ++i) {
          state = state * 1664525u + 1013904223u;
          p[i] = (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.2f;
        }
        *r.data = p;
        offset += (r.size() + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
      },
      {});
  return storage;
}

/// An input [n] in [-1, 1).
inline AlignedFloats random_input(stf::index_t n) {
  AlignedFloats x(n);
  for (stf::index_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 7919) % 101) / 50.0f - 1.0f;
  return x;
}

}  // namespace stf_bench
