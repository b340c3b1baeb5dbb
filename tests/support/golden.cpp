#include "golden.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#ifndef STF_GOLDEN_DIR
#error "STF_GOLDEN_DIR must name tests/golden/data"
#endif

namespace stf::test {

const float* GoldenCase::data(const std::string& tensor, index_t size) const {
  INFO("golden case " << name << ", tensor " << tensor);
  auto it = tensors.find(tensor);
  REQUIRE(it != tensors.end());
  REQUIRE(it->second.values.size() == size);
  return it->second.values.data();
}

std::vector<int> GoldenCase::ints(const std::string& tensor) const {
  INFO("golden case " << name << ", tensor " << tensor);
  auto it = tensors.find(tensor);
  REQUIRE(it != tensors.end());
  std::vector<int> out;
  for (float v : it->second.values) out.push_back(static_cast<int>(v));
  return out;
}

std::vector<std::string> golden_lines(const std::string& file) {
  const std::string path = std::string(STF_GOLDEN_DIR) + "/" + file;
  INFO("data file " << path);
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

GoldenCase load_golden(const std::string& name) {
  const std::string path = std::string(STF_GOLDEN_DIR) + "/" + name + ".txt";
  INFO("golden file " << path);
  std::ifstream in(path);
  REQUIRE(in.good());
  GoldenCase c;
  std::string line, word;
  std::getline(in, line);
  REQUIRE(line == "stf-golden 1");
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    ls >> word;
    if (word == "case")
      ls >> c.name;
    else if (word == "module")
      ls >> c.module;
    else if (word == "param") {
      std::string k, v;
      ls >> k >> v;
      c.params[k] = v;
    } else if (word == "tolerance")
      ls >> c.rtol >> c.atol;
    else if (word == "tensor") {
      std::string tname;
      index_t rank = 0;
      ls >> tname >> rank;
      GoldenTensor t;
      index_t count = 1;
      for (index_t i = 0; i < rank; ++i) {
        index_t d = 0;
        ls >> d;
        t.dims.push_back(d);
        count *= d;
      }
      std::string values;
      REQUIRE(std::getline(in, values));
      std::istringstream vs(values);
      t.values.reserve(count);
      for (std::string v; vs >> v;) t.values.push_back(std::strtof(v.c_str(), nullptr));
      INFO("tensor " << tname);
      REQUIRE(t.values.size() == count);
      c.tensors[tname] = std::move(t);
    }
  }
  REQUIRE(c.name == name);
  return c;
}

Comparison compare(const float* got, const float* want, index_t n, float rtol, float atol) {
  Comparison r;
  r.n = n;
  for (index_t i = 0; i < n; ++i) {
    const double g = got[i], w = want[i];
    const double err = std::isfinite(g) ? std::fabs(g - w) : INFINITY;
    if (err > r.max_abs) r.max_abs = err;
    if (std::fabs(w) >= 1e-3 && err / std::fabs(w) > r.max_rel) r.max_rel = err / std::fabs(w);
    if (!(err <= atol + rtol * std::fabs(w))) {
      if (r.bad == 0) r.first_bad = i;
      ++r.bad;
    }
  }
  return r;
}

void check_close(const GoldenCase& c, const std::string& what, const float* got, const float* want, index_t n) {
  const Comparison r = compare(got, want, n, c.rtol, c.atol);
  std::printf("golden %-44s %-10s max_abs %.3e  max_rel %.3e  (n=%zu)\n", c.name.c_str(), what.c_str(), r.max_abs,
              r.max_rel, r.n);
  INFO("golden case " << c.name << " (" << c.module << "), " << what << ": " << r.bad << " of " << r.n
                      << " outside atol " << c.atol << " + rtol " << c.rtol << "; first bad index " << r.first_bad
                      << " got " << (r.bad ? got[r.first_bad] : 0.0f) << " want " << (r.bad ? want[r.first_bad] : 0.0f)
                      << "; max_abs " << r.max_abs << " max_rel " << r.max_rel);
  CHECK(r.ok());
}

void require_bound(const BindResult& r, const std::string& case_name) {
  INFO("golden case " << case_name << ": binding " << r.name.c_str() << ": " << to_string(r.status) << " (expected "
                      << r.expected << " values, found " << r.found << ")");
  REQUIRE(r.status == Status::ok);
}

const float* transposed(const GoldenCase& c, const std::string& tensor, index_t rows, index_t cols) {
  const float* src = c.data(tensor, rows * cols);
  std::vector<float>& t = c.derived["transposed:" + tensor];
  t.assign(rows * cols, 0.0f);
  for (index_t r = 0; r < rows; ++r)
    for (index_t k = 0; k < cols; ++k) t[stored_index(cols, rows, kWeightPanel, k, r)] = src[r * cols + k];
  return t.data();
}

const float* packed_in_proj(const GoldenCase& c, const std::string& tensor, index_t d) {
  const float* src = c.data(tensor, 3 * d * d);
  std::vector<float>& t = c.derived["packed:" + tensor];
  t.assign(3 * d * d, 0.0f);
  for (index_t b = 0; b < 3; ++b)
    for (index_t r = 0; r < d; ++r)
      for (index_t k = 0; k < d; ++k)
        t[b * d * d + stored_index(d, d, kWeightPanel, k, r)] = src[b * d * d + r * d + k];
  return t.data();
}

}  // namespace stf::test
