// The registry of operation variants (kernels/registry.hpp) against the selections and the files:
// every operation's selection (kernels/<op>/select.hpp) reports, for every variant of this build,
// a variant the registry lists for that operation, the one this build's target must run; every
// file in include/statiformer/kernels/<op>/ belongs to a listed variant and every listed file
// exists. So a variant file or a selection the registry does not list fails here. The firmware
// check (examples/firmware/kernel_check.cpp) asserts the Cortex-M names on the cores themselves.
#include <catch2/catch.hpp>

#include <boost/hana/for_each.hpp>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

#include <statiformer/kernels/registry.hpp>

using namespace stf;
using namespace stf::kernels_detail;

namespace {

/// The variant this build's target must run for `Tag` and `op` (the conditions of the variant
/// files; softmax has no target variant, transpose only mve's).
template <class Tag>
std::string expected_variant(const std::string& op, bool int8) {
  if (int8 && op == "attention") {  // (AttentionInt8Select: x86's own on avx2 and avx512, Cortex-M's on
                                    // scalar, Helium's on mve, NEON's on neon)
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && defined(__ARM_FEATURE_DSP)
    if (std::is_same_v<Tag, isa::scalar>) return "int8_cortex_m4f";  // (Cortex-M4F, M7, M55)
#endif
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
    if (std::is_same_v<Tag, isa::mve>) return "int8_helium";  // (Cortex-M55)
#endif
#if defined(__x86_64__)
    if (std::is_same_v<Tag, isa::avx2> || std::is_same_v<Tag, isa::avx512>) return "int8_x86";
#endif
#if defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
    if (std::is_same_v<Tag, isa::neon>) return "int8_neon";
#endif
    return "int8_generic";
  }
  if (int8) {  // the int8 products (ProductInt8Select): x86's own on avx2 and avx512, Cortex-M's on scalar, Helium's on
               // mve, NEON's on neon
#if defined(__x86_64__)
    if (std::is_same_v<Tag, isa::avx2> || std::is_same_v<Tag, isa::avx512>) return "int8_x86";
#endif
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && defined(__ARM_FEATURE_DSP)
    if (std::is_same_v<Tag, isa::scalar>) return "int8_cortex_m4f";  // (Cortex-M4F, M7, M55)
#endif
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2) && defined(__ARM_FEATURE_DSP)
    if (std::is_same_v<Tag, isa::mve>) return "int8_helium";  // (Cortex-M55)
#endif
#if defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
    if (std::is_same_v<Tag, isa::neon>) return "int8_neon";
#endif
    return "int8_generic";
  }
  if (op == "softmax") return "generic";
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
  if (std::is_same_v<Tag, isa::mve>) return "helium";
#endif
  if (op == "transpose") return "generic";
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
  if (std::is_same_v<Tag, isa::scalar>) return "cortex_m4f";
#endif
  if (op == "attention" && (std::is_same_v<Tag, isa::avx2> || std::is_same_v<Tag, isa::avx512>)) return "x86";
  return "generic";
}

template <class... T>
constexpr bool all_void = (std::is_void_v<T> && ...);

/// Whether the selection of `op` for Tag names no target struct and no wide strategy: then it
/// must report generic.
template <class Tag>
bool generic_code_only(const std::string& op, bool int8) {
  if (int8)
    return op == "attention" ? all_void<typename AttentionInt8Select<Tag>::Rows>
                             : all_void<typename ProductInt8Select<Tag>::Linear>;
  if (op == "product") {
    using P = ProductSelect<Tag>;
    return all_void<typename P::Tile4, typename P::RowTile, typename P::Panels, typename P::PlainWalk> && !P::load4;
  }
  if (op == "attention") {
    using A = AttentionSelect<Tag>;
    return all_void<typename A::PrefixRows> && !A::wide && !A::tall;
  }
  if (op == "elementwise") {
    using E = ElementwiseSelect<Tag>;
    return all_void<typename E::Div, typename E::ExpShifted, typename E::Add> && !E::exp_kernel;
  }
  if (op == "norm") return all_void<typename NormSelect<Tag>::Row16>;
  if (op == "transpose") return all_void<typename TransposeSelect<Tag>::Whole>;  // (its tiles are the vocabulary's)
  return true;                                                                   // softmax: generic code only
}

std::set<std::string> words(std::string_view s) {
  std::istringstream in{std::string(s)};
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

std::filesystem::path kernels_dir() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "include" / "statiformer" /
         "kernels";
}

}  // namespace

TEST_CASE("every selection reports a variant the registry lists, the one its target must run") {
  boost::hana::for_each(kernel_registry::variants, [](auto t) {
    using Tag = typename decltype(t)::type;
    std::set<std::string> ops;
    for (const kernel_registry::Selected& s : kernel_registry::selected<Tag>()) {
      const std::string op(s.op), variant(s.variant);
      INFO(Kernels<Tag>::name() << ": " << op << " reports " << variant);
      ops.insert(op);
      // (the products' int8 format reports int8_<variant>: kernels/product/select.hpp)
      const bool int8 = variant.rfind("int8_", 0) == 0;
      CHECK(kernel_registry::find(op, variant) != nullptr);
      CHECK((variant == (int8 ? "int8_generic" : "generic")) == generic_code_only<Tag>(op, int8));
      CHECK(variant == expected_variant<Tag>(op, int8));
    }
    // every operation of the registry has a selection, read above
    std::set<std::string> listed;
    for (const auto& v : kernel_registry::operation_variants) listed.insert(std::string(v.op));
    CHECK(ops == listed);
  });
}

TEST_CASE("the registry's variants are the files that exist") {
  namespace fs = std::filesystem;
  const fs::path kernels = kernels_dir();
  REQUIRE(fs::is_directory(kernels));
  std::set<std::string> op_dirs, listed_ops;
  for (const fs::directory_entry& e : fs::directory_iterator(kernels))
    if (e.is_directory()) op_dirs.insert(e.path().filename().string());
  std::set<std::string> listed_files;  // "op/file"
  for (const auto& v : kernel_registry::operation_variants) {
    listed_ops.insert(std::string(v.op));
    CHECK(kernel_registry::find(v.op, v.variant) == &v);  // (listed once)
    for (const std::string& f : words(v.files)) {
      INFO("kernels/" << v.op << "/" << f << " (" << v.variant << ")");
      CHECK(fs::exists(kernels / std::string(v.op) / f));
      listed_files.insert(std::string(v.op) + "/" + f);
    }
  }
  CHECK(op_dirs == listed_ops);
  for (const std::string& op : op_dirs) {
    CHECK(fs::exists(kernels / op / "select.hpp"));
    for (const fs::directory_entry& e : fs::directory_iterator(kernels / op)) {
      const std::string name = e.path().filename().string();
      INFO("kernels/" << op << "/" << name << " is in no variant of kernel_registry::operation_variants");
      CHECK(e.path().extension() == ".hpp");
      if (name != "select.hpp") CHECK(listed_files.count(op + "/" + name) == 1);
    }
  }
}
