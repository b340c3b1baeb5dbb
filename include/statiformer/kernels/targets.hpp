// statiformer — the target-specific kernels each target contributes, in one place. Generic<Tag>
// (kernels/generic.hpp) runs every operation on the vocabulary isa::Vocabulary<Tag>; where a
// target has its own kernel for an operation (assembly, usually), TargetKernels<Tag> lists the
// per-operation structs that provide it, and Generic calls it through K = TargetKernels<Tag>.
// File names follow kernels/README.md: kernels/<op>/<target>.hpp.
#pragma once

#include <statiformer/simd/isa.hpp>

// Each target's headers compile to nothing where its instructions are not enabled. The order is
// deliberate (product, elementwise, norm, attention, each block on its own so that clang-format
// keeps it): it is the order these kernels had inside the vocabularies, and GCC's inlining breaks
// ties by declaration order (alphabetical order: the same instruction counts, but 1,080 B more
// .text on the M55, tile_nv instantiated differently).
#include <statiformer/kernels/product/cortex_m4f.hpp>
//
#include <statiformer/kernels/elementwise/cortex_m4f.hpp>
//
#include <statiformer/kernels/norm/cortex_m4f.hpp>
//
#include <statiformer/kernels/attention/cortex_m4f.hpp>
//
#include <statiformer/kernels/product/helium.hpp>
//
#include <statiformer/kernels/elementwise/helium.hpp>
//
#include <statiformer/kernels/norm/helium.hpp>
//
#include <statiformer/kernels/attention/helium.hpp>
// the explicit per-operation selections (so far: norm), after every target's kernels
#include <statiformer/kernels/norm/select.hpp>

namespace stf::kernels_detail {

/// The kernels target `Tag` runs instead of Generic's own: none, unless specialized below.
template <class Tag>
struct TargetKernels {};

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
/// Cortex-M4F / M7 (and the M55's scalar variant): the scalar vocabulary plus
///  - product:     tile4 (1..6 rows × 4 outputs), linear_panels
///  - attention:   attention_prefix_rows (groups of 1..6 rows over keys [0, e))
///  - elementwise: div_n, add_n
///  - norm:        layer_norm16, selected explicitly in kernels/norm/select.hpp
template <>
struct TargetKernels<isa::scalar> : cortex_m4f::Product, cortex_m4f::Attention, cortex_m4f::Elementwise {};
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
/// Cortex-M55 (Helium): the mve vocabulary plus
///  - product:     row_tile (2..4 rows, vectors across the rows), linear_panels
///  - attention:   attention_prefix_rows (groups of 2, 3, 4, 6 rows over keys [0, e))
///  - elementwise: exp_shifted, add_n
///  - norm:        layer_norm16, selected explicitly in kernels/norm/select.hpp
template <>
struct TargetKernels<isa::mve> : helium::Product, helium::Attention, helium::Elementwise {};
#endif

}  // namespace stf::kernels_detail
