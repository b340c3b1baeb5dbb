// The int8 attention asked of a layer whose linears are not w8a8.
// expect: int8_attention: an option of NumberFormat::w8a8 only
#include <statiformer/layers/encoder_layer.hpp>
#ifdef STF_CF_FAIL
stf::EncoderLayer<8, 16, 2, 32, stf::LayerOptions{.format = stf::NumberFormat::w8a32, .int8_attention = true}> layer;
#else
stf::EncoderLayer<8, 16, 2, 32, stf::LayerOptions{.format = stf::NumberFormat::w8a8, .int8_attention = true}> layer;
#endif
int main() {}
