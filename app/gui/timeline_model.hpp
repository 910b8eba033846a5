#pragma once
// The timeline's lanes as data (GL-free, so tests build them without a display): per rank, the
// op bars of program traces, the redistribute bars and the collectives, sorted by start.

#include <cstddef>
#include <cstdint>
#include <vector>

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

/// Per-rank lanes of a model, sorted by start (the prepare step's output).
struct TimelineData {
  std::vector<int64_t> lane_rank;
  std::vector<std::vector<TimelineSpan>> bars;         ///< per lane
  std::vector<std::vector<TimelineSpan>> collectives;  ///< per lane
  std::vector<std::vector<TimelineSpan>> ops;          ///< per lane: op bars of program traces
  int64_t t0 = 0, t1 = 1;                              ///< trace time range, absolute ns
  size_t events = 0;
};

/// Builds the lanes of `model` (offsets of each rank's clock applied). Pure; O(events log events).
TimelineData BuildTimeline(const trace::Model& model);

/// The collective a span of the collectives lane stands for (a redistribute's or an op's own).
const trace::Collective& SpanCollective(const trace::Model& model, const TimelineSpan& s);

}  // namespace shardscope::app::gui
