// statiformer — the one catalogue of compile-time shape checks.
//
// Every shape rule of the library is a `constexpr bool` function template here, called as
// `static_assert(check::rule<...>())` where the rule applies. The template parameters carry the
// names of the dimensions, so a failure reads, for example:
//
//   error: static assertion failed: MultiHeadAttention: DModel must be divisible by NHeads
//   ... In instantiation of 'constexpr bool stf::check::dmodel_divisible_by_nheads()
//       [with long unsigned int DModel = 30; long unsigned int NHeads = 4]'
//
// i.e. the message names the rule and the dimension, and the instantiation line gives the values.
// tests/compile_fail/ checks these texts.
#pragma once

#include <cstddef>

namespace stf::check {

using dim_t = std::size_t;

template <dim_t... Dims>
constexpr bool tensor_dims_positive() {
  static_assert(((Dims > 0) && ...), "Tensor: every dimension must be at least 1");
  return true;
}

/// A tensor or weight bound to a slot of another shape ("a weight of the wrong shape bound to a
/// layer", "a [S, D1] tensor fed where [S, D2] is expected").
template <dim_t BoundRows, dim_t BoundCols, dim_t ExpectedRows, dim_t ExpectedCols>
constexpr bool tensor_shape() {
  static_assert(BoundRows == ExpectedRows, "shape mismatch: the bound tensor's Rows differ from the expected Rows");
  static_assert(BoundCols == ExpectedCols, "shape mismatch: the bound tensor's Cols differ from the expected Cols");
  return true;
}

template <dim_t BoundLength, dim_t ExpectedLength>
constexpr bool vector_length() {
  static_assert(BoundLength == ExpectedLength,
                "shape mismatch: the bound vector's length differs from the expected length");
  return true;
}

template <dim_t DModel, dim_t NHeads>
constexpr bool dmodel_divisible_by_nheads() {
  static_assert(NHeads >= 1, "MultiHeadAttention: NHeads must be at least 1");
  static_assert(DModel % NHeads == 0, "MultiHeadAttention: DModel must be divisible by NHeads");
  return true;
}

template <dim_t SeqLen, dim_t DModel>
constexpr bool layer_dims_positive() {
  static_assert(SeqLen >= 1, "layer: SeqLen must be at least 1");
  static_assert(DModel >= 1, "layer: DModel must be at least 1");
  return true;
}

/// The width of the tensor fed to a layer must be the layer's DModel.
template <dim_t InputDModel, dim_t DModel>
constexpr bool input_dmodel() {
  static_assert(InputDModel == DModel, "layer input: the input's DModel differs from the layer's DModel");
  return true;
}

/// The sequence length of the tensor fed to a layer must be the layer's SeqLen.
template <dim_t InputSeqLen, dim_t SeqLen>
constexpr bool input_seq_len() {
  static_assert(InputSeqLen == SeqLen, "layer input: the input's SeqLen differs from the layer's SeqLen");
  return true;
}

/// Cross-attention: the memory (encoder output) must be [MemLen, DModel] of the decoder.
template <dim_t MemoryDModel, dim_t DModel>
constexpr bool memory_dmodel() {
  static_assert(MemoryDModel == DModel, "cross-attention: the memory's DModel differs from the decoder's DModel");
  return true;
}

template <dim_t MemorySeqLen, dim_t MemLen>
constexpr bool memory_len() {
  static_assert(MemorySeqLen == MemLen, "cross-attention: the memory's SeqLen differs from the decoder's MemLen");
  return true;
}

template <dim_t EncoderDModel, dim_t DecoderDModel>
constexpr bool encoder_decoder_dmodel() {
  static_assert(EncoderDModel == DecoderDModel,
                "EncoderDecoder: the encoder's DModel differs from the decoder's DModel");
  return true;
}

template <dim_t EncoderSeqLen, dim_t DecoderMemLen>
constexpr bool encoder_decoder_memory_len() {
  static_assert(EncoderSeqLen == DecoderMemLen,
                "EncoderDecoder: the encoder's SeqLen differs from the decoder's MemLen");
  return true;
}

template <dim_t EmbeddingDModel, dim_t ModelDModel>
constexpr bool embedding_dmodel() {
  static_assert(EmbeddingDModel == ModelDModel, "Embedding: the embedding's DModel differs from the model's DModel");
  return true;
}

template <dim_t GeneratorVocab, dim_t EmbeddingVocab>
constexpr bool generator_vocab() {
  static_assert(GeneratorVocab == EmbeddingVocab,
                "Generator: the generator's Vocab differs from the target embedding's Vocab");
  return true;
}

/// An explicit boolean attention mask must be [SeqQ, SeqK].
template <dim_t MaskRows, dim_t MaskCols, dim_t SeqQ, dim_t SeqK>
constexpr bool mask_shape() {
  static_assert(MaskRows == SeqQ, "attention mask: the mask's rows differ from the query length SeqQ");
  static_assert(MaskCols == SeqK, "attention mask: the mask's cols differ from the key length SeqK");
  return true;
}

/// The annotated transformer's LayerNorm divides by (DModel - 1) (unbiased std).
template <bool UnbiasedStd, dim_t DModel>
constexpr bool layernorm_dmodel() {
  static_assert(DModel >= 1, "LayerNorm: DModel must be at least 1");
  static_assert(!UnbiasedStd || DModel >= 2, "LayerNorm(annotated): unbiased std needs DModel of at least 2");
  return true;
}

/// Positional encodings are a table of MaxLen rows: a sequence may not be longer.
template <dim_t SeqLen, dim_t MaxLen>
constexpr bool posenc_capacity() {
  static_assert(SeqLen <= MaxLen, "PositionalEncoding: SeqLen exceeds the table's MaxLen");
  return true;
}

/// In a Sequential model, each layer's output shape must be the next layer's input shape.
template <dim_t LayerIndex, dim_t OutSeqLen, dim_t OutDModel, dim_t NextInSeqLen, dim_t NextInDModel>
constexpr bool layer_chain() {
  static_assert(OutSeqLen == NextInSeqLen,
                "Sequential: a layer's output SeqLen differs from the next layer's input SeqLen");
  static_assert(OutDModel == NextInDModel,
                "Sequential: a layer's output DModel differs from the next layer's input DModel");
  return true;
}

template <dim_t NLayers>
constexpr bool stack_layers() {
  static_assert(NLayers >= 1, "stack: NLayers must be at least 1");
  return true;
}

/// An int8 linear's reduction: 127² · In must fit an int32 sum (ref::kMaxQuantizedIn, kernels/QUANTIZATION.md).
template <dim_t In>
constexpr bool int8_reduction() {
  static_assert(In <= 133144,
                "int8 linear: In (its reduction) must be at most 133144, or the int32 sums could overflow");
  return true;
}

/// The int8 attention (LayerOptions::int8_attention) quantizes the linears' outputs as w8a8 does:
/// it is an option of that format only.
template <bool Int8Attention, bool W8a8>
constexpr bool int8_attention_format() {
  static_assert(!Int8Attention || W8a8, "int8_attention: an option of NumberFormat::w8a8 only");
  return true;
}

}  // namespace stf::check
