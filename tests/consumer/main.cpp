// Uses the installed package: a model type, its constexpr footprint, one forward call.
#include <statiformer/statiformer.hpp>

#include <cstdio>

using Layer = stf::EncoderLayer<4, 8, 2, 16>;
static_assert(Layer::Params::param_count == 4 * (8 * 8 + 8) + (8 * 16 + 16) + (16 * 8 + 8) + 4 * 8);

int main() {
  static const stf::Tensor<8 * 8> w{};
  static const stf::Tensor<16 * 8> w16{};
  static const stf::Tensor<16> b16{};
  static const stf::Tensor<8> zeros{}, ones{{1, 1, 1, 1, 1, 1, 1, 1}};
  Layer layer{};
  auto& p = layer.params;
  for (auto* lin : {&p.self_attn.q, &p.self_attn.k, &p.self_attn.v, &p.self_attn.o}) {
    lin->weight = stf::CMat<8, 8>(w.data);
    lin->bias = zeros;
  }
  p.ff.linear1.weight = stf::CMat<8, 16>(w16.data);  // stored transposed: [In, Out] (one panel: at most 64 outputs)
  p.ff.linear1.bias = b16;
  p.ff.linear2.weight = stf::CMat<16, 8>(w16.data);
  p.ff.linear2.bias = zeros;
  p.norm1 = {ones, zeros};
  p.norm2 = {ones, zeros};
  stf::Tensor<4, 8> x{{1, 2, 3, 4, 5, 6, 7, 8}}, y{};
  float scratch[Layer::scratch_floats];
  if (layer.forward(x, y, 4, scratch) != stf::Status::ok) return 1;
  std::printf("consumer: y[0][0] = %.6f\n", static_cast<double>(y.data[0]));
  return y.data[0] < -1.5f ? 0 : 1;  // LayerNorm of 1..8 at position 0: (1 - 4.5) / 2.29 ≈ -1.53
}
