#pragma once
// Private: the check's rules for collectives that carry a flight record, applied by CheckTrace's one
// checker wherever those fields are present (Flight Recorder dumps, Kineto traces, or a model that
// mixes them with shardscope's own collectives). docs/flight-recorder.md lists the rules.

#include <cstdint>

#include "flight_groups.hpp"
#include "shardscope/trace/check.hpp"

namespace shardscope::trace::detail {

/// Flight Recorder's rules over the process groups of a model's flight records: per group, a
/// member with no file; collectives matched across ranks by collective_seq_id and compared
/// (missing ranks, type, size rule, input sizes, all_to_all totals, dtypes, state; a wrapped ring
/// buffer is a note, not a culprit); sends and recvs matched in order per pair of ranks.
class FlightRules {
 public:
  /// Groups the flight records of `model` (which need not outlive this object).
  explicit FlightRules(const Model& model);
  /// The rules over flight records already grouped (Flight Recorder dumps read one at a time).
  explicit FlightRules(FlightTable table);

  /// True when `rank` is a member of a process group seen on a flight record: Check reports a
  /// missing file of such a rank itself, in the group's words.
  bool Covers(int64_t rank) const { return table_.Members().count(rank) > 0; }
  /// The largest rank Covers, or -1.
  int64_t LastCovered() const { return table_.Members().empty() ? -1 : *table_.Members().rbegin(); }

  /// Applies every rule, appending to `out`'s mismatches and notes (group by group, in key order)
  /// and adding to its groups, collectives and undecided counts.
  void Check(CheckResult& out);

 private:
  FlightTable table_;
};

/// CheckTrace of `model` with its flight records' rules run over `rules` instead of the model's own
/// (`model` then holds the rank files' headers and no flight record). Pure.
CheckResult CheckTraceWith(const Model& model, FlightRules rules);

}  // namespace shardscope::trace::detail
