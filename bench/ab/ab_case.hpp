// What both sides of bench/ab/ab.sh's executable share: a timed case, free of statiformer's types (the
// two sides' stf namespaces differ).
#pragma once

#include <functional>
#include <string>
#include <vector>

/// One benchmark of one side: `run(n)` makes n calls and returns the seconds they took; `checksum()` a
/// weighted sum of the last call's output (the two sides of a shape agree when their bits do).
struct AbCase {
  std::string shape;
  std::function<double(long)> run;
  std::function<double()> checksum;
};

void register_ab_base(std::vector<AbCase>& cases);
void register_ab_new(std::vector<AbCase>& cases);
