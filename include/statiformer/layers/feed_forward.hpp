// statiformer — position-wise feed-forward: linear2(act(linear1(x))) [then act again].
#pragma once

#include <statiformer/kernels/api.hpp>
#include <statiformer/layers/linear.hpp>
#include <statiformer/layers/node.hpp>
#include <statiformer/layers/options.hpp>
#include <statiformer/layers/params.hpp>

namespace stf {

/// y = W2 · act(W1 x + b1) + b2 for each row, optionally followed by act (one of the tutorial
/// encoders applies the activation after the second projection too). Blocks of up to kRowBlock
/// (128) rows at a time, and within a block, chunks of kChunk hidden units: the chunk's hidden
/// values act(x W1[:, chunk] + b1[chunk]), then their share of the second product, continuing each
/// output's sum in sequence over the hidden units (the same bits as one product over all of them).
/// Every weight is read once per row block, and the scratch is O(block · (kChunk + DModel)), not
/// O(SeqLen · DFf); y may alias x (the sums then continue in the scratch, and the block's rows are
/// copied into y after its last chunk; else in y).
///
/// With int8 linears (Format w8a32 or w8a8) each row's hidden values are quantized as one row (one
/// scale per row over all DFf of them), so the hidden units are not chunked: blocks of up to
/// kInt8RowBlock (32) rows, each block's whole hidden rows in the scratch, O(block · DFf), and its
/// outputs straight into y.
template <index_t SeqLen, index_t DModel, index_t DFf, Activation Act = Activation::relu, bool OutActivation = false,
          NumberFormat Format = NumberFormat::f32>
struct FeedForward {
  static_assert(check::layer_dims_positive<SeqLen, DModel>());
  static_assert(check::layer_dims_positive<SeqLen, DFf>());
  static constexpr index_t seq_len = SeqLen, d_model = DModel, d_ff = DFf;
  static constexpr const char* name = "FeedForward";
  static constexpr index_t kRowBlock = SeqLen < 128 ? SeqLen : 128;
  /// Hidden units per chunk: two weight panels (kChunk must be a multiple of kWeightPanel).
  static constexpr index_t kChunk = DFf < 2 * kWeightPanel ? DFf : 2 * kWeightPanel;
  static constexpr NumberFormat format = Format;
  /// Rows per block of the int8 formats (whole hidden rows).
  static constexpr index_t kInt8RowBlock = SeqLen < 32 ? SeqLen : 32;
  static constexpr index_t scratch_floats =
      is_int8(Format) ? kInt8RowBlock * DFf + max_of(linear_scratch_floats<Format>(kInt8RowBlock, DModel),
                                                     linear_scratch_floats<Format>(kInt8RowBlock, DFf))
                      : kRowBlock * (kChunk + DModel);

  struct Params {
    using Linear1 = LinearParamsOf<DModel, DFf, true, Format>;
    using Linear2 = LinearParamsOf<DFf, DModel, true, Format>;
    Linear1 linear1;
    Linear2 linear2;
    static constexpr index_t param_count = Linear1::param_count + Linear2::param_count;
    static constexpr index_t param_bytes = param_bytes_of<Linear1>() + param_bytes_of<Linear2>();
    template <class F>
    void visit(F&& f, const Name& prefix) {
      linear1.visit(f, prefix / "linear1");
      linear2.visit(f, prefix / "linear2");
    }
  };
  Params params;

  template <class X, class Y>
  void forward(const X& x, Y&& y, float* scratch) const {
    static_assert(check::input_seq_len<rows_of<X>, SeqLen>());
    static_assert(check::input_dmodel<cols_of<X>, DModel>());
    static_assert(check::input_seq_len<rows_of<Y>, SeqLen>());
    static_assert(check::input_dmodel<cols_of<Y>, DModel>());
    run(data_of(x), SeqLen, data_of(y), scratch);
  }

  // Sequential node
  static constexpr index_t in_cols = DModel, out_cols = DModel;
  static constexpr bool in_place = true;
  Status apply(const float* in, float* out, float* scratch, const RunContext& ctx) const {
    run(in, ctx.rows, out, scratch);
    return Status::ok;
  }

  /// rows of x → rows of y (y may alias x).
  void run(const float* x, index_t rows, float* y, float* scratch) const {
    if constexpr (is_int8(Format))
      run_int8(x, rows, y, scratch);
    else
      run_f32(x, rows, y, scratch);
  }

 private:
  void run_f32(const float* x, index_t rows, float* y, float* scratch) const {
    float* hidden = scratch;
    float* out = scratch + kRowBlock * kChunk;
    const auto& p = params;
    if constexpr (SeqLen <= kRowBlock && DFf <= kChunk) {
      // one block of rows and one chunk: the two calls of the loop below with the same arguments,
      // as linear passes them, and the second one's rows straight into y (x is read whole before:
      // y may alias it). No struct on the stack per call (x86: its copy into the call's arguments
      // waited for a store-forwarding of its fields) and no copy of the outputs.
      ActiveKernels::linear(x, rows, DModel, p.linear1.weight.data, p.linear1.bias.data, DFf, hidden, fuse(Act));
      ActiveKernels::linear(hidden, rows, DFf, p.linear2.weight.data, p.linear2.bias.data, DModel, y,
                            OutActivation ? fuse(Act) : Fuse::none);
      return;
    }
    // (x is read by every chunk: outputs that would overwrite it wait in the scratch)
    const bool in_y = !detail::overlaps(x, rows * DModel, y, rows * DModel);
    for (index_t r = 0; r < rows; r += kRowBlock) {
      const index_t n = rows - r < kRowBlock ? rows - r : kRowBlock;
      if (in_y) out = y + r * DModel;
      for (index_t c0 = 0; c0 < DFf; c0 += kChunk) {
        const index_t c = DFf - c0 < kChunk ? DFf - c0 : kChunk;
        const bool last = c0 + c == DFf;
        ActiveKernels::linear_block(x + r * DModel, DModel, n, DModel, {p.linear1.weight.data, DModel, DFf, 0, c0}, c,
                                    hidden, kChunk, p.linear1.bias.data + c0, false, fuse(Act));
        ActiveKernels::linear_block(hidden, kChunk, n, c, {p.linear2.weight.data, DFf, DModel, c0, 0}, DModel, out,
                                    DModel, last ? p.linear2.bias.data : nullptr, c0 > 0,
                                    last && OutActivation ? fuse(Act) : Fuse::none);
      }
      if (!in_y)
        for (index_t i = 0; i < n * DModel; ++i) y[r * DModel + i] = out[i];
    }
  }

  /// The int8 formats: per block of rows, hidden = act(linear1(x)) whole, then linear2(hidden)
  /// straight into y: the block's rows of x are read whole before (y may alias x), and the later
  /// blocks read other rows.
  void run_int8(const float* x, index_t rows, float* y, float* scratch) const {
    float* hidden = scratch;
    float* q = hidden + kInt8RowBlock * DFf;
    for (index_t r = 0; r < rows; r += kInt8RowBlock) {
      const index_t n = rows - r < kInt8RowBlock ? rows - r : kInt8RowBlock;
      linear_rows<Format>(params.linear1, x + r * DModel, n, hidden, q, fuse(Act));
      linear_rows<Format>(params.linear2, hidden, n, y + r * DModel, q, OutActivation ? fuse(Act) : Fuse::none);
    }
  }
};

}  // namespace stf
