// Deterministic pseudo-random test inputs (an LCG: the same values on every target).
#pragma once

#include <cstdint>
#include <vector>

#include <statiformer/config.hpp>

namespace stf_test {

/// n values uniform in [-scale, scale), from seed.
inline std::vector<float> data(stf::index_t n, std::uint32_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = (static_cast<float>(seed >> 8) / 16777216.0f - 0.5f) * 2.0f * scale;
  }
  return v;
}

}  // namespace stf_test
