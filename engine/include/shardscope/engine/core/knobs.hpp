#pragma once
// The engine's environment knobs, registered in the one registry (shardscope/knobs.hpp).

#include "shardscope/knobs.hpp"

namespace shardscope::engine::knobs {

/// SHARDSCOPE_BLOCK_CACHE_MIB: MiB of freed large tensor blocks kept for reuse (default 1024).
const Knob& BlockCacheMib();
/// SHARDSCOPE_NCCL_REDUCE: native (default) or exact reductions of the nccl backend.
const Knob& NcclReduce();
/// Registers all of the above.
void RegisterAll();

}  // namespace shardscope::engine::knobs
