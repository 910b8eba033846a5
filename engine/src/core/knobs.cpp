#include "shardscope/engine/core/knobs.hpp"

namespace shardscope::engine::knobs {

// Each accessor registers its knob on first use (a function-local static: thread-safe).
const Knob& BlockCacheMib() {
  static const Knob& knob =
      RegisterKnob(IntegerKnob("SHARDSCOPE_BLOCK_CACHE_MIB", "engine", "1024",
                               "freed tensor buffers (128 KiB and up) kept for reuse; 0 turns the cache off",
                               "MiB", 0, int64_t{1} << 24));
  return knob;
}

const Knob& NcclReduce() {
  static const Knob& knob = RegisterKnob(
      ChoiceKnob("SHARDSCOPE_NCCL_REDUCE", "engine", "native",
                 "reductions of the nccl backend: native (ncclReduceScatter/ncclAllReduce) or exact "
                 "(every contribution exchanged and combined in group order: bitwise equal to the "
                 "local backend, n times the traffic)",
                 {"native", "exact"}));
  return knob;
}

void RegisterAll() {
  BlockCacheMib();
  NcclReduce();
}

}  // namespace shardscope::engine::knobs
