// Test support: reads the golden files that tools/gen_golden.py writes (format in
// tools/GOLDEN_FORMAT.md) and compares outputs with a matcher that reports max-abs and max-rel error
// and the first bad index. Test-only code: it may use the heap.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <statiformer/io/bind.hpp>

namespace stf::test {

struct GoldenTensor {
  std::vector<index_t> dims;
  std::vector<float> values;
};

struct GoldenCase {
  std::string name, module;
  std::map<std::string, std::string> params;
  float rtol = 1e-5f, atol = 1e-6f;
  std::map<std::string, GoldenTensor> tensors;
  mutable std::map<std::string, std::vector<float>> derived;  ///< re-laid-out copies (transposed)

  bool has(const std::string& tensor) const { return tensors.count(tensor) != 0; }
  /// The tensor's values; fails the test if it is missing or does not hold `size` values.
  const float* data(const std::string& tensor, index_t size) const;
  /// Integer tensor (token ids, lengths) as ints.
  std::vector<int> ints(const std::string& tensor) const;
  index_t scalar(const std::string& tensor) const { return static_cast<index_t>(ints(tensor).at(0)); }
};

/// Loads tests/golden/data/<name>.txt (the directory comes from STF_GOLDEN_DIR).
GoldenCase load_golden(const std::string& name);
/// The lines of tests/golden/data/<file> (a data file that is not a golden case); fails the test if it
/// cannot be read.
std::vector<std::string> golden_lines(const std::string& file);

struct Comparison {
  index_t n = 0, bad = 0, first_bad = 0;
  double max_abs = 0, max_rel = 0;  ///< max_rel over elements with |want| >= 1e-3
  bool ok() const { return bad == 0; }
};

/// Element-wise |got - want| <= atol + rtol·|want|.
Comparison compare(const float* got, const float* want, index_t n, float rtol, float atol);

/// Compares and prints one line "golden <case> <what>: max_abs .. max_rel .. (n=..)"; CHECKs ok.
void check_close(const GoldenCase& c, const std::string& what, const float* got, const float* want, index_t n);

void require_bound(const BindResult& r, const std::string& case_name);

/// The transpose of a [rows, cols] golden tensor in column panels (stored_index), kept alive in
/// the case: the layout the model stores a parameter with ParamRef::transposed in.
const float* transposed(const GoldenCase& c, const std::string& tensor, index_t rows, index_t cols);

/// nn.MultiheadAttention's in_proj_weight [3·d, d] as MultiHeadAttention::Params::bind_packed
/// takes it: each [d, d] block transposed, in column panels.
const float* packed_in_proj(const GoldenCase& c, const std::string& tensor, index_t d);

/// Binds a layer's parameters to the case's tensors by schema name, transposing the ones the
/// model stores transposed (the case holds PyTorch's layout); REQUIREs success.
template <class Params>
void bind_golden(Params& params, const GoldenCase& c, const Name& prefix = {}) {
  std::map<std::string, const float*> stored;
  params.visit(
      [&](const Name& name, ParamRef ref) {
        if (ref.transposed && c.has(name.c_str()))
          stored[name.c_str()] = transposed(c, name.c_str(), ref.rows, ref.cols);
      },
      prefix);
  const BindResult r = bind_params(
      params,
      [&](const char* name, index_t& size) -> const float* {
        auto it = c.tensors.find(name);
        if (it == c.tensors.end()) return nullptr;
        size = it->second.values.size();
        auto s = stored.find(name);
        return s != stored.end() ? s->second : it->second.values.data();
      },
      prefix);
  require_bound(r, c.name);
}

}  // namespace stf::test
