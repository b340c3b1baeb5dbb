// The annotated transformer's LayerNorm (unbiased std) over a single feature.
// expect: LayerNorm\(annotated\): unbiased std needs DModel of at least 2
// expect: DModel = 1
#include <statiformer/layers/layer_norm.hpp>
#ifdef STF_CF_FAIL
stf::LayerNorm<1, stf::LayerNormKind::annotated> ln;
#else
stf::LayerNorm<1, stf::LayerNormKind::torch> ln;
#endif
int main() {}
