// An int8 number format on a layer with a K/V cache (the int8 cache is not built yet).
// expect: number format: DecoderLayer and CausalLayer \(K/V cache\) run NumberFormat::f32 only
// expect: float_format_only\(\) \[with bool Int8 = true\]
#include <statiformer/layers/decoder_layer.hpp>
#ifdef STF_CF_FAIL
stf::DecoderLayer<8, 8, 16, 2, 32, stf::LayerOptions{.format = stf::NumberFormat::w8a8}> layer;
#else
stf::DecoderLayer<8, 8, 16, 2, 32, stf::LayerOptions{}> layer;
#endif
int main() {}
