// statiformer — token embeddings (lookup × √DModel) and sinusoidal positional encodings.
#pragma once

#include <statiformer/layers/node.hpp>
#include <statiformer/layers/params.hpp>
#include <statiformer/math.hpp>

namespace stf {

/// y[s] = weight[token[s]] · √DModel (the annotated transformer's Embeddings; float32 product
/// with float(√DModel), as PyTorch computes `lut(x) * math.sqrt(d_model)`).
template <index_t Vocab, index_t DModel>
struct Embedding {
  static_assert(check::layer_dims_positive<Vocab, DModel>());
  static constexpr index_t vocab = Vocab, d_model = DModel;
  static constexpr const char* name = "Embedding";
  static constexpr index_t scratch_floats = 0;
  static constexpr float scale = static_cast<float>(math::ct::sqrt(static_cast<double>(DModel)));

  struct Params {
    CMat<Vocab, DModel> weight;
    static constexpr index_t param_count = Vocab * DModel;
    template <class F>
    void visit(F&& f, const Name& prefix) {
      f(prefix / "weight", param_ref(weight));
    }
  };
  Params params;

  /// Every token is checked before anything is written: a bad id leaves y untouched.
  static Status check_tokens(const int* tokens, index_t n) {
    for (index_t s = 0; s < n; ++s)
      if (tokens[s] < 0 || static_cast<index_t>(tokens[s]) >= Vocab) return Status::token_out_of_range;
    return Status::ok;
  }
  Status run(const int* tokens, index_t n, float* y) const {
    if (Status st = check_tokens(tokens, n); st != Status::ok) return st;
    for (index_t s = 0; s < n; ++s) {
      const float* row = params.weight.row(static_cast<index_t>(tokens[s]));
      for (index_t c = 0; c < DModel; ++c) y[s * DModel + c] = row[c] * scale;
    }
    return Status::ok;
  }

  // Sequential node: a token source; rows >= valid_len (padding) are zero.
  static constexpr index_t in_cols = 0, out_cols = DModel;
  static constexpr bool in_place = false;
  Status apply(const float*, float* out, float*, const RunContext& ctx) const {
    if (Status st = check_tokens(ctx.tokens, ctx.valid_len); st != Status::ok) return st;
    for (index_t i = 0; i < ctx.rows * DModel; ++i) out[i] = 0.0f;
    return run(ctx.tokens, ctx.valid_len, out);
  }
};

/// Sinusoidal positional encoding table [MaxLen, DModel], built at compile time (no trigonometry
/// at run time), with PyTorch's float32 rounding of the arguments:
///   div = exp(float(2i) · float(-ln(10000) / DModel)),  pe[p, 2i] = sin(float(p) · div),
///   pe[p, 2i+1] = cos(float(p) · div).
template <index_t MaxLen, index_t DModel>
struct PositionalEncoding {
  static_assert(check::layer_dims_positive<MaxLen, DModel>());
  static constexpr index_t max_len = MaxLen, d_model = DModel;
  static constexpr const char* name = "PositionalEncoding";
  static constexpr index_t scratch_floats = 0;

  struct Table {
    float data[MaxLen * DModel];
  };
  static constexpr Table make_table() {
    Table t{};
    const float step = static_cast<float>(-math::ct::log(10000.0) / static_cast<double>(DModel));
    for (index_t i = 0; 2 * i < DModel; ++i) {
      const float expo = static_cast<float>(2 * i) * step;
      const float div = static_cast<float>(math::ct::exp(static_cast<double>(expo)));
      for (index_t p = 0; p < MaxLen; ++p) {
        const float arg = static_cast<float>(p) * div;
        double s = 0, c = 0;
        math::ct::sincos(static_cast<double>(arg), s, c);
        t.data[p * DModel + 2 * i] = static_cast<float>(s);
        if (2 * i + 1 < DModel) t.data[p * DModel + 2 * i + 1] = static_cast<float>(c);
      }
    }
    return t;
  }
  alignas(kTensorAlign) static constexpr Table table = make_table();

  struct Params {
    static constexpr index_t param_count = 0;
    template <class F>
    void visit(F&&, const Name&) {}
  };
  Params params;

  // Sequential node: adds the encodings of positions 0..rows-1 in place.
  static constexpr index_t in_cols = DModel, out_cols = DModel;
  static constexpr bool in_place = true;
  Status apply(const float* in, float* out, float*, const RunContext& ctx) const {
    if (ctx.rows > MaxLen) return Status::invalid_length;
    if (in != out)
      for (index_t i = 0; i < ctx.rows * DModel; ++i) out[i] = in[i];
    run(out, ctx.rows);
    return Status::ok;
  }

  /// x[r] += pe[first_pos + r] for rows r < rows (in place).
  static void run(float* x, index_t rows, index_t first_pos = 0) {
    for (index_t r = 0; r < rows; ++r)
      for (index_t c = 0; c < DModel; ++c) x[r * DModel + c] += table.data[(first_pos + r) * DModel + c];
  }
};

}  // namespace stf
