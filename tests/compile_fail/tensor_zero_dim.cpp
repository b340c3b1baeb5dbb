// A tensor with a zero dimension.
// expect: Tensor: every dimension must be at least 1
#include <statiformer/tensor.hpp>
#ifdef STF_CF_FAIL
stf::Tensor<4, 0> t;
#else
stf::Tensor<4, 1> t;
#endif
int main() {}
