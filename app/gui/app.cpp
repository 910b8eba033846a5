#include "app.hpp"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "gallery_window.hpp"
#include "gl_renderer.hpp"
#include "panels/diff_panel.hpp"
#include "panels/error_panel.hpp"
#include "panels/flight_panel.hpp"
#include "panels/inspector_panel.hpp"
#include "panels/layout_panel.hpp"
#include "panels/merge_panel.hpp"
#include "panels/mesh_panel.hpp"
#include "panels/program_panel.hpp"
#include "panels/sandbox_panel.hpp"
#include "panels/timeline_panel.hpp"
#include "platform_glfw.hpp"
#include "trace_loader.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

constexpr double kPlayPeriodS = 0.8;
constexpr int kSettleFrames = 4;  // ImGui needs a few frames before sizes and auto-fit settle
const char* const kDiffSides[2] = {"baseline", "candidate"};

bool KeyPressed(ImGuiKey key) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(key)); }

}  // namespace

class App {
 public:
  explicit App(const AppOptions& options) : options_(options) {}
  int Run();

 private:
  struct Entry {
    std::string label;
    std::shared_ptr<const trace::Model> model;
  };

  void Frame();
  void PollLoaders();
  void SyncSelection();
  void HandleKeys(double dt);
  void PrepareAll();
  void DrawMenuBar();
  void DrawCompareMenu();
  void StartDiff(int baseline, int candidate);
  void DrawMain();
  void DrawFocused();
  void DrawTimelineOrProgram();
  void DrawLoading();
  bool Ready() const;
  int Capture();
  const trace::Model* ActiveModel() const { return TraceModel(active_); }
  const trace::Model* TraceModel(int index) const {
    return index >= 0 && index < static_cast<int>(traces_.size())
               ? traces_[static_cast<size_t>(index)].model.get()
               : nullptr;
  }
  nlohmann::json DiffGeometry() const;

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
  std::vector<int64_t> ids_;
  std::string mesh_text_;
  int64_t view_id_ = -2;
  ViewContext ctx_;

  ErrorPanel errors_;
  RedistributeListPanel list_;
  InspectorPanel inspector_;
  TimelinePanel timeline_;
  LayoutPanel layout_;
  MeshPanel mesh_;
  MergePanel merge_;
  ProgramPanel program_;
  FlightPanel flight_;
  const void* program_model_ = nullptr;  // model whose ops made the Program tab the default
  SandboxPanel sandbox_;
  GalleryWindow gallery_;
  DiffPanel diff_;
  bool diff_mode_ = false;        // the main window shows the diff view
  int diff_trace_[2] = {-1, -1};  // indices into traces_ of baseline and candidate
  std::string diff_label_[2];     // their paths (shown while loading or after a failure)
  char compare_path_[512] = {};   // File > Compare with: a path to load as candidate
  bool show_gallery_ = false, show_sandbox_ = false;
  bool selection_applied_ = false;
  bool bad_selection_ = false;    ///< --select/--select-op named an id the trace lacks: exit 2
  bool sandbox_pending_ = false;  // --sandbox-run started and its trace not yet opened

  float left_w_ = 430, left_top_h_ = 260, right_top_h_ = 250, right_mid_h_ = 380;
  double play_accum_ = 0;
  std::chrono::steady_clock::time_point last_frame_ = std::chrono::steady_clock::now();
  int ready_frames_ = 0;
  // When the app started and when the first frame with every trace loaded was drawn (--bench-frames).
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  double first_ready_s_ = -1;
  double first_frame_s_ = -1;
  int fb_w_ = 0, fb_h_ = 0;
  double prepare_ms_ = 0, build_ms_ = 0, render_ms_ = 0;  // last frame: prepare steps, ImGui calls, GL
};

int App::Run() {
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  bool headless = !options_.screenshot.empty() || options_.bench_frames > 0;
  if (headless) io.IniFilename = nullptr;  // screenshots must not depend on a previous session
  ImGui::StyleColorsDark();
  ImGui::GetStyle().WindowRounding = 0.0f;
  ImGui::GetStyle().Colors[ImGuiCol_WindowBg].w = 1.0f;  // full-window views must not show through

  platform_ = std::make_unique<Platform>();
  std::string error;
  if (!platform_->Init(options_.width, options_.height, "shardscope", !headless, error)) {
    std::fprintf(stderr, "shardscope-gui: no display available (%s); run under xvfb-run for --screenshot\n",
                 error.c_str());
    platform_.reset();
    ImGui::DestroyContext();
    return 2;
  }
  renderer_ = std::make_unique<GlRenderer>();
  if (!renderer_->Init(error)) {
    std::fprintf(stderr, "shardscope-gui: OpenGL 3.3 set-up failed: %s\n", error.c_str());
    renderer_.reset();
    platform_.reset();
    ImGui::DestroyContext();
    return 3;
  }
  for (const std::string& path : options_.traces) loaders_.push_back(std::make_unique<TraceLoader>(path));
  if (!options_.diff_baseline.empty()) {
    diff_mode_ = true;
    const std::string* paths[2] = {&options_.diff_baseline, &options_.diff_candidate};
    for (int k = 0; k < 2; ++k) {
      diff_label_[k] = *paths[k];
      loaders_.push_back(std::make_unique<TraceLoader>(*paths[k]));
      loader_side_[loaders_.back().get()] = k;
    }
    diff_.Select(options_.select, options_.step);
  }
  if (options_.view == "gallery") {
    show_gallery_ = true;
    if (options_.select >= 0) gallery_.Select(options_.select, options_.step);
  }
  if (options_.view == "sandbox") show_sandbox_ = true;
  if (options_.sandbox_run) {
    sandbox_.RunLocal();
    sandbox_pending_ = sandbox_.busy();
    if (!sandbox_.error().empty())
      std::fprintf(stderr, "shardscope-gui: sandbox: %s\n", sandbox_.error().c_str());
  }

  int exit_code = 0;
  std::vector<double> frame_ms;
  double sum_prepare = 0, sum_build = 0, sum_render = 0;
  while (!platform_->ShouldClose()) {
    auto t_start = std::chrono::steady_clock::now();
    Frame();
    const double since_start =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (first_frame_s_ < 0) first_frame_s_ = since_start;
    if (Ready() && first_ready_s_ < 0) first_ready_s_ = since_start;
    if (bad_selection_) {
      exit_code = 2;
      break;
    }
    if (Ready()) ++ready_frames_;
    if (!options_.screenshot.empty() && ready_frames_ >= kSettleFrames) {
      exit_code = Capture();
      break;
    }
    if (options_.bench_frames > 0 && Ready()) {
      glFinish();
      frame_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count());
      if (static_cast<int>(frame_ms.size()) > kSettleFrames) {
        sum_prepare += prepare_ms_, sum_build += build_ms_, sum_render += render_ms_;
      }
      if (static_cast<int>(frame_ms.size()) >= options_.bench_frames + kSettleFrames) break;
    }
    platform_->SwapBuffers();
  }
  if (!frame_ms.empty()) {
    frame_ms.erase(frame_ms.begin(), frame_ms.begin() + std::min<size_t>(kSettleFrames, frame_ms.size()));
    std::vector<double> sorted = frame_ms;
    std::sort(sorted.begin(), sorted.end());
    double sum = 0;
    for (double v : sorted) sum += v;
    const trace::Model* m = ActiveModel();
    size_t events = 0;
    if (m) {
      for (const auto& r : m->ranks) events += r.events.size();
    }
    auto pct = [&](double p) {
      return sorted.empty() ? 0.0
                            : sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
    };
    std::printf("frames %zu  view %s  %dx%d  ranks %lld  events %zu  quads/frame %zu\n", sorted.size(),
                options_.view.c_str(), fb_w_, fb_h_, static_cast<long long>(m ? m->world : 0), events,
                renderer_->quads_last_frame());
    std::printf("frame time ms: mean %.2f  p50 %.2f  p95 %.2f  max %.2f\n",
                sorted.empty() ? 0.0 : sum / sorted.size(), pct(0.5), pct(0.95),
                sorted.empty() ? 0.0 : sorted.back());
    double n = static_cast<double>(std::max<size_t>(1, sorted.size()));
    std::printf("  of which: prepare %.2f ms  ImGui/panel draw calls %.2f ms  GL render + glFinish %.2f ms\n",
                sum_prepare / n, sum_build / n, sum_render / n);
    std::printf("first frame (loading bar) %.2f s, first frame with the traces loaded %.2f s after start\n",
                first_frame_s_, first_ready_s_);
  }
  loaders_.clear();
  renderer_.reset();
  platform_.reset();
  ImGui::DestroyContext();
  return exit_code;
}

bool App::Ready() const {
  return std::all_of(loaders_.begin(), loaders_.end(), [](const auto& l) { return l->done(); }) &&
         !sandbox_.busy() && !sandbox_pending_;
}

void App::Frame() {
  auto now = std::chrono::steady_clock::now();
  double dt = std::chrono::duration<double>(now - last_frame_).count();
  last_frame_ = now;
  platform_->NewFrame();
  if (!options_.screenshot.empty() || options_.bench_frames > 0) {
    // Headless: wherever Xvfb's pointer sits must not hover anything (tooltips would cover pixels).
    ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  }
  renderer_->NewFrame();
  ImGui::NewFrame();
  PollLoaders();
  sandbox_.Prepare();
  if (sandbox_pending_ && !sandbox_.busy()) {
    sandbox_pending_ = false;
    if (!sandbox_.error().empty())
      std::fprintf(stderr, "shardscope-gui: sandbox: %s\n", sandbox_.error().c_str());
  }
  if (auto model = sandbox_.TakeResult()) {
    traces_.push_back({"sandbox: " + sandbox_.last_title(), model});
    active_ = static_cast<int>(traces_.size()) - 1;
    selection_ = Selection{};
  }
  auto t0 = std::chrono::steady_clock::now();
  SyncSelection();
  HandleKeys(dt);
  SyncSelection();
  PrepareAll();
  auto t1 = std::chrono::steady_clock::now();

  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->Pos);
  ImGui::SetNextWindowSize(vp->Size);
  ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                           ImGuiWindowFlags_MenuBar | ImGuiWindowFlags_NoBringToFrontOnFocus |
                           ImGuiWindowFlags_NoSavedSettings;
  ImGui::Begin("shardscope", nullptr, flags);
  DrawMenuBar();
  DrawLoading();
  errors_.Draw();
  if (diff_mode_) {
    ImGui::BeginChild("##diff", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollWithMouse);
    diff_.Draw();
    ImGui::EndChild();
  } else if (options_.view == "main") {
    DrawMain();
  } else if (options_.view != "gallery" && options_.view != "sandbox") {
    DrawFocused();
  }
  ImGui::End();

  if (show_gallery_) {
    if (options_.view == "gallery") {
      ImGui::SetNextWindowPos(vp->Pos);
      ImGui::SetNextWindowSize(vp->Size);
    } else {
      ImGui::SetNextWindowSize(ImVec2(1100, 800), ImGuiCond_FirstUseEver);
    }
    gallery_.Draw(renderer_.get(), &show_gallery_, options_.view == "gallery");
  }
  if (show_sandbox_) {
    if (options_.view == "sandbox") {
      ImGui::SetNextWindowPos(vp->Pos);
      ImGui::SetNextWindowSize(vp->Size);
    } else {
      ImGui::SetNextWindowSize(ImVec2(760, 640), ImGuiCond_FirstUseEver);
    }
    ImGui::Begin("Sandbox", &show_sandbox_, options_.view == "sandbox" ? ImGuiWindowFlags_NoDecoration : 0);
    sandbox_.Draw(ctx_);
    ImGui::End();
  }

  ImGui::Render();
  auto t2 = std::chrono::steady_clock::now();
  platform_->FramebufferSize(fb_w_, fb_h_);
  renderer_->Render(ImGui::GetDrawData(), fb_w_, fb_h_);
  if (options_.bench_frames > 0) glFinish();
  auto t3 = std::chrono::steady_clock::now();
  prepare_ms_ = std::chrono::duration<double, std::milli>(t1 - t0).count();
  build_ms_ = std::chrono::duration<double, std::milli>(t2 - t1).count();
  render_ms_ = std::chrono::duration<double, std::milli>(t3 - t2).count();
}

void App::PollLoaders() {
  for (auto it = loaders_.begin(); it != loaders_.end();) {
    if (!(*it)->done()) {
      ++it;
      continue;
    }
    auto side = loader_side_.find(it->get());
    // A diff side's failure names the side as well as the path ("candidate: DIR").
    std::string label = side == loader_side_.end()
                            ? (*it)->path()
                            : std::string(kDiffSides[side->second]) + ": " + (*it)->path();
    if (auto model = (*it)->model()) {
      traces_.push_back({(*it)->path(), model});
      if (active_ < 0) active_ = static_cast<int>(traces_.size()) - 1;
      if (side != loader_side_.end()) diff_trace_[side->second] = static_cast<int>(traces_.size()) - 1;
    } else {
      failures_.push_back({label, (*it)->error()});
      std::fprintf(stderr, "shardscope-gui: %s: %s\n", label.c_str(), (*it)->error().c_str());
    }
    if (side != loader_side_.end()) loader_side_.erase(side);
    it = loaders_.erase(it);
  }
}

void App::SyncSelection() {
  const trace::Model* model = ActiveModel();
  if (!model) {
    ctx_ = ViewContext{nullptr, nullptr, &selection_, renderer_.get()};
    return;
  }
  if (ids_model_ != model) {
    ids_model_ = model;
    ids_ = model->RedistributeIds();
    mesh_text_ = "?";
    try {
      if (!model->ranks.empty()) mesh_text_ = MeshFromHeader(model->ranks.front().header).ToString();
    } catch (const std::exception&) {
    }
  }
  const std::vector<int64_t>& ids = ids_;
  if (!selection_applied_ && Ready()) {
    // Command-line selection applies once, to the first trace.
    if (options_.select >= 0) selection_.redistribute_id = options_.select;
    selection_.step = options_.step;
    if (options_.select_op >= 0) selection_.op_id = options_.select_op;
    selection_applied_ = true;
    // The ids exist only once the trace is read: a selection it lacks is a usage error then.
    auto range = [](const std::vector<int64_t>& v) {
      return v.empty() ? std::string("none")
                       : std::to_string(v.front()) + (v.size() > 1 ? ".." + std::to_string(v.back()) : "");
    };
    if (options_.select >= 0 && !std::binary_search(ids.begin(), ids.end(), options_.select)) {
      std::fprintf(stderr, "shardscope-gui: --select: redistribute %lld is not in the trace (its ids: %s)\n",
                   static_cast<long long>(options_.select), range(ids).c_str());
      bad_selection_ = true;
    }
    const std::vector<int64_t> op_ids = model->OpIds();
    if (options_.select_op >= 0 && !std::binary_search(op_ids.begin(), op_ids.end(), options_.select_op)) {
      std::fprintf(stderr, "shardscope-gui: --select-op: op %lld is not in the trace (its ids: %s)\n",
                   static_cast<long long>(options_.select_op), range(op_ids).c_str());
      bad_selection_ = true;
    }
  }
  if (selection_.redistribute_id < 0 && !ids.empty()) selection_.redistribute_id = ids.front();
  if (view_model_ != model || view_id_ != selection_.redistribute_id) {
    view_ = BuildRedistributeView(*model, selection_.redistribute_id);
    view_model_ = model;
    view_id_ = selection_.redistribute_id;
  }
  int64_t steps = view_.num_steps();
  selection_.step = std::clamp<int64_t>(selection_.step, 0, std::max<int64_t>(0, steps - 1));
  selection_.focus_rank =
      std::clamp<int64_t>(selection_.focus_rank, 0, std::max<int64_t>(0, model->world - 1));
  ctx_ = ViewContext{model, view_.first ? &view_ : nullptr, &selection_, renderer_.get()};
}

void App::HandleKeys(double dt) {
  const ImGuiIO& io = ImGui::GetIO();
  if (diff_mode_) {
    if (!io.WantTextInput) diff_.HandleKeys();
    return;
  }
  const trace::Model* model = ActiveModel();
  if (!model || io.WantTextInput) return;
  int64_t steps = view_.num_steps();
  if (KeyPressed(ImGuiKey_RightArrow))
    selection_.step = std::min(selection_.step + 1, std::max<int64_t>(0, steps - 1));
  if (KeyPressed(ImGuiKey_LeftArrow)) selection_.step = std::max<int64_t>(0, selection_.step - 1);
  if (KeyPressed(ImGuiKey_Space)) selection_.playing = !selection_.playing;
  const std::vector<int64_t>& ids = ids_;
  auto pos = std::find(ids.begin(), ids.end(), selection_.redistribute_id);
  if (KeyPressed(ImGuiKey_DownArrow) && pos != ids.end() && pos + 1 != ids.end()) {
    selection_.redistribute_id = *(pos + 1);
    selection_.step = 0;
  }
  if (KeyPressed(ImGuiKey_UpArrow) && pos != ids.end() && pos != ids.begin()) {
    selection_.redistribute_id = *(pos - 1);
    selection_.step = 0;
  }
  if (selection_.playing) {
    play_accum_ += dt;
    if (play_accum_ >= kPlayPeriodS) {
      play_accum_ = 0;
      if (selection_.step + 1 < steps) {
        ++selection_.step;
      } else {
        selection_.playing = false;
      }
    }
  }
}

void App::PrepareAll() {
  if (diff_mode_) {
    errors_.Prepare(failures_, TraceModel(diff_trace_[0]), "baseline ");
    errors_.AddDiagnostics(TraceModel(diff_trace_[1]), "candidate ");
    diff_.Prepare(TraceModel(diff_trace_[0]), diff_label_[0], TraceModel(diff_trace_[1]), diff_label_[1],
                  renderer_.get());
  } else {
    errors_.Prepare(failures_, ActiveModel());
  }
  list_.Prepare(ctx_);
  inspector_.Prepare(ctx_);
  timeline_.Prepare(ctx_);
  layout_.Prepare(ctx_);
  mesh_.Prepare(ctx_);
  merge_.Prepare(ctx_);
  program_.Prepare(ctx_);
  flight_.Prepare(ctx_);
  if (show_gallery_) gallery_.Prepare();
}

void App::DrawMenuBar() {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    DrawCompareMenu();
    if (ImGui::MenuItem("Quit", "Esc")) glfwSetWindowShouldClose(platform_->window(), GLFW_TRUE);
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    ImGui::MenuItem("Gallery", nullptr, &show_gallery_);
    ImGui::MenuItem("Sandbox", nullptr, &show_sandbox_);
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    ImGui::TextUnformatted("Left/Right: step   Up/Down: redistribute   Space: play");
    ImGui::TextUnformatted("Timeline: wheel or +/- zoom, drag or A/D pan, click selects");
    ImGui::TextUnformatted("Layout: hover an element to see its holders and local index");
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
    if (options_.view == "diff") options_.view = "main";
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
    const int64_t bytes_total = std::max<int64_t>(p.bytes_total.load(), loader->total_bytes());
    const int64_t bytes_done = std::min(p.bytes_done.load(), bytes_total);
    float t = static_cast<float>(loader->elapsed_s());
    char overlay[240];
    std::snprintf(overlay, sizeof overlay, "loading %s: %lld/%lld ranks, %s of %s, %.1f s",
                  loader->path().c_str(), static_cast<long long>(p.files_done.load()),
                  static_cast<long long>(p.files_total.load()),
                  FormatBytes(static_cast<double>(bytes_done)).c_str(),
                  FormatBytes(static_cast<double>(bytes_total)).c_str(), t);
    ImGui::ProgressBar(
        bytes_total > 0 ? static_cast<float>(bytes_done) / static_cast<float>(bytes_total) : 0.0f,
        ImVec2(-1, 0), overlay);
  }
}

void App::DrawMain() {
  if (flight_.Active()) {  // Flight Recorder dumps: lanes per rank and the mismatch list
    flight_.Draw(ctx_);
    return;
  }
  ImVec2 avail = ImGui::GetContentRegionAvail();
  float right_w = avail.x - left_w_ - 6;
  Splitter("##left_split", true, 6, &left_w_, &right_w, 260, 400);
  ImGui::BeginChild("##left", ImVec2(left_w_, avail.y), false);
  {
    float h = ImGui::GetContentRegionAvail().y;
    float bottom = h - left_top_h_ - 6;
    Splitter("##left_hsplit", false, 6, &left_top_h_, &bottom, 80, 160);
    ImGui::BeginChild("##list", ImVec2(0, left_top_h_), true);
    SectionTitle("Redistributes");
    list_.Draw(ctx_);
    ImGui::EndChild();
    ImGui::Dummy(ImVec2(0, 1));
    ImGui::BeginChild("##inspector", ImVec2(0, 0), true);
    SectionTitle("Inspector");
    inspector_.Draw(ctx_);
    ImGui::EndChild();
  }
  ImGui::EndChild();
  ImGui::SameLine(0, 6);
  ImGui::BeginChild("##right", ImVec2(0, avail.y), false);
  {
    float h = ImGui::GetContentRegionAvail().y;
    float rest = h - right_top_h_ - 6;
    Splitter("##right_split1", false, 6, &right_top_h_, &rest, 80, 300);
    ImGui::BeginChild("##timeline", ImVec2(0, right_top_h_), true,
                      ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    DrawTimelineOrProgram();
    ImGui::EndChild();
    ImGui::Dummy(ImVec2(0, 1));
    float h2 = ImGui::GetContentRegionAvail().y;
    float rest2 = h2 - right_mid_h_ - 6;
    Splitter("##right_split2", false, 6, &right_mid_h_, &rest2, 120, 120);
    ImGui::BeginChild("##layout", ImVec2(0, right_mid_h_), true, ImGuiWindowFlags_NoScrollWithMouse);
    SectionTitle("Layout");
    layout_.Draw(ctx_);
    ImGui::EndChild();
    ImGui::Dummy(ImVec2(0, 1));
    float w = ImGui::GetContentRegionAvail().x;
    ImGui::BeginChild("##mesh", ImVec2(w * 0.62f, 0), true);
    SectionTitle("Mesh and bytes");
    mesh_.Draw(ctx_);
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("##merge", ImVec2(0, 0), true);
    SectionTitle("Merges");
    merge_.Draw(ctx_);
    ImGui::EndChild();
  }
  ImGui::EndChild();
}

void App::DrawTimelineOrProgram() {
  if (!program_.HasOps()) {
    SectionTitle("Timeline");
    timeline_.Draw(ctx_);
    return;
  }
  // A program trace opens on the Program tab, with room for the graph.
  bool first = program_model_ != ctx_.model;
  if (first) {
    program_model_ = ctx_.model;
    right_top_h_ = std::max(right_top_h_, 430.0f);
  }
  if (!ImGui::BeginTabBar("##timeline_tabs")) return;
  if (ImGui::BeginTabItem("Program", nullptr, first ? ImGuiTabItemFlags_SetSelected : 0)) {
    program_.Draw(ctx_);
    ImGui::EndTabItem();
  }
  if (ImGui::BeginTabItem("Timeline")) {
    timeline_.Draw(ctx_);
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
}

void App::DrawFocused() {
  const std::string& v = options_.view;
  ImGui::BeginChild("##focused", ImVec2(0, 0), true, ImGuiWindowFlags_NoScrollWithMouse);
  if (v == "timeline") {
    SectionTitle("Timeline");
    timeline_.Draw(ctx_);
  } else if (v == "inspector") {
    SectionTitle("Inspector");
    inspector_.Draw(ctx_);
  } else if (v == "layout") {
    SectionTitle("Layout");
    layout_.Draw(ctx_);
  } else if (v == "mesh") {
    SectionTitle("Mesh and bytes");
    mesh_.Draw(ctx_);
  } else if (v == "merge") {
    SectionTitle("Merges");
    merge_.Draw(ctx_);
  } else if (v == "program") {
    SectionTitle("Program");
    program_.Draw(ctx_);
  } else if (v == "flight") {
    flight_.Draw(ctx_);
  }
  ImGui::EndChild();
}

int App::Capture() {
  std::vector<uint8_t> pixels = renderer_->ReadBackBuffer(fb_w_, fb_h_);
  if (!stbi_write_png(options_.screenshot.c_str(), fb_w_, fb_h_, 4, pixels.data(), fb_w_ * 4)) {
    std::fprintf(stderr, "shardscope-gui: cannot write %s\n", options_.screenshot.c_str());
    return 2;
  }
  if (!options_.geometry.empty()) {
    nlohmann::json j;
    j["width"] = fb_w_;
    j["height"] = fb_h_;
    j["view"] = options_.view;
    j["canvases"] = nlohmann::json::array();
    std::vector<DiffCanvasGeometry> canvases;
    if (diff_mode_) {
      canvases = diff_.canvases();
    } else {
      for (const CanvasGeometry& c :
           options_.view == "gallery" ? gallery_.layout_geometry() : layout_.geometry())
        canvases.push_back({"", c});
    }
    for (const auto& [side, c] : canvases) {
      j["canvases"].push_back({{"which", c.which},
                               {"side", side},
                               {"rect", {c.x0, c.y0, c.x1, c.y1}},
                               {"row_dim", c.row_dim},
                               {"col_dim", c.col_dim},
                               {"rows", c.rows},
                               {"cols", c.cols},
                               {"redistribute_id", c.redistribute_id},
                               {"step", c.step},
                               {"slice", c.slice}});
    }
    j["diff"] = diff_mode_ ? DiffGeometry() : nlohmann::json();
    j["program"] = nlohmann::json::array();
    for (const ProgramItemGeometry& g : program_.geometry()) {
      j["program"].push_back({{"kind", g.kind},
                              {"op_id", g.op_id},
                              {"input", g.input},
                              {"redistribute_id", g.redistribute_id},
                              {"tensor", g.tensor},
                              {"rect", {g.x0, g.y0, g.x1, g.y1}}});
    }
    j["flight"] = nlohmann::json::array();
    for (const FlightItemGeometry& g : flight_.geometry()) {
      j["flight"].push_back({{"kind", g.kind},
                             {"rank", g.rank},
                             {"seq", g.seq},
                             {"incomplete", g.incomplete},
                             {"rect", {g.x0, g.y0, g.x1, g.y1}}});
    }
    j["selected_op"] = selection_.op_id;
    j["selected_redistribute"] = selection_.redistribute_id;
    const float* r = errors_.rect();
    if (r[2] > r[0]) {
      j["error_panel"] = {r[0], r[1], r[2], r[3]};
    } else {
      j["error_panel"] = nullptr;
    }
    std::ofstream out(options_.geometry);
    out << j.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "shardscope-gui: cannot write %s\n", options_.geometry.c_str());
      return 2;
    }
  }
  std::printf("wrote %s (%dx%d, view %s)\n", options_.screenshot.c_str(), fb_w_, fb_h_,
              options_.view.c_str());
  return 0;
}

nlohmann::json App::DiffGeometry() const {
  auto id = [](const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  auto rows = [&](const std::vector<DiffRowGeometry>& geometry) {
    nlohmann::json out = nlohmann::json::array();
    for (const DiffRowGeometry& g : geometry) {
      out.push_back({{"row", g.row},
                     {"kind", g.kind},
                     {"side", g.side},
                     {"baseline_id", id(g.baseline_id)},
                     {"candidate_id", id(g.candidate_id)},
                     {"rect", {g.x0, g.y0, g.x1, g.y1}},
                     {"marker", {g.mx0, g.my0, g.mx1, g.my1}}});
    }
    return out;
  };
  const DiffView& view = diff_.view();
  return {{"rows", rows(diff_.row_geometry())},
          {"steps", rows(diff_.step_geometry())},
          {"selected_row", diff_.selected_row()},
          {"summary", view.summary},
          {"differences", view.result.differences.size()},
          {"error", view.error}};
}

int RunApp(const AppOptions& options) {
  App app(options);
  return app.Run();
}

}  // namespace shardscope::app::gui
