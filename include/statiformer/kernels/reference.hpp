// statiformer — reference kernels: the oracle for every optimized variant. Never optimize these.
//
// Declared here, defined once in src/kernels/reference.cpp. Kernels are shape-erased (pointers + runtime dims) so that
// flash does not grow with every model shape; the layers in layers/ are the thin shape-typed wrappers. Every reduction
// runs in one fixed order: each output of a matrix product accumulates over the reduction dimension in sequence with a
// fused multiply-add, starting from 0, and the bias is added last. Optimized variants reproduce exactly this order, so
// their output bits equal these.
#pragma once

#include <cstdint>

#include <statiformer/config.hpp>
#include <statiformer/math.hpp>

namespace stf::ref {

/// dot(a, b) over n elements, accumulated in sequence with fma.
float dot(const float* a, const float* b, index_t n) noexcept;

/// y[r, o] = x[r, :] · w[o, :] + bias[o]  (x: [rows, in], w: [out, in] as PyTorch stores it,
/// bias may be null). y must not alias x.
void linear(const float* x, index_t rows, index_t in, const float* w, const float* bias, index_t out,
            float* y) noexcept;

void relu(float* x, index_t n) noexcept;

/// Exact GELU: x/2 · (1 + erf(x/√2)), as torch.nn.functional.gelu(approximate='none').
void gelu(float* x, index_t n) noexcept;

void activation(Activation a, float* x, index_t n) noexcept;

/// y[i] += x[i]
void add(float* y, const float* x, index_t n) noexcept;

/// LayerNorm of one row of n values; y may alias x.
///   torch:     (x - mean) / sqrt(var_biased + eps) * gain + bias
///   annotated: gain * (x - mean) / (std_unbiased + eps) + bias
void layer_norm_row(const float* x, const float* gain, const float* bias, index_t n, LayerNormKind kind, float eps,
                    float* y) noexcept;

/// log_softmax of one row in place: x - max - log(sum(exp(x - max))).
void log_softmax_row(float* x, index_t n) noexcept;

/// Which keys one query row may attend to: key j is allowed iff j < key_end and (allow is null or
/// allow[j] != 0).
struct RowMask {
  index_t key_end;
  const std::uint8_t* allow;
};

/// Scaled dot-product attention of one query row against n_keys keys of one head.
///   q: [head_dim]; key j at k + j * kv_stride, value j at v + j * kv_stride.
///   p: scratch of n_keys floats; on return it holds the attention weights of the row.
///   out: [head_dim]; may alias q (q is read only before out is written).
/// A row whose every key is masked: with MaskFill::neg_1e9, uniform weights 1/n_keys over all
/// keys (what PyTorch computes with masked_fill(-1e9)); with MaskFill::neg_inf, weights 0 and
/// output 0 (PyTorch would produce NaN). Never NaN from the mask alone.
void attention_row(const float* q, const float* k, const float* v, index_t kv_stride, index_t head_dim, index_t n_keys,
                   RowMask mask, MaskFill fill, float* p, float* out) noexcept;

}  // namespace stf::ref
