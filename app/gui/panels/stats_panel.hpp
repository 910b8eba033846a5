#pragma once
// Statistics view: per collective kind and per redistribute, the count, bytes sent, total / mean /
// max time and the slowest rank, in two tables sortable by clicking a column header.

#include <vector>

#include "app_state.hpp"
#include "stats_view_model.hpp"

namespace shardscope::app::gui {

/// The statistics panel. Main thread only.
class StatsPanel {
 public:
  /// Recomputes the tables when the model changed (ComputeTraceStats). No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws both tables; clicking a redistribute row selects it.
  void Draw(ViewContext& ctx);
  /// The selected redistribute when its row is in the table.
  PanelShows shows() const { return shows_; }

 private:
  struct Sort {
    StatsColumn column = StatsColumn::kLabel;
    bool ascending = true;
  };
  void DrawTable(const char* id, const char* label_header, std::vector<StatsRow>& rows, Sort& sort,
                 float height, ViewContext& ctx);

  const trace::Model* key_model_ = nullptr;
  TraceStats stats_;
  Sort kind_sort_, redistribute_sort_;
  PanelShows shows_;
};

}  // namespace shardscope::app::gui
