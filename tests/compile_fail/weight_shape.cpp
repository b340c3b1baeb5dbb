// A weight of the wrong shape bound to a layer's parameter.
// expect: shape mismatch: the bound tensor's Cols differ from the expected Cols
// expect: BoundCols = 8; [a-z ]*ExpectedRows = 16; [a-z ]*ExpectedCols = 16
#include <statiformer/layers/attention.hpp>
#ifdef STF_CF_FAIL
constexpr stf::Tensor<16, 8> kWq{};
#else
constexpr stf::Tensor<16, 16> kWq{};
#endif
int main() {
  stf::MultiHeadAttention<4, 4, 16, 2> mha{};
  mha.params.q.weight = kWq;
  return mha.params.q.weight.data == nullptr;
}
