// A graph whose layers do not chain: a [SeqLen, 16] output fed to a head expecting DModel 8.
// expect: Sequential: a layer's output DModel differs from the next layer's input DModel
// expect: LayerIndex = 0; [a-z ]*OutSeqLen = 8; [a-z ]*OutDModel = 16; [a-z ]*NextInSeqLen = 8; [a-z ]*NextInDModel = 8
#include <statiformer/graph/sequential.hpp>
#include <statiformer/layers/embedding.hpp>
#include <statiformer/layers/heads.hpp>
#ifdef STF_CF_FAIL
using Model = stf::Sequential<8, stf::Embedding<20, 16>, stf::Classifier<8, 5>>;
#else
using Model = stf::Sequential<8, stf::Embedding<20, 16>, stf::Classifier<16, 5>>;
#endif
static Model model;
int main() { return static_cast<int>(Model::arena_bytes == 0); }
