#pragma once
// What a time range of the timeline holds (drag on the time axis): how many redistributes, ops and
// collectives overlap it, the bytes those collectives sent, and the same per rank. GL-free and
// ImGui-free: unit-testable.

#include <cstdint>
#include <vector>

#include "timeline_model.hpp"

namespace shardscope::app::gui {

/// One rank's part of a range.
struct RangeRankStats {
  int64_t rank = 0;
  int64_t redistributes = 0;  ///< redistribute bars of the rank overlapping the range
  int64_t ops = 0;            ///< op bars of the rank overlapping the range
  int64_t collectives = 0;    ///< the rank's collective calls overlapping the range
  int64_t bytes_sent = 0;     ///< what those calls sent (whole calls, not prorated)
  int64_t busy_ns = 0;        ///< time inside the range the rank spent in collectives
};

/// A range's totals; ranks with nothing in the range are left out of `ranks`.
struct RangeStats {
  int64_t start_ns = 0, end_ns = 0;   ///< absolute (as TimelineData's spans), start <= end
  int64_t redistributes = 0;          ///< distinct redistribute ids with a bar overlapping the range
  int64_t ops = 0;                    ///< distinct op ids with a bar overlapping the range
  int64_t collectives = 0;            ///< rank-side collective calls overlapping the range
  int64_t bytes_sent = 0;             ///< bytes those calls sent, summed over ranks
  std::vector<RangeRankStats> ranks;  ///< by rank
};

/// The spans of `data` (built from `model`) overlapping [start, end] (absolute ns; a span
/// overlaps when span.start <= end and span.end >= start). A collective's bytes are the sum of
/// its bytes_sent; its busy time is its length clipped to the range. Pure; O(spans) (a lane's
/// longest span bounds where its overlapping spans can start).
RangeStats ComputeRangeStats(const trace::Model& model, const TimelineData& data, int64_t start, int64_t end);

}  // namespace shardscope::app::gui
