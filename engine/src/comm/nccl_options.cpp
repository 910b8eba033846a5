// NcclOptions::FromEnv, one definition for every build (with or without CUDA and NCCL).
#include "shardscope/engine/comm/nccl_backend.hpp"
#include "shardscope/engine/core/knobs.hpp"

namespace shardscope::engine {

NcclOptions NcclOptions::FromEnv() {
  NcclOptions options;
  options.exact_reductions = KnobChoice(knobs::NcclReduce()) == "exact";
  return options;
}

}  // namespace shardscope::engine
