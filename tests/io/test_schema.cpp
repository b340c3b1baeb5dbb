// The schema JSON (include/statiformer/io/schema.hpp): the same text to a caller buffer and to a
// FILE*, sized with capacity 0, truncated and NUL-terminated when the buffer is short, and the
// stored layout of a transposed parameter.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include <statiformer/io/schema.hpp>

#include "../../tools/schema/models.hpp"

using namespace stf;

TEST_CASE("the schema JSON goes to a buffer or a FILE*, the same text", "[io][schema]") {
  static stf_io::EncStack::Params params;
  const index_t n = write_schema_json(params, nullptr, 0, "enc_stack");
  std::vector<char> buffer(n + 1, 'x');
  REQUIRE(write_schema_json(params, buffer.data(), buffer.size(), "enc_stack") == n);
  CHECK(buffer[n] == '\0');

  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  REQUIRE(write_schema_json(params, f, "enc_stack"));
  std::rewind(f);
  std::string from_file;
  for (int c; (c = std::fgetc(f)) != EOF;) from_file += static_cast<char>(c);
  std::fclose(f);
  CHECK(from_file == std::string(buffer.data()));
  CHECK(from_file.rfind("{\"format\": \"statiformer-schema\", \"version\": 2, \"model\": \"enc_stack\"", 0) == 0);
  CHECK(from_file.find("{\"name\": \"layers.1.ff.linear2.weight\", \"dtype\": \"F32\", \"shape\": [8, 100]") !=
        std::string::npos);

  // a short buffer: truncated, terminated, and the full length still reported
  char small[32];
  CHECK(write_schema_json(params, small, sizeof small, "enc_stack") == n);
  CHECK(std::string(small) == from_file.substr(0, sizeof small - 1));
}

TEST_CASE("a transposed parameter's schema entry gives PyTorch's shape and the stored one", "[io][schema]") {
  static stf_io::LinearsTransposed<stf_io::TinyParams> params;
  char text[1024];
  REQUIRE(write_schema_json(params, text, sizeof text, "t") < sizeof text);
  CHECK(std::string(text).find("{\"name\": \"proj.weight\", \"dtype\": \"F32\", \"shape\": [3, 4], \"transposed\": "
                               "true, \"stored_shape\": [4, 3], \"panel\": 64}") != std::string::npos);
  CHECK(std::string(text).find("{\"name\": \"proj.bias\", \"dtype\": \"F32\", \"shape\": [3], \"transposed\": false, "
                               "\"stored_shape\": [3], \"panel\": 0}") != std::string::npos);
}
