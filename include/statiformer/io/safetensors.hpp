// statiformer — loading weights from a .safetensors file (as tools/export.py writes it) into a
// model's parameters, without the heap, checking everything first: all-or-nothing.
//
// The file: 8 bytes little-endian header length N, N bytes of JSON
//   {"__metadata__": {"format": "statiformer", "layout": "1"},
//    "<name>": {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}, ...}
// then the data region; offsets are relative to it. Tensors are in the layout the model stores
// (ParamRef::transposed: [cols, rows]); `__metadata__` must say so. A plain PyTorch-layout file
// (another producer, no statiformer metadata) is rejected with `not_statiformer_layout` rather
// than guessed at: a square transposed weight would pass every shape check and compute garbage.
// Export with tools/export.py.
//
// F32 tensors whose bytes are float-aligned are bound in place (zero-copy: the file's bytes must
// outlive the model); F16 and BF16 tensors, misaligned ones, or all with LoadOptions::copy, are
// converted into the caller's storage (ParamStorage<Params>: param_count floats, each parameter at
// its offset in visit order).
//
// Checked in release builds, in this order (the first failure is reported, naming the tensor and
// the expected and found values): header length; JSON syntax (UTF-8, escapes, nesting depth);
// the safetensors structure; the statiformer layout metadata; names (duplicate, unexpected,
// missing); each parameter's dtype, stored shape and byte range; overlapping tensors; bytes of the
// data region no tensor covers; NaN/Inf (optional); storage for the copies. On any error nothing
// is written: the parameters keep their previous pointers and the storage its contents.
#pragma once

#include <bit>
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
  dtype,                   ///< a dtype other than F32, F16, BF16
  shape,                   ///< a shape other than the parameter's stored shape
  offsets,                 ///< data_offsets not [begin, end], begin <= end <= data size, end - begin = bytes
  overlap,                 ///< two tensors share bytes
  gap,                     ///< bytes of the data region that no tensor covers
  non_finite,              ///< a NaN or infinity (LoadOptions::reject_non_finite)
  needs_storage,           ///< a tensor must be copied or converted, and no (or too small a) storage was given
};

inline constexpr const char* to_string(LoadError e) {
  constexpr const char* names[] = {"ok",
                                   "file_too_small",
                                   "header_length",
                                   "json_syntax",
                                   "json_too_deep",
                                   "header_structure",
                                   "not_statiformer_layout",
                                   "too_many_tensors",
                                   "duplicate_name",
                                   "unexpected_name",
                                   "missing_name",
                                   "dtype",
                                   "shape",
                                   "offsets",
                                   "overlap",
                                   "gap",
                                   "non_finite",
                                   "needs_storage"};
  const auto i = static_cast<unsigned>(e);
  return i < sizeof names / sizeof names[0] ? names[i] : "unknown";
}

/// Largest JSON header accepted (safetensors' own limit).
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
/// Deepest nesting accepted: the header object, a tensor's object, its shape array.
inline constexpr int kMaxJsonDepth = 3;

struct LoadOptions {
  bool reject_non_finite = true;  ///< NaN or ±Inf in any tensor fails the load
  bool copy = false;              ///< copy every tensor into storage even where it could be bound in place
};

/// Result of a load: the error, the tensor it is about, and a message with expected vs found.
struct LoadResult {
  LoadError error = LoadError::ok;
  Name tensor{};
  std::uint64_t expected = 0, found = 0;
  char message[448] = {};
  explicit operator bool() const { return error == LoadError::ok; }
};

/// The model's own storage for copied or converted weights: one float per parameter element.
template <class Params>
struct ParamStorage {
  alignas(kTensorAlign) float data[Params::param_count];
};

namespace detail::safetensors {

enum Dtype : std::uint8_t { kUnknown, kF32, kF16, kBF16 };
inline constexpr std::uint64_t kDtypeBytes[] = {0, 4, 2, 2};
inline constexpr const char* kDtypeNames[] = {"?", "F32", "F16", "BF16"};
inline constexpr std::uint16_t kNoParam = 0xffff;

using u8 = unsigned char;

// ---- JSON syntax (RFC 8259), bounded depth, UTF-8 checked -----------------------------------------

struct Syntax {
  const u8* p;
  const u8* end;
  LoadError error = LoadError::ok;

  bool fail(LoadError e) {
    if (error == LoadError::ok) error = e;
    return false;
  }
  void ws() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  }
  static int hex(u8 c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool hex4(unsigned& v) {
    if (end - p < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex(*p++);
      if (h < 0) return false;
      v = v * 16 + static_cast<unsigned>(h);
    }
    return true;
  }
  /// One UTF-8 sequence starting at p (a byte >= 0x80): well-formed, shortest form, no surrogates.
  bool utf8() {
    const u8 c = *p;
    int n = 0;
    u8 lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return false;
    }
    if (end - p <= n) return false;
    ++p;
    for (int i = 0; i < n; ++i, ++p) {
      if (*p < (i == 0 ? lo : 0x80) || *p > (i == 0 ? hi : 0xbf)) return false;
    }
    return true;
  }
  bool string() {  // at '"'
    ++p;
    while (p < end) {
      const u8 c = *p;
      if (c == '"') {
        ++p;
        return true;
      }
      if (c < 0x20) return fail(LoadError::json_syntax);
      if (c == '\\') {
        if (++p == end) return fail(LoadError::json_syntax);
        const u8 e = *p++;
        if (e == 'u') {
          unsigned cp = 0;
          if (!hex4(cp)) return fail(LoadError::json_syntax);
          if (cp >= 0xdc00 && cp <= 0xdfff) return fail(LoadError::json_syntax);  // lone low surrogate
          if (cp >= 0xd800 && cp <= 0xdbff) {
            unsigned low = 0;
            if (end - p < 2 || p[0] != '\\' || p[1] != 'u') return fail(LoadError::json_syntax);
            p += 2;
            if (!hex4(low) || low < 0xdc00 || low > 0xdfff) return fail(LoadError::json_syntax);
          }
        } else if (!std::strchr("\"\\/bfnrt", e) || e == 0) {
          return fail(LoadError::json_syntax);
        }
      } else if (c >= 0x80) {
        if (!utf8()) return fail(LoadError::json_syntax);
      } else {
        ++p;
      }
    }
    return fail(LoadError::json_syntax);  // unterminated
  }
  bool digits() {
    if (p == end || *p < '0' || *p > '9') return false;
    while (p < end && *p >= '0' && *p <= '9') ++p;
    return true;
  }
  bool number() {
    if (p < end && *p == '-') ++p;
    if (p == end) return fail(LoadError::json_syntax);
    if (*p == '0') {
      ++p;
    } else if (!digits()) {
      return fail(LoadError::json_syntax);
    }
    if (p < end && *p == '.') {
      ++p;
      if (!digits()) return fail(LoadError::json_syntax);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      ++p;
      if (p < end && (*p == '+' || *p == '-')) ++p;
      if (!digits()) return fail(LoadError::json_syntax);
    }
    return true;
  }
  bool literal(const char* word) {
    const auto n = static_cast<std::ptrdiff_t>(std::strlen(word));
    if (end - p < n || std::memcmp(p, word, static_cast<std::size_t>(n)) != 0) return fail(LoadError::json_syntax);
    p += n;
    return true;
  }
  bool value(int depth) {
    ws();
    if (p == end) return fail(LoadError::json_syntax);
    const u8 c = *p;
    if (c == '{' || c == '[') {
      if (depth >= kMaxJsonDepth) return fail(LoadError::json_too_deep);
      const u8 close = c == '{' ? '}' : ']';
      ++p;
      ws();
      if (p < end && *p == close) {
        ++p;
        return true;
      }
      for (;;) {
        if (c == '{') {
          ws();
          if (p == end || *p != '"' || !string()) return fail(LoadError::json_syntax);
          ws();
          if (p == end || *p != ':') return fail(LoadError::json_syntax);
          ++p;
        }
        if (!value(depth + 1)) return false;
        ws();
        if (p == end) return fail(LoadError::json_syntax);
        if (*p == close) {
          ++p;
          return true;
        }
        if (*p != ',') return fail(LoadError::json_syntax);
        ++p;
      }
    }
    if (c == '"') return string();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    return fail(LoadError::json_syntax);
  }
  /// The whole header is one JSON value, with only whitespace around it.
  LoadError document() {
    if (value(0)) {
      ws();
      if (p != end) fail(LoadError::json_syntax);
    }
    return error;
  }
};

// ---- strings as written (escapes intact), compared and printed decoded ---------------------------

struct Str {
  const u8* p = nullptr;  ///< first byte after the opening quote
  std::size_t n = 0;      ///< bytes up to the closing quote
};

/// Decodes the next character of a syntax-checked JSON string into out (1 to 4 UTF-8 bytes).
inline int next_char(const u8*& p, const u8* end, u8 out[4]) {
  if (*p != '\\') {
    out[0] = *p++;
    return 1;
  }
  ++p;
  const u8 e = *p++;
  switch (e) {
    case 'b':
      out[0] = '\b';
      return 1;
    case 'f':
      out[0] = '\f';
      return 1;
    case 'n':
      out[0] = '\n';
      return 1;
    case 'r':
      out[0] = '\r';
      return 1;
    case 't':
      out[0] = '\t';
      return 1;
    case 'u':
      break;
    default:
      out[0] = e;
      return 1;
  }
  auto hex4 = [&] {
    unsigned v = 0;
    for (int i = 0; i < 4 && p < end; ++i) v = v * 16 + static_cast<unsigned>(Syntax::hex(*p++));
    return v;
  };
  unsigned cp = hex4();
  if (cp >= 0xd800 && cp <= 0xdbff && end - p >= 6) {
    p += 2;
    cp = 0x10000 + ((cp - 0xd800) << 10) + (hex4() - 0xdc00);
  }
  if (cp < 0x80) {
    out[0] = static_cast<u8>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<u8>(0xc0 | (cp >> 6));
    out[1] = static_cast<u8>(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<u8>(0xe0 | (cp >> 12));
    out[1] = static_cast<u8>(0x80 | ((cp >> 6) & 0x3f));
    out[2] = static_cast<u8>(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = static_cast<u8>(0xf0 | (cp >> 18));
  out[1] = static_cast<u8>(0x80 | ((cp >> 12) & 0x3f));
  out[2] = static_cast<u8>(0x80 | ((cp >> 6) & 0x3f));
  out[3] = static_cast<u8>(0x80 | (cp & 0x3f));
  return 4;
}

/// Decoded s equals text[0 .. n)?
inline bool equals(Str s, const char* text, std::size_t n) {
  const u8* p = s.p;
  const u8* end = s.p + s.n;
  std::size_t i = 0;
  u8 buf[4];
  while (p < end) {
    const int k = next_char(p, end, buf);
    for (int j = 0; j < k; ++j, ++i)
      if (i >= n || static_cast<u8>(text[i]) != buf[j]) return false;
  }
  return i == n;
}
inline bool equals(Str s, const char* text) { return equals(s, text, std::strlen(text)); }

/// Decoded, printable (control bytes as '?'), truncated to fit a Name.
inline Name printable(Str s) {
  char text[Name::capacity + 1] = {};
  std::size_t i = 0;
  const u8* p = s.p;
  const u8* end = s.p + s.n;
  u8 buf[4];
  while (p < end && i + 4 < Name::capacity) {
    const int k = next_char(p, end, buf);
    for (int j = 0; j < k; ++j) text[i++] = buf[j] < 0x20 || buf[j] == 0x7f ? '?' : static_cast<char>(buf[j]);
  }
  if (p < end) text[i++] = '~';
  return Name(text);
}

// ---- the safetensors structure ----------------------------------------------------------------------

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

/// Walks a syntax-checked header (bounds still checked; nothing is assumed).
struct Walker {
  const u8* p;
  const u8* end;

  void ws() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  }
  bool at(u8 c) {
    ws();
    return p < end && *p == c;
  }
  bool eat(u8 c) {
    if (!at(c)) return false;
    ++p;
    return true;
  }
  bool string(Str& s) {
    if (!eat('"')) return false;
    s.p = p;
    while (p < end && *p != '"') p += *p == '\\' && end - p > 1 ? 2 : 1;
    if (p >= end) return false;
    s.n = static_cast<std::size_t>(p - s.p);
    ++p;
    return true;
  }
  /// A non-negative integer without fraction or exponent; overflow beyond 2^64 - 1 is flagged.
  bool integer(std::uint64_t& v, bool& overflow) {
    ws();
    if (p == end || *p < '0' || *p > '9') return false;
    v = 0;
    while (p < end && *p >= '0' && *p <= '9') {
      const std::uint64_t d = *p++ - '0';
      if (v > (UINT64_MAX - d) / 10) overflow = true;
      v = v * 10 + d;
    }
    return p == end || (*p != '.' && *p != 'e' && *p != 'E');
  }
};

struct Header {
  Entry* entries;
  index_t capacity;
  index_t count = 0;
  bool has_metadata = false;
  Str format, layout;
  bool has_format = false, has_layout = false;
};

/// Parses the header's structure into `h`; returns the first structural error.
inline LoadError parse_structure(const u8* json, std::size_t n, Header& h, LoadResult& r) {
  Walker w{json, json + n};
  if (!w.eat('{')) return LoadError::header_structure;
  if (w.eat('}')) return LoadError::ok;
  do {
    Str key;
    if (!w.string(key) || !w.eat(':')) return LoadError::header_structure;
    if (equals(key, "__metadata__")) {
      if (h.has_metadata) {
        r.tensor = Name("__metadata__");
        return LoadError::duplicate_name;
      }
      h.has_metadata = true;
      if (!w.eat('{')) return LoadError::header_structure;
      if (w.eat('}')) continue;
      do {
        Str k, v;
        if (!w.string(k) || !w.eat(':') || !w.string(v)) return LoadError::header_structure;
        bool* seen = equals(k, "format") ? &h.has_format : equals(k, "layout") ? &h.has_layout : nullptr;
        if (seen) {
          if (*seen) return LoadError::header_structure;
          *seen = true;
          (seen == &h.has_format ? h.format : h.layout) = v;
        }
      } while (w.eat(','));
      if (!w.eat('}')) return LoadError::header_structure;
      continue;
    }
    if (h.count == h.capacity) return LoadError::too_many_tensors;
    Entry& e = h.entries[h.count++];
    e = Entry{};
    e.key = key;
    r.tensor = printable(key);
    if (!w.eat('{')) return LoadError::header_structure;
    bool has_dtype = false, has_shape = false, has_offsets = false;
    if (!w.at('}')) do {
        Str field;
        if (!w.string(field) || !w.eat(':')) return LoadError::header_structure;
        if (equals(field, "dtype")) {
          if (has_dtype || !w.string(e.dtype_text)) return LoadError::header_structure;
          has_dtype = true;
          for (std::uint8_t d = kF32; d <= kBF16; ++d)
            if (equals(e.dtype_text, kDtypeNames[d])) e.dtype = static_cast<Dtype>(d);
        } else if (equals(field, "shape")) {
          if (has_shape || !w.eat('[')) return LoadError::header_structure;
          has_shape = true;
          if (!w.at(']')) do {
              std::uint64_t d = 0;
              if (!w.integer(d, e.shape_overflow)) return LoadError::header_structure;
              if (e.rank < 2) e.dims[e.rank] = d;
              if (e.rank < 255) ++e.rank;
            } while (w.eat(','));
          if (!w.eat(']')) return LoadError::header_structure;
        } else if (equals(field, "data_offsets")) {
          if (has_offsets || !w.eat('[') || !w.integer(e.begin, e.offsets_overflow) || !w.eat(',') ||
              !w.integer(e.end, e.offsets_overflow) || !w.eat(']'))
            return LoadError::header_structure;
          has_offsets = true;
        } else {
          return LoadError::header_structure;
        }
      } while (w.eat(','));
    if (!w.eat('}') || !has_dtype || !has_shape || !has_offsets) return LoadError::header_structure;
  } while (w.eat(','));
  if (!w.eat('}')) return LoadError::header_structure;
  r.tensor = Name{};
  return LoadError::ok;
}

// ---- values -----------------------------------------------------------------------------------------

inline std::uint32_t read_u32(const u8* p) {
  return p[0] | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}
inline std::uint16_t read_u16(const u8* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }

inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  std::uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    exp = 113;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

/// Element i of a tensor of dtype d as a float.
inline float element(const u8* data, Dtype d, std::uint64_t i) {
  if (d == kF32) return std::bit_cast<float>(read_u32(data + 4 * i));
  const std::uint16_t h = read_u16(data + 2 * i);
  return d == kF16 ? f16_to_f32(h) : std::bit_cast<float>(std::uint32_t{h} << 16);
}

inline bool finite(float x) { return (std::bit_cast<std::uint32_t>(x) & 0x7f800000u) != 0x7f800000u; }

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
inline void format_args(char* out, std::size_t capacity, const char* format, const FmtArg* args, std::size_t n) {
  std::size_t len = 0, next = 0;
  auto put = [&](char c) {
    if (len + 1 < capacity) out[len++] = c;
  };
  for (const char* p = format; *p; ++p) {
    if (*p != '%') {
      put(*p);
      continue;
    }
    ++p;
    while (*p == 'l') ++p;
    if (*p == '\0') break;
    if (*p == '%') {
      put('%');
      continue;
    }
    if (next == n) continue;
    const FmtArg& a = args[next++];
    if (*p == 's') {
      for (const char* t = a.text ? a.text : ""; *t; ++t) put(*t);
      continue;
    }
    char digits[24];
    int k = 0;
    unsigned long long v = a.number;
    do {
      digits[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    if (a.negative) put('-');
    while (k) put(digits[--k]);
  }
  if (capacity) out[len] = '\0';
}

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
/// file[0 .. size). storage (nullable): param_count floats for the tensors that are copied.
/// MaxTensors bounds the entries and parameters (the loader's stack use is ~64 bytes each).
template <index_t MaxTensors = 256, class Params>
LoadResult load_safetensors(Params& params, const void* file, std::size_t size, float* storage, index_t storage_floats,
                            const LoadOptions& options = {}) {
  namespace st = detail::safetensors;
  using st::ull;
  LoadResult r;
  const auto* bytes = static_cast<const st::u8*>(file);

  // 1. header length
  if (!bytes || size < 8) {
    st::say(r, LoadError::file_too_small, "file of %llu bytes: expected at least 8 (the header length)", ull(size));
    return r;
  }
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  r.found = header_len;
  if (header_len == 0 || header_len > kMaxHeaderBytes || header_len > size - 8) {
    r.expected = size - 8 < kMaxHeaderBytes ? size - 8 : kMaxHeaderBytes;
    st::say(r, LoadError::header_length, "header length %llu: expected 1 to %llu (file of %llu bytes)", ull(header_len),
            ull(r.expected), ull(size));
    return r;
  }
  const st::u8* json = bytes + 8;
  const st::u8* data = json + header_len;
  const std::uint64_t data_len = size - 8 - header_len;

  // 2. JSON syntax
  if (const LoadError e = st::Syntax{json, data}.document(); e != LoadError::ok) {
    st::say(r, e, e == LoadError::json_syntax ? "header is not valid JSON (UTF-8)" : "header nested deeper than %d",
            kMaxJsonDepth);
    return r;
  }

  // 3. structure
  st::Entry entries[MaxTensors];
  st::Header h{entries, MaxTensors, 0, false, {}, {}, false, false};
  if (const LoadError e = st::parse_structure(json, static_cast<std::size_t>(header_len), h, r); e != LoadError::ok) {
    if (e == LoadError::too_many_tensors)
      st::say(r, e, "more than %llu tensors", ull(MaxTensors));
    else if (e == LoadError::duplicate_name)
      st::say(r, e, "'__metadata__' appears twice");
    else
      st::say(r, e, "header is not safetensors' {name: {dtype, shape, data_offsets}} (at '%s')", r.tensor.c_str());
    return r;
  }

  // 4. statiformer's layout
  if (!h.has_format || !st::equals(h.format, "statiformer") || !h.has_layout) {
    st::say(r, LoadError::not_statiformer_layout,
            "no __metadata__ {\"format\": \"statiformer\", \"layout\": \"%d\"}: tensors may be in PyTorch layout; "
            "export with tools/export.py",
            kSchemaVersion);
    return r;
  }
  char version[8];
  st::format_to(version, sizeof version, "%d", kSchemaVersion);
  if (!st::equals(h.layout, version)) {
    st::say(r, LoadError::not_statiformer_layout,
            "statiformer layout version '%s': expected '%s' (version 2 stores linear weights in column panels; "
            "export the checkpoint again with tools/export.py)",
            st::printable(h.layout).c_str(), version);
    return r;
  }

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
        if (e.dtype == st::kUnknown) {
          const Name found = st::printable(e.dtype_text);
          st::say(r, LoadError::dtype, "tensor '%s': dtype F32, F16 or BF16 expected, found '%s'", name.c_str(),
                  found.c_str());
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
                  ref.transposed ? " (the transpose of PyTorch's)" : "", got);
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
  std::uint64_t covered = 0;
  for (index_t a = 0; a < h.count; ++a) {
    covered += entries[a].end - entries[a].begin;  // each <= data_len (checked), count <= MaxTensors
    for (index_t b = a + 1; b < h.count; ++b)
      if (entries[a].begin < entries[b].end && entries[b].begin < entries[a].end) {
        r.tensor = st::printable(entries[a].key);
        const Name other = st::printable(entries[b].key);
        r.expected = entries[a].end;
        r.found = entries[b].begin;
        st::say(r, LoadError::overlap, "tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap", r.tensor.c_str(),
                ull(entries[a].begin), ull(entries[a].end), other.c_str(), ull(entries[b].begin), ull(entries[b].end));
        return r;
      }
  }
  if (covered != data_len) {
    r.tensor = Name{};
    r.expected = data_len;
    r.found = covered;
    st::say(r, LoadError::gap, "tensors cover %llu of the %llu bytes of the data region", ull(covered), ull(data_len));
    return r;
  }

  // 8. values
  if (options.reject_non_finite) {
    idx = 0;
    params.visit(
        [&](const Name& name, ParamRef ref) {
          const st::Entry& e = entries[param_entry[idx++]];
          if (!r) return;
          for (std::uint64_t k = 0; k < ref.size(); ++k) {
            const float x = st::element(data + e.begin, e.dtype, k);
            if (!st::finite(x)) {
              r.tensor = name;
              r.found = k;
              st::say(r, LoadError::non_finite, "tensor '%s': element %llu is %s, expected a finite value",
                      name.c_str(), ull(k), x != x ? "NaN" : "infinite");
              return;
            }
          }
        },
        Name{});
    if (!r) return r;
  }

  // 9. storage for what cannot be bound in place
  auto in_place = [&](const st::Entry& e) {
    return !options.copy && e.dtype == st::kF32 &&
           reinterpret_cast<std::uintptr_t>(data + e.begin) % alignof(float) == 0;
  };
  bool copies = false;
  for (index_t e = 0; e < h.count; ++e) copies = copies || !in_place(entries[e]);
  if (copies && (!storage || storage_floats < Params::param_count)) {
    r.tensor = Name{};
    r.expected = Params::param_count;
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
        if (in_place(e)) {
          *ref.data = reinterpret_cast<const float*>(data + e.begin);
        } else {
          for (std::uint64_t k = 0; k < ref.size(); ++k) storage[offset + k] = st::element(data + e.begin, e.dtype, k);
          *ref.data = storage + offset;
        }
        offset += ref.size();
      },
      Name{});
  return r;
}

/// Same, with the model's own storage for the copies.
template <index_t MaxTensors = 256, class Params>
LoadResult load_safetensors(Params& params, const void* file, std::size_t size, ParamStorage<Params>& storage,
                            const LoadOptions& options = {}) {
  return load_safetensors<MaxTensors>(params, file, size, storage.data, Params::param_count, options);
}

}  // namespace stf
