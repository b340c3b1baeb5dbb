// Cross-attention memory of the wrong width.
// expect: cross-attention: the memory's DModel differs from the decoder's DModel
// expect: MemoryDModel = 8; [a-z ]*DModel = 16
#include <statiformer/layers/decoder_layer.hpp>
int main() {
  stf::DecoderLayer<7, 11, 16, 4, 32> layer{};
  float scratch[decltype(layer)::scratch_floats];
  stf::Tensor<7, 16> x{}, y{};
#ifdef STF_CF_FAIL
  stf::Tensor<11, 8> memory{};
#else
  stf::Tensor<11, 16> memory{};
#endif
  return layer.forward(x, memory, y, 11, scratch) == stf::Status::ok ? 0 : 1;
}
