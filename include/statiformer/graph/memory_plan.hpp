// statiformer — compile-time activation memory planner.
//
// A model lists its temporary buffers with their lifetimes (first and last step that uses them);
// the planner places them in one arena, greedily by decreasing size, each at the lowest offset
// that does not overlap a placed buffer whose lifetime intersects (TFLM's greedy planner, run by
// the compiler). Buffers that are never alive at the same time share bytes.
#pragma once

#include <array>

#include <statiformer/config.hpp>

namespace stf {

struct BufferUse {
  index_t floats;  ///< size
  index_t first;   ///< first step that uses it
  index_t last;    ///< last step that uses it (inclusive)
};

template <index_t N>
struct MemoryPlan {
  std::array<index_t, N> offset{};  ///< in floats, each a multiple of the tensor alignment
  index_t arena_floats = 0;
  index_t sum_floats = 0;  ///< what one buffer per use would cost (for reports)
};

constexpr index_t align_floats(index_t n) {
  constexpr index_t a = kTensorAlign / sizeof(float);
  return (n + a - 1) / a * a;
}

template <index_t N>
constexpr MemoryPlan<N> plan_memory(const std::array<BufferUse, N>& uses) {
  MemoryPlan<N> plan{};
  std::array<index_t, N> order{};
  for (index_t i = 0; i < N; ++i) order[i] = i;
  // sort by decreasing size, stable on index (insertion sort: N is small)
  for (index_t i = 1; i < N; ++i)
    for (index_t j = i; j > 0 && uses[order[j]].floats > uses[order[j - 1]].floats; --j) {
      const index_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  std::array<bool, N> placed{};
  for (index_t k = 0; k < N; ++k) {
    const index_t b = order[k];
    const index_t size = align_floats(uses[b].floats);
    plan.sum_floats += size;
    index_t offset = 0;
    bool moved = true;
    while (moved) {  // first fit: bump past every conflicting placed buffer until none overlaps
      moved = false;
      for (index_t o = 0; o < N; ++o) {
        if (!placed[o] || uses[o].last < uses[b].first || uses[b].last < uses[o].first) continue;
        const index_t o_begin = plan.offset[o], o_end = o_begin + align_floats(uses[o].floats);
        if (offset < o_end && o_begin < offset + size) {
          offset = o_end;
          moved = true;
        }
      }
    }
    plan.offset[b] = offset;
    placed[b] = true;
    if (offset + size > plan.arena_floats) plan.arena_floats = offset + size;
  }
  return plan;
}

}  // namespace stf
