// statiformer — transpose, generic: register tiles where the vocabulary has them (transpose_tile),
// else element by element in cache blocks. See kernels/README.md.
#pragma once

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/transpose/select.hpp>
#include <type_traits>

namespace stf::kernels_detail::generic {

/// Copies a matrix transposed (Kᵀ for the attention): the same bits on every variant.
template <class Tag>
struct Transpose : Elementwise<Tag> {
  using typename Elementwise<Tag>::I;
  using Elementwise<Tag>::L;

  /// The rows [r0, r1) and columns [c0, c1) of a transpose, element by element in 16 × 16 blocks
  /// (the writes of a block's column stay within a few cache lines).
  static void transpose_elements(const float* src, index_t r0, index_t r1, index_t c0, index_t c1, index_t ld_src,
                                 float* dst, index_t ld_dst) {
    constexpr index_t T = 16;
    for (index_t rb = r0; rb < r1; rb += T) {
      const index_t re = r1 - rb < T ? r1 : rb + T;
      for (index_t cb = c0; cb < c1; cb += T) {
        const index_t ce = c1 - cb < T ? c1 : cb + T;
        for (index_t c = cb; c < ce; ++c)
          for (index_t r = rb; r < re; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
      }
    }
  }
  /// dst[c, r] = src[r, c]: L × L tiles transposed in registers where the vocabulary has them
  /// (transpose_tile), the edges element by element; the target's whole transpose where it has one
  /// (TransposeSelect::Whole).
  static void transpose(const float* src, index_t rows, index_t cols, index_t ld_src, float* dst, index_t ld_dst) {
    using Whole = typename TransposeSelect<Tag>::Whole;
    if constexpr (!std::is_void_v<Whole>) {
      Whole::transpose(src, rows, cols, ld_src, dst, ld_dst);
    } else if constexpr (TransposeSelect<Tag>::register_tiles) {
      const index_t rt = rows / L * L, ct = cols / L * L;
      for (index_t r = 0; r < rt; r += L)
        for (index_t c = 0; c < ct; c += L)
          I::transpose_tile(src + r * ld_src + c, ld_src, dst + c * ld_dst + r, ld_dst);
      transpose_elements(src, 0, rows, ct, cols, ld_src, dst, ld_dst);  // the last columns, every row
      transpose_elements(src, rt, rows, 0, ct, ld_src, dst, ld_dst);    // the last rows, the other columns
    } else {
      transpose_elements(src, 0, rows, 0, cols, ld_src, dst, ld_dst);
    }
  }
};

}  // namespace stf::kernels_detail::generic
