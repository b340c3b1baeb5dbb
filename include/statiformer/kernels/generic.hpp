// statiformer — Kernels<Tag>, the interface of kernels/api.hpp, defined from each operation's generic
// kernel struct (kernels/<op>/generic.hpp, written once on the SIMD vocabulary I =
// isa::Vocabulary<Tag>, in the canonical order), which calls a target's own kernels where the
// operation's selection (kernels/<op>/select.hpp) names them. Included only by
// src/kernels/variant_<isa>.cpp, each compiled with its ISA's flags; layers see only kernels/api.hpp.
#pragma once

#include <statiformer/kernels/api.hpp>
#include <statiformer/simd/math.hpp>
#include <statiformer/simd/scalar.hpp>

// The targets' kernels (kernels/<op>/<target>.hpp; each compiles to nothing where its target's
// instructions are not enabled). Each operation's select.hpp includes its own; they come first here,
// in this order, on purpose (product, elementwise, norm, attention, each block on its own so that
// clang-format keeps it): it is the order these kernels had inside the vocabularies, and GCC's
// inlining breaks ties by declaration order (alphabetical order: the same instruction counts, but
// 1,080 B more .text on the M55, tile_nv instantiated differently). A variant's parts
// (<target>_<part>.hpp) come where their code was: just before the file that includes them.
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
#include <statiformer/kernels/attention/helium_scores.hpp>
//
#include <statiformer/kernels/attention/helium_values.hpp>
//
#include <statiformer/kernels/attention/helium.hpp>
//
#include <statiformer/kernels/attention/helium_int8.hpp>
//
#include <statiformer/kernels/attention/neon_int8.hpp>
// each operation's generic kernels, which ask its selection which variant runs
#include <statiformer/kernels/attention/generic.hpp>
#include <statiformer/kernels/attention/int8.hpp>
#include <statiformer/kernels/elementwise/generic.hpp>
#include <statiformer/kernels/norm/generic.hpp>
#include <statiformer/kernels/product/generic.hpp>
#include <statiformer/kernels/product/int8.hpp>
#include <statiformer/kernels/softmax/generic.hpp>
#include <statiformer/kernels/transpose/generic.hpp>

namespace stf {

// Kernels<Tag>'s members, each from its operation's generic struct; each variant translation unit instantiates
// them for its own tag: `template struct stf::Kernels<stf::isa::avx2>;`.
template <class Tag>
void Kernels<Tag>::linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out,
                          float* y, Fuse act) noexcept {
  kernels_detail::generic::Product<Tag>::linear(x, rows, in, w, bias, out, y, act);
}
template <class Tag>
void Kernels<Tag>::linear_block(const float* x, index_t ldx, index_t rows, index_t in, WeightBlock w, index_t out,
                                float* y, index_t ldy, const float* bias, bool accumulate, Fuse act) noexcept {
  kernels_detail::generic::Product<Tag>::linear_block(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act);
}
template <class Tag>
void Kernels<Tag>::linears(const float* x, index_t rows, index_t in, const F32Linear* linears, index_t count) noexcept {
  kernels_detail::generic::Product<Tag>::linears(x, rows, in, linears, count);
}
template <class Tag>
void Kernels<Tag>::linear_w8a8(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w,
                               const float* bias, index_t out, float* y, std::int8_t* scratch, Fuse act) noexcept {
  const W8a8Linear one{qw, s_w, bias, out, y, act};
  kernels_detail::generic::ProductInt8<Tag>::linears_w8a8(x, rows, in, &one, 1, scratch);
}
template <class Tag>
void Kernels<Tag>::linears_w8a8(const float* x, index_t rows, index_t in, const W8a8Linear* linears, index_t count,
                                std::int8_t* scratch) noexcept {
  kernels_detail::generic::ProductInt8<Tag>::linears_w8a8(x, rows, in, linears, count, scratch);
}
template <class Tag>
void Kernels<Tag>::linear_w8a32(const float* x, index_t rows, index_t in, const std::int8_t* qw, const float* s_w,
                                const float* bias, index_t out, float* y, float* scratch, Fuse act) noexcept {
  kernels_detail::generic::ProductInt8<Tag>::linear_w8a32(x, rows, in, qw, s_w, bias, out, y, scratch, act);
}
template <class Tag>
void Kernels<Tag>::quantize_rows(const float* x, index_t ldx, index_t rows, index_t k, std::int8_t* q, index_t ldq,
                                 float* s) noexcept {
  kernels_detail::generic::ProductInt8<Tag>::quantize_rows(x, ldx, rows, k, q, ldq, s);
}
template <class Tag>
void Kernels<Tag>::attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q, index_t n_rows,
                                       const std::int8_t* k, index_t k_stride, const float* s_k, const std::int8_t* v,
                                       index_t v_stride, const float* s_v, index_t head_dim, index_t n_keys,
                                       const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                       index_t out_stride) noexcept {
  kernels_detail::generic::AttentionInt8<Tag>::attention_rows_w8a8(
      q, q_stride, s_q, n_rows, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks, fill, p, out, out_stride);
}
template <class Tag>
void Kernels<Tag>::attention_row(const float* q, const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                                 index_t head_dim, index_t n_keys, ref::RowMask mask, MaskFill fill, float* p,
                                 float* out) noexcept {
  kernels_detail::generic::Attention<Tag>::attention_row(q, kt, kt_stride, v, v_stride, head_dim, n_keys, mask, fill, p,
                                                         out);
}
template <class Tag>
void Kernels<Tag>::attention_heads(const float* q, index_t n_heads, const float* kt, index_t kt_stride, const float* v,
                                   index_t v_stride, index_t head_dim, index_t n_keys, ref::RowMask mask, MaskFill fill,
                                   float* p, float* out) noexcept {
  kernels_detail::generic::Attention<Tag>::attention_heads(q, n_heads, kt, kt_stride, v, v_stride, head_dim, n_keys,
                                                           mask, fill, p, out);
}
template <class Tag>
void Kernels<Tag>::attention_rows(const float* q, index_t q_stride, index_t n_rows, const float* kt, index_t kt_stride,
                                  const float* v, index_t v_stride, index_t head_dim, index_t n_keys,
                                  const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                  index_t out_stride) noexcept {
  kernels_detail::generic::Attention<Tag>::attention_rows(q, q_stride, n_rows, kt, kt_stride, v, v_stride, head_dim,
                                                          n_keys, masks, fill, p, out, out_stride);
}
template <class Tag>
void Kernels<Tag>::attention_rows_heads(const float* q, index_t q_stride, index_t n_rows, index_t n_heads,
                                        const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                                        index_t head_dim, index_t n_keys, const ref::RowMask* masks, MaskFill fill,
                                        float* p, float* out, index_t out_stride) noexcept {
  kernels_detail::generic::Attention<Tag>::attention_rows_heads(
      q, q_stride, n_rows, n_heads, kt, kt_stride, v, v_stride, head_dim, n_keys, masks, fill, p, out, out_stride);
}
template <class Tag>
bool Kernels<Tag>::attention_lane_rows_heads(const float* q, index_t q_stride, index_t n_rows, index_t n_heads,
                                             const float* k, index_t k_stride, const float* v, index_t v_stride,
                                             index_t head_dim, index_t n_keys, const ref::RowMask* masks, bool one_mask,
                                             float* out, index_t out_stride) noexcept {
  return kernels_detail::generic::Attention<Tag>::attention_lane_rows_heads(
      q, q_stride, n_rows, n_heads, k, k_stride, v, v_stride, head_dim, n_keys, masks, one_mask, out, out_stride);
}
template <class Tag>
void Kernels<Tag>::attention_rows_weights(const float* q, index_t q_stride, index_t n_rows, const float* kt,
                                          index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                          index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* weights,
                                          float* out, index_t out_stride) noexcept {
  kernels_detail::generic::Attention<Tag>::attention_rows_weights(
      q, q_stride, n_rows, kt, kt_stride, v, v_stride, head_dim, n_keys, masks, fill, weights, out, out_stride);
}
template <class Tag>
void Kernels<Tag>::layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind,
                                  float eps, float* y) noexcept {
  kernels_detail::generic::Norm<Tag>::layer_norm_row(x, gain, bias, n, kind, eps, y);
}
template <class Tag>
void Kernels<Tag>::layer_norm_rows(const float* x, index_t rows, const float* gain, const float* bias, index_t n,
                                   LayerNormKind kind, float eps, float* y) noexcept {
  kernels_detail::generic::Norm<Tag>::layer_norm_rows(x, rows, gain, bias, n, kind, eps, y);
}
template <class Tag>
void Kernels<Tag>::add_layer_norm_rows(float* a, const float* x, index_t rows, const float* gain, const float* bias,
                                       index_t n, LayerNormKind kind, float eps, float* y) noexcept {
  kernels_detail::generic::Norm<Tag>::add_layer_norm_rows(a, x, rows, gain, bias, n, kind, eps, y);
}
template <class Tag>
void Kernels<Tag>::log_softmax_row(float* x, index_t n) noexcept {
  kernels_detail::generic::Softmax<Tag>::log_softmax_row(x, n);
}
template <class Tag>
void Kernels<Tag>::activation(Activation a, float* x, index_t n) noexcept {
  kernels_detail::generic::Elementwise<Tag>::activation(a, x, n);
}
template <class Tag>
void Kernels<Tag>::add(float* y, const float* x, index_t n) noexcept {
  kernels_detail::generic::Elementwise<Tag>::add(y, x, n);
}
template <class Tag>
void Kernels<Tag>::transpose(const float* src, index_t rows, index_t cols, index_t ld_src, float* dst,
                             index_t ld_dst) noexcept {
  kernels_detail::generic::Transpose<Tag>::transpose(src, rows, cols, ld_src, dst, ld_dst);
}
template <class Tag>
float Kernels<Tag>::dot(const float* a, const float* b, index_t n) noexcept {
  return kernels_detail::generic::Elementwise<Tag>::dot(a, b, n);
}
template <class Tag>
float Kernels<Tag>::sum(const float* x, index_t n) noexcept {
  return kernels_detail::generic::Elementwise<Tag>::sum(x, n);
}
template <class Tag>
void Kernels<Tag>::exp(const float* x, float* y, index_t n) noexcept {
  using G = kernels_detail::generic::Elementwise<Tag>;
  G::map(x, y, n, [](typename G::V v) { return G::exp_v(v); });
}
template <class Tag>
void Kernels<Tag>::log(const float* x, float* y, index_t n) noexcept {
  using G = kernels_detail::generic::Elementwise<Tag>;
  G::map(x, y, n, [](typename G::V v) { return simd_math::log<typename G::I>(v); });
}
template <class Tag>
void Kernels<Tag>::gelu(const float* x, float* y, index_t n) noexcept {
  using G = kernels_detail::generic::Elementwise<Tag>;
  G::map(x, y, n, [](typename G::V v) { return simd_math::gelu<typename G::I>(v); });
}
template <class Tag>
bool Kernels<Tag>::supported() noexcept {
  return isa::Vocabulary<Tag>::supported();
}
template <class Tag>
const char* Kernels<Tag>::name() noexcept {
  return isa::Vocabulary<Tag>::name;
}

}  // namespace stf
