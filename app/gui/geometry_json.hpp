#pragma once
// The --geometry report of a screenshot run: where every panel, canvas, row and graph item landed
// and which redistribute / step / op each panel shows. Built from the panels' own records.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app_state.hpp"
#include "panels/diff_panel.hpp"
#include "panels/flight_panel.hpp"
#include "panels/inspector_panel.hpp"
#include "panels/layout_panel.hpp"
#include "panels/mesh_panel.hpp"
#include "panels/profiler_panel.hpp"
#include "panels/program_panel.hpp"
#include "panels/stats_panel.hpp"
#include "panels/timeline_panel.hpp"

namespace shardscope::app::gui {

/// One panel drawn in the last frame: its window rectangle and what it shows.
struct PanelGeometry {
  std::string panel;  ///< "list", "inspector", "timeline", "program", "layout", "mesh", "merge", "stats"
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  PanelShows shows;
  /// Width its content asked for (ImGui's ideal content size, laid out unclipped) and the width it
  /// had: content wider than the room is clipped (or needs scrolling) at this window size.
  float content_w = 0, room_w = 0;
};

/// Everything the report reads; pointers are non-owning, null when not shown.
struct GeometrySources {
  int width = 0, height = 0;
  std::string view;
  const std::vector<DiffCanvasGeometry>* canvases = nullptr;
  const DiffPanel* diff = nullptr;  ///< diff mode only
  const ProgramPanel* program = nullptr;
  const FlightPanel* flight = nullptr;
  const RedistributeListPanel* list = nullptr;
  const std::vector<PanelGeometry>* panels = nullptr;
  const Selection* selection = nullptr;
  const float* error_rect = nullptr;  ///< x0, y0, x1, y1; empty when x1 <= x0
  const StatsPanel* stats = nullptr;
  const MeshPanel* mesh = nullptr;
  const TimelinePanel* timeline = nullptr;            ///< null: "timeline" is null in the report
  const ProfilerPanel* profiler = nullptr;            ///< null: "profiler" is null in the report
  const LayoutTableGeometry* layout_table = nullptr;  ///< the layout's ranges table, when drawn
  std::string trace{};                                ///< the active trace's label (its path), "" when none
  int traces = 0;                                     ///< traces loaded
  size_t draw_vertices = 0;  ///< ImGui vertices of the frame shown (independent of the trace's size
                             ///< where panels draw only what is in view)
};

/// The JSON document written by --geometry.
nlohmann::json GeometryJson(const GeometrySources& s);

}  // namespace shardscope::app::gui
