// Each operation's selection (kernels/<op>/select.hpp) reports the variant that runs, for every
// variant of this build (kernels/registry.hpp): a name from the fixed list of variant files below,
// the list equal to the files in include/statiformer/kernels/<op>/, "generic" exactly when no
// target struct is named, and the target's own variant wherever its kernels compile. The firmware
// check (examples/firmware/kernel_check.cpp) asserts the Cortex-M names on the cores themselves.
#include <catch2/catch.hpp>

#include <boost/hana/for_each.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <statiformer/kernels/attention/select.hpp>
#include <statiformer/kernels/elementwise/select.hpp>
#include <statiformer/kernels/norm/select.hpp>
#include <statiformer/kernels/product/select.hpp>
#include <statiformer/kernels/registry.hpp>

using namespace stf;
using namespace stf::kernels_detail;

namespace {

/// The variants of each operation: generic (Generic<Tag>, kernels/generic.hpp) and one
/// kernels/<op>/<variant>.hpp per target variant. A new variant file goes here and into its
/// operation's select.hpp.
const std::vector<std::string> kTargetVariants = {"cortex_m4f", "helium"};
const std::vector<std::string> kOps = {"attention", "elementwise", "norm", "product"};

bool known(const std::string& v) {
  return v == "generic" || std::find(kTargetVariants.begin(), kTargetVariants.end(), v) != kTargetVariants.end();
}

/// The variant this build's target must run for `Tag` (the conditions of the variant files).
template <class Tag>
std::string expected_variant() {
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
  if (std::is_same_v<Tag, isa::mve>) return "helium";
#endif
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
  if (std::is_same_v<Tag, isa::scalar>) return "cortex_m4f";
#endif
  return "generic";
}

template <class... T>
constexpr bool all_void = (std::is_void_v<T> && ...);

struct Reported {
  std::string op, variant;
  bool generic_code_only;  ///< every entry point of the selection is void
};

template <class Tag>
std::vector<Reported> selections() {
  using P = ProductSelect<Tag>;
  using A = AttentionSelect<Tag>;
  using E = ElementwiseSelect<Tag>;
  using N = NormSelect<Tag>;
  return {
      {"product", P::variant, all_void<typename P::Tile4, typename P::RowTile, typename P::Panels>},
      {"attention", A::variant, all_void<typename A::PrefixRows>},
      {"elementwise", E::variant, all_void<typename E::Div, typename E::ExpShifted, typename E::Add>},
      {"norm", N::variant, all_void<typename N::Row16>},
  };
}

}  // namespace

TEST_CASE("every operation's selection reports a known variant, the one its struct provides") {
  boost::hana::for_each(kernel_registry::variants, [](auto t) {
    using Tag = typename decltype(t)::type;
    const std::vector<Reported> reported = selections<Tag>();
    std::set<std::string> ops;
    for (const Reported& r : reported) {
      INFO(Kernels<Tag>::name() << ": " << r.op << " reports " << r.variant);
      ops.insert(r.op);
      CHECK(known(r.variant));
      // generic exactly when Generic's own code runs alone
      CHECK((r.variant == "generic") == r.generic_code_only);
      CHECK(r.variant == expected_variant<Tag>());
    }
    CHECK(ops == std::set<std::string>(kOps.begin(), kOps.end()));
  });
}

TEST_CASE("the list of variants is the variant files that exist") {
  namespace fs = std::filesystem;
  const fs::path kernels =
      fs::path(__FILE__).parent_path().parent_path().parent_path() / "include" / "statiformer" / "kernels";
  REQUIRE(fs::is_directory(kernels));
  std::set<std::string> op_dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(kernels))
    if (e.is_directory()) op_dirs.insert(e.path().filename().string());
  // every operation folder has a selection, which the test above reads
  CHECK(op_dirs == std::set<std::string>(kOps.begin(), kOps.end()));
  for (const std::string& op : op_dirs) {
    CHECK(fs::exists(kernels / op / "select.hpp"));
    for (const fs::directory_entry& e : fs::directory_iterator(kernels / op)) {
      const std::string name = e.path().stem().string();
      INFO("kernels/" << op << "/" << e.path().filename().string());
      CHECK(e.path().extension() == ".hpp");
      if (name != "select") CHECK(known(name));
    }
  }
}
