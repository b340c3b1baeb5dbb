// statiformer — the safetensors loader's non-template parts (io/safetensors.hpp), compiled once
// instead of in every translation unit that includes the header: the JSON syntax checker, the
// structure walker, JSON string decoding, f16/bf16 conversion, the message formatter, and the
// loader's checks that do not depend on the model (header, layout metadata, coverage of the data
// region). No heap and no stdio: the library links into firmware.
#include <statiformer/io/safetensors.hpp>

namespace stf {

const char* to_string(LoadError e) {
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
                                   "needs_storage",
                                   "hyperparameter",
                                   "out_of_range"};
  const auto i = static_cast<unsigned>(e);
  return i < sizeof names / sizeof names[0] ? names[i] : "unknown";
}

namespace detail::safetensors {
namespace {

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

/// Decodes the next character of a syntax-checked JSON string into out (1 to 4 UTF-8 bytes).
int next_char(const u8*& p, const u8* end, u8 out[4]) {
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

}  // namespace

/// Decoded s equals text[0 .. n)?
bool equals(Str s, const char* text, std::size_t n) {
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
bool equals(Str s, const char* text) { return equals(s, text, std::strlen(text)); }

/// Decoded, printable (control bytes as '?'), truncated to fit a Name.
Name printable(Str s) {
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

namespace {

// ---- the safetensors structure ----------------------------------------------------------------------

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

/// Parses the header's structure into `h`; returns the first structural error.
LoadError parse_structure(const u8* json, std::size_t n, Header& h, LoadResult& r) {
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
      w.ws();
      h.metadata = w.p;
      if (!w.eat('{')) return LoadError::header_structure;
      if (w.eat('}')) {
        h.metadata_n = static_cast<std::size_t>(w.p - h.metadata);
        continue;
      }
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
      h.metadata_n = static_cast<std::size_t>(w.p - h.metadata);
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
          for (std::uint8_t d = kF32; d <= kI8; ++d)
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

std::uint32_t read_u32(const u8* p) {
  return p[0] | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}
std::uint16_t read_u16(const u8* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }

float f16_to_f32(std::uint16_t h) {
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
float element(const u8* data, Dtype d, std::uint64_t i) {
  if (d == kF32) return std::bit_cast<float>(read_u32(data + 4 * i));
  const std::uint16_t h = read_u16(data + 2 * i);
  return d == kF16 ? f16_to_f32(h) : std::bit_cast<float>(std::uint32_t{h} << 16);
}

bool finite(float x) { return (std::bit_cast<std::uint32_t>(x) & 0x7f800000u) != 0x7f800000u; }

}  // namespace

/// printf's %s, %d and %llu (and %%) into out[0 .. capacity), truncated, NUL-terminated: the
/// messages without stdio, so the loader links in firmware that has none.
void format_args(char* out, std::size_t capacity, const char* format, const FmtArg* args, std::size_t n) {
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

bool read_header(const u8* bytes, std::size_t size, Header& h, LoadResult& r, const u8*& data,
                 std::uint64_t& data_len) {
  // 1. header length
  if (!bytes || size < 8) {
    say(r, LoadError::file_too_small, "file of %llu bytes: expected at least 8 (the header length)", ull(size));
    return false;
  }
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  r.found = header_len;
  if (header_len == 0 || header_len > kMaxHeaderBytes || header_len > size - 8) {
    r.expected = size - 8 < kMaxHeaderBytes ? size - 8 : kMaxHeaderBytes;
    say(r, LoadError::header_length, "header length %llu: expected 1 to %llu (file of %llu bytes)", ull(header_len),
        ull(r.expected), ull(size));
    return false;
  }
  const u8* json = bytes + 8;
  data = json + header_len;
  data_len = size - 8 - header_len;

  // 2. JSON syntax
  if (const LoadError e = Syntax{json, data}.document(); e != LoadError::ok) {
    say(r, e, e == LoadError::json_syntax ? "header is not valid JSON (UTF-8)" : "header nested deeper than %d",
        kMaxJsonDepth);
    return false;
  }

  // 3. structure
  if (const LoadError e = parse_structure(json, static_cast<std::size_t>(header_len), h, r); e != LoadError::ok) {
    if (e == LoadError::too_many_tensors)
      say(r, e, "more than %llu tensors", ull(h.capacity));
    else if (e == LoadError::duplicate_name)
      say(r, e, "'__metadata__' appears twice");
    else
      say(r, e, "header is not safetensors' {name: {dtype, shape, data_offsets}} (at '%s')", r.tensor.c_str());
    return false;
  }

  // 4. statiformer's layout
  if (!h.has_format || !equals(h.format, "statiformer") || !h.has_layout) {
    say(r, LoadError::not_statiformer_layout,
        "no __metadata__ {\"format\": \"statiformer\", \"layout\": \"%d\"}: tensors may be in PyTorch layout; "
        "export with tools/export.py",
        kSchemaVersion);
    return false;
  }
  char version[8];
  format_to(version, sizeof version, "%d", kSchemaVersion);
  if (!equals(h.layout, version)) {
    say(r, LoadError::not_statiformer_layout,
        "statiformer layout version '%s': expected '%s' (version 2 stores linear weights in column panels; "
        "export the checkpoint again with tools/export.py)",
        printable(h.layout).c_str(), version);
    return false;
  }
  return true;
}

/// Does the metadata key end in the field `field` ("field" or "<module>.field")?
bool is_field(Str k, const char* field) {
  const std::size_t n = std::strlen(field);
  if (k.n < n || std::memcmp(k.p + (k.n - n), field, n) != 0) return false;
  return k.n == n || k.p[k.n - n - 1] == '.';
}

/// The hyperparameters a file may not carry where the model does not: each marks weights that
/// compute something else in a model without it (io/hparams.hpp). What to do instead, for the error.
const char* marker_advice(Str k) {
  if (is_field(k, "causal"))
    return "weights of causal layers: load them into a model with CausalLayer, e.g. stf::DecoderOnly";
  if (is_field(k, "int8_attention"))
    return "weights exported for int8 attention: load them into a model with LayerOptions::int8_attention, or "
           "export them again without it";
  return nullptr;
}

/// Does the file's metadata hold any of the `count` keys of `table` (key, value, key, value, ...)?
bool carries_any(const Header& h, const char* table, index_t count) {
  for (const char* key = table; count--;) {
    const std::size_t key_n = std::strlen(key);
    Walker w{h.metadata, h.metadata + h.metadata_n};
    if (w.eat('{') && !w.at('}')) do {
        Str k, v;
        if (!w.string(k) || !w.eat(':') || !w.string(v)) break;
        if (equals(k, key, key_n)) return true;
      } while (w.eat(','));
    key += key_n + 1;
    key += std::strlen(key) + 1;
  }
  return false;
}

bool check_hparams(const Header& h, const char* table, index_t count, bool require, LoadResult& r) {
  const index_t count_all = count;
  // A file's keys the model does not have are ignored (a dropout, a comment), except the markers
  // (`causal`, `int8_attention`): the same weights in a model without them compute something else.
  {
    Walker w{h.metadata, h.metadata + h.metadata_n};
    if (w.eat('{') && !w.at('}')) do {
        Str k, v;
        if (!w.string(k) || !w.eat(':') || !w.string(v)) break;
        const char* advice = marker_advice(k);
        if (!advice) continue;
        bool mine = false;
        const char* key = table;
        for (index_t i = 0; i < count && !mine; ++i) {
          const std::size_t key_n = std::strlen(key);
          mine = equals(k, key, key_n);
          key += key_n + 1;
          key += std::strlen(key) + 1;
        }
        if (mine) continue;
        r.tensor = printable(k);
        say(r, LoadError::hyperparameter, "hyperparameter %s: file %s, not in the model (%s)", r.tensor.c_str(),
            printable(v).c_str(), advice);
        return false;
      } while (w.eat(','));
  }
  for (const char* key = table; count--;) {
    const std::size_t key_n = std::strlen(key);
    const char* value = key + key_n + 1;
    const char* next = value + std::strlen(value) + 1;
    Str found;
    int seen = 0;
    Walker w{h.metadata, h.metadata + h.metadata_n};  // syntax and structure checked: string pairs
    if (w.eat('{') && !w.at('}')) do {
        Str k, v;
        if (!w.string(k) || !w.eat(':') || !w.string(v)) break;
        if (equals(k, key, key_n) && seen++ == 0) found = v;
      } while (w.eat(','));
    if (seen == 1 && equals(found, value)) {
      key = next;
      continue;
    }
    // not required: a file without hyperparameters passes (the caller vouches for it); a marker the
    // model has and a file with hyperparameters lacks does not (weights exported for a model without it)
    if (seen == 0 && !require &&
        !(marker_advice(Str{reinterpret_cast<const u8*>(key), key_n}) && carries_any(h, table, count_all))) {
      key = next;
      continue;
    }
    r.tensor = Name(key);
    if (seen > 1)
      say(r, LoadError::hyperparameter, "hyperparameter %s: appears %d times in the file", key, seen);
    else if (seen == 1)
      say(r, LoadError::hyperparameter, "hyperparameter %s: file %s, model %s", key, printable(found).c_str(), value);
    else if (carries_any(h, table, count_all))  // exported with hyperparameters, for a model without this one
      say(r, LoadError::hyperparameter,
          "hyperparameter %s: not in the file, model %s (the file carries the model's other hyperparameters: it "
          "was exported for a model without this one)",
          key, value);
    else
      say(r, LoadError::hyperparameter,
          "hyperparameter %s: not in the file, model %s (a file without hyperparameters: export it again with "
          "tools/export.py, or accept it with LoadOptions::require_hyperparameters = false)",
          key, value);
    return false;
  }
  return true;
}

bool check_coverage(const Header& h, std::uint64_t data_len, LoadResult& r) {
  const Entry* entries = h.entries;
  // 7. no two tensors share bytes; together they cover the data region
  std::uint64_t covered = 0;
  for (index_t a = 0; a < h.count; ++a) {
    covered += entries[a].end - entries[a].begin;  // each <= data_len (checked), count <= capacity
    for (index_t b = a + 1; b < h.count; ++b)
      if (entries[a].begin < entries[b].end && entries[b].begin < entries[a].end) {
        r.tensor = printable(entries[a].key);
        const Name other = printable(entries[b].key);
        r.expected = entries[a].end;
        r.found = entries[b].begin;
        say(r, LoadError::overlap, "tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap", r.tensor.c_str(),
            ull(entries[a].begin), ull(entries[a].end), other.c_str(), ull(entries[b].begin), ull(entries[b].end));
        return false;
      }
  }
  if (covered != data_len) {
    r.tensor = Name{};
    r.expected = data_len;
    r.found = covered;
    say(r, LoadError::gap, "tensors cover %llu of the %llu bytes of the data region", ull(covered), ull(data_len));
    return false;
  }
  return true;
}

std::uint64_t first_non_finite(const u8* data, Dtype d, std::uint64_t n, bool& nan) {
  for (std::uint64_t k = 0; k < n; ++k) {
    const float x = element(data, d, k);
    if (!finite(x)) {
      nan = x != x;
      return k;
    }
  }
  return n;
}

float element_at(const u8* data, Dtype d, std::uint64_t i) { return element(data, d, i); }

void convert(const u8* data, Dtype d, std::uint64_t n, float* out) {
  for (std::uint64_t k = 0; k < n; ++k) out[k] = element(data, d, k);
}

}  // namespace detail::safetensors
}  // namespace stf
