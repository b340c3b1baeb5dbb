// statiformer — encoder-decoder transformer with greedy decoding over a key/value cache.
#pragma once

#include <statiformer/graph/memory_plan.hpp>
#include <statiformer/graph/summary.hpp>
#include <statiformer/layers/embedding.hpp>
#include <statiformer/layers/heads.hpp>
#include <statiformer/layers/stack.hpp>
#include <statiformer/profiler.hpp>

namespace stf {

/// The "Attention Is All You Need" model: src tokens → Embedding·√D + PE → Encoder → memory;
/// target tokens → Embedding·√D + PE → Decoder(memory) → Generator (log_softmax).
///
/// Decoding is incremental: `encode` computes the memory and every decoder layer's cross-attention
/// keys/values once; each `step` runs one target position through the decoder using the cached
/// self-attention keys/values of the earlier positions (O(position) attention per token).
/// All storage is inside the object (`arena_bytes` + `state_bytes`): declare it static on a
/// microcontroller. Not thread-safe; one model object decodes one sequence at a time.
/// What `encode` puts into the memory's rows at padded positions (>= src_valid_len). No decoder row
/// ever attends to them (memory key padding), so the decoded tokens and log-probabilities are the same
/// either way; only `memory()` shows the difference.
enum class PaddedRows : std::uint8_t {
  zeros,   ///< embedding 0 + positional encoding; reads only src[0, src_valid_len)
  tokens,  ///< the embeddings of src[src_valid_len, src_len) (the pad tokens), as PyTorch's encoder computes
           ///< them: memory() then equals PyTorch's at every row; reads (and checks) all src_len tokens
};

template <class SrcEmbedding, class TgtEmbedding, class EncoderStackT, class DecoderStackT, class GeneratorT>
class EncoderDecoder {
 public:
  /// The component types, for running their steps by hand (layer by layer, or a generator step).
  using SrcEmbed = SrcEmbedding;
  using TgtEmbed = TgtEmbedding;
  using Encoder = EncoderStackT;
  using Decoder = DecoderStackT;
  using Gen = GeneratorT;

  static constexpr index_t src_len = Encoder::seq_len, tgt_len = Decoder::seq_len;
  static constexpr index_t d_model = Encoder::d_model;
  static constexpr index_t src_vocab = SrcEmbed::vocab, tgt_vocab = TgtEmbed::vocab;
  static constexpr index_t n_layers = Decoder::n_layers;

  static_assert(check::encoder_decoder_dmodel<Encoder::d_model, Decoder::d_model>());
  static_assert(check::encoder_decoder_memory_len<Encoder::seq_len, Decoder::mem_len>());
  static_assert(check::embedding_dmodel<SrcEmbed::d_model, Encoder::d_model>());
  static_assert(check::embedding_dmodel<TgtEmbed::d_model, Decoder::d_model>());
  static_assert(check::generator_vocab<Gen::vocab, TgtEmbed::vocab>());
  static_assert(check::input_dmodel<Gen::d_model, Decoder::d_model>());

  using PosEnc = PositionalEncoding<max_of(src_len, tgt_len), d_model>;
  using Cache = typename Decoder::Cache;

  struct Params {
    using Owner = EncoderDecoder;  ///< whose hyperparameters these are (io/hparams.hpp)
    typename SrcEmbed::Params src_embed;
    typename TgtEmbed::Params tgt_embed;
    typename Encoder::Params encoder;
    typename Decoder::Params decoder;
    typename Gen::Params generator;
    static constexpr index_t param_count = SrcEmbed::Params::param_count + TgtEmbed::Params::param_count +
                                           Encoder::Params::param_count + Decoder::Params::param_count +
                                           Gen::Params::param_count;
    static constexpr index_t param_bytes =
        param_bytes_of<typename SrcEmbed::Params>() + param_bytes_of<typename TgtEmbed::Params>() +
        param_bytes_of<typename Encoder::Params>() + param_bytes_of<typename Decoder::Params>() +
        param_bytes_of<typename Gen::Params>();
    template <class F>
    void visit(F&& f, const Name& prefix = {}) {
      src_embed.visit(f, prefix / "src_embed");
      tgt_embed.visit(f, prefix / "tgt_embed");
      encoder.visit(f, prefix / "encoder");
      decoder.visit(f, prefix / "decoder");
      generator.visit(f, prefix / "generator");
    }
  };

  // ---- memory plan: steps 0 = encode, 1 = decode ---------------------------------------------
  enum Buffer : index_t { kMemory, kEncScratch, kRow, kStepScratch, kLogits, kBuffers };
  static constexpr MemoryPlan<kBuffers> plan = plan_memory<kBuffers>({{
      {src_len * d_model, 0, 1},  // memory: the encoder output, read while decoding
      {max_of(Encoder::scratch_floats, Decoder::memory_scratch_floats), 0, 0},  // encoder scratch (and
                                                                                // prepare_memory's)
      {d_model, 1, 1},                                                          // the target row being decoded
      {Decoder::step_scratch_floats, 1, 1},                                     // decoder step scratch
      {tgt_vocab, 1, 1},                                                        // log-probabilities of the step
  }});

  // ---- footprint (all constexpr) ----------------------------------------------------------------
  static constexpr index_t param_count = Params::param_count;
  static constexpr index_t weight_bytes = param_bytes_of<Params>();          ///< flash (or RAM if loaded)
  static constexpr index_t const_bytes = sizeof(typename PosEnc::Table);     ///< PE table, flash
  static constexpr index_t arena_bytes = plan.arena_floats * sizeof(float);  ///< RAM, planned
  static constexpr index_t arena_unplanned_bytes = plan.sum_floats * sizeof(float);
  static constexpr index_t state_bytes = n_layers * sizeof(Cache);  ///< RAM, K/V caches

  Params params{};

  /// The masks nn.Transformer's forward takes, for one sequence: `encode` reads them, checks them and
  /// keeps what the decoding steps need, so every `step` (and `greedy_decode`) until the next
  /// `encode` uses them. All optional; each attention's masked set is the union of its masks.
  /// - src_mask [src_len, src_len] (bool, True = masked), src_key_padding_mask [src_len] (True =
  ///   padding, gaps allowed), src_is_causal, src_valid_len (keys >= it masked): the encoder's
  ///   self-attention, as nn.TransformerEncoder's mask / src_key_padding_mask / is_causal.
  /// - memory_key_padding_mask [src_len]: the cross-attention's key padding; null means the
  ///   src_key_padding_mask (what nn.Transformer users pass for both; to attend to encoder-padded
  ///   memory rows, give an all-false mask). It is copied into the model at encode (src_len
  ///   bytes); src_mask and src_key_padding_mask are read by encode only. So these arrays need not
  ///   outlive the call.
  /// - memory_mask [tgt_len, src_len] (bool, True = masked): the step at position p reads row p.
  ///   It is NOT copied: the array must outlive decoding (every step until the next encode).
  /// - src_float_mask [src_len, src_len], memory_float_mask [tgt_len, src_len]: PyTorch's float
  ///   src_mask / memory_mask (TorchFloatMask: added to the scaled scores before the softmax, -inf
  ///   masks the key), with or instead of the bool ones. src_float_mask is read by encode only;
  ///   memory_float_mask, like memory_mask, is read row p by the step at position p and NOT
  ///   copied: it must outlive decoding.
  /// - The target side: the steps are causal by construction (position p attends to the cached
  ///   positions 0..p), which is nn.Transformer.generate_square_subsequent_mask's tgt_mask.
  ///   tgt_mask may be given only as that mask (checked); tgt_is_causal = false, or any other
  ///   tgt_mask, cannot be run incrementally and is refused (Status::invalid_mask), never ignored.
  ///   A tgt_key_padding_mask has no place: positions not yet decoded are never attended to.
  /// Refused with Status::invalid_mask, writing nothing: a key padding mask that marks a key at or
  /// past src_valid_len as valid (the length says padding), an encoder row or a decoding position
  /// left with no key (PyTorch: NaN; a -inf float entry masks its key here too), a target mask
  /// other than the causal one.
  struct Masks {
    const TorchBoolMask<src_len, src_len>* src_mask = nullptr;
    const KeyPaddingMask<src_len>* src_key_padding_mask = nullptr;
    bool src_is_causal = false;
    index_t src_valid_len = src_len;
    const KeyPaddingMask<src_len>* memory_key_padding_mask = nullptr;     ///< null: src_key_padding_mask
    const TorchBoolMask<tgt_len, src_len>* memory_mask = nullptr;         ///< must outlive decoding
    const TorchBoolMask<tgt_len, tgt_len>* tgt_mask = nullptr;            ///< only the causal mask
    bool tgt_is_causal = true;                                            ///< false is refused
    const TorchFloatMask<src_len, src_len>* src_float_mask = nullptr;     ///< a float src_mask (added)
    const TorchFloatMask<tgt_len, src_len>* memory_float_mask = nullptr;  ///< must outlive decoding
  };

  /// Encodes src[0 .. src_valid_len) (positions after that are padding, masked): computes the
  /// memory and the cross-attention keys/values, and rewinds decoding to position 0.
  template <class Prof = NullProfiler>
  Status encode(const int* src, index_t src_valid_len, Prof&& prof = Prof{}) {
    return encode(src, src_valid_len, PaddedRows::zeros, prof);
  }

  /// encode, choosing what the padded rows of the memory hold (see PaddedRows). With
  /// PaddedRows::tokens src holds src_len tokens, every one checked against the vocabulary.
  template <class Prof = NullProfiler>
  Status encode(const int* src, index_t src_valid_len, PaddedRows padded, Prof&& prof = Prof{}) {
    if (src_valid_len == 0 || src_valid_len > src_len) return Status::invalid_length;
    const index_t embedded = padded == PaddedRows::tokens ? src_len : src_valid_len;
    if (Status st = SrcEmbed::check_tokens(src, embedded); st != Status::ok) return st;
    run_encoder(src, embedded, AttentionMask::padding(src_valid_len, Encoder::Layer::options.fill), prof);
    mem_valid_len_ = src_valid_len;
    mem_pad_used_ = false;
    memory_mask_ = nullptr;
    memory_float_mask_ = nullptr;
    pos_ = 0;
    return Status::ok;
  }

  /// encode under PyTorch's masks (see Masks), e.g. `model.encode(src, {.src_key_padding_mask =
  /// &pad})`; src holds src_valid_len tokens (src_len with PaddedRows::tokens). Fails writing
  /// nothing on a bad length (invalid_length), token (token_out_of_range) or mask (invalid_mask).
  template <class Prof = NullProfiler>
  Status encode(const int* src, const Masks& masks, PaddedRows padded = PaddedRows::zeros, Prof&& prof = Prof{}) {
    const index_t valid = masks.src_valid_len;
    if (valid == 0 || valid > src_len) return Status::invalid_length;
    if (Status st = check_masks(masks); st != Status::ok) return st;
    const index_t embedded = padded == PaddedRows::tokens ? src_len : valid;
    if (Status st = SrcEmbed::check_tokens(src, embedded); st != Status::ok) return st;
    const typename Encoder::Masks enc{masks.src_mask, masks.src_key_padding_mask, masks.src_is_causal, valid,
                                      masks.src_float_mask};
    run_encoder(src, embedded, enc.attention(), prof);
    const KeyPaddingMask<src_len>* mem_pad =
        masks.memory_key_padding_mask ? masks.memory_key_padding_mask : masks.src_key_padding_mask;
    mem_pad_used_ = mem_pad != nullptr;
    for (index_t j = 0; j < src_len; ++j) mem_pad_.pad[j] = mem_pad ? mem_pad->pad[j] : 0;
    memory_mask_ = masks.memory_mask;
    memory_float_mask_ = masks.memory_float_mask;
    mem_valid_len_ = valid;
    pos_ = 0;
    return Status::ok;
  }

 private:
  /// Embeds src[0, embedded), runs the encoder under mask, then each decoder layer's memory keys/values.
  template <class Prof>
  void run_encoder(const int* src, index_t embedded, const AttentionMask& mask, Prof& prof) {
    float* memory = buffer(kMemory);
    const LayerPath embed("src_embed");  // the embedding and the positional encoding (PyTorch: src_embed.0, .1)
    prof.begin(embed);
    // padded positions embed token 0 or their own tokens; the key-padding mask keeps them out of every valid row
    for (index_t i = 0; i < src_len * d_model; ++i) memory[i] = 0.0f;
    (void)SrcEmbed{params.src_embed}.run(src, embedded, memory);
    PosEnc::run(memory, src_len);
    prof.end(embed);
    for (index_t l = 0; l < Encoder::n_layers; ++l) {
      const LayerPath path = LayerPath("encoder") / "layers" / l;  // built outside the timed span
      prof.begin(path);
      typename Encoder::Layer{params.encoder.layers[l]}.run(memory, memory, mask, buffer(kEncScratch));
      prof.end(path);
    }
    if constexpr (Encoder::final_norm) {
      const LayerPath path = LayerPath("encoder") / "norm";
      prof.begin(path);
      typename Encoder::Norm{params.encoder.norm}.run(memory, src_len, memory);
      prof.end(path);
    }
    // each decoder layer's cross-attention keys and values of the memory (its cross_attn.k, .v)
    for (index_t l = 0; l < Decoder::n_layers; ++l) {
      const LayerPath path = LayerPath("decoder") / "layers" / l / "cross_attn";
      prof.begin(path);
      typename Decoder::Layer{params.decoder.layers[l]}.prepare_memory(memory, caches_[l], buffer(kEncScratch));
      prof.end(path);
    }
  }

  /// Masks' refusals (see Masks); reads the masks only.
  static Status check_masks(const Masks& m) {
    const index_t valid = m.src_valid_len;
    if (!m.tgt_is_causal) return Status::invalid_mask;
    if (m.tgt_mask)
      for (index_t i = 0; i < tgt_len; ++i)
        for (index_t j = 0; j < tgt_len; ++j)
          if ((m.tgt_mask->masked[i * tgt_len + j] != 0) != (j > i)) return Status::invalid_mask;
    // a key padding mask may not call a key valid that the length calls padding
    auto contradicts = [valid](const KeyPaddingMask<src_len>* pad) {
      if (pad)
        for (index_t j = valid; j < src_len; ++j)
          if (pad->pad[j] == 0) return true;
      return false;
    };
    if (contradicts(m.src_key_padding_mask) || contradicts(m.memory_key_padding_mask)) return Status::invalid_mask;
    // every encoder row keeps a key
    const AttentionMask enc =
        typename Encoder::Masks{m.src_mask, m.src_key_padding_mask, m.src_is_causal, valid, m.src_float_mask}
            .attention();
    for (index_t i = 0; i < src_len; ++i) {
      const ref::MaskArrays arrays = enc.arrays(i, src_len);
      if (!any_key(ref::RowMask{enc.key_end(i, src_len), &arrays}, src_len)) return Status::invalid_mask;
    }
    // every decoding position keeps a memory key
    const KeyPaddingMask<src_len>* mem_pad =
        m.memory_key_padding_mask ? m.memory_key_padding_mask : m.src_key_padding_mask;
    const bool per_position = m.memory_mask || m.memory_float_mask;
    for (index_t p = 0; p < (per_position ? tgt_len : 1); ++p) {
      const ref::MaskArrays arrays{nullptr, m.memory_mask ? m.memory_mask->masked + p * src_len : nullptr,
                                   mem_pad ? mem_pad->pad : nullptr,
                                   m.memory_float_mask ? m.memory_float_mask->add + p * src_len : nullptr};
      if (!any_key(ref::RowMask{valid, &arrays}, src_len)) return Status::invalid_mask;
    }
    return Status::ok;
  }
  static bool any_key(const ref::RowMask& row, index_t seq_k) {
    for (index_t j = 0; j < seq_k; ++j)
      if (row.allows(j)) return true;
    return false;
  }

 public:
  /// Feeds the target token at the current position and writes the log-probabilities of the next
  /// token into logprobs [tgt_vocab]. Fails (writing nothing) before encode, past the capacity, or
  /// on a bad token id.
  template <class Prof = NullProfiler>
  Status step(int token, float* logprobs, Prof&& prof = Prof{}) {
    if (mem_valid_len_ == 0) return Status::invalid_length;
    if (pos_ >= tgt_len) return Status::capacity_exceeded;
    if (Status st = TgtEmbed::check_tokens(&token, 1); st != Status::ok) return st;
    float* row = buffer(kRow);
    const LayerPath embed("tgt_embed");
    prof.begin(embed);
    (void)TgtEmbed{params.tgt_embed}.run(&token, 1, row);
    PosEnc::run(row, 1, pos_);
    prof.end(embed);
    using Layer = typename Decoder::Layer;
    for (index_t l = 0; l < Decoder::n_layers; ++l) {
      const LayerPath path = LayerPath("decoder") / "layers" / l;
      prof.begin(path);
      Layer{params.decoder.layers[l]}.step(row, pos_, mem_valid_len_, caches_[l], row, buffer(kStepScratch),
                                           mem_pad_used_ ? &mem_pad_ : nullptr, memory_mask_, memory_float_mask_);
      prof.end(path);
    }
    if constexpr (Decoder::final_norm) {
      const LayerPath path = LayerPath("decoder") / "norm";
      prof.begin(path);
      typename Decoder::Norm{params.decoder.norm}.run(row, 1, row);
      prof.end(path);
    }
    const LayerPath generator("generator");
    prof.begin(generator);
    float* out = buffer(kLogits);
    Gen{params.generator}.run(row, 1, out);
    prof.end(generator);
    for (index_t v = 0; v < tgt_vocab; ++v) logprobs[v] = out[v];
    ++pos_;
    return Status::ok;
  }

  /// Greedy decoding as in the annotated transformer: out[0] = start, then repeatedly the argmax of
  /// the next-token distribution (the first of equal maxima), until `end_token` is produced (if >= 0)
  /// or tgt_len tokens are out. out must hold tgt_len tokens; out_len receives the count (including
  /// start and end).
  template <class Prof = NullProfiler>
  Status greedy_decode(const int* src, index_t src_valid_len, int start, int end_token, int* out, index_t& out_len,
                       Prof&& prof = Prof{}) {
    return greedy_decode(src, src_valid_len, start, end_token, out, out_len, nullptr, prof);
  }

  /// greedy_decode that also writes each token's log-probability: token_logprobs[i] (i >= 1) is the
  /// log-probability of out[i] in the step that chose it (the generator's log_softmax, as `step`
  /// writes it); token_logprobs[0] = 0 (the start token is given). Their sum is the sequence's
  /// log-probability. token_logprobs holds tgt_len floats (or is null).
  template <class Prof = NullProfiler>
  Status greedy_decode(const int* src, index_t src_valid_len, int start, int end_token, int* out, index_t& out_len,
                       float* token_logprobs, Prof&& prof = Prof{}) {
    if (Status st = TgtEmbed::check_tokens(&start, 1); st != Status::ok) return st;
    if (Status st = encode(src, src_valid_len, prof); st != Status::ok) return st;
    return decode_greedy(start, end_token, out, out_len, token_logprobs, prof);
  }

  /// greedy_decode under PyTorch's masks (see Masks; encode(src, masks) then the steps): the
  /// masks nn.Transformer's forward would take for the same source, e.g.
  /// `model.greedy_decode(src, {.src_key_padding_mask = &pad}, start, end, out, n, logprobs)`.
  template <class Prof = NullProfiler>
  Status greedy_decode(const int* src, const Masks& masks, int start, int end_token, int* out, index_t& out_len,
                       float* token_logprobs = nullptr, Prof&& prof = Prof{}) {
    if (Status st = TgtEmbed::check_tokens(&start, 1); st != Status::ok) return st;
    if (Status st = encode(src, masks, PaddedRows::zeros, prof); st != Status::ok) return st;
    return decode_greedy(start, end_token, out, out_len, token_logprobs, prof);
  }

 private:
  /// The greedy loop after encode (start already checked).
  template <class Prof>
  Status decode_greedy(int start, int end_token, int* out, index_t& out_len, float* token_logprobs, Prof& prof) {
    float logprobs[tgt_vocab];
    index_t n = 0;
    out[n] = start;
    if (token_logprobs) token_logprobs[n] = 0.0f;
    ++n;
    while (n < tgt_len) {
      if (Status st = step(out[n - 1], logprobs, prof); st != Status::ok) return st;
      index_t best = 0;
      for (index_t v = 1; v < tgt_vocab; ++v) best = logprobs[v] > logprobs[best] ? v : best;
      out[n] = static_cast<int>(best);
      if (token_logprobs) token_logprobs[n] = logprobs[best];
      ++n;
      if (static_cast<int>(best) == end_token) break;
    }
    out_len = n;
    return Status::ok;
  }

 public:
  /// One row per named layer, in the order they run and named as the profiler records them: the
  /// encode phase (src_embed, encoder.layers.<i>, encoder.norm, each decoder layer's cross-attention
  /// keys and values of the memory, decoder.layers.<i>.cross_attn), then one decoding step
  /// (tgt_embed, decoder.layers.<i>, decoder.norm, generator) at the last position (tgt_len keys).
  /// See graph/summary.hpp.
  static constexpr index_t summary_rows = 1 + Encoder::n_layers + (Encoder::final_norm ? 1 : 0) +
                                          2 * Decoder::n_layers + 1 + (Decoder::final_norm ? 1 : 0) + 1;
  static constexpr ModelSummary<summary_rows> summary_table() {
    using EncLayer = typename Encoder::Layer;
    using DecLayer = typename Decoder::Layer;
    ModelSummary<summary_rows> s{};
    index_t r = 0;
    const RowShape src = RowShape::matrix(src_len, d_model), row = RowShape::matrix(1, d_model);
    s.rows[r++] = {
        "src_embed", "Embedding+PE", "encode", RowShape::token_ids(src_len), src, SrcEmbed::Params::param_count, 0};
    for (index_t l = 0; l < Encoder::n_layers; ++l)
      s.rows[r++] = {LayerPath("encoder") / "layers" / l,
                     EncLayer::name,
                     "encode",
                     src,
                     src,
                     EncLayer::Params::param_count,
                     LayerCost<EncLayer>::mult_adds(src_len),
                     true,
                     false,
                     param_bytes_of<typename EncLayer::Params>()};
    if constexpr (Encoder::final_norm)
      s.rows[r++] = {LayerPath("encoder") / "norm",
                     Encoder::Norm::name,
                     "encode",
                     src,
                     src,
                     Encoder::Norm::Params::param_count,
                     0};
    for (index_t l = 0; l < Decoder::n_layers; ++l)
      s.rows[r++] = {LayerPath("decoder") / "layers" / l / "cross_attn",
                     "memory K/V",
                     "encode",
                     src,
                     RowShape{{2, src_len, d_model}, 3, false},
                     0,
                     cost::memory_kv(src_len, d_model),
                     true,
                     true};
    s.rows[r++] = {"tgt_embed", "Embedding+PE", "step", RowShape::token_ids(1), row, TgtEmbed::Params::param_count, 0};
    for (index_t l = 0; l < Decoder::n_layers; ++l)
      s.rows[r++] = {LayerPath("decoder") / "layers" / l,
                     DecLayer::name,
                     "step",
                     row,
                     row,
                     DecLayer::Params::param_count,
                     cost::decoder_step(tgt_len, src_len, d_model, DecLayer::d_ff),
                     true,
                     false,
                     param_bytes_of<typename DecLayer::Params>()};
    if constexpr (Decoder::final_norm)
      s.rows[r++] = {
          LayerPath("decoder") / "norm", Decoder::Norm::name, "step", row, row, Decoder::Norm::Params::param_count, 0};
    s.rows[r++] = {"generator",
                   Gen::name,
                   "step",
                   row,
                   RowShape::matrix(1, tgt_vocab),
                   Gen::Params::param_count,
                   LayerCost<Gen>::mult_adds(1)};
    s.footprint = {param_count, weight_bytes, const_bytes, arena_bytes, arena_unplanned_bytes, state_bytes};
    return s;
  }

  /// Prints the torchinfo-like summary table through sink(const char*), one line at a time, and the
  /// attention scratch against a whole score matrix; no heap, no printf.
  template <class Sink>
  static void summary(Sink&& sink) {
    static constexpr auto table = summary_table();
    static_assert(table.params() == param_count, "EncoderDecoder: every parameter is in one summary row");
    print_summary(table, sink);
    using Attn = typename Encoder::Layer::SelfAttention;
    summary_detail::Line line;
    line.text("attention scratch (encoder, streaming over ").number(kAttentionKeyBlock).text("-key blocks): ");
    line.number(Attn::attention_floats * sizeof(float)).text(" B; a [").number(src_len).text(", ").number(src_len);
    line.text("] score matrix would take ").number(Attn::score_matrix_floats * sizeof(float)).text(" B");
    line.send(LineSink(sink));
  }

  /// The encoder output of the last `encode` ([src_len, d_model]; padded rows included: see PaddedRows).
  CMat<src_len, d_model> memory() const { return CMat<src_len, d_model>(buffer(kMemory)); }
  index_t position() const { return pos_; }

 private:
  float* buffer(Buffer b) { return arena_ + plan.offset[b]; }
  const float* buffer(Buffer b) const { return arena_ + plan.offset[b]; }

  alignas(kTensorAlign) float arena_[plan.arena_floats] = {};
  Cache caches_[n_layers] = {};
  KeyPaddingMask<src_len> mem_pad_ = {};                          // the memory key padding of the last encode (a copy)
  bool mem_pad_used_ = false;                                     // whether mem_pad_ applies
  const TorchBoolMask<tgt_len, src_len>* memory_mask_ = nullptr;  // the caller's, outliving decoding
  const TorchFloatMask<tgt_len, src_len>* memory_float_mask_ = nullptr;  // the caller's, outliving decoding
  index_t mem_valid_len_ = 0;
  index_t pos_ = 0;
};

/// The usual shape of it: identical options in encoder and decoder, final norms on both stacks.
template <index_t SrcLen, index_t TgtLen, index_t SrcVocab, index_t TgtVocab, index_t DModel, index_t NHeads,
          index_t DFf, index_t NLayers, LayerOptions Opt = LayerOptions{}>
using Transformer = EncoderDecoder<Embedding<SrcVocab, DModel>, Embedding<TgtVocab, DModel>,
                                   EncoderStack<EncoderLayer<SrcLen, DModel, NHeads, DFf, Opt>, NLayers, true>,
                                   DecoderStack<DecoderLayer<TgtLen, SrcLen, DModel, NHeads, DFf, Opt>, NLayers, true>,
                                   Generator<DModel, TgtVocab>>;

}  // namespace stf
