// statiformer — binding a model's parameter schema to named weights (an exported table of
// WeightEntry, or any lookup), all-or-nothing, without the heap.
#pragma once

#include <cstring>

#include <statiformer/layers/params.hpp>

namespace stf {

/// Result of a bind: the status, and the parameter (or table entry) it is about.
struct BindResult {
  Status status = Status::ok;
  Name name{};           ///< the offending parameter or entry
  index_t expected = 0;  ///< element count the schema wants (weight_shape_mismatch)
  index_t found = 0;     ///< element count found
  explicit operator bool() const { return status == Status::ok; }
};

/// Binds every parameter of `params` (anything with visit(f, prefix)) by looking it up with
/// `lookup(const char* name, index_t& size) -> const float*` (null if absent). Checks everything
/// first; on any error nothing is bound and the params keep their previous pointers.
template <class Params, class Lookup>
BindResult bind_params(Params& params, Lookup&& lookup, const Name& prefix = {}) {
  BindResult result;
  params.visit(
      [&](const Name& name, ParamRef ref) {
        if (!result) return;
        index_t size = 0;
        const float* data = lookup(name.c_str(), size);
        if (!data)
          result = {Status::missing_weight, name, ref.size(), 0};
        else if (size != ref.size())
          result = {Status::weight_shape_mismatch, name, ref.size(), size};
      },
      prefix);
  if (!result) return result;
  params.visit(
      [&](const Name& name, ParamRef ref) {
        index_t size = 0;
        *ref.data = lookup(name.c_str(), size);
      },
      prefix);
  return result;
}

/// Binds from an exported weight table (see tools/train_demo.py). Besides missing and mis-sized
/// parameters, rejects duplicate names and names the schema does not have.
template <class Params, index_t N>
BindResult bind_table(Params& params, const WeightEntry (&table)[N], const Name& prefix = {}) {
  for (index_t i = 0; i < N; ++i)
    for (index_t j = i + 1; j < N; ++j)
      if (std::strcmp(table[i].name, table[j].name) == 0) return {Status::duplicate_weight, table[i].name, 0, 0};
  index_t matched = 0;
  params.visit(
      [&](const Name& name, ParamRef) {
        for (index_t i = 0; i < N; ++i) matched += std::strcmp(table[i].name, name.c_str()) == 0;
      },
      prefix);
  if (matched != N) {
    // find the first entry the schema does not name
    for (index_t i = 0; i < N; ++i) {
      bool known = false;
      params.visit([&](const Name& name, ParamRef) { known = known || std::strcmp(table[i].name, name.c_str()) == 0; },
                   prefix);
      if (!known) return {Status::unexpected_weight, table[i].name, 0, 0};
    }
  }
  return bind_params(
      params,
      [&](const char* name, index_t& size) -> const float* {
        for (index_t i = 0; i < N; ++i)
          if (std::strcmp(table[i].name, name) == 0) {
            size = table[i].size;
            return table[i].data;
          }
        return nullptr;
      },
      prefix);
}

}  // namespace stf
