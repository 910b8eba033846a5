#pragma once
// Gallery: every panel on sample data (like imgui_demo), in one window; the screenshot tests
// render it with --view gallery.

#include <memory>
#include <vector>

#include "app_state.hpp"
#include "panels/redistribute_panels.hpp"

namespace shardscope::app::gui {

/// Owns a sample model (sample_data.hpp), its own selection and one instance of every panel.
class GalleryWindow {
 public:
  /// Builds the sample on first use and runs every panel's prepare step. No ImGui calls.
  void Prepare();
  /// Draws the gallery window; `open` is cleared when closed; `fullscreen` drops decorations.
  void Draw(GlRenderer* renderer, bool* open, bool fullscreen);
  /// Selects a sample redistribute and step (the command line's --select/--step in gallery view).
  void Select(int64_t id, int64_t step) {
    selection_.redistribute_id = id;
    selection_.step = step;
    selected_ = true;
  }
  /// Layout canvases drawn by the gallery's layout panel in the last frame.
  const std::vector<CanvasGeometry>& layout_geometry() const { return panels_.layout.geometry(); }

 private:
  std::shared_ptr<const trace::Model> model_;
  std::string error_;
  Selection selection_;
  bool selected_ = false;
  RedistributeView view_;
  int64_t view_id_ = -2;
  ViewContext ctx_;
  RedistributePanels panels_;
};

}  // namespace shardscope::app::gui
