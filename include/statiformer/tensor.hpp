// statiformer — tensors (owning, aligned, shape in the type) and views (pointer + static shape).
#pragma once

#include <cstdint>
#include <type_traits>

#include <statiformer/config.hpp>
#include <statiformer/shape/checks.hpp>

namespace stf {

/// Owning, aligned, fixed-shape float tensor. An aggregate: `Tensor<2, 3> t{{1, 2, 3, 4, 5, 6}};`
/// works in a `constexpr` initializer, so exported weights live in .rodata/flash.
template <index_t... Dims>
struct Tensor {
  static_assert(check::tensor_dims_positive<Dims...>());
  static constexpr index_t rank = sizeof...(Dims);
  static constexpr index_t size = (Dims * ...);
  alignas(kTensorAlign) float data[size];
};

/// Name + flat data of one parameter, as exported weight headers list them.
struct WeightEntry {
  const char* name;
  const float* data;
  index_t size;
  const std::int8_t* data_i8 = nullptr;  ///< an int8 weight (NumberFormat w8a32, w8a8): data is null then
};

template <index_t Rows, index_t Cols>
struct CMat;

/// Mutable view of a row-major [Rows, Cols] matrix. Costs one pointer.
template <index_t Rows, index_t Cols>
struct Mat {
  static constexpr index_t rows = Rows, cols = Cols, size = Rows * Cols;
  float* data = nullptr;

  constexpr Mat() = default;
  constexpr explicit Mat(float* p) : data(p) {}
  template <index_t R, index_t C>
  constexpr Mat(Tensor<R, C>& t) : data(t.data) {  // NOLINT: implicit on purpose
    static_assert(check::tensor_shape<R, C, Rows, Cols>());
  }
  constexpr float* row(index_t r) const { return data + r * Cols; }
  constexpr float& operator()(index_t r, index_t c) const { return data[r * Cols + c]; }
};

/// Read-only view of a row-major [Rows, Cols] matrix (activations, or a linear weight stored [In, Out]).
template <index_t Rows, index_t Cols>
struct CMat {
  static constexpr index_t rows = Rows, cols = Cols, size = Rows * Cols;
  const float* data = nullptr;

  constexpr CMat() = default;
  constexpr explicit CMat(const float* p) : data(p) {}
  template <index_t R, index_t C>
  constexpr CMat(const Tensor<R, C>& t) : data(t.data) {  // NOLINT: implicit on purpose
    static_assert(check::tensor_shape<R, C, Rows, Cols>());
  }
  template <index_t R, index_t C>
  constexpr CMat(Mat<R, C> m) : data(m.data) {  // NOLINT: implicit on purpose
    static_assert(check::tensor_shape<R, C, Rows, Cols>());
  }
  constexpr const float* row(index_t r) const { return data + r * Cols; }
  constexpr float operator()(index_t r, index_t c) const { return data[r * Cols + c]; }
};

/// Read-only view of a vector [N] (a bias, a LayerNorm gain).
template <index_t N>
struct CVec {
  static constexpr index_t size = N;
  const float* data = nullptr;

  constexpr CVec() = default;
  constexpr explicit CVec(const float* p) : data(p) {}
  template <index_t M>
  constexpr CVec(const Tensor<M>& t) : data(t.data) {  // NOLINT: implicit on purpose
    static_assert(check::vector_length<M, N>());
  }
  constexpr float operator[](index_t i) const { return data[i]; }
};

}  // namespace stf

namespace stf {

/// Rows/cols/data of anything matrix-like (Tensor<R, C>, Mat, CMat), so layers can accept any of
/// them and check their shape with a message that names the dimension.
template <class T>
struct matrix_traits;
template <index_t R, index_t C>
struct matrix_traits<Tensor<R, C>> {
  static constexpr index_t rows = R, cols = C;
};
template <index_t R, index_t C>
struct matrix_traits<Mat<R, C>> {
  static constexpr index_t rows = R, cols = C;
};
template <index_t R, index_t C>
struct matrix_traits<CMat<R, C>> {
  static constexpr index_t rows = R, cols = C;
};

template <class T>
concept MatrixLike = requires {
  matrix_traits<std::remove_cvref_t<T>>::rows;
};

template <class T>
inline constexpr index_t rows_of = matrix_traits<std::remove_cvref_t<T>>::rows;
template <class T>
inline constexpr index_t cols_of = matrix_traits<std::remove_cvref_t<T>>::cols;

template <index_t R, index_t C>
constexpr const float* data_of(const Tensor<R, C>& t) {
  return t.data;
}
template <index_t R, index_t C>
constexpr float* data_of(Tensor<R, C>& t) {
  return t.data;
}
template <index_t R, index_t C>
constexpr float* data_of(Mat<R, C> m) {
  return m.data;
}
template <index_t R, index_t C>
constexpr const float* data_of(CMat<R, C> m) {
  return m.data;
}

}  // namespace stf
