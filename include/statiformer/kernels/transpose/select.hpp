// statiformer — transpose: which variant each target runs, readable in one place (the generic
// transpose asks it). The same shape as kernels/norm/select.hpp.
#pragma once

#include <statiformer/simd/isa.hpp>

namespace stf::kernels_detail {

/// Transpose on target `Tag`: generic on every target (kernels/transpose/generic.hpp); where
/// `register_tiles` is true (x86: AVX2, AVX-512), whole L × L tiles go through the vocabulary's
/// transpose_tile (simd/x86_<isa>.hpp, shuffles in registers), the edges element by element.
template <class Tag>
struct TransposeSelect {
  static constexpr const char* variant = "generic";
  static constexpr bool register_tiles = false;
};

template <>
struct TransposeSelect<isa::avx2> {
  static constexpr const char* variant = "generic";
  static constexpr bool register_tiles = true;
};

template <>
struct TransposeSelect<isa::avx512> {
  static constexpr const char* variant = "generic";
  static constexpr bool register_tiles = true;
};

}  // namespace stf::kernels_detail
