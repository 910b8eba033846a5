#pragma once
// Private: the cross-rank check and the diff of Models read from Flight Recorder dumps (CheckTrace
// and DiffTraces call them).

#include <vector>

#include "shardscope/trace/check.hpp"
#include "shardscope/trace/diff.hpp"

namespace shardscope::trace::detail {

/// Per process group: collectives matched across ranks by collective_seq_id and compared with
/// Flight Recorder's classes (missing ranks, collective type, size, dtype, state, all_to_all
/// totals; all_to_all otherwise undecided), sends and recvs matched in order per pair of ranks.
/// Pure.
CheckResult CheckFlightRecords(const Model& model);

/// The Flight Recorder part of DiffTraces: per process group (name and rank set) and
/// collective_seq_id, a collective only in one trace (added/removed, category collectives), a
/// different profiling name or rank's state (collectives), different sizes or dtypes (bytes).
/// Ids of the differences are the seq ids. Appends to `out`. Pure.
void DiffFlightRecords(const Model& baseline, const Model& candidate, const DiffOptions& options,
                       std::vector<Difference>& out);

}  // namespace shardscope::trace::detail
