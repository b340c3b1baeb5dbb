// A boolean mask of the wrong shape for the attention it is given to.
// expect: attention mask: the mask's cols differ from the key length SeqK
// expect: MaskRows = 4; [a-z ]*MaskCols = 5; [a-z ]*SeqQ = 4; [a-z ]*SeqK = 6
#include <statiformer/layers/attention.hpp>
int main() {
  using MHA = stf::MultiHeadAttention<4, 6, 8, 2>;
#ifdef STF_CF_FAIL
  stf::BoolMask<4, 5> m{};
#else
  stf::BoolMask<4, 6> m{};
#endif
  return static_cast<int>(MHA::mask(m).valid_keys);
}
