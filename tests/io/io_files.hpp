// Test support for the io tests: reading the committed fixtures (tests/io/) into memory.
#pragma once

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../support/golden.hpp"

#ifndef STF_IO_DIR
#error "STF_IO_DIR must name tests/io"
#endif

namespace stf_io_test {

using stf::index_t;

/// The bytes of tests/io/<relative>; empty if it cannot be read.
inline std::vector<unsigned char> read_file(const std::string& relative) {
  std::vector<unsigned char> bytes;
  std::FILE* f = std::fopen((std::string(STF_IO_DIR) + "/" + relative).c_str(), "rb");
  if (!f) return bytes;
  unsigned char chunk[4096];
  for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) bytes.insert(bytes.end(), chunk, chunk + n);
  std::fclose(f);
  return bytes;
}

/// tests/io/data/<name>.txt, in the golden format (tools/GOLDEN_FORMAT.md), as a GoldenCase for
/// the golden matcher (the golden loader itself reads tests/golden/data only).
inline stf::test::GoldenCase load_fixture(const std::string& name) {
  stf::test::GoldenCase c;
  std::ifstream in(std::string(STF_IO_DIR) + "/data/" + name + ".txt");
  std::string line, word;
  std::getline(in, line);
  if (line != "stf-golden 1") return c;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    words >> word;
    if (word == "case") {
      words >> c.name;
    } else if (word == "module") {
      words >> c.module;
    } else if (word == "tolerance") {
      words >> c.rtol >> c.atol;
    } else if (word == "tensor") {
      std::string tensor;
      index_t rank = 0;
      words >> tensor >> rank;
      stf::test::GoldenTensor t;
      t.dims.resize(rank);
      for (auto& d : t.dims) words >> d;
      std::getline(in, line);
      std::istringstream values(line);
      for (float v; values >> v;) t.values.push_back(v);
      c.tensors[tensor] = t;
    }
  }
  return c;
}

}  // namespace stf_io_test
