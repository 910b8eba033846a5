#include "shardscope/program/knobs.hpp"

namespace shardscope::program::knobs {

const Knob& MemoryLimit() {
  static const Knob& knob = RegisterKnob(
      NumberKnob("SHARDSCOPE_MEMORY_LIMIT", "program", "MemAvailable, capped by the cgroup limit",
                 "bytes a scenario run may use; a run whose estimate exceeds it is refused before it "
                 "allocates",
                 "bytes"));
  return knob;
}

void RegisterAll() { MemoryLimit(); }

}  // namespace shardscope::program::knobs
