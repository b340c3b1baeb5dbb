// DModel not divisible by NHeads.
// expect: MultiHeadAttention: DModel must be divisible by NHeads
// expect: DModel = 30; [a-z ]*NHeads = 4
#include <statiformer/layers/attention.hpp>
#ifdef STF_CF_FAIL
stf::MultiHeadAttention<5, 5, 30, 4> mha;
#else
stf::MultiHeadAttention<5, 5, 32, 4> mha;
#endif
int main() {}
