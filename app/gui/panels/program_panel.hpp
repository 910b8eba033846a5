#pragma once
// Program view (issue 7): the ops of a trace as a dataflow graph with placements on every edge,
// implicit redistributes marked on their edges (a click selects the redistribute in the inspector,
// timeline and layout panels), halo exchanges and notes on their ops, and the selected op's
// details: candidate strategies with costs, the chosen one, rule, note, inputs current -> required.

#include <cstdint>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "program_view_model.hpp"

namespace shardscope::app::gui {

/// Screen rectangle of something the program view drew (for --geometry and the screenshot tests).
struct ProgramItemGeometry {
  std::string kind;              ///< "op", "input", "redistribute" (explicit step), "marker", "halo"
  int64_t op_id = -1;            ///< op (kind op, halo), consumer op (marker)
  int64_t input = -1;            ///< marker: index of the consumer's input
  int64_t redistribute_id = -1;  ///< marker, redistribute
  std::string tensor;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

/// The program panel. Main thread only.
class ProgramPanel {
 public:
  /// Rebuilds the graph when the model (or the font) changed. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws the graph and the selected op's details into the remaining region of the window.
  void Draw(ViewContext& ctx);
  /// True when the model has ops (the panel has something to show).
  bool HasOps() const { return !view_.nodes.empty(); }
  const ProgramView& view() const { return view_; }
  /// What the last Draw put on screen, in framebuffer pixels (visible items only).
  const std::vector<ProgramItemGeometry>& geometry() const { return geometry_; }
  /// The op whose details the last Draw showed and the redistribute it followed.
  PanelShows shows() const { return shows_; }

 private:
  struct GraphFrame;
  void DrawGraph(ViewContext& ctx);
  void ScrollToSelection(const Selection& sel);
  void DrawEdges(GraphFrame& f) const;
  void DrawBadges(GraphFrame& f, Selection& sel);
  void DrawNodes(GraphFrame& f, Selection& sel);
  void DrawDetails(ViewContext& ctx);
  void DrawInputs(const trace::Op& op, Selection& sel, int flags);

  const void* key_model_ = nullptr;

  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  ProgramMetrics metrics_;
  ProgramMetrics built_metrics_{-1.0f, -1.0f};
  ProgramView view_;
  int64_t seen_redistribute_ = -2;  ///< follows selections made in other panels
  /// The selected op the graph was last brought to (-2: none since the graph was built). An op
  /// selected anywhere (list, keys, search, a badge, the command line) is scrolled into view.
  int64_t scrolled_op_ = -2;
  int frames_since_build_ = 0;  ///< the first frames' window sizes are not settled: no scrolling yet
  bool scroll_to_selection_ = false;
  std::vector<ProgramItemGeometry> geometry_;
  PanelShows shows_;
};

}  // namespace shardscope::app::gui
