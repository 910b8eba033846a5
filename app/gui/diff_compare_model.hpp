#pragma once
// The diff view's comparison of one aligned pair and of the two runs: what each side did, side by
// side (plan, collectives, bytes per rank, predicted and measured time), and per collective kind
// the calls, bytes and time of each run. GL-free and ImGui-free: unit-testable.

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/trace/model.hpp"

namespace shardscope::app::gui {

/// One line of a pair's comparison: a quantity, its value on each side ("" for a gap), whether
/// they differ, and for numbers the change ("+1", "x7.00", "+12.5%"; "" when equal or not numeric).
struct DiffCompareRow {
  std::string what;
  std::string baseline, candidate;
  bool differs = false;
  std::string change;
};

/// Compares redistribute `baseline_id` of `baseline` with `candidate_id` of `candidate` (either id
/// -1, or its model null, for a gap): placements, planner, plan notation, dtype, collectives (per
/// kind, rank-side calls summed over ranks), bytes sent per rank (the largest rank's, and the sum),
/// predicted cost (us) and measured time (us, the slowest rank's begin-to-end). Pure.
std::vector<DiffCompareRow> ComparePair(const trace::Model* baseline, int64_t baseline_id,
                                        const trace::Model* candidate, int64_t candidate_id);

/// Per collective kind over a whole run: rank-side calls, bytes sent (summed over ranks) and time
/// (summed collective durations over ranks, ns).
struct KindTotals {
  std::string kind;
  int64_t calls[2] = {0, 0};
  int64_t bytes[2] = {0, 0};
  int64_t time_ns[2] = {0, 0};
};

/// Totals of both runs, one entry per kind seen in either (kinds sorted), and a last entry "all".
/// Redistributes' collectives and ops' own (halo exchanges) both count. Pure.
std::vector<KindTotals> CompareKindTotals(const trace::Model& baseline, const trace::Model& candidate);

}  // namespace shardscope::app::gui
