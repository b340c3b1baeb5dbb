// statiformer — umbrella header.
//
// Data flows one way through the headers:
//   shape/ (checks) → kernels/ (reference kernels) → layers/ (shape-typed modules)
//   → graph/ (memory plan, profiler, summaries) → models/ (composed models) → io/ (weight binding)
#pragma once

#include <statiformer/config.hpp>
#include <statiformer/graph/memory_plan.hpp>
#include <statiformer/graph/sequential.hpp>
#include <statiformer/graph/summary.hpp>
#include <statiformer/io/bind.hpp>
#include <statiformer/io/safetensors.hpp>
#include <statiformer/io/schema.hpp>
#include <statiformer/layers/attention.hpp>
#include <statiformer/layers/causal_layer.hpp>
#include <statiformer/layers/decoder_layer.hpp>
#include <statiformer/layers/embedding.hpp>
#include <statiformer/layers/encoder_layer.hpp>
#include <statiformer/layers/feed_forward.hpp>
#include <statiformer/layers/heads.hpp>
#include <statiformer/layers/kv_cache.hpp>
#include <statiformer/layers/layer_norm.hpp>
#include <statiformer/layers/stack.hpp>
#include <statiformer/models/decoder_only.hpp>
#include <statiformer/models/encoder_decoder.hpp>
#include <statiformer/profiler.hpp>
#include <statiformer/shape/checks.hpp>
#include <statiformer/tensor.hpp>
