// A generator whose vocabulary differs from the target embedding's.
// expect: Generator: the generator's Vocab differs from the target embedding's Vocab
// expect: GeneratorVocab = 12; [a-z ]*EmbeddingVocab = 11
#include <statiformer/models/encoder_decoder.hpp>
using namespace stf;
#ifdef STF_CF_FAIL
constexpr index_t kGenVocab = 12;
#else
constexpr index_t kGenVocab = 11;
#endif
using Model = EncoderDecoder<Embedding<11, 16>, Embedding<11, 16>, EncoderStack<EncoderLayer<10, 16, 2, 32>, 1>,
                             DecoderStack<DecoderLayer<10, 10, 16, 2, 32>, 1>, Generator<16, kGenVocab>>;
static Model model;
int main() { return static_cast<int>(model.position()); }
