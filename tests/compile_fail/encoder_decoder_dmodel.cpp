// Encoder and decoder of different DModel.
// expect: EncoderDecoder: the encoder's DModel differs from the decoder's DModel
// expect: EncoderDModel = 16; [a-z ]*DecoderDModel = 32
#include <statiformer/models/encoder_decoder.hpp>
using namespace stf;
#ifdef STF_CF_FAIL
constexpr index_t kDecD = 32;
#else
constexpr index_t kDecD = 16;
#endif
using Model = EncoderDecoder<Embedding<11, 16>, Embedding<11, kDecD>, EncoderStack<EncoderLayer<10, 16, 2, 32>, 1>,
                             DecoderStack<DecoderLayer<10, 10, kDecD, 2, 32>, 1>, Generator<kDecD, 11>>;
static Model model;
int main() { return static_cast<int>(model.position()); }
