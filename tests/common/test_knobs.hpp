#pragma once
// The test suites' bounds: environment variables read by tests only, so the library a training job
// links registers none of them (`shardscope env` lists the library's knobs; these are documented in
// docs/cli.md, "Test suites"). Same names and accessors as the library's knobs (shardscope/knobs.hpp).

#include "shardscope/knobs.hpp"

namespace shardscope::knobs {

inline const Knob& PropertyCases() {
  static const Knob& knob = RegisterKnob(
      IntegerKnob("SHARDSCOPE_PROPERTY_CASES", "tests", "2000",
                  "random cases of each property test (engine, planner, program, MPI suites)", "", 1));
  return knob;
}
inline const Knob& GpuCases() {
  static const Knob& knob = RegisterKnob(
      IntegerKnob("SHARDSCOPE_GPU_CASES", "tests", "300", "random cases of the GPU property test", "", 1));
  return knob;
}
inline const Knob& FuzzSeconds() {
  static const Knob& knob =
      RegisterKnob(IntegerKnob("SHARDSCOPE_FUZZ_SECONDS", "tests", "5 or 10 (per fuzz test)",
                               "time bound of each fuzz test", "seconds", 0, 7 * 24 * 3600));
  return knob;
}
inline const Knob& FuzzIterations() {
  static const Knob& knob = RegisterKnob(IntegerKnob("SHARDSCOPE_FUZZ_ITERATIONS", "tests", "2000",
                                                     "mutations each fuzz test tries at most", "", 0));
  return knob;
}
inline const Knob& FuzzSeed() {
  static const Knob& knob = RegisterKnob(IntegerKnob("SHARDSCOPE_FUZZ_SEED", "tests", "fixed per fuzz test",
                                                     "seed of the fuzz tests' mutation stream", "", 0));
  return knob;
}
inline const Knob& UpdateGolden() {
  static const Knob& knob = RegisterKnob(
      ChoiceKnob("SHARDSCOPE_UPDATE_GOLDEN", "tests", "0",
                 "1 rewrites the golden files of the summary tests instead of comparing", {"0", "1"}));
  return knob;
}

}  // namespace shardscope::knobs
