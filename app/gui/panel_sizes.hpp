#pragma once
// The main window's panel sizes (splitter positions as fractions of their regions) and the
// maximized panel, remembered between runs in imgui.ini under [Shardscope][Panels].

#include <optional>

#include "gui_view.hpp"

namespace shardscope::app::gui {

/// Splitter positions as fractions, and the panel shown alone (none: every panel).
struct PanelSizes {
  float left = 0.27f;                ///< left column width / window width
  float left_top = 0.28f;            ///< redistribute list height / left column height
  float right_top = 0.27f;           ///< timeline (or program) height / right column height
  float right_mid = 0.55f;           ///< layout height / what the timeline leaves
  std::optional<GuiView> maximized;  ///< kTimeline, kLayout, ... or none
};

/// Registers an ImGui settings handler that reads and writes `sizes` (which must outlive the ImGui
/// context). Call after ImGui::CreateContext and before the first NewFrame.
void RegisterPanelSizesSettings(PanelSizes* sizes);

}  // namespace shardscope::app::gui
