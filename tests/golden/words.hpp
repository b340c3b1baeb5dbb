// Maps the words of cases.inc to statiformer's compile-time options, and makes every
// STF_GOLDEN_* macro a no-op unless the including test file defined it first.
#pragma once

#include <statiformer/config.hpp>

#define STF_FILL_neg_inf ::stf::MaskFill::neg_inf
#define STF_FILL_neg_1e9 ::stf::MaskFill::neg_1e9
#define STF_ACT_relu ::stf::Activation::relu
#define STF_ACT_gelu ::stf::Activation::gelu
#define STF_ACT_gelu_tanh ::stf::Activation::gelu_tanh
#define STF_LN_torch ::stf::LayerNormKind::torch
#define STF_LN_annotated ::stf::LayerNormKind::annotated

#ifndef STF_GOLDEN_SDPA
#define STF_GOLDEN_SDPA(...)
#endif
#ifndef STF_GOLDEN_MHA
#define STF_GOLDEN_MHA(...)
#endif
#ifndef STF_GOLDEN_FFN
#define STF_GOLDEN_FFN(...)
#endif
#ifndef STF_GOLDEN_LAYERNORM
#define STF_GOLDEN_LAYERNORM(...)
#endif
#ifndef STF_GOLDEN_LAYERNORM_EPS
#define STF_GOLDEN_LAYERNORM_EPS(...)
#endif
#ifndef STF_GOLDEN_ENCODER_LAYER
#define STF_GOLDEN_ENCODER_LAYER(...)
#endif
#ifndef STF_GOLDEN_ENCODER_LAYER_EPS
#define STF_GOLDEN_ENCODER_LAYER_EPS(...)
#endif
#ifndef STF_GOLDEN_DECODER_LAYER
#define STF_GOLDEN_DECODER_LAYER(...)
#endif
#ifndef STF_GOLDEN_ENCODER_STACK
#define STF_GOLDEN_ENCODER_STACK(...)
#endif
#ifndef STF_GOLDEN_DECODER_STACK
#define STF_GOLDEN_DECODER_STACK(...)
#endif
#ifndef STF_GOLDEN_MHA_MASKS
#define STF_GOLDEN_MHA_MASKS(...)
#endif
#ifndef STF_GOLDEN_ENCODER_LAYER_MASKS
#define STF_GOLDEN_ENCODER_LAYER_MASKS(...)
#endif
#ifndef STF_GOLDEN_DECODER_LAYER_MASKS
#define STF_GOLDEN_DECODER_LAYER_MASKS(...)
#endif
#ifndef STF_GOLDEN_POSENC
#define STF_GOLDEN_POSENC(...)
#endif
#ifndef STF_GOLDEN_EMBEDDING
#define STF_GOLDEN_EMBEDDING(...)
#endif
#ifndef STF_GOLDEN_GENERATOR
#define STF_GOLDEN_GENERATOR(...)
#endif
#ifndef STF_GOLDEN_CLASSIFIER
#define STF_GOLDEN_CLASSIFIER(...)
#endif
#ifndef STF_GOLDEN_ENCDEC
#define STF_GOLDEN_ENCDEC(...)
#endif
#ifndef STF_GOLDEN_ENCDEC_MASKS
#define STF_GOLDEN_ENCDEC_MASKS(...)
#endif
#ifndef STF_GOLDEN_DECODER_ONLY
#define STF_GOLDEN_DECODER_ONLY(...)
#endif
