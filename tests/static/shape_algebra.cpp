// Pure compile-time checks of the shape algebra and the footprint numbers: this translation unit
// has no runtime content; if it compiles, it passed.
#include <statiformer/statiformer.hpp>

namespace {
using namespace stf;

// ---- derived dimensions ----------------------------------------------------------------------
static_assert(MultiHeadAttention<5, 5, 16, 4>::head_dim == 4);
static_assert(MultiHeadAttention<5, 5, 10, 2>::head_dim == 5);
static_assert(MultiHeadAttention<3, 9, 4, 4>::head_dim == 1);
static_assert(DecoderLayer<7, 11, 16, 4, 32>::mem_len == 11);

// ---- parameter counts equal PyTorch's ----------------------------------------------------------
// nn.TransformerEncoderLayer(16, 4, 32): in_proj 3·16·16 + 48, out_proj 16·16 + 16, linear1
// 16·32 + 32, linear2 32·16 + 16, two LayerNorms 2·(16 + 16) = 2224.
static_assert(EncoderLayer<7, 16, 4, 32>::Params::param_count == 2224);
// nn.TransformerDecoderLayer(16, 4, 32): one more attention (1088) and one more norm (32) = 3344.
static_assert(DecoderLayer<7, 11, 16, 4, 32>::Params::param_count == 3344);
// nn.MultiheadAttention(16, 4, bias=False): 4·16·16 = 1024.
static_assert(MultiHeadAttention<7, 7, 16, 4, false>::Params::param_count == 1024);
static_assert(EncoderStack<EncoderLayer<7, 16, 4, 32>, 2, true>::Params::param_count == 2 * 2224 + 32);
static_assert(EncoderStack<EncoderLayer<7, 16, 4, 32>, 2, false>::Params::param_count == 2 * 2224);

// ---- scratch sizes -------------------------------------------------------------------------------
// MHA: Q [SeqQ, D] (reused for the context), Kᵀ and V [SeqK, D], and per row of a group of 6 query
// rows a span of min(SeqK, 128) scores and a copy of its query [HeadDim] (never [SeqQ, SeqK]).
static_assert(MultiHeadAttention<7, 11, 16, 4>::scratch_floats == 7 * 16 + 2 * 11 * 16 + 6 * (11 + 4));
static_assert(MultiHeadAttention<2, 11, 16, 4>::scratch_floats == 2 * 16 + 2 * 11 * 16 + 2 * (11 + 4));
static_assert(MultiHeadAttention<128, 500, 64, 2>::attention_floats == 6 * (128 + 32));
static_assert(MultiHeadAttention<128, 500, 64, 2>::score_matrix_floats == 128 * 500);
// FF runs blocks of up to 128 rows, each in chunks of up to 128 hidden units: a hidden chunk and
// an output block.
static_assert(FeedForward<7, 16, 32>::scratch_floats == 7 * (32 + 16));
static_assert(FeedForward<64, 16, 32>::scratch_floats == 64 * (32 + 16));
static_assert(FeedForward<200, 512, 2048>::scratch_floats == 128 * (128 + 512));
// Encoder layer: a sublayer output [S, D] plus the larger inner scratch.
static_assert(EncoderLayer<7, 16, 4, 32>::scratch_floats == 7 * 16 + (7 * 16 + 2 * 7 * 16 + 6 * (7 + 4)));

// ---- the memory planner ------------------------------------------------------------------------
// Three buffers of 64 floats alive at steps {0}, {1}, {0,1}: the first two share bytes.
constexpr auto plan3 = plan_memory<3>({{{64, 0, 0}, {64, 1, 1}, {64, 0, 1}}});
static_assert(plan3.arena_floats == 128);
static_assert(plan3.sum_floats == 192);
static_assert(plan3.offset[0] == plan3.offset[1]);
static_assert(plan3.offset[2] != plan3.offset[0]);
// Sizes are rounded to the tensor alignment (16 floats).
static_assert(plan_memory<1>({{{1, 0, 0}}}).arena_floats == 16);

// ---- the demo model's footprint (examples/demo), pinned ------------------------------------------
using Demo = Transformer<10, 12, 13, 13, 32, 4, 64, 2>;
// embeddings 2·13·32, encoder 2·8544 + 64, decoder 2·12832 + 64, generator 32·13 + 13 = 44141.
static_assert(Demo::param_count == 44141);
static_assert(Demo::weight_bytes == 176564);
// encode phase: memory 320 + encoder scratch (320 + 320 + 640 + 6·(10 + 8) = 1388 → 1392 aligned)
// = 1712 floats; decode phase: memory 320 + row 32 + step scratch 180 → 192 + logits 13 → 16 = 560.
static_assert(Demo::arena_bytes == 1712 * 4);
static_assert(Demo::arena_bytes < Demo::arena_unplanned_bytes);
// K/V caches: per layer 2·12·32 (self) + 2·10·32 (cross) floats.
static_assert(Demo::state_bytes == 2 * (2 * 12 * 32 + 2 * 10 * 32) * 4);
// A firmware budget check as a user writes it:
static_assert(Demo::arena_bytes + Demo::state_bytes <= 24 * 1024);

// ---- the classifier graph: in-place layers share the embedding's buffer -----------------------
using Classifier8 = Sequential<8, Embedding<20, 16>, PositionalEncoding<8, 16>,
                               EncoderStack<EncoderLayer<8, 16, 2, 32>, 2>, Classifier<16, 5>>;
static_assert(Classifier8::param_count == 20 * 16 + 2 * 2224 + 16 * 5 + 5);
static_assert(EncoderLayer<8, 16, 2, 32>::Params::param_count == 2224);  // heads do not change it
static_assert(Classifier8::arena_bytes < Classifier8::arena_unplanned_bytes);
}  // namespace
