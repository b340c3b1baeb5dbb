// The Eigen peer's translation unit: the only one that includes Eigen, compiled with the flags an
// Eigen user would choose (STF_PEER_FLAGS, see bench/CMakeLists.txt).
#include <string>

#include "eigen_encoder.hpp"
#include "eigen_step.hpp"
#include "peer_api.hpp"

#ifndef STF_PEER_FLAGS
#define STF_PEER_FLAGS ""
#endif

namespace stf_peers {

std::unique_ptr<EncoderPeer> make_eigen_encoder(const EncoderShape& shape, const EncoderWeights& weights) {
  return std::make_unique<EigenEncoderLayer>(shape, weights);
}

std::unique_ptr<DecoderStepPeer> make_eigen_decoder_step(const DecoderShape& shape, const DecoderWeights& weights) {
  return std::make_unique<EigenDecoderStep>(shape, weights);
}

const char* eigen_build_info() {
  static const std::string info = "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
                                  std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION) +
                                  ", SIMD: " + Eigen::SimdInstructionSetsInUse() +
                                  ", threads: " + std::to_string(Eigen::nbThreads()) + ", flags: " + STF_PEER_FLAGS;
  return info.c_str();
}

}  // namespace stf_peers
