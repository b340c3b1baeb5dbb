// first.cpp (README quick start; built as a ctest) — an nn.TransformerEncoderLayer(d_model=16, nhead=4,
// dim_feedforward=32) over 7 tokens
#include <cstdio>
#include <statiformer/statiformer.hpp>

using Layer = stf::EncoderLayer</*SeqLen*/ 7, /*DModel*/ 16, /*NHeads*/ 4, /*DFf*/ 32,
                                stf::LayerOptions{.norm = stf::NormPlacement::post}>;
static_assert(Layer::Params::param_count == 2224);            // same as PyTorch's
static_assert(Layer::scratch_floats * sizeof(float) < 4096);  // a RAM budget, checked by the compiler

int main() {
  static stf::Tensor<16 * 16> w{};  // your weights: exported headers bind by name (below)
  static stf::Tensor<16> b{}, ones{{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}};
  static stf::Tensor<32 * 16> w1{}, w2{};
  static stf::Tensor<32> b1{};
  Layer layer{};
  auto& p = layer.params;
  for (auto* lin : {&p.self_attn.q, &p.self_attn.k, &p.self_attn.v, &p.self_attn.o})
    *lin = {stf::CMat<16, 16>(w.data), b};
  p.ff.linear1 = {stf::CMat<16, 32>(w1.data),
                  b1};  // weights are stored transposed: [In, Out] (in column panels of 64 outputs when wider)
  p.ff.linear2 = {stf::CMat<32, 16>(w2.data), b};
  p.norm1 = p.norm2 = {ones, b};

  stf::Tensor<7, 16> x{}, y{};
  x.data[0] = 1.0f;
  float scratch[Layer::scratch_floats];
  // 5 valid tokens: keys 5 and 6 are padding
  if (layer.forward(x, y, /*valid_len*/ 5, scratch) != stf::Status::ok) return 1;
  std::printf("y[0][0] = %f\n", y.data[0]);
  // stf::Tensor<7, 8> bad{}; layer.forward(bad, y, 5, scratch);
  //   error: static assertion failed: layer input: the input's DModel differs from the layer's DModel
  //   ... [with long unsigned int InputDModel = 8; long unsigned int DModel = 16]
}
