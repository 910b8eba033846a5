#pragma once
// The timeline's lanes as data (GL-free, so tests build them without a display): per rank, the
// op bars of program traces, the redistribute bars and the collectives, sorted by start.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rank_palette.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::app::gui {

/// One span on a lane (times in ns relative to the trace start).
struct TimelineSpan {
  int64_t start = 0, end = 0;
  int64_t redistribute_id = 0;
  int32_t step = -1;        ///< -1 for the redistribute bar itself
  int32_t record = 0;       ///< index into Model::redistributes
  int32_t collective = -1;  ///< index into the record's collectives, -1 for bars
  /// Op bars and the collectives an op ran itself (halo exchanges): index into Model::ops (then
  /// `record` is -1, `redistribute_id` is the op id for an op bar and -1 for its collectives).
  int32_t op_record = -1;
};

/// A busy interval of a group lane: the union of its members' overlapping (or touching) spans.
/// Per member, the latest end of its spans inside the interval; the slowest member is the one whose
/// latest end is greatest (the lowest rank on a tie), the fastest the one whose latest end is least.
struct GroupSpan {
  int64_t start = 0, end = 0;
  int64_t slowest_rank = -1, fastest_rank = -1;
  int64_t slowest_end = 0, fastest_end = 0;
  int32_t members = 0;   ///< distinct ranks with a span inside
  int32_t spans = 0;     ///< member spans merged into it
  TimelineSpan slowest;  ///< the slowest member's latest-ending span (colour, tooltip, click target)
};

/// Ranks [first_rank, first_rank + size) sharing one coordinate of the leading mesh dim (or, on a
/// 1-D mesh, a block of consecutive ranks), drawn as one lane until expanded.
struct TimelineGroup {
  int64_t first_rank = 0, size = 0;
  std::string label;  ///< "dp=5" (mesh dim name or d0, and the coordinate) or "r0-63"
  std::vector<GroupSpan> ops, bars, collectives;  ///< unions of the members' lanes, by start
  /// Over the whole trace: the member whose last span ends latest / earliest (-1: no spans).
  int64_t slowest_rank = -1, fastest_rank = -1;
  int64_t slowest_end = 0, fastest_end = 0;
};

/// Per-rank lanes of a model, sorted by start (the prepare step's output).
struct TimelineData {
  std::vector<int64_t> lane_rank;
  std::vector<std::vector<TimelineSpan>> bars;         ///< per lane
  std::vector<std::vector<TimelineSpan>> collectives;  ///< per lane
  std::vector<std::vector<TimelineSpan>> ops;          ///< per lane: op bars of program traces
  int64_t t0 = 0, t1 = 1;                              ///< trace time range, absolute ns
  size_t events = 0;
  std::vector<TimelineGroup> groups;  ///< empty when every rank has its own lane (small worlds)
};

/// The background of a group lane where none of its ranks is busy (screenshot tests read it).
inline constexpr Rgb kTimelineGroupBackground{40, 42, 52};

/// Worlds above this many ranks get group lanes.
inline constexpr int64_t kTimelineGroupAbove = 64;

/// One row of the timeline: a group lane (rank < 0) or a rank's lane (group: its group or -1).
struct TimelineRow {
  int32_t group = -1;
  int64_t rank = -1;
  bool operator==(const TimelineRow&) const = default;
};

/// The union of `spans` (each tagged with its rank), as GroupSpans sorted by start. Spans that
/// overlap or touch (next.start <= current end) join one interval. Pure.
std::vector<GroupSpan> UnionSpans(std::vector<std::pair<int64_t, TimelineSpan>> spans);

/// Groups of `world` ranks on a mesh of `shape` (row-major) with `names`: one per coordinate of the
/// leading dim when it has more than one coordinate and each group more than one rank, otherwise
/// blocks of ceil(sqrt(world)) consecutive ranks. Spans are not filled in.
std::vector<TimelineGroup> MeshGroups(int64_t world, const std::vector<int64_t>& shape,
                                      const std::vector<std::string>& names);

/// Fills each group's unions from the rank lanes of `data`.
void FillGroups(TimelineData& data);

/// The rows to draw: without groups one per rank; with groups one per group, each expanded group
/// followed by its members' rows. `expanded` is indexed by group (missing entries: collapsed).
std::vector<TimelineRow> BuildRows(const TimelineData& data, const std::vector<bool>& expanded);
/// The same over any lanes (the flight view's too): `lane_rank` the ranks, `groups` their groups.
std::vector<TimelineRow> BuildRows(const std::vector<int64_t>& lane_rank,
                                   const std::vector<TimelineGroup>& groups,
                                   const std::vector<bool>& expanded);
/// Each rank's row in `rows` (of `ranks` ranks): its own, or its collapsed group's; -1 for none.
std::vector<int32_t> RowOfRank(const std::vector<TimelineRow>& rows, const std::vector<TimelineGroup>& groups,
                               size_t ranks);

/// The [start, end] (absolute ns) of the spans of `lanes` whose redistribute_id is `id` (a
/// redistribute in TimelineData::bars, an op in TimelineData::ops), over every rank; false when none.
bool IdRange(const std::vector<std::vector<TimelineSpan>>& lanes, int64_t id, int64_t& start, int64_t& end);

/// Level of detail (as Tracy does): a span narrower than `min_ns` is small. Consecutive small spans
/// whose gap (next.start - run end) is under `min_ns` form one run drawn as a single item; a span of
/// at least `min_ns` is its own item. Visits the spans of `spans[from..]` overlapping [vs, ve] in
/// order and calls emit(first, count, start, end) per item (end = greatest end in the run).
template <class Span, class Emit>
void ForEachLodItem(const std::vector<Span>& spans, size_t from, int64_t vs, int64_t ve, int64_t min_ns,
                    Emit&& emit) {
  size_t first = 0, count = 0;
  int64_t run_start = 0, run_end = 0;
  for (size_t i = from; i < spans.size() && spans[i].start <= ve; ++i) {
    const Span& s = spans[i];
    if (s.end < vs) continue;
    const bool small = s.end - s.start < min_ns;
    if (count > 0 && small && s.start - run_end < min_ns) {
      ++count;
      run_end = run_end > s.end ? run_end : s.end;
      continue;
    }
    if (count > 0) emit(first, count, run_start, run_end);
    count = 0;
    if (small) {
      first = i, count = 1, run_start = s.start, run_end = s.end;
    } else {
      emit(i, size_t{1}, s.start, s.end);
    }
  }
  if (count > 0) emit(first, count, run_start, run_end);
}

/// Builds the lanes of `model` (offsets of each rank's clock applied). Pure; O(events log events).
TimelineData BuildTimeline(const trace::Model& model);

/// The collective a span of the collectives lane stands for (a redistribute's or an op's own).
const trace::Collective& SpanCollective(const trace::Model& model, const TimelineSpan& s);

}  // namespace shardscope::app::gui
