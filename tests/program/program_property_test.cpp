// Property: a random program (random mesh, tensors with random placements including uneven and
// empty shards and partials, a random chain of ops and explicit redistributes) run on the local
// backend gives, for every op output, the same tensor as the ops run on the unsharded global
// tensors: exactly for integer dtypes, within OpTolerance for floats. RunScenario's verify does
// the comparison (FullTensor of the gathered shards against ComputeOpGlobal). The programs go
// through the JSON parser, so parse-time propagation is exercised as well.
// SHARDSCOPE_PROPERTY_CASES sets the count (default 2000).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "../common/random_program.hpp"
#include "../common/test_knobs.hpp"
#include "shardscope/error.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"

using namespace shardscope;
using namespace shardscope::engine;
using namespace shardscope::program;

namespace {}  // namespace

TEST_CASE("property: random programs equal the same ops on the global tensors", "[property][program]") {
  const int64_t cases = shardscope::KnobInteger(shardscope::knobs::PropertyCases()).value_or(2000);
  int64_t ran = 0, unsupported = 0, ops = 0;
  for (int64_t c = 0; c < cases; ++c) {
    const std::string text = testing::RandomProgram(0x5eed0000 + static_cast<uint64_t>(c),
                                                    {{2}, {3}, {4}, {2, 2}, {2, 3}, {1, 2}, {3, 2}});
    Scenario sc;
    try {
      sc = ParseScenario(text, "<case " + std::to_string(c) + ">");
    } catch (const Error& e) {
      // Only strategies PyTorch also refuses (S->P needed) may be rejected; anything else fails.
      // (The parser reports it at the op's position, as invalid input.)
      if (std::string(e.what()).find("needs S->P or P(a)->P(b)") != std::string::npos) {
        ++unsupported;
        continue;
      }
      FAIL("case " << c << ": " << e.what() << "\n" << text);
    }
    RunOptions options;
    options.verify = true;
    INFO("case " << c << ": " << text);
    RunReport report;
    REQUIRE_NOTHROW(report = RunScenario(sc, options));
    for (const StepReport& s : report.steps) {
      if (!s.op.empty()) {
        ++ops;
        CHECK(s.verified);
      }
    }
    ++ran;
  }
  INFO("ran " << ran << " programs with " << ops << " ops; " << unsupported << " refused (S->P)");
  CHECK(ran > cases * 8 / 10);
  CHECK(ops > ran);
}
