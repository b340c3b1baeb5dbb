// Cross-attention memory of another length than the decoder's MemLen.
// expect: cross-attention: the memory's SeqLen differs from the decoder's MemLen
// expect: MemorySeqLen = 9; [a-z ]*MemLen = 11
#include <statiformer/layers/decoder_layer.hpp>
int main() {
  stf::DecoderLayer<7, 11, 16, 4, 32> layer{};
  float scratch[decltype(layer)::scratch_floats];
  stf::Tensor<7, 16> x{}, y{};
#ifdef STF_CF_FAIL
  stf::Tensor<9, 16> memory{};
#else
  stf::Tensor<11, 16> memory{};
#endif
  return layer.forward(x, memory, y, 11, scratch) == stf::Status::ok ? 0 : 1;
}
