// A LayerNorm eps below 0 (the variance plus eps could reach 0 or below).
// expect: LayerNorm: eps must be a finite number >= 0
#include <statiformer/layers/layer_norm.hpp>
#ifdef STF_CF_FAIL
stf::LayerNorm<8, stf::LayerNormKind::torch, -1e-5f> ln;
#else
stf::LayerNorm<8, stf::LayerNormKind::torch, 1e-12f> ln;
#endif
int main() {}
