// The int8 attention asked of a layer with a K/V cache (its int8 cache is not built yet).
// expect: int8_attention: DecoderLayer and CausalLayer \(K/V cache\) keep a float attention and cache only
// expect: kv_cache_float_attention\(\) \[with bool Int8Attention = true\]
#include <statiformer/layers/causal_layer.hpp>
#include <statiformer/layers/decoder_layer.hpp>
#ifdef STF_CF_FAIL
stf::DecoderLayer<8, 8, 16, 2, 32, stf::LayerOptions{.format = stf::NumberFormat::w8a8, .int8_attention = true}> layer;
#else
stf::DecoderLayer<8, 8, 16, 2, 32, stf::LayerOptions{.format = stf::NumberFormat::w8a8}> layer;
stf::CausalLayer<8, 16, 2, 32, stf::LayerOptions{.format = stf::NumberFormat::w8a32}> causal;
#endif
int main() {}
