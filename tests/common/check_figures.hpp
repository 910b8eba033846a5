#pragma once
// The figures a clean `check` counts (trace::CheckResult), asserted in one place for the tests
// that derive them by hand.

#include <catch2/catch.hpp>

#include <cstdint>

#include "shardscope/trace/check.hpp"

namespace shardscope::testing {

struct CleanCheck {
  int64_t ranks = 0;
  int64_t world = 0;
  int64_t groups = 0;
  int64_t collectives = 0;  ///< collective calls paired
  int64_t redistributes = 0;
};

/// `r` found no mismatch and counted exactly `want`.
inline void CheckClean(const trace::CheckResult& r, const CleanCheck& want) {
  CHECK(r.Clean());
  CHECK(r.ranks == want.ranks);
  CHECK(r.world == want.world);
  CHECK(r.groups == want.groups);
  CHECK(r.collectives == want.collectives);
  CHECK(r.redistributes == want.redistributes);
}

}  // namespace shardscope::testing
