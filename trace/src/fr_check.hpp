#pragma once
// Private: the cross-rank check of a Model read from Flight Recorder dumps (CheckTrace calls it).

#include "shardscope/trace/check.hpp"

namespace shardscope::trace::detail {

/// Per process group: collectives matched across ranks by collective_seq_id and compared with
/// Flight Recorder's classes (missing ranks, collective type, size, dtype, state, all_to_all
/// totals; all_to_all otherwise undecided), sends and recvs matched in order per pair of ranks.
/// Pure.
CheckResult CheckFlightRecords(const Model& model);

}  // namespace shardscope::trace::detail
