// A [SeqLen, 8] tensor fed to an encoder layer with DModel 16.
// expect: the input's DModel differs from the layer's DModel
// expect: InputDModel = 8; [a-z ]*DModel = 16
#include <statiformer/layers/encoder_layer.hpp>
int main() {
  stf::EncoderLayer<7, 16, 4, 32> layer{};
  float scratch[decltype(layer)::scratch_floats];
#ifdef STF_CF_FAIL
  stf::Tensor<7, 8> x{};
#else
  stf::Tensor<7, 16> x{};
#endif
  stf::Tensor<7, 16> y{};
  return layer.forward(x, y, 7, scratch) == stf::Status::ok ? 0 : 1;
}
