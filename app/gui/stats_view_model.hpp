#pragma once
// GL-free view model of the Statistics view: per collective kind and per redistribute id, the
// count, bytes sent and the total / mean / max time with the rank the max comes from. No ImGui.

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/trace/model.hpp"

namespace shardscope::app::gui {

/// One row of a statistics table. Times are durations within one rank's clock (end - begin).
struct StatsRow {
  std::string label;          ///< the kind ("all_gather"), or "#id tensor" for a redistribute
  int64_t id = -1;            ///< the redistribute id, -1 for a kind row
  int64_t count = 0;          ///< kind: collective events over ranks; redistribute: ranks that ran it
  int64_t timed = 0;          ///< of count, those with a duration (a redistribute needs its end)
  int64_t bytes = 0;          ///< bytes sent: sum of bytes_sent over the events (all ranks)
  int64_t total_ns = 0;       ///< sum of the durations
  double mean_ns = 0.0;       ///< total_ns / timed (0 when nothing is timed)
  int64_t max_ns = 0;         ///< the longest duration
  int64_t slowest_rank = -1;  ///< the rank max_ns comes from (lowest on a tie), -1 when untimed
};

/// The two tables of the Statistics view.
struct TraceStats {
  std::vector<StatsRow> kinds;          ///< every collective (redistributes' and ops'), by kind name
  std::vector<StatsRow> redistributes;  ///< one row per redistribute id, ascending id
};

/// Statistics of every collective and redistribute of `model`. Pure.
TraceStats ComputeTraceStats(const trace::Model& model);

/// The sortable columns, in the order the tables show them.
enum class StatsColumn { kLabel, kCount, kBytes, kTotal, kMean, kMax, kSlowestRank };

/// Sorts `rows` on `column` (ties keep the label order), ascending or descending.
void SortStatsRows(std::vector<StatsRow>& rows, StatsColumn column, bool ascending);

}  // namespace shardscope::app::gui
