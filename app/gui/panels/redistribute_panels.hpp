#pragma once
// The panels that show one redistribute and its neighbours (list, inspector, timeline, layout,
// mesh, merges), as the main window and the gallery both hold them.

#include "app_state.hpp"
#include "panels/inspector_panel.hpp"
#include "panels/layout_panel.hpp"
#include "panels/merge_panel.hpp"
#include "panels/mesh_panel.hpp"
#include "panels/timeline_panel.hpp"

namespace shardscope::app::gui {

struct RedistributePanels {
  RedistributeListPanel list;
  InspectorPanel inspector;
  TimelinePanel timeline;
  LayoutPanel layout;
  MeshPanel mesh;
  MergePanel merge;

  /// Runs every panel's prepare step on `ctx`. No ImGui calls.
  void Prepare(const ViewContext& ctx) {
    list.Prepare(ctx);
    inspector.Prepare(ctx);
    timeline.Prepare(ctx);
    layout.Prepare(ctx);
    mesh.Prepare(ctx);
    merge.Prepare(ctx);
  }
};

}  // namespace shardscope::app::gui
