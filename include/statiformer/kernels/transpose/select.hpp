// statiformer — transpose: which variant each target runs, readable in one place (the generic
// transpose asks it). The same shape as kernels/norm/select.hpp.
#pragma once

#include <statiformer/kernels/transpose/helium.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::kernels_detail {

/// Transpose on target `Tag`: generic (kernels/transpose/generic.hpp) on every target but the
/// Cortex-M55; where `register_tiles` is true (x86: AVX2, AVX-512), whole L × L tiles go through
/// the vocabulary's transpose_tile (simd/x86_<isa>.hpp, shuffles in registers), the edges element
/// by element. `Whole`: the struct whose transpose does all of it (helium on mve: gathers along
/// the columns, kernels/transpose/helium.hpp), void where the generic code runs.
template <class Tag>
struct TransposeSelect {
  static constexpr const char* variant = "generic";
  using Whole = void;
  static constexpr bool register_tiles = false;
};

template <>
struct TransposeSelect<isa::avx2> {
  static constexpr const char* variant = "generic";
  using Whole = void;
  static constexpr bool register_tiles = true;
};

template <>
struct TransposeSelect<isa::avx512> {
  static constexpr const char* variant = "generic";
  using Whole = void;
  static constexpr bool register_tiles = true;
};

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
template <>
struct TransposeSelect<isa::mve> {
  static constexpr const char* variant = "helium";
  using Whole = helium::Transpose;
  static constexpr bool register_tiles = false;
};
#endif

}  // namespace stf::kernels_detail
