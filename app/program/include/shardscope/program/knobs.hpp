#pragma once
// The program layer's environment knobs, registered in the one registry (shardscope/knobs.hpp).

#include "shardscope/knobs.hpp"

namespace shardscope::program::knobs {

/// SHARDSCOPE_MEMORY_LIMIT: bytes a run may use (default: what the machine reports available).
const Knob& MemoryLimit();
/// Registers all of the above.
void RegisterAll();

}  // namespace shardscope::program::knobs
