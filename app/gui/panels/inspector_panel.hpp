#pragma once
// Redistribute inspector: tensor, shape, dtype, planner and why, the notation with the current step
// highlighted, raw and optimized transforms, predicted vs measured time and bytes; step buttons,
// arrow keys and play.

#include <string>
#include <vector>

#include "app_state.hpp"
#include "search_model.hpp"

namespace shardscope::app::gui {

/// The inspector panel. Main thread only.
class InspectorPanel {
 public:
  /// Nothing to precompute beyond the RedistributeView; kept for the panel contract. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws the inspector; the step buttons and play change ctx.selection.
  void Draw(ViewContext& ctx);
  /// The redistribute and step the last Draw showed.
  PanelShows shows() const { return shows_; }

 private:
  PanelShows shows_;
};

/// The list of redistribute ids of a trace (tensor, src -> dst, steps) under a search box: a query
/// lists the matching redistributes and ops (search_model.hpp); a click selects.
class RedistributeListPanel {
 public:
  /// Caches one line per redistribute id when the model changed. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws the search box and the list ("no matches" when the query matches nothing).
  void Draw(ViewContext& ctx);
  /// Gives the search box the keyboard focus on the next Draw (Ctrl+F).
  void FocusSearch() { focus_search_ = true; }
  /// Puts `query` in the search box (--search).
  void SetQuery(const std::string& query);
  /// Whether the search box had the keyboard focus in the last Draw, and the query and hits it shows.
  bool search_active() const { return search_active_; }
  const std::string& query() const { return key_query_; }
  size_t hit_count() const { return hits_.size(); }
  /// The redistribute the last Draw highlighted.
  PanelShows shows() const { return shows_; }
  /// Screen rectangles of the rows the last Draw showed: id and x0, y0, x1, y1 (for --geometry);
  /// `op` for an op found by the search (id is then an op id).
  struct RowGeometry {
    int64_t id = 0;
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    bool op = false;
  };
  const std::vector<RowGeometry>& row_geometry() const { return row_geometry_; }

 private:
  const void* key_model_ = nullptr;
  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  std::vector<SearchEntry> entries_;
  std::string key_query_ = "\x01";  // the query hits_ were computed for
  std::vector<size_t> hits_;        // positions in entries_ shown
  char filter_[128] = {};
  bool focus_search_ = false, search_active_ = false;
  PanelShows shows_;
  std::vector<RowGeometry> row_geometry_;
};

}  // namespace shardscope::app::gui
