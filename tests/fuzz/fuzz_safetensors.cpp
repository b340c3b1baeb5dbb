// libFuzzer harness for the safetensors loader (include/statiformer/io/safetensors.hpp), built with
// clang and ASan + UBSan by `./run fuzz SECONDS` (tests/fuzz/CMakeLists.txt). Seeds: tests/io/corpus.
//
// Each input is loaded into seven models (the tiny model, the same with a transposed weight, an
// encoder stack, the small encoder-decoder of the hyperparameter corpus, also with
// require_hyperparameters off, the small decoder-only model and the encoder stack of its shapes of
// the decoder-only corpus, and the small int8 encoder stack), with and without copies. Besides the sanitizers, it
// checks the loader's contract against its own reading of the file (a small JSON reader and F32/F16/BF16 decoders of
// its own, sharing no code with the loader): a failed load binds nothing; a successful one binds each parameter to the
// tensor of the same name, in place (the very bytes of an aligned F32 tensor, when copies are not asked for) or else
// copied into the storage, in order, every copied value equal bit for bit to what the file's bytes describe, and finite
// (reject_non_finite); an int8 weight is I8, bound in place unless copies are asked for, and holds no -128; a weight
// scale is >= 0; and each of the model's hyperparameters is in the metadata exactly once with the model's text, and the
// metadata holds no `causal` marker the model does not have.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <statiformer/io/safetensors.hpp>

#include "../../tools/schema/models.hpp"

namespace {

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

// ---- the harness's own reading of a safetensors file ---------------------------------------------

enum class Dtype { unknown, f32, f16, bf16, i8 };

struct Tensor {
  std::string name;  ///< the key, escapes decoded (UTF-8)
  Dtype dtype = Dtype::unknown;
  std::uint64_t begin = 0, end = 0;  ///< data_offsets
};

/// Reads the JSON of a header that the loader accepted: an object of tensor entries
/// {"dtype": "...", "shape": [...], "data_offsets": [begin, end]} and an optional __metadata__.
/// Returns false on anything it cannot read (the loader accepted it: a finding).
struct HeaderReader {
  const char* p;
  const char* end;

  void ws() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  }
  bool eat(char c) {
    ws();
    if (p == end || *p != c) return false;
    ++p;
    return true;
  }
  static void utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  bool hex4(std::uint32_t& v) {
    if (end - p < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i, ++p) {
      const char c = *p;
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return false;
      v = v * 16 + static_cast<std::uint32_t>(d);
    }
    return true;
  }
  bool string(std::string& out) {
    out.clear();
    if (!eat('"')) return false;
    while (p < end && *p != '"') {
      if (*p != '\\') {
        out += *p++;
        continue;
      }
      if (++p == end) return false;
      const char c = *p++;
      switch (c) {
        case '"':
        case '\\':
        case '/':
          out += c;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          std::uint32_t cp;
          if (!hex4(cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair
            std::uint32_t lo;
            if (end - p < 6 || p[0] != '\\' || p[1] != 'u') return false;
            p += 2;
            if (!hex4(lo) || lo < 0xdc00 || lo >= 0xe000) return false;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          utf8(out, cp);
          break;
        }
        default:
          return false;
      }
    }
    return eat('"');
  }
  bool integer(std::uint64_t& v) {
    ws();
    if (p == end || *p < '0' || *p > '9') return false;
    v = 0;
    while (p < end && *p >= '0' && *p <= '9') v = v * 10 + static_cast<std::uint64_t>(*p++ - '0');
    return true;
  }
  bool integers(std::vector<std::uint64_t>& out) {
    out.clear();
    if (!eat('[')) return false;
    if (eat(']')) return true;
    do {
      std::uint64_t v;
      if (!integer(v)) return false;
      out.push_back(v);
    } while (eat(','));
    return eat(']');
  }
  std::vector<std::pair<std::string, std::string>> metadata;  ///< __metadata__'s pairs, decoded

  bool read(std::vector<Tensor>& tensors) {
    if (!eat('{')) return false;
    if (eat('}')) return true;
    do {
      std::string key, field, text;
      if (!string(key) || !eat(':') || !eat('{')) return false;
      const bool metadata = key == "__metadata__";
      Tensor t{key};
      if (!eat('}')) {
        do {
          if (!string(field) || !eat(':')) return false;
          std::vector<std::uint64_t> numbers;
          if (metadata) {
            if (!string(text)) return false;
            this->metadata.emplace_back(field, text);
          } else if (field == "dtype") {
            if (!string(text)) return false;
            t.dtype = text == "F32"    ? Dtype::f32
                      : text == "F16"  ? Dtype::f16
                      : text == "BF16" ? Dtype::bf16
                      : text == "I8"   ? Dtype::i8
                                       : Dtype::unknown;
          } else if (field == "shape") {
            if (!integers(numbers)) return false;
          } else if (field == "data_offsets") {
            if (!integers(numbers) || numbers.size() != 2) return false;
            t.begin = numbers[0];
            t.end = numbers[1];
          } else {
            return false;
          }
        } while (eat(','));
        if (!eat('}')) return false;
      }
      if (!metadata) tensors.push_back(t);
    } while (eat(','));
    if (!eat('}')) return false;
    ws();
    return p == end;
  }
};

// ---- the harness's own decoders: sign, exponent and significand scaled by a power of two ----------

float half_to_float(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, significand = h & 0x3ff;
  float magnitude;
  if (exponent == 0x1f)
    magnitude = significand ? NAN : INFINITY;
  else if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(significand), -24);  // subnormal: 0.significand * 2^-14
  else
    magnitude = std::ldexp(static_cast<float>(0x400 | significand), exponent - 25);  // 1.significand * 2^(e-15)
  return h & 0x8000 ? -magnitude : magnitude;
}

float bfloat16_to_float(std::uint16_t h) {
  const int exponent = (h >> 7) & 0xff, significand = h & 0x7f;
  float magnitude;
  if (exponent == 0xff)
    magnitude = significand ? NAN : INFINITY;
  else if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(significand), -133);  // 0.significand * 2^-126
  else
    magnitude = std::ldexp(static_cast<float>(0x80 | significand), exponent - 134);  // 1.significand * 2^(e-127)
  return h & 0x8000 ? -magnitude : magnitude;
}

/// Element k of a tensor whose bytes start at `bytes`, little-endian.
float element(const std::uint8_t* bytes, Dtype dtype, std::uint64_t k) {
  if (dtype == Dtype::f32) {
    float x;
    std::memcpy(&x, bytes + 4 * k, 4);  // x86 and the fuzzer's hosts are little-endian
    return x;
  }
  const auto h = static_cast<std::uint16_t>(bytes[2 * k] | (bytes[2 * k + 1] << 8));
  return dtype == Dtype::f16 ? half_to_float(h) : bfloat16_to_float(h);
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// ---- the check ------------------------------------------------------------------------------------

/// Whether a metadata key is a marker (io/hparams.hpp: `causal`, `int8_attention`, bare or as a
/// module's field): weights that compute something else in a model without it.
bool is_marker(const std::string& k) {
  auto field = [&](const std::string& f) {
    return k == f || (k.size() > f.size() && k.compare(k.size() - f.size() - 1, f.size() + 1, "." + f) == 0);
  };
  return field("causal") || field("int8_attention");
}

template <class Params>
void load_and_check(const std::uint8_t* data, std::size_t size, bool copy, bool require_hyperparameters = true) {
  static Params params;
  static stf::ParamStorage<Params> storage;
  params = Params{};
  const stf::LoadResult r = stf::load_safetensors(params, data, size, storage,
                                                  {.copy = copy, .require_hyperparameters = require_hyperparameters});
  FUZZ_CHECK(r.message[sizeof r.message - 1] == '\0');
  FUZZ_CHECK(stf::to_string(r.error)[0] != 'u' || r.error == stf::LoadError::unexpected_name);

  // A successful load implies a header this reader can read.
  std::vector<Tensor> tensors;
  const std::uint8_t* region = nullptr;
  if (r) {
    FUZZ_CHECK(size >= 8);
    std::uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = header_len << 8 | data[i];
    FUZZ_CHECK(header_len <= size - 8);
    const char* json = reinterpret_cast<const char*>(data + 8);
    HeaderReader reader{json, json + header_len, {}};
    FUZZ_CHECK(reader.read(tensors));
    region = data + 8 + header_len;
    // each hyperparameter of the model is in the metadata once, with the model's text (or, when
    // not required, absent; a marker only from a file that carries none of the model's keys)
    bool carries_any = false, marker_missing = false;
    stf::for_each_hparam(stf::hparam_table<Params>, [&](const char* key, const char* value) {
      int seen = 0;
      for (const auto& [k, v] : reader.metadata)
        if (k == key) {
          ++seen;
          FUZZ_CHECK(v == value);
        }
      FUZZ_CHECK(seen == 1 || (seen == 0 && !require_hyperparameters));
      carries_any = carries_any || seen > 0;
      marker_missing = marker_missing || (is_marker(key) && seen == 0);
    });
    FUZZ_CHECK(!(carries_any && marker_missing));
    // a marker of the file (causal, int8_attention) is one of the model's keys (other keys the model lacks are ignored)
    for (const auto& pair : reader.metadata) {
      const std::string& k = pair.first;  // (clang 14 captures no structured binding)
      const bool marker = is_marker(k);
      bool mine = false;
      stf::for_each_hparam(stf::hparam_table<Params>, [&](const char* key, const char*) { mine = mine || k == key; });
      FUZZ_CHECK(!marker || mine || stf::hparam_table<Params>.count == 0);
    }
  }

  stf::index_t offset = 0;
  params.visit(
      [&](const stf::Name& name, stf::ParamRef ref) {
        const void* bound = ref.is_int8() ? static_cast<const void*>(*ref.data_i8) : *ref.data;
        if (!r) {
          FUZZ_CHECK(bound == nullptr);
          return;
        }
        // the one tensor of this name
        const Tensor* t = nullptr;
        for (const Tensor& candidate : tensors)
          if (candidate.name == name.c_str()) {
            FUZZ_CHECK(t == nullptr);
            t = &candidate;
          }
        FUZZ_CHECK(t != nullptr && t->dtype != Dtype::unknown);
        // an int8 weight is I8 and nothing else is
        FUZZ_CHECK(ref.is_int8() == (t->dtype == Dtype::i8));
        const std::uint64_t width = t->dtype == Dtype::f32 ? 4 : (t->dtype == Dtype::i8 ? 1 : 2);
        FUZZ_CHECK(t->begin <= t->end && t->end <= size - static_cast<std::size_t>(region - data));
        FUZZ_CHECK(t->end - t->begin == ref.size() * width);
        const std::uint8_t* bytes = region + t->begin;
        if (ref.is_int8()) {  // in place unless copies were asked for; the bytes, none of them -128
          const auto* q = static_cast<const std::int8_t*>(bound);
          FUZZ_CHECK(copy ? q == reinterpret_cast<const std::int8_t*>(storage.data + offset)
                          : q == reinterpret_cast<const std::int8_t*>(bytes));
          for (stf::index_t k = 0; k < ref.size(); ++k)
            FUZZ_CHECK(q[k] != -128 && q[k] == static_cast<std::int8_t>(bytes[k]));
          offset += ref.bytes() / 4;
          return;
        }
        const float* p = *ref.data;

        // in place exactly when the tensor is F32, float-aligned and copies were not asked for
        const bool in_place =
            !copy && t->dtype == Dtype::f32 && reinterpret_cast<std::uintptr_t>(bytes) % alignof(float) == 0;
        if (in_place) {
          FUZZ_CHECK(p == reinterpret_cast<const float*>(bytes));
        } else {
          FUZZ_CHECK(p == storage.data + offset);
        }
        // every value is the one the bytes describe, and finite (reject_non_finite)
        for (stf::index_t k = 0; k < ref.size(); ++k) {
          const float want = element(bytes, t->dtype, k);
          FUZZ_CHECK(std::isfinite(want));
          FUZZ_CHECK(same_bits(p[k], want));
          FUZZ_CHECK(!ref.scale || want >= 0.0f);  // a weight scale is >= 0
        }
        offset += ref.size();
      },
      stf::Name{});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  load_and_check<stf_io::TinyParams>(data, size, false);
  load_and_check<stf_io::TinyParams>(data, size, true);
  load_and_check<stf_io::LinearsTransposed<stf_io::TinyParams>>(data, size, false);
  load_and_check<stf_io::EncStack::Params>(data, size, false);
  load_and_check<stf_io::HpModel::Params>(data, size, false);
  load_and_check<stf_io::HpModel::Params>(data, size, true, false);
  load_and_check<stf_io::GptHp::Params>(data, size, false);
  load_and_check<stf_io::EncStackHp::Params>(data, size, false);
  load_and_check<stf_io::EncStackW8a8::Params>(data, size, false);
  load_and_check<stf_io::EncStackW8a8::Params>(data, size, true);
  return 0;
}
