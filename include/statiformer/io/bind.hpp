// statiformer — binding a model's parameter schema to named weights (an exported table of
// WeightEntry, or any lookup), all-or-nothing, without the heap.
#pragma once

#include <cstring>

#include <statiformer/io/hparams.hpp>
#include <statiformer/layers/params.hpp>

namespace stf {

/// Result of a bind: the status, and the parameter (or table entry) it is about.
struct BindResult {
  Status status = Status::ok;
  Name name{};           ///< the offending parameter, entry or hyperparameter key
  index_t expected = 0;  ///< element count the schema wants (weight_shape_mismatch)
  index_t found = 0;     ///< element count found
  /// hyperparameter_mismatch: the table's value text and the model's (null: absent), static storage;
  /// `found`: how many records the table has for the key (2 or more: a key given twice).
  const char* file_value = nullptr;
  const char* model_value = nullptr;
  explicit operator bool() const { return status == Status::ok; }
};

namespace detail {
/// An int8 parameter's data by `lookup(name, size, tag)` with tag `const std::int8_t*` (null where the
/// lookup has no such overload: then the model's int8 weights cannot be found through it).
template <class Lookup>
const std::int8_t* lookup_int8(Lookup& lookup, const char* name, index_t& size) {
  if constexpr (requires { lookup(name, size, static_cast<const std::int8_t*>(nullptr)); })
    return lookup(name, size, static_cast<const std::int8_t*>(nullptr));
  else
    return nullptr;
}
}  // namespace detail

/// Binds every parameter of `params` (anything with visit(f, prefix)) by looking it up with
/// `lookup(const char* name, index_t& size) -> const float*` (null if absent); a model with int8
/// weights (NumberFormat) also calls `lookup(name, size, const std::int8_t* tag) -> const std::int8_t*`
/// for them (size: stored elements, ParamRef::size). Checks everything first; on any error nothing is
/// bound and the params keep their previous pointers.
template <class Params, class Lookup>
BindResult bind_params(Params& params, Lookup&& lookup, const Name& prefix = {}) {
  BindResult result;
  params.visit(
      [&](const Name& name, ParamRef ref) {
        if (!result) return;
        index_t size = 0;
        const bool found = ref.is_int8() ? detail::lookup_int8(lookup, name.c_str(), size) != nullptr
                                         : lookup(name.c_str(), size) != nullptr;
        index_t other_size = 0;  // found with the other dtype?
        const bool other = !found && (ref.is_int8() ? lookup(name.c_str(), other_size) != nullptr
                                                    : detail::lookup_int8(lookup, name.c_str(), other_size) != nullptr);
        if (other)
          result = {Status::weight_dtype_mismatch, name, ref.size(), other_size};
        else if (!found)
          result = {Status::missing_weight, name, ref.size(), 0};
        else if (size != ref.size())
          result = {Status::weight_shape_mismatch, name, ref.size(), size};
      },
      prefix);
  if (!result) return result;
  params.visit(
      [&](const Name& name, ParamRef ref) {
        index_t size = 0;
        if (ref.is_int8())
          *ref.data_i8 = detail::lookup_int8(lookup, name.c_str(), size);
        else
          *ref.data = lookup(name.c_str(), size);
      },
      prefix);
  return result;
}

namespace detail {
/// A table entry that records a hyperparameter ("key=value", data null; tools/export.py writes them).
inline bool is_hparam_record(const WeightEntry& e) { return !e.data && !e.data_i8 && std::strchr(e.name, '='); }
/// Does the record name prefix/key?  Then its value text.
inline const char* hparam_record_value(const WeightEntry& e, const Name& prefix, const char* key) {
  const Name full = prefix / key;
  const std::size_t n = static_cast<std::size_t>(full.length);
  return std::strncmp(e.name, full.c_str(), n) == 0 && e.name[n] == '=' ? e.name + n + 1 : nullptr;
}
}  // namespace detail

/// Binds from an exported weight table (tools/export.py --header). Besides missing and mis-sized
/// parameters, rejects duplicate names and names the schema does not have. Hyperparameter records
/// ({"key=value", nullptr, 0}) are compared with the model's (io/hparams.hpp): a differing, missing
/// or unknown one is `Status::hyperparameter_mismatch` (name: the key; file_value, model_value). A
/// table with no record at all (a header written before they were recorded) binds by names and
/// sizes only; every header the tools write today (export.py, train_demo.py, golden_to_header.py)
/// has them.
template <class Params, index_t N>
BindResult bind_table(Params& params, const WeightEntry (&table)[N], const Name& prefix = {}) {
  index_t records = 0;
  for (index_t i = 0; i < N; ++i) records += detail::is_hparam_record(table[i]);
  if (records) {
    BindResult r;
    index_t known = 0;
    for_each_hparam(hparam_table<Params>, [&](const char* key, const char* value) {
      if (!r) return;
      const char* found = nullptr;
      index_t seen = 0;
      for (index_t i = 0; i < N; ++i)
        if (const char* v =
                detail::is_hparam_record(table[i]) ? detail::hparam_record_value(table[i], prefix, key) : nullptr) {
          if (seen++ == 0 || std::strcmp(v, value) != 0) found = v;  // a second record differing wins
        }
      known += seen;
      if (!found || std::strcmp(found, value) != 0 || seen > 1)
        r = {Status::hyperparameter_mismatch, prefix / key, 0, seen, found, value};
    });
    if (!r) return r;
    if (known != records)  // a record the model does not have (or a key twice)
      for (index_t i = 0; i < N; ++i)
        if (detail::is_hparam_record(table[i])) {
          bool mine = false;
          for_each_hparam(hparam_table<Params>, [&](const char* key, const char*) {
            mine = mine || detail::hparam_record_value(table[i], prefix, key);
          });
          if (!mine) {
            const char* eq = std::strchr(table[i].name, '=');
            char key[Name::capacity + 1] = {};
            std::memcpy(key, table[i].name,
                        static_cast<std::size_t>(eq - table[i].name) < Name::capacity
                            ? static_cast<std::size_t>(eq - table[i].name)
                            : Name::capacity);
            return {Status::hyperparameter_mismatch, key, 0, 0, eq + 1, nullptr};
          }
        }
  }
  for (index_t i = 0; i < N; ++i)
    for (index_t j = i + 1; j < N; ++j)
      if (std::strcmp(table[i].name, table[j].name) == 0) return {Status::duplicate_weight, table[i].name, 0, 0};
  index_t matched = 0;
  params.visit(
      [&](const Name& name, ParamRef) {
        for (index_t i = 0; i < N; ++i) matched += std::strcmp(table[i].name, name.c_str()) == 0;
      },
      prefix);
  if (matched != N - records) {
    // find the first entry the schema does not name
    for (index_t i = 0; i < N; ++i) {
      if (detail::is_hparam_record(table[i])) continue;
      bool known = false;
      params.visit([&](const Name& name, ParamRef) { known = known || std::strcmp(table[i].name, name.c_str()) == 0; },
                   prefix);
      if (!known) return {Status::unexpected_weight, table[i].name, 0, 0};
    }
  }
  struct TableLookup {
    const WeightEntry* table;
    const WeightEntry* find(const char* name, index_t& size) const {
      for (index_t i = 0; i < N; ++i)
        if (std::strcmp(table[i].name, name) == 0) {
          size = table[i].size;
          return &table[i];
        }
      return nullptr;
    }
    const float* operator()(const char* name, index_t& size) const {
      const WeightEntry* e = find(name, size);
      return e ? e->data : nullptr;
    }
    const std::int8_t* operator()(const char* name, index_t& size, const std::int8_t*) const {
      const WeightEntry* e = find(name, size);
      return e ? e->data_i8 : nullptr;
    }
  };
  return bind_params(params, TableLookup{table}, prefix);
}

}  // namespace stf
