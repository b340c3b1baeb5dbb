// statiformer — loading weights from a .safetensors file (as tools/export.py writes it) into a
// model's parameters, without the heap, checking everything first: all-or-nothing.
//
// The file: 8 bytes little-endian header length N, N bytes of JSON
//   {"__metadata__": {"format": "statiformer", "layout": "2", "encoder.layers.0.nhead": "4", ...},
//    "<name>": {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}, ...}
// then the data region; offsets are relative to it. Tensors are in the layout the model stores
// (ParamRef::transposed: [cols, rows]); `__metadata__` must say so. A plain PyTorch-layout file
// (another producer, no statiformer metadata) is rejected with `not_statiformer_layout` rather
// than guessed at: a square transposed weight would pass every shape check and compute garbage.
// Export with tools/export.py.
//
// Hyperparameters: `__metadata__` also carries the model's hyperparameters (io/hparams.hpp: heads,
// norm placement, activation, LayerNorm kind and eps, mask fill, lengths, sizes, layer counts),
// each under its key with the text the schema gives. Every hyperparameter of the model type must
// be in the file with the same text, else `LoadError::hyperparameter` names the key and both
// values ("hyperparameter encoder.layers.0.nhead: file 4, model 8"). A file without them (written
// before they were recorded, or by another producer) is rejected the same way ("not in the file"):
// weights of an 8-head model computed as 4 heads, or post-norm as pre-norm, pass every shape check
// and give wrong answers, so the default does not guess. LoadOptions::require_hyperparameters =
// false accepts such files (the caller vouches for them); a hyperparameter the file does carry is
// still checked, and a file that carries the model's hyperparameters but not one of its markers
// (below) is still refused: it was exported for a model without the marker. Metadata keys the
// model does not have are ignored, except the markers `causal` and `int8_attention`
// (io/hparams.hpp): the weights of causal layers do not load into encoder layers of the same shapes,
// nor weights exported for int8 attention into a model with float attention.
//
// F32 tensors whose bytes are float-aligned are bound in place (zero-copy: the file's bytes must
// outlive the model); F16 and BF16 tensors, misaligned ones, or all with LoadOptions::copy, are
// converted into the caller's storage (ParamStorage<Params>: param_count floats, each parameter at
// its offset in visit order).
//
// Checked in release builds, in this order (the first failure is reported, naming the tensor and
// the expected and found values): header length; JSON syntax (UTF-8, escapes, nesting depth);
// the safetensors structure; the statiformer layout metadata; the hyperparameters; names (duplicate, unexpected,
// missing); each parameter's dtype, stored shape and byte range; overlapping tensors; bytes of the
// data region no tensor covers; NaN/Inf (optional); storage for the copies. On any error nothing
// is written: the parameters keep their previous pointers and the storage its contents.
//
// The parts that do not depend on the model (JSON syntax, structure, string decoding, f16/bf16
// conversion, messages) are compiled once, in src/io/safetensors.cpp; this header keeps their
// declarations and the loader template, which visits the model's parameters.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <statiformer/io/schema.hpp>

namespace stf {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

/// Why a load failed. Nothing is thrown; on any error the model is unchanged.
enum class LoadError : std::uint8_t {
  ok = 0,
  file_too_small,          ///< fewer than the 8 bytes of the header length
  header_length,           ///< header length 0, above kMaxHeaderBytes, or past the end of the file
  json_syntax,             ///< not JSON: syntax, invalid UTF-8, control character, unterminated, trailing bytes
  json_too_deep,           ///< nesting deeper than safetensors' structure (kMaxJsonDepth)
  header_structure,        ///< JSON, but not {name: {dtype, shape, data_offsets}} (a field missing, repeated,
                           ///< unknown or of the wrong type, a negative or fractional number)
  not_statiformer_layout,  ///< no __metadata__ {"format": "statiformer", "layout": "1"} (not from tools/export.py)
  too_many_tensors,        ///< more tensors or parameters than the loader's MaxTensors
  duplicate_name,          ///< a tensor name (or __metadata__) appears twice
  unexpected_name,         ///< a tensor the model does not have
  missing_name,            ///< a parameter of the model the file does not have
  dtype,                   ///< a dtype other than F32, F16, BF16 (I8 for an int8 weight, and only there)
  shape,                   ///< a shape other than the parameter's stored shape
  offsets,                 ///< data_offsets not [begin, end], begin <= end <= data size, end - begin = bytes
  overlap,                 ///< two tensors share bytes
  gap,                     ///< bytes of the data region that no tensor covers
  non_finite,              ///< a NaN or infinity (LoadOptions::reject_non_finite)
  needs_storage,           ///< a tensor must be copied or converted, and no (or too small a) storage was given
  hyperparameter,          ///< a hyperparameter of the model differs in the file, appears twice, or is missing
  out_of_range,            ///< an int8 weight holding -128, or a negative weight scale (kernels/QUANTIZATION.md)
};

/// The error's name ("ok", "json_syntax", ...; static storage, never null).
const char* to_string(LoadError e);

/// Largest JSON header accepted (safetensors' own limit).
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
/// Deepest nesting accepted: the header object, a tensor's object, its shape array.
inline constexpr int kMaxJsonDepth = 3;

struct LoadOptions {
  bool reject_non_finite = true;  ///< NaN or ±Inf in any tensor fails the load
  bool copy = false;              ///< copy every tensor into storage even where it could be bound in place
  /// Files without the model's hyperparameters fail (LoadError::hyperparameter); false accepts them
  /// (those the file carries are still checked).
  bool require_hyperparameters = true;
};

/// Result of a load: the error, the tensor it is about, and a message with expected vs found.
struct LoadResult {
  LoadError error = LoadError::ok;
  Name tensor{};
  std::uint64_t expected = 0, found = 0;
  char message[448] = {};
  explicit operator bool() const { return error == LoadError::ok; }
};

/// Floats of storage that hold a copy of every parameter of Params (an int8 weight takes a quarter
/// of a float per element: its bytes are a multiple of 4).
template <class Params>
inline constexpr index_t param_storage_floats = param_bytes_of<Params>() / index_t(sizeof(float));

/// The model's own storage for copied or converted weights: param_storage_floats<Params> floats.
template <class Params>
struct ParamStorage {
  alignas(kTensorAlign) float data[param_storage_floats<Params>];
};

namespace detail::safetensors {

enum Dtype : std::uint8_t { kUnknown, kF32, kF16, kBF16, kI8 };
inline constexpr std::uint64_t kDtypeBytes[] = {0, 4, 2, 2, 1};
inline constexpr const char* kDtypeNames[] = {"?", "F32", "F16", "BF16", "I8"};
inline constexpr std::uint16_t kNoParam = 0xffff;

using u8 = unsigned char;

/// A JSON string as written in the header (escapes intact); compared and printed decoded.
struct Str {
  const u8* p = nullptr;  ///< first byte after the opening quote
  std::size_t n = 0;      ///< bytes up to the closing quote
};

/// One tensor of the header.
struct Entry {
  Str key;
  Str dtype_text;
  Dtype dtype = kUnknown;
  std::uint8_t rank = 0;
  bool shape_overflow = false, offsets_overflow = false;
  std::uint64_t dims[2] = {};
  std::uint64_t begin = 0, end = 0;
  std::uint16_t param = kNoParam;
};

/// The header's structure: entries[0 .. count) of at most `capacity`, and the layout metadata.
struct Header {
  Entry* entries;
  index_t capacity;
  index_t count = 0;
  bool has_metadata = false;
  Str format{}, layout{};
  bool has_format = false, has_layout = false;
  const u8* metadata = nullptr;  ///< the __metadata__ object's text, from '{' to '}'
  std::size_t metadata_n = 0;
};

/// Decoded s equals text[0 .. n)?
bool equals(Str s, const char* text, std::size_t n);
/// Decoded, printable (control bytes as '?'), truncated to fit a Name.
Name printable(Str s);

/// Steps 1 to 4 of the loader: header length, JSON syntax, the safetensors structure (into h; at
/// most h.capacity entries), statiformer's layout metadata. On success sets the data region
/// [data, data + data_len) and returns true; otherwise r holds the error and its message.
bool read_header(const u8* bytes, std::size_t size, Header& h, LoadResult& r, const u8*& data, std::uint64_t& data_len);
/// Step 4b: each of the `count` hyperparameters of `table` ("key\0value\0" pairs) is in the
/// metadata once with the same text (absent ones are skipped unless `require`); else r says which.
bool check_hparams(const Header& h, const char* table, index_t count, bool require, LoadResult& r);
/// Step 7: no two entries share bytes, and together they cover the data region; else r says which.
bool check_coverage(const Header& h, std::uint64_t data_len, LoadResult& r);
/// Index of the first NaN or infinity among the n elements of dtype d at data (nan: which), or n.
std::uint64_t first_non_finite(const u8* data, Dtype d, std::uint64_t n, bool& nan);
/// Element i of a float tensor of dtype d (F32, F16, BF16) at data.
float element_at(const u8* data, Dtype d, std::uint64_t i);
/// out[0 .. n) = the n elements of dtype d at data, as floats.
void convert(const u8* data, Dtype d, std::uint64_t n, float* out);

/// One argument of format_to: a string, or an integer printed in decimal.
struct FmtArg {
  const char* text = nullptr;
  unsigned long long number = 0;
  bool negative = false;
  FmtArg(const char* s) : text(s ? s : "") {}  // NOLINT: implicit on purpose
  FmtArg(char* s) : FmtArg(static_cast<const char*>(s)) {}
  FmtArg(unsigned long long v) : number(v) {}
  FmtArg(int v)
      : number(v < 0 ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v)),
        negative(v < 0) {}
};

/// printf's %s, %d and %llu (and %%) into out[0 .. capacity), truncated, NUL-terminated: the
/// messages without stdio, so the loader links in firmware that has none.
void format_args(char* out, std::size_t capacity, const char* format, const FmtArg* args, std::size_t n);

template <class... Args>
void format_to(char* out, std::size_t capacity, const char* format, Args... args) {
  const FmtArg list[] = {FmtArg(args)..., FmtArg(0)};
  format_args(out, capacity, format, list, sizeof...(Args));
}

template <class... Args>
void say(LoadResult& r, LoadError e, const char* format, Args... args) {
  r.error = e;
  format_to(r.message, sizeof r.message, format, args...);
}

inline unsigned long long ull(std::uint64_t v) { return v; }

}  // namespace detail::safetensors

/// Loads `params` (anything with visit(f, prefix) and param_count) from the safetensors bytes
/// file[0 .. size). storage (nullable): param_storage_floats<Params> floats for the tensors that are copied.
/// MaxTensors bounds the entries and parameters (the loader's stack use is ~64 bytes each).
template <index_t MaxTensors = 256, class Params>
LoadResult load_safetensors(Params& params, const void* file, std::size_t size, float* storage, index_t storage_floats,
                            const LoadOptions& options = {}) {
  namespace st = detail::safetensors;
  using st::ull;
  LoadResult r;
  const auto* bytes = static_cast<const st::u8*>(file);

  // 1-4. header length, JSON syntax, structure, statiformer's layout
  st::Entry entries[MaxTensors];
  st::Header h{entries, MaxTensors};
  const st::u8* data = nullptr;
  std::uint64_t data_len = 0;
  if (!st::read_header(bytes, size, h, r, data, data_len)) return r;

  // 4b. the model's hyperparameters
  if constexpr (hparam_table<Params>.count > 0)
    if (!st::check_hparams(h, hparam_table<Params>.text, hparam_table<Params>.count, options.require_hyperparameters,
                           r))
      return r;

  // 5. names: each parameter matches exactly one entry, each entry one parameter
  std::uint16_t param_entry[MaxTensors];
  index_t n_params = 0;
  params.visit(
      [&](const Name& name, ParamRef) {
        if (!r || n_params == MaxTensors) {
          if (r) st::say(r, LoadError::too_many_tensors, "model has more than %llu parameters", ull(MaxTensors));
          return;
        }
        const index_t idx = n_params++;
        param_entry[idx] = st::kNoParam;
        for (index_t e = 0; e < h.count; ++e) {
          if (!st::equals(entries[e].key, name.c_str(), name.length)) continue;
          if (param_entry[idx] != st::kNoParam) {
            r.tensor = name;
            st::say(r, LoadError::duplicate_name, "tensor '%s' appears twice", name.c_str());
            return;
          }
          param_entry[idx] = static_cast<std::uint16_t>(e);
          entries[e].param = static_cast<std::uint16_t>(idx);
        }
      },
      Name{});
  if (!r) return r;
  for (index_t e = 0; e < h.count; ++e) {
    if (entries[e].param != st::kNoParam) continue;
    // an unknown name, or a second copy of a name that is also unknown
    r.tensor = st::printable(entries[e].key);
    for (index_t f = 0; f < e; ++f)
      if (entries[f].key.n == entries[e].key.n &&
          std::memcmp(entries[f].key.p, entries[e].key.p, entries[e].key.n) == 0) {
        st::say(r, LoadError::duplicate_name, "tensor '%s' appears twice", r.tensor.c_str());
        return r;
      }
    st::say(r, LoadError::unexpected_name, "tensor '%s' is not a parameter of the model", r.tensor.c_str());
    return r;
  }

  // 6. per parameter: present, dtype, stored shape, byte range
  index_t idx = 0;
  params.visit(
      [&](const Name& name, ParamRef ref) {
        const index_t i = idx++;
        if (!r) return;
        r.tensor = name;
        if (param_entry[i] == st::kNoParam) {
          st::say(r, LoadError::missing_name, "parameter '%s' is not in the file", name.c_str());
          return;
        }
        const st::Entry& e = entries[param_entry[i]];
        if (ref.is_int8() ? e.dtype != st::kI8 : (e.dtype == st::kUnknown || e.dtype == st::kI8)) {
          const Name found = st::printable(e.dtype_text);
          st::say(r, LoadError::dtype,
                  ref.is_int8() ? "tensor '%s': dtype I8 expected (the model's linears are int8), found '%s'"
                                : "tensor '%s': dtype F32, F16 or BF16 expected, found '%s'",
                  name.c_str(), found.c_str());
          return;
        }
        index_t rows = 0, cols = 0;
        stored_shape(ref, rows, cols);
        const std::uint8_t rank = cols ? 2 : 1;
        if (e.shape_overflow || e.rank != rank || e.dims[0] != rows || (rank == 2 && e.dims[1] != cols)) {
          char want[48], got[64];
          st::format_to(want, sizeof want, rank == 2 ? "[%llu, %llu]" : "[%llu]", ull(rows), ull(cols));
          if (e.shape_overflow)
            st::format_to(got, sizeof got, "a dimension above 2^64");
          else if (e.rank == 0)
            st::format_to(got, sizeof got, "[]");
          else if (e.rank == 1)
            st::format_to(got, sizeof got, "[%llu]", ull(e.dims[0]));
          else
            st::format_to(got, sizeof got, "[%llu, %llu%s]", ull(e.dims[0]), ull(e.dims[1]), e.rank > 2 ? ", ..." : "");
          r.expected = ref.size();
          st::say(r, LoadError::shape, "tensor '%s': stored shape %s expected%s, found %s", name.c_str(), want,
                  ref.is_int8()    ? " (the transpose of PyTorch's, its rows padded to whole k-quads of 4)"
                  : ref.transposed ? " (the transpose of PyTorch's)"
                                   : "",
                  got);
          return;
        }
        const std::uint64_t bytes_needed = ref.size() * st::kDtypeBytes[e.dtype];
        r.expected = bytes_needed;
        r.found = e.end - e.begin;
        if (e.offsets_overflow || e.begin > e.end || e.end > data_len || e.end - e.begin != bytes_needed) {
          st::say(r, LoadError::offsets,
                  "tensor '%s': data_offsets [%llu, %llu]%s: expected %llu bytes (%s) inside the %llu-byte data region",
                  name.c_str(), ull(e.begin), ull(e.end), e.offsets_overflow ? " (above 2^64)" : "", ull(bytes_needed),
                  st::kDtypeNames[e.dtype], ull(data_len));
        }
      },
      Name{});
  if (!r) return r;

  // 7. no two tensors share bytes; together they cover the data region
  if (!st::check_coverage(h, data_len, r)) return r;

  // 8. values: int8 weights in [-127, 127], weight scales finite and >= 0 (always: the kernels'
  // arithmetic assumes both); then NaN/Inf anywhere (optional)
  idx = 0;
  params.visit(
      [&](const Name& name, ParamRef ref) {
        const st::Entry& e = entries[param_entry[idx++]];
        if (!r || !(ref.is_int8() || ref.scale)) return;
        for (index_t k = 0; k < ref.size(); ++k) {
          const float scale = ref.is_int8() ? 0.0f : st::element_at(data + e.begin, e.dtype, k);
          const bool bad = ref.is_int8() ? data[e.begin + k] == 0x80 : !(scale >= 0.0f && scale <= 3.4028235e38f);
          if (!bad) continue;
          r.tensor = name;
          r.found = k;
          st::say(r, LoadError::out_of_range,
                  ref.is_int8() ? "tensor '%s': element %llu is -128, expected int8 weights in [-127, 127]"
                                : "tensor '%s': element %llu is negative, NaN or infinite, expected a weight scale "
                                  "that is finite and >= 0",
                  name.c_str(), ull(k));
          return;
        }
      },
      Name{});
  if (!r) return r;
  if (options.reject_non_finite) {
    idx = 0;
    params.visit(
        [&](const Name& name, ParamRef ref) {
          const st::Entry& e = entries[param_entry[idx++]];
          if (!r || ref.is_int8()) return;
          bool nan = false;
          const std::uint64_t k = st::first_non_finite(data + e.begin, e.dtype, ref.size(), nan);
          if (k != ref.size()) {
            r.tensor = name;
            r.found = k;
            st::say(r, LoadError::non_finite, "tensor '%s': element %llu is %s, expected a finite value", name.c_str(),
                    ull(k), nan ? "NaN" : "infinite");
          }
        },
        Name{});
    if (!r) return r;
  }

  // 9. storage for what cannot be bound in place
  auto in_place = [&](const st::Entry& e) {
    return !options.copy &&
           (e.dtype == st::kI8 ||
            (e.dtype == st::kF32 && reinterpret_cast<std::uintptr_t>(data + e.begin) % alignof(float) == 0));
  };
  bool copies = false;
  for (index_t e = 0; e < h.count; ++e) copies = copies || !in_place(entries[e]);
  constexpr index_t needed = param_storage_floats<Params>;
  if (copies && (!storage || storage_floats < needed)) {
    r.tensor = Name{};
    r.expected = needed;
    r.found = storage ? storage_floats : 0;
    st::say(r, LoadError::needs_storage,
            "tensors must be copied (F16/BF16, unaligned or LoadOptions::copy): storage "
            "of %llu floats expected, found %llu",
            ull(r.expected), ull(r.found));
    return r;
  }

  // 10. commit: nothing below can fail
  r.tensor = Name{};
  r.expected = r.found = 0;
  idx = 0;
  index_t offset = 0;
  params.visit(
      [&](const Name&, ParamRef ref) {
        const st::Entry& e = entries[param_entry[idx++]];
        if (ref.is_int8()) {
          if (in_place(e)) {
            *ref.data_i8 = reinterpret_cast<const std::int8_t*>(data + e.begin);
          } else {
            std::memcpy(storage + offset, data + e.begin, static_cast<std::size_t>(ref.bytes()));
            *ref.data_i8 = reinterpret_cast<const std::int8_t*>(storage + offset);
          }
        } else if (in_place(e)) {
          *ref.data = reinterpret_cast<const float*>(data + e.begin);
        } else {
          st::convert(data + e.begin, e.dtype, ref.size(), storage + offset);
          *ref.data = storage + offset;
        }
        offset += ref.bytes() / index_t(sizeof(float));
      },
      Name{});
  return r;
}

/// Same, with the model's own storage for the copies.
template <index_t MaxTensors = 256, class Params>
LoadResult load_safetensors(Params& params, const void* file, std::size_t size, ParamStorage<Params>& storage,
                            const LoadOptions& options = {}) {
  return load_safetensors<MaxTensors>(params, file, size, storage.data, param_storage_floats<Params>, options);
}

}  // namespace stf
