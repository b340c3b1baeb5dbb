// The int8 attention (and so the int8 K/V cache) asked of a decoder layer whose linears are not w8a8.
// expect: int8_attention: an option of NumberFormat::w8a8 only
#include <statiformer/layers/causal_layer.hpp>
#include <statiformer/layers/decoder_layer.hpp>
#ifdef STF_CF_FAIL
stf::DecoderLayer<8, 8, 16, 2, 32, stf::LayerOptions{.format = stf::NumberFormat::w8a32, .int8_attention = true}> layer;
#else
stf::DecoderLayer<8, 8, 16, 2, 32, stf::LayerOptions{.format = stf::NumberFormat::w8a8, .int8_attention = true}> layer;
stf::CausalLayer<8, 16, 2, 32, stf::LayerOptions{.format = stf::NumberFormat::w8a8, .int8_attention = true}> causal;
#endif
int main() {}
