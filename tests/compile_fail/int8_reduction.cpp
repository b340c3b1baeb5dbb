// An int8 linear whose int32 sums could overflow (127² · In >= 2³¹): the reduction is named.
// expect: int8 linear: In \(its reduction\) must be at most 133144
// expect: int8_reduction\(\) \[with [a-z ]+ In = 140000\]
#include <statiformer/layers/params.hpp>
#ifdef STF_CF_FAIL
stf::QuantizedLinearParams<140000, 4> linear;
#else
stf::QuantizedLinearParams<133144, 4> linear;
#endif
int main() {}
