#include "app_impl.hpp"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <cstdio>

#include "widgets.hpp"

// The menu bar (File, View, Help) and the arrangement of the panels in the main window.

namespace shardscope::app::gui {

template <class P>
void App::DrawPanel(const char* title, const char* name, P& panel) {
  if (title) SectionTitle(title);
  panel.Draw(ctx_);
  RecordPanel(name, panel.shows());  // --geometry: where it is and what it shows
}

void App::DrawMenuBar() {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    // Open or follow a path (also: drop a trace or dump directory on the window).
    ImGui::SetNextItemWidth(320);
    const bool enter =
        ImGui::InputTextWithHint("##open_path", "trace directory, rank file or dump directory", open_path_,
                                 sizeof open_path_, ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    if ((ImGui::Button("Open") || enter) && open_path_[0] != '\0') {
      OpenPath(open_path_);
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Follow") && open_path_[0] != '\0') {
      FollowPath(open_path_);
      ImGui::CloseCurrentPopup();
    }
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("open a trace a running job is still writing, and keep adding what its ranks append");
    if (!follow_path_.empty()) ImGui::TextDisabled("following %s", follow_path_.c_str());
    ImGui::Separator();
    DrawCompareMenu();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) glfwSetWindowShouldClose(platform_->window(), GLFW_TRUE);
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    ImGui::MenuItem("Gallery", nullptr, &show_gallery_);
    ImGui::MenuItem("Sandbox", nullptr, &show_sandbox_);
    const bool in_main = options_.view == GuiView::kMain && !diff_mode_;
    if (ImGui::MenuItem("Statistics", nullptr, sizes_.maximized == GuiView::kStats, in_main)) {
      // Again: back to all panels.
      sizes_.maximized = sizes_.maximized == GuiView::kStats ? std::nullopt : std::optional(GuiView::kStats);
      ImGui::MarkIniSettingsDirty();
    }
    if (ImGui::BeginMenu("Maximize panel", in_main)) {
      static constexpr GuiView kPanels[] = {GuiView::kTimeline, GuiView::kProgram, GuiView::kInspector,
                                            GuiView::kLayout,   GuiView::kMesh,    GuiView::kMerge,
                                            GuiView::kStats};
      const std::optional<GuiView> before = sizes_.maximized;
      if (ImGui::MenuItem("none (all panels)", nullptr, !sizes_.maximized)) sizes_.maximized.reset();
      for (GuiView p : kPanels) {
        if (ImGui::MenuItem(GuiViewText(p).c_str(), nullptr, sizes_.maximized == p)) sizes_.maximized = p;
      }
      // Collectives with flight records beside the model's other events: their lanes on demand.
      if ((flight_.Active() || profiler_.OwnsMain()) &&
          ImGui::MenuItem("flight", nullptr, sizes_.maximized == GuiView::kFlight))
        sizes_.maximized = GuiView::kFlight;
      if (sizes_.maximized != before) ImGui::MarkIniSettingsDirty();
      ImGui::EndMenu();
    }
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    DrawHelp();
    ImGui::EndMenu();
  }
  const trace::Model* model = ActiveModel();
  if (diff_mode_) {
    ImGui::Separator();
    ImGui::Text("diff: %s  vs  %s", diff_label_[0].c_str(), diff_label_[1].c_str());
  } else if (model) {
    ImGui::Separator();
    ImGui::SetNextItemWidth(260);
    const std::string& label = traces_[static_cast<size_t>(active_)].label;
    if (ImGui::BeginCombo("##trace", label.c_str())) {
      for (size_t i = 0; i < traces_.size(); ++i) {
        if (ImGui::Selectable(traces_[i].label.c_str(), static_cast<int>(i) == active_)) {
          active_ = static_cast<int>(i);
          selection_ = Selection{};
        }
      }
      ImGui::EndCombo();
    }
    std::string backend = model->ranks.empty() ? "" : model->ranks.front().header.backend;
    ImGui::Text("%lld ranks  mesh %s  %s  %zu redistributes", static_cast<long long>(model->world),
                mesh_text_.c_str(), backend.c_str(), ids_.size());
  } else if (loaders_.empty() && failures_.empty()) {
    ImGui::TextDisabled("no trace: pass TRACE_DIR_OR_FILE, or open View > Sandbox / Gallery");
  }
  ImGui::EndMenuBar();
}

void App::DrawHelp() {
  // Every binding the app has, keys first; --keys replays the same keys by these names.
  static const char* const kBindings[][2] = {
      {"Left / Right", "previous / next step of the selected redistribute"},
      {"Up / Down", "previous / next redistribute (diff view: previous / next row)"},
      {"Space", "play the steps (again: stop)"},
      {"W / S, + / -", "timeline: zoom in / out around the centre"},
      {"A / D", "timeline: pan left / right"},
      {"F", "timeline: zoom to the selection (the selected redistribute on every rank, else the op)"},
      {"Ctrl+F", "search redistributes and ops (tensor, placement, collective kind, op name)"},
      {"0", "timeline: fit the whole trace"},
      {"G or Ctrl+G",
       "go to rank (type its number): its timeline lane, layout table row and shards, mesh cell; a rank "
       "out of range is named, not clamped"},
      {"Esc", "clear the selection (redistribute, op, measured range); Down / Up then pick the first / last"},
      {"Ctrl+Q", "quit (also File > Quit)"},
      {"File > Open, or drop a path on the window", "load a trace directory, rank file or dump directory"},
      {"File > Follow, --follow DIR",
       "keep re-reading a trace a running job writes (view follows the newest time)"},
      {"click (list, timeline bar, program badge)", "select that redistribute"},
      {"click (search result)", "select that redistribute or op"},
      {"click (program op)", "select the op"},
      {"click (mesh rank)", "focus the rank: its group for the step is highlighted"},
      {"click (mesh block or block matrix row, > 256 ranks)",
       "expand the block to its ranks (back: the button)"},
      {"wheel (timeline)", "zoom around the pointer"},
      {"Shift + wheel, or wheel over labels (timeline)", "scroll the lanes"},
      {"drag (timeline scrollbar, right edge)", "scroll the lanes"},
      {"drag (timeline)", "pan"},
      {"drag (timeline time axis), Shift + drag",
       "select a time range: its duration on the axis; redistributes, ops, collective calls, bytes and a "
       "per-rank breakdown in a box (x or Esc: drop it)"},
      {"right click (timeline lane)", "pin the lane to the top (the others scroll under it), or unpin it"},
      {"click (diff view, overlaid timelines)", "select the row of that redistribute"},
      {"click (timeline group label)", "expand / collapse the group (above 64 ranks: lanes per mesh dim)"},
      {"hover (timeline group)", "the union of its ranks' busy time, slowest and fastest rank"},
      {"hover (layout element)", "its holders and index in each local shard"},
      {"hover (timeline, mesh)", "the span's or rank's details"},
      {"drag (panel borders)", "resize panels (remembered in imgui.ini)"},
      {"click (statistics column header)", "sort the table on that column (again: reverse)"},
      {"click (statistics redistribute row)", "select that redistribute"},
      {"View > Maximize panel", "one panel fills the window (none: all panels)"},
      {"View > Statistics", "per collective kind and redistribute: count, bytes, time, slowest rank"},
      {"click (profiler view: a kernel)",
       "select its collective on every rank: outlined, joined by a line, each rank's wait in the side panel"},
      {"Left / Right, Up / Down (profiler view)",
       "previous / next kernel on the focused rank's lane; the rank above / below"},
      {"straggler button (profiler view)", "scroll to the rank that arrived last most often"},
  };
  if (!ImGui::BeginTable("##help", 2, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) return;
  for (const auto& b : kBindings) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(b[0]);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(b[1]);
  }
  ImGui::EndTable();
}

void App::DrawCompareMenu() {
  // Baseline: the trace being viewed; candidate: another loaded trace or a path to load.
  if (ImGui::BeginMenu("Compare with", ActiveModel() != nullptr || diff_mode_)) {
    int baseline = diff_mode_ && diff_trace_[0] >= 0 ? diff_trace_[0] : active_;
    ImGui::TextDisabled("baseline: %s",
                        baseline >= 0 ? traces_[static_cast<size_t>(baseline)].label.c_str() : "-");
    for (size_t i = 0; i < traces_.size(); ++i) {
      if (static_cast<int>(i) == baseline) continue;
      if (ImGui::MenuItem(traces_[i].label.c_str())) StartDiff(baseline, static_cast<int>(i));
    }
    ImGui::Separator();
    ImGui::SetNextItemWidth(320);
    bool enter =
        ImGui::InputTextWithHint("##compare_path", "candidate trace directory or file", compare_path_,
                                 sizeof compare_path_, ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    if ((ImGui::Button("Load and compare") || enter) && compare_path_[0] != '\0' && baseline >= 0) {
      StartDiff(baseline, -1);
      diff_label_[1] = compare_path_;
      loaders_.push_back(std::make_unique<TraceLoader>(compare_path_));
      loader_side_[loaders_.back().get()] = 1;
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndMenu();
  }
  if (diff_mode_ && ImGui::MenuItem("Close diff view")) {
    diff_mode_ = false;
    if (options_.view == GuiView::kDiff) options_.view = GuiView::kMain;
  }
}

void App::StartDiff(int baseline, int candidate) {
  diff_mode_ = true;
  diff_trace_[0] = baseline;
  diff_trace_[1] = candidate;
  for (int k = 0; k < 2; ++k) {
    diff_label_[k] = diff_trace_[k] >= 0 ? traces_[static_cast<size_t>(diff_trace_[k])].label : "";
  }
}

void App::DrawLoading() {
  for (const auto& loader : loaders_) {
    // The reader counts rank files and bytes as its threads go; the bar follows the bytes.
    const trace::ReadProgress& p = loader->progress();
    const int64_t bytes_total = loader->total_bytes();
    const int64_t bytes_done = std::min(p.bytes_done.load(), bytes_total);
    const int64_t files_done = p.files_done.load(), files_total = p.files_total.load();
    float t = static_cast<float>(loader->elapsed_s());
    std::string stage;  // Flight Recorder dumps: which pass (triage, the model) and what follows it
    if (auto snap = loader->snapshot()) stage = ", " + snap->stage;
    char overlay[320];
    std::snprintf(overlay, sizeof overlay, "loading %s: ranks %lld/%lld, %.1f s (%s of %s)%s",
                  loader->path().c_str(), static_cast<long long>(files_done),
                  static_cast<long long>(files_total), t,
                  FormatBytes(static_cast<double>(bytes_done)).c_str(),
                  FormatBytes(static_cast<double>(bytes_total)).c_str(), stage.c_str());
    ImGui::ProgressBar(
        bytes_total > 0 ? static_cast<float>(bytes_done) / static_cast<float>(bytes_total) : 0.0f,
        ImVec2(-1, 0), overlay);
  }
}

TraceLoader* App::LoadingFlight() {
  if (diff_mode_) return nullptr;
  TraceLoader* pick = nullptr;
  for (const auto& loader : loaders_) {
    if (loader->done() || loader_side_.count(loader.get()) != 0) continue;
    const bool activates = std::find(activate_.begin(), activate_.end(), loader.get()) != activate_.end();
    if ((active_ < 0 || activates) && loader->snapshot()) pick = loader.get();  // the newest such load
  }
  return pick;
}

void App::NoteLoadTimes(const FlightLoadSnapshot* shown) {
  if (shown == nullptr) return;
  drew_loading_ = true;
  ++data_frames_;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  if (first_data_s_ < 0) {
    first_data_s_ = t;
    first_data_ranks_ = shown->ranks_loaded;
    first_data_total_ = shown->files_total;
  }
  if (shown->triage && first_verdict_s_ < 0) first_verdict_s_ = t;
}

void App::DrawMain() {
  if (TraceLoader* loading = LoadingFlight()) {  // Flight Recorder dumps still loading: what is read so far
    std::shared_ptr<const FlightLoadSnapshot> snap = loading->snapshot();
    flight_.DrawLoading(*snap, loading->path(), loading->elapsed_s());
    NoteLoadTimes(snap.get());
    return;
  }
  // Profiler traces: CPU-op and GPU-kernel lanes per rank, collectives joined, stragglers marked
  // (View > Maximize panel > flight still shows their collectives as Flight Recorder lanes).
  if (profiler_.OwnsMain() && sizes_.maximized != GuiView::kFlight) {
    ImGui::BeginChild("##profiler", ImVec2(0, 0), false,
                      ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    profiler_.Draw(ctx_);
    RecordPanel("profiler", {});
    ImGui::EndChild();
    return;
  }
  if (flight_.OwnsMain()) {  // only flight records (Flight Recorder dumps): lanes per rank, mismatches
    flight_.Draw(ctx_);
    return;
  }
  if (sizes_.maximized) {  // View > Maximize: one panel fills the window
    DrawFocused(*sizes_.maximized);
    return;
  }
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const float left_w = SplitterFraction("##left_split", true, 6, avail.x, &sizes_.left, 260, 400);
  ImGui::BeginChild("##left", ImVec2(left_w, avail.y), false);
  {
    float h = ImGui::GetContentRegionAvail().y;
    const float list_h = SplitterFraction("##left_hsplit", false, 6, h, &sizes_.left_top, 80, 160);
    ImGui::BeginChild("##list", ImVec2(0, list_h), true);
    DrawPanel("Redistributes", "list", redistribute_panels_.list);
    ImGui::EndChild();
    ImGui::Dummy(ImVec2(0, 1));
    ImGui::BeginChild("##inspector", ImVec2(0, 0), true);
    DrawPanel("Inspector", "inspector", redistribute_panels_.inspector);
    ImGui::EndChild();
  }
  ImGui::EndChild();
  ImGui::SameLine(0, 6);
  ImGui::BeginChild("##right", ImVec2(0, avail.y), false);
  {
    float h = ImGui::GetContentRegionAvail().y;
    const float top_h = SplitterFraction("##right_split1", false, 6, h, &sizes_.right_top, 80, 300);
    ImGui::BeginChild("##timeline", ImVec2(0, top_h), true,
                      ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    DrawTimelineOrProgram();
    ImGui::EndChild();
    ImGui::Dummy(ImVec2(0, 1));
    float h2 = ImGui::GetContentRegionAvail().y;
    const float mid_h = SplitterFraction("##right_split2", false, 6, h2, &sizes_.right_mid, 120, 150);
    ImGui::BeginChild("##layout", ImVec2(0, mid_h), true, ImGuiWindowFlags_NoScrollWithMouse);
    DrawPanel("Layout", "layout", redistribute_panels_.layout);
    ImGui::EndChild();
    ImGui::Dummy(ImVec2(0, 1));
    float w = ImGui::GetContentRegionAvail().x;
    ImGui::BeginChild("##mesh", ImVec2(w * 0.62f, 0), true);
    DrawPanel("Mesh and bytes", "mesh", redistribute_panels_.mesh);
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("##merge", ImVec2(0, 0), true);
    DrawPanel("Merges", "merge", redistribute_panels_.merge);
    ImGui::EndChild();
  }
  ImGui::EndChild();
}

void App::DrawTimelineOrProgram() {
  if (!program_.HasOps()) {
    DrawPanel("Timeline", "timeline", redistribute_panels_.timeline);
    return;
  }
  // A program trace opens on the Program tab, with room for the graph.
  bool first = program_model_ != ctx_.model || program_serial_ != ctx_.model_serial;
  if (first) {
    program_model_ = ctx_.model;
    program_serial_ = ctx_.model_serial;
    sizes_.right_top = std::max(sizes_.right_top, 0.45f);
  }
  if (!ImGui::BeginTabBar("##timeline_tabs")) return;
  if (ImGui::BeginTabItem("Program", nullptr, first ? ImGuiTabItemFlags_SetSelected : 0)) {
    DrawPanel(nullptr, "program", program_);
    ImGui::EndTabItem();
  }
  if (ImGui::BeginTabItem("Timeline")) {
    DrawPanel(nullptr, "timeline", redistribute_panels_.timeline);
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
}

void App::DrawFocused(GuiView v) {
  ImGui::BeginChild("##focused", ImVec2(0, 0), true, ImGuiWindowFlags_NoScrollWithMouse);
  switch (v) {
    case GuiView::kTimeline:
      DrawPanel("Timeline", "timeline", redistribute_panels_.timeline);
      break;
    case GuiView::kInspector:
      DrawPanel("Inspector", "inspector", redistribute_panels_.inspector);
      break;
    case GuiView::kLayout:
      DrawPanel("Layout", "layout", redistribute_panels_.layout);
      break;
    case GuiView::kMesh:
      DrawPanel("Mesh and bytes", "mesh", redistribute_panels_.mesh);
      break;
    case GuiView::kMerge:
      DrawPanel("Merges", "merge", redistribute_panels_.merge);
      break;
    case GuiView::kProgram:
      DrawPanel("Program", "program", program_);
      break;
    case GuiView::kStats:
      DrawPanel("Statistics", "stats", stats_);
      break;
    case GuiView::kFlight:
      flight_.Draw(ctx_);
      break;
    case GuiView::kMain:  // not panels: drawn by DrawMain, the diff panel or their own windows
    case GuiView::kGallery:
    case GuiView::kSandbox:
    case GuiView::kDiff:
      break;
  }
  ImGui::EndChild();
}

}  // namespace shardscope::app::gui
