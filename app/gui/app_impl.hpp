#pragma once
// The App class behind RunApp (private to app/gui): app.cpp has the main loop, selection, keys and
// screenshots; app_windows.cpp the menu bar and the main window's panel arrangement.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app.hpp"
#include "app_state.hpp"
#include "gallery_window.hpp"
#include "geometry_json.hpp"
#include "gl_renderer.hpp"
#include "panel_sizes.hpp"
#include "panels/diff_panel.hpp"
#include "panels/error_panel.hpp"
#include "panels/flight_panel.hpp"
#include "panels/profiler_panel.hpp"
#include "panels/program_panel.hpp"
#include "panels/redistribute_panels.hpp"
#include "panels/sandbox_panel.hpp"
#include "panels/stats_panel.hpp"
#include "platform_glfw.hpp"
#include "trace_loader.hpp"

namespace shardscope::app::gui {

inline constexpr int kSettleFrames = 4;  // ImGui needs a few frames before sizes and auto-fit settle

class App {
 public:
  explicit App(const AppOptions& options) : options_(options) {}
  int Run();

 private:
  struct Entry {
    std::string label;
    std::shared_ptr<const trace::Model> model;
    std::shared_ptr<const FlightAnalysis> flight;  // the loader's flight analysis of it, or null
  };

  // Run's parts: the ImGui context, window and GL renderer (0, else the exit code); the loads and
  // windows the command line asks for; the --bench-frames report.
  int InitWindow(bool headless);
  void OpenRequested();
  struct BenchTimes {
    std::vector<double> frame_ms;
    double prepare = 0, build = 0, render = 0;  // sums over the frames after the settle frames
  };
  void PrintBench(BenchTimes bench) const;
  void Frame();
  double IdleTimeout();  ///< how long the interactive loop may wait for events (< 0: until one comes)
  bool WriteGeometry();
  bool WriteGeometry(const std::string& path);
  void PollLoaders();
  /// Loads `path` (a trace directory, rank file or dump directory) and shows it once loaded.
  void OpenPath(const std::string& path);
  /// Starts following `path`: it is loaded now and re-read whenever its files change.
  void FollowPath(const std::string& path);
  void PollFollow();
  void SyncSelection();
  void HandleKeys(double dt);
  void PrepareAll();
  void DrawMenuBar();
  void DrawCompareMenu();
  void DrawHelp();
  void StartDiff(int baseline, int candidate);
  void DrawMain();
  void DrawFocused(GuiView view);
  void DrawTimelineOrProgram();
  void DrawLoading();
  /// The Flight Recorder load whose ranks read so far the main window shows (one that becomes the
  /// active trace, or any while none is active), or null.
  TraceLoader* LoadingFlight();
  void NoteLoadTimes(const FlightLoadSnapshot* shown);
  bool Ready() const;
  const InputEvent* NextScriptEvent();
  bool ScriptSettled() const;
  bool LoadingScriptSettled() const;  ///< the script's loading phase is done (or there is none)
  void RecordPanel(const char* name, PanelShows shows);
  template <class P>
  void DrawPanel(const char* title, const char* name, P& panel);
  int Capture();
  int CaptureTo(const std::string& png, const std::string& geometry);
  const trace::Model* ActiveModel() const { return TraceModel(active_); }
  const trace::Model* TraceModel(int index) const {
    return index >= 0 && index < static_cast<int>(traces_.size())
               ? traces_[static_cast<size_t>(index)].model.get()
               : nullptr;
  }

  AppOptions options_;
  std::unique_ptr<Platform> platform_;
  std::unique_ptr<GlRenderer> renderer_;
  std::vector<std::unique_ptr<TraceLoader>> loaders_;
  std::map<const TraceLoader*, int> loader_side_;  // loads for the diff view: 0 baseline, 1 candidate
  std::vector<Entry> traces_;
  int active_ = -1;
  std::vector<LoadFailure> failures_;
  Selection selection_;
  RedistributeView view_;
  const void* view_model_ = nullptr;
  // Per active model: RedistributeIds() walks every record, far too slow to call per frame at 1M events.
  const void* ids_model_ = nullptr;
  uint64_t model_serial_ = 0;  // ViewContext::model_serial: bumped whenever the active model changes
  uint64_t view_serial_ = 0;   // model_serial_ of view_
  std::vector<int64_t> ids_;
  std::string mesh_text_;
  int64_t view_id_ = -2;
  ViewContext ctx_;

  ErrorPanel errors_;
  RedistributePanels redistribute_panels_;
  StatsPanel stats_;
  ProgramPanel program_;
  FlightPanel flight_;
  ProfilerPanel profiler_;               // profiler traces (HasProfilerLanes): fills the main window
  const void* program_model_ = nullptr;  // model whose ops made the Program tab the default
  uint64_t program_serial_ = 0;          // its ViewContext::model_serial
  SandboxPanel sandbox_;
  GalleryWindow gallery_;
  DiffPanel diff_;
  bool diff_mode_ = false;                    // the main window shows the diff view
  int diff_trace_[2] = {-1, -1};              // indices into traces_ of baseline and candidate
  std::string diff_label_[2];                 // their paths (shown while loading or after a failure)
  char compare_path_[512] = {};               // File > Compare with: a path to load as candidate
  char open_path_[512] = {};                  // File > Open / Follow: a path to load
  std::vector<const TraceLoader*> activate_;  // loads that become the active trace when done
  // --follow / File > Follow: the followed directory, its trace's index in traces_ (-1 until the
  // first load), the reload in flight, and what its files looked like at the last (re)load.
  std::string follow_path_;
  const TraceLoader* follow_first_ = nullptr;
  int follow_index_ = -1;
  std::unique_ptr<TraceLoader> follow_loader_;
  std::string follow_signature_;
  std::chrono::steady_clock::time_point follow_checked_{};
  bool show_gallery_ = false, show_sandbox_ = false;
  bool selection_applied_ = false;
  bool bad_selection_ = false;    ///< --select/--select-op named an id the trace lacks: exit 2
  bool sandbox_pending_ = false;  // --sandbox-run started and its trace not yet opened

  // Panel sizes as fractions of their region, so that a smaller window shrinks every panel instead
  // of squeezing the last ones to their title bars; remembered in imgui.ini.
  PanelSizes sizes_;
  double play_accum_ = 0;
  std::chrono::steady_clock::time_point last_frame_ = std::chrono::steady_clock::now();
  int ready_frames_ = 0;
  size_t script_next_ = 0;             // next --keys step to replay
  int script_wait_ = 0;                // frames before the next step (a click spans press, release, leave)
  int since_script_ = 0;               // frames since the last replayed step
  std::vector<PanelGeometry> panels_;  // panels drawn this frame and what they show
  // When the app started and when the first frame with every trace loaded was drawn (--bench-frames).
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  double first_ready_s_ = -1;
  double first_frame_s_ = -1;
  // Progressive loads: the first frame that showed loaded data (and how many ranks), the first
  // with triage's verdict; frames drawn with loaded data; the script's loading phase
  // (`loading` ... `ready`); whether the --loading-screenshot was taken.
  double first_data_s_ = -1, first_verdict_s_ = -1;
  int64_t first_data_ranks_ = 0, first_data_total_ = 0;
  int data_frames_ = 0;
  bool drew_loading_ = false;
  bool script_early_ = false;
  bool loading_shot_taken_ = false;
  bool load_times_printed_ = false;
  int fb_w_ = 0, fb_h_ = 0;
  // Idle: frames are drawn only while events arrive, for a few frames after, or while something
  // animates (loading, play, a script, a followed trace).
  uint64_t seen_events_ = 0;
  int quiet_frames_ = 0;
  int64_t frames_drawn_ = 0, frames_ready_ = 0;
  double prepare_ms_ = 0, build_ms_ = 0, render_ms_ = 0;  // last frame: prepare steps, ImGui calls, GL
};

}  // namespace shardscope::app::gui
