#pragma once
// Private: stragglers of profiler (Kineto) traces for triage (docs/triage.md, "Profiler traces"),
// from the arrivals and waits AnalyzeKineto computed for every matched collective.

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/trace/kineto.hpp"
#include "shardscope/trace/triage.hpp"

namespace shardscope::trace::detail {

struct KinetoStragglers {
  std::vector<TriageStraggler> stragglers;  ///< by rank
  std::vector<int64_t> slowed;              ///< not stragglers, waited kKinetoLateNs / 2 or more on average
  int64_t delayed = 0;                      ///< matched collectives delayed over kKinetoLateNs
  std::vector<std::string> evidence;        ///< one line per straggler and per group it delayed
  std::string note;  ///< delayed collectives but no straggler: who caused the most wait
};

/// A rank is a straggler when it is a member of at least 3 delayed collectives, arrived last at
/// at least half of them, and itself waited under kKinetoLateNs / 2 on average over all its
/// collectives (the ranks it delays wait long, which keeps them out).
KinetoStragglers FindKinetoStragglers(const KinetoAnalysis& analysis);

/// "12.5 ms" / "300 us": a duration in ns for the report.
std::string WaitText(int64_t ns);

}  // namespace shardscope::trace::detail
