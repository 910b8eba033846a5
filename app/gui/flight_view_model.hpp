#pragma once
// The flight view as data (GL-free, so tests build it without a display): a Flight Recorder
// import's collectives per rank on a time axis, the ranks grouped into lanes as the timeline groups
// them (MeshGroups, BuildRows, RowOfRank), each group lane the union of its members' finished and
// stuck collectives, the missing ranks' empty slots, and the size / dtype / kind mismatches marked
// on the offending rank's collective.

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/trace/check.hpp"
#include "shardscope/trace/model.hpp"
#include "shardscope/trace/triage.hpp"
#include "timeline_model.hpp"

namespace shardscope::app::gui {

/// One collective of one rank on the time axis (ns relative to the view's t0).
struct FlightSpan {
  int64_t rank = 0, start = 0, end = 0, seq = 0;  ///< seq: collective_seq_id, -1 for a send/recv
  bool incomplete = false;
  const trace::Collective* collective = nullptr;  ///< into the model the view was built from
  const std::string& kind() const { return collective->kind(); }
  const std::string& pg() const { return collective->flight_shape().pg_name; }  ///< process group name
};

/// A rank's empty slot at a collective it never joined (from a missing_ranks mismatch).
struct FlightSlot {
  int64_t rank = 0, start = 0, end = 0, seq = 0;
  std::string pg;
};

/// A mismatch marked on one rank's collective: what differs ("size", "dtype" or "kind") and its
/// one-letter badge ('S', 'D', 'K'), from the checker's mismatches and triage's roots.
struct FlightMark {
  int64_t rank = 0;
  size_t span = 0;  ///< index into FlightViewData::spans
  std::string what;
  char letter = '?';
};

/// A group lane: its members' finished collectives and stuck (incomplete) ones as unions, and how
/// many of its ranks triage blames or found blocked.
struct FlightGroupLane {
  std::vector<GroupSpan> done, stuck;  ///< GroupSpan::slowest.record indexes FlightViewData::spans
  int64_t culprits = 0, victims = 0, marks = 0;
};

/// Everything the flight view draws, built once per model. Spans are sorted by (rank, start).
struct FlightViewData {
  int64_t world = 0;
  int64_t t0 = 0;     ///< absolute ns of the first collective (the axis' 0)
  int64_t t_end = 1;  ///< end of the axis, ns from t0 (incomplete collectives run to it)
  std::vector<FlightSpan> spans;
  std::vector<size_t> rank_begin;  ///< spans of rank r: [rank_begin[r], rank_begin[r + 1])
  std::vector<FlightSlot> slots;
  std::vector<FlightMark> marks;      ///< sorted by rank
  std::vector<TimelineGroup> groups;  ///< empty when every rank has its own lane (<= kTimelineGroupAbove)
  std::vector<FlightGroupLane> group_lanes;  ///< aligned with groups
  std::vector<char> is_culprit, is_victim;   ///< per rank
};

/// Builds the view of `model` given its check and triage results. Pure.
FlightViewData BuildFlightView(const trace::Model& model, const trace::CheckResult& check,
                               const trace::TriageResult& triage);

/// The flight view's inputs and data for one model: the checker's result, triage's and the view
/// built from both. `data` points into the model: keep the model alive with it.
struct FlightAnalysis {
  trace::CheckResult check;
  trace::TriageResult triage;
  FlightViewData data;
};

/// CheckTrace, TriageModel and BuildFlightView of `model`. Pure; slow at thousands of ranks (the
/// loader runs it on its thread).
FlightAnalysis AnalyzeFlight(const trace::Model& model);

/// The mark of a mismatch class, or "" when the class is not marked in the lanes: collective_type
/// -> "kind", dtype -> "dtype", size_or_syntax and all_to_all_total -> "size".
std::string FlightMarkOf(trace::MismatchClass kind);
/// The same for a triage root class (size_mismatch, dtype_mismatch, kind_mismatch).
std::string FlightMarkOfRoot(const std::string& cls);

/// The tooltip of a span: rank and process group, seq, collective and state, input and output
/// sizes with dtypes, start / end (or "never completed") and duration relative to the view's t0,
/// timeout, and the marks on it. One line each.
std::vector<std::string> FlightSpanDetails(const FlightViewData& data, size_t span);

/// The rows' labels: "+ r0-63" / "- r0-63" for a group row, "r12" for a rank (indented under its
/// group).
std::string FlightRowLabel(const FlightViewData& data, const TimelineRow& row, bool expanded);

}  // namespace shardscope::app::gui
