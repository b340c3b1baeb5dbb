// statiformer — LayerNorm: which variant each target runs, readable in one place (the generic
// layer_norm_rows asks it). The other operations' selections have the same shape:
// kernels/<op>/select.hpp.
#pragma once

#include <statiformer/kernels/norm/cortex_m4f.hpp>
#include <statiformer/kernels/norm/helium.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::kernels_detail {

/// LayerNorm rows on target `Tag`:
///   generic     every target: the generic code on the vocabulary, rows staged in groups;
///   cortex_m4f  Cortex-M4F/M7 (the scalar vocabulary on Arm M-profile with an FPU), and
///   helium      Cortex-M55 (mve): their layer_norm16 (kernels/norm/<target>.hpp) for rows of
///               the torch kind whose length is a multiple of 16, row by row; other rows generic.
/// `Row16` is the struct that provides layer_norm16, void where the generic code runs alone.
/// `fold_rows` (x86: AVX2, AVX-512): the generic code folds a group's 16-lane sums across the rows
/// with the vocabulary's reduce16_rows and takes the statistics' steps as vector operations (groups
/// of two rows or more; one row goes the plain way).
template <class Tag>
struct NormSelect {
  static constexpr const char* variant = "generic";
  using Row16 = void;
  static constexpr bool fold_rows = false;
};

template <>
struct NormSelect<isa::avx2> {
  static constexpr const char* variant = "generic";
  using Row16 = void;
  static constexpr bool fold_rows = true;
};

template <>
struct NormSelect<isa::avx512> {
  static constexpr const char* variant = "generic";
  using Row16 = void;
  static constexpr bool fold_rows = true;
};

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
template <>
struct NormSelect<isa::scalar> {
  static constexpr const char* variant = "cortex_m4f";
  using Row16 = cortex_m4f::Norm;
  static constexpr bool fold_rows = false;
};
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
template <>
struct NormSelect<isa::mve> {
  static constexpr const char* variant = "helium";
  using Row16 = helium::Norm;
  static constexpr bool fold_rows = false;
};
#endif

}  // namespace stf::kernels_detail
