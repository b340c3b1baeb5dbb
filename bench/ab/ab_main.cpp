// bench/ab/ab.sh's executable: both sides' cases (ab_layers.cpp, compiled once per tree) in one process,
// timed in pairs: per round and shape, base and new one after the other (which goes first alternates),
// each for about --pair-ms milliseconds. A pair sees one state of the machine, so the median of the pairs'
// ratios holds where the medians of separate runs do not: on a shared VM the speed of the same code was
// seen to switch between two levels ~40 % apart several times a minute.
//   bench_ab [--filter SUBSTRING]... [--rounds N (21)] [--pair-ms T (20)]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ab_case.hpp"

namespace {
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const std::size_t i = static_cast<std::size_t>(pos);
  const double f = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> filters;
  long rounds = 21;
  double pair_ms = 20;
  for (int i = 1; i < argc; ++i) {
    const bool more = i + 1 < argc;
    if (!std::strcmp(argv[i], "--filter") && more)
      filters.push_back(argv[++i]);
    else if (!std::strcmp(argv[i], "--rounds") && more)
      rounds = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--pair-ms") && more)
      pair_ms = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_ab [--filter SUBSTRING]... [--rounds N] [--pair-ms T]\n");
      return 2;
    }
  }
  if (rounds < 1 || !(pair_ms > 0)) {
    std::fprintf(stderr, "bench_ab: --rounds >= 1 and --pair-ms > 0\n");
    return 2;
  }
  std::vector<AbCase> base, fresh;
  register_ab_base(base);
  register_ab_new(fresh);
  std::printf("%-46s %12s %12s %9s %17s %12s  %s\n", "shape", "base (ns)", "new (ns)", "new/base", "pairs' quartiles",
              "min new/base", "bits");
  for (const AbCase& b : base) {
    auto n_it = std::find_if(fresh.begin(), fresh.end(), [&](const AbCase& c) { return c.shape == b.shape; });
    if (n_it == fresh.end()) continue;
    const bool wanted = filters.empty() || std::any_of(filters.begin(), filters.end(), [&](const std::string& f) {
                          return b.shape.find(f) != std::string::npos;
                        });
    if (!wanted) continue;
    const AbCase& n = *n_it;
    long calls = 1;  // per timing: about pair_ms / 2 of the new side's calls
    while (n.run(calls) < pair_ms / 2e3 && calls < (1L << 30)) calls *= 2;
    b.run(calls);  // (warm: both sides' weights and code)
    std::vector<double> tb, tn, ratio;
    for (long r = 0; r < rounds; ++r) {
      double sb, sn;
      if (r % 2 == 0) {
        sb = b.run(calls);
        sn = n.run(calls);
      } else {
        sn = n.run(calls);
        sb = b.run(calls);
      }
      tb.push_back(sb / static_cast<double>(calls) * 1e9);
      tn.push_back(sn / static_cast<double>(calls) * 1e9);
      ratio.push_back(sn / sb);
    }
    const bool same = b.checksum() == n.checksum();
    std::printf("%-46s %12.1f %12.1f %9.3f   [%.3f, %.3f] %12.3f  %s\n", b.shape.c_str(), quantile(tb, 0.5),
                quantile(tn, 0.5), quantile(ratio, 0.5), quantile(ratio, 0.25), quantile(ratio, 0.75),
                *std::min_element(tn.begin(), tn.end()) / *std::min_element(tb.begin(), tb.end()),
                same ? "same" : "DIFFER");
  }
  return 0;
}
