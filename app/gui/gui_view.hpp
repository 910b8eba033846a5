#pragma once
// The GUI's views (--view, the panel a window shows alone, View > Maximize panel): a closed
// vocabulary, one enum with one name table, so a misspelt view does not compile and --help, the
// error message, imgui.ini and the geometry report take their names from the table alone.

#include <optional>
#include <string>
#include <string_view>

#include "shardscope/names.hpp"

namespace shardscope::app::gui {

/// kMain shows every panel of a trace; kTimeline ... kProgram and kStats one panel alone (also
/// the panels View > Maximize offers); kGallery every panel on sample data; kSandbox the
/// redistribute sandbox; kDiff two traces side by side; kFlight Flight Recorder lanes.
enum class GuiView {
  kMain,
  kTimeline,
  kInspector,
  kLayout,
  kMesh,
  kMerge,
  kProgram,
  kGallery,
  kSandbox,
  kDiff,
  kFlight,
  kStats,
};

/// In the order --help and the --view error list them.
inline constexpr Named<GuiView> kGuiViews[] = {
    {GuiView::kMain, "main"},       {GuiView::kTimeline, "timeline"}, {GuiView::kInspector, "inspector"},
    {GuiView::kLayout, "layout"},   {GuiView::kMesh, "mesh"},         {GuiView::kMerge, "merge"},
    {GuiView::kProgram, "program"}, {GuiView::kGallery, "gallery"},   {GuiView::kSandbox, "sandbox"},
    {GuiView::kDiff, "diff"},       {GuiView::kFlight, "flight"},     {GuiView::kStats, "stats"},
};

/// "main", "timeline", ... (the --view argument).
constexpr std::string_view GuiViewName(GuiView view) { return NameIn(kGuiViews, view, "?"); }
/// The same as a std::string (for printf's %s and JSON).
inline std::string GuiViewText(GuiView view) { return std::string(GuiViewName(view)); }
/// The view named `name`, or nullopt.
constexpr std::optional<GuiView> ParseGuiView(std::string_view name) { return ParseIn(kGuiViews, name); }

}  // namespace shardscope::app::gui
