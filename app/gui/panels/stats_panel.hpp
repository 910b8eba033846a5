#pragma once
// Statistics view: per collective kind and per redistribute, the count, bytes sent, total / mean /
// max time and the slowest rank, in two tables sortable by clicking a column header.

#include <string>
#include <vector>

#include "app_state.hpp"
#include "stats_view_model.hpp"

namespace shardscope::app::gui {

/// Where a header cell or a row's first cell of a statistics table landed (--geometry).
struct StatsItemGeometry {
  std::string table;  ///< "kinds" or "redistributes"
  std::string text;   ///< the header's name, or the row's label
  bool header = false;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

/// The statistics panel. Main thread only.
class StatsPanel {
 public:
  /// Forgets the last frame's geometry. No ImGui calls.
  void Prepare();
  /// Draws both tables (computed by ComputeTraceStats when the model changed); clicking a
  /// redistribute row selects it.
  void Draw(ViewContext& ctx);
  /// The selected redistribute when its row is in the table.
  PanelShows shows() const { return shows_; }
  /// Header cells and rows as drawn in the last frame, top to bottom per table.
  const std::vector<StatsItemGeometry>& geometry() const { return geometry_; }

 private:
  struct Sort {
    StatsColumn column = StatsColumn::kLabel;
    bool ascending = true;
  };
  void Refresh(const ViewContext& ctx);  // recomputes the tables when the model changed
  void DrawTable(const char* table, const char* label_header, std::vector<StatsRow>& rows, Sort& sort,
                 float height, ViewContext& ctx);
  void DrawRow(const StatsRow& row, const char* table, ViewContext& ctx);    // one row of DrawTable's
  void RecordItem(const char* table, const std::string& text, bool header);  // the last item's geometry

  const trace::Model* key_model_ = nullptr;

  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  TraceStats stats_;
  Sort kind_sort_, redistribute_sort_;
  PanelShows shows_;
  std::vector<StatsItemGeometry> geometry_;
};

}  // namespace shardscope::app::gui
