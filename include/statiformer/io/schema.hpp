// statiformer — a model's parameter schema as JSON: every parameter's name, PyTorch shape, stored
// layout and dtype, in state_dict order (from `Params::visit`). tools/export.py reads it and writes
// each tensor in the layout the model stores; the safetensors loader checks files against the same
// ParamRefs. Written without the heap, to a caller buffer or a FILE*.
//
//   {"format": "statiformer-schema", "version": 2, "model": "demo", "param_count": 44237,
//    "hparams": {"src_embed.num_embeddings": "13", ..., "encoder.layers.0.nhead": "4", ...},
//    "params": [
//     {"name": "encoder.layers.0.self_attn.q.weight", "dtype": "F32", "shape": [32, 32],
//      "transposed": true, "stored_shape": [32, 32], "panel": 64},
//     ...]}
//
// A model in an int8 number format (NumberFormat w8a32, w8a8; kernels/QUANTIZATION.md) has, for each
// linear, "dtype": "I8" with "k_quads": true on the weight (stored_shape [quad_padded(in), out]: panels
// of `panel` outputs, each in k-quads, qweight_index) and a "<linear>.weight_scale" vector [out] with
// "scale": true (F32, >= 0). tools/export.py --quantize writes both.
//
// `shape` is the PyTorch shape; `stored_shape` is what the model reads (shape reversed when
// `transposed`); `panel` > 0: the stored matrix is cut into column panels of that many columns,
// each row-major and contiguous, one after the other (the last one narrower; a matrix of at most
// `panel` columns is plain row-major). Exported files hold tensors in stored layout.
//
// `hparams`: the model's hyperparameters (io/hparams.hpp), key to value text, derived from the type;
// tools/export.py copies them into the file's `__metadata__` and the header's table, and the loader
// and bind_table compare them with the model's. Empty for a parameter struct the library does not know.
#pragma once

#include <cstdio>

#include <statiformer/io/hparams.hpp>
#include <statiformer/layers/params.hpp>

namespace stf {

/// Version of the schema JSON, and of the layout exporters write (safetensors `__metadata__`).
/// 2: transposed matrices are stored in column panels ("panel"); 1 had them plain row-major.
inline constexpr int kSchemaVersion = 2;

/// The shape of a parameter as the model stores it: [rows, cols], or [cols, rows] when transposed
/// (an int8 weight: [quad_padded(cols), rows], its reduction padded to whole k-quads).
inline void stored_shape(const ParamRef& ref, index_t& rows, index_t& cols) {
  rows = ref.transposed && ref.cols ? (ref.is_int8() ? quad_padded(ref.cols) : ref.cols) : ref.rows;
  cols = ref.transposed && ref.cols ? ref.rows : ref.cols;
}

namespace detail {

/// Appends text to a caller buffer (truncating, always NUL-terminated when capacity > 0) or a FILE*,
/// and counts every character it was given.
struct SchemaSink {
  char* buffer = nullptr;
  index_t capacity = 0;
  std::FILE* file = nullptr;
  index_t length = 0;
  bool file_ok = true;

  void put(char c) {
    if (buffer && length + 1 < capacity) {
      buffer[length] = c;
      buffer[length + 1] = '\0';
    }
    if (file && std::fputc(c, file) == EOF) file_ok = false;
    ++length;
  }
  void text(const char* s) {
    while (*s) put(*s++);
  }
  void number(index_t v) {
    char digits[24];
    index_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) put(digits[--n]);
  }
  void string(const char* s) {
    static constexpr char hex[] = "0123456789abcdef";
    put('"');
    for (; *s; ++s) {
      const auto c = static_cast<unsigned char>(*s);
      if (c == '"' || c == '\\') {
        put('\\');
        put(*s);
      } else if (c < 0x20) {
        text("\\u00");
        put(hex[c >> 4]);
        put(hex[c & 15]);
      } else {
        put(*s);
      }
    }
    put('"');
  }
  void shape(index_t rows, index_t cols) {
    put('[');
    number(rows);
    if (cols) {
      text(", ");
      number(cols);
    }
    put(']');
  }
};

template <class Params>
void write_schema(Params& params, SchemaSink& out, const char* model) {
  out.text("{\"format\": \"statiformer-schema\", \"version\": ");
  out.number(kSchemaVersion);
  out.text(", \"model\": ");
  out.string(model);
  out.text(", \"param_count\": ");
  out.number(Params::param_count);

  out.text(",\n \"hparams\": {");
  bool first_hparam = true;
  for_each_hparam(hparam_table<Params>, [&](const char* key, const char* value) {
    out.text(first_hparam ? "\n  " : ",\n  ");
    first_hparam = false;
    out.string(key);
    out.text(": ");
    out.string(value);
  });
  out.text(first_hparam ? "}" : "\n }");
  out.text(",\n \"params\": [");
  bool first = true;
  params.visit(
      [&](const Name& name, ParamRef ref) {
        out.text(first ? "\n  " : ",\n  ");
        first = false;
        out.text("{\"name\": ");
        out.string(name.c_str());
        out.text(ref.is_int8() ? ", \"dtype\": \"I8\", \"shape\": " : ", \"dtype\": \"F32\", \"shape\": ");
        out.shape(ref.rows, ref.cols);
        out.text(", \"transposed\": ");
        out.text(ref.transposed ? "true" : "false");
        out.text(", \"stored_shape\": ");
        index_t rows = 0, cols = 0;
        stored_shape(ref, rows, cols);
        out.shape(rows, cols);
        out.text(", \"panel\": ");
        out.number(ref.panel);
        if (ref.is_int8()) out.text(", \"k_quads\": true");
        if (ref.scale) out.text(", \"scale\": true");
        out.put('}');
      },
      Name{});
  out.text("\n ]}\n");
}

}  // namespace detail

/// Writes the schema JSON of `params` (any type with visit(f, prefix) and param_count) into
/// buffer[0 .. capacity), NUL-terminated. Returns the length of the whole JSON: it was written
/// completely iff the result is < capacity (call with capacity 0 to size a buffer).
template <class Params>
index_t write_schema_json(Params& params, char* buffer, index_t capacity, const char* model = "") {
  detail::SchemaSink out{buffer, capacity};
  if (buffer && capacity) buffer[0] = '\0';
  detail::write_schema(params, out, model);
  return out.length;
}

/// Writes the schema JSON of `params` to `file`; false if a write failed.
template <class Params>
bool write_schema_json(Params& params, std::FILE* file, const char* model = "") {
  detail::SchemaSink out{nullptr, 0, file};
  detail::write_schema(params, out, model);
  return out.file_ok;
}

}  // namespace stf
