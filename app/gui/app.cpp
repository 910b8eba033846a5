#include "app.hpp"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "app_impl.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

constexpr double kPlayPeriodS = 0.8;
// While traces load and nothing else happens, a frame every half second: the progress and the
// ranks read so far change no faster than that matters, and without a GPU (Xvfb's software
// renderer) a frame costs around 100 ms of a core the reader's threads need.
constexpr int kLoadingFrameMs = 500;
const char* const kDiffSides[2] = {"baseline", "candidate"};

// The next window fills the viewport when it is the focused view, else opens at `size`.
void PlaceWindow(const ImGuiViewport* vp, bool fills_viewport, ImVec2 size) {
  if (fills_viewport) {
    ImGui::SetNextWindowPos(vp->Pos);
    ImGui::SetNextWindowSize(vp->Size);
  } else {
    ImGui::SetNextWindowSize(size, ImGuiCond_FirstUseEver);
  }
}

// What a followed path's files look like: name, size and modification time of each (a file: its
// own). Changes whenever a rank appends; "" when the path cannot be read.
std::string FilesSignature(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> parts;
  auto add = [&](const fs::path& p) {
    std::error_code e;
    const auto size = fs::file_size(p, e);
    if (e) return;
    const auto time = fs::last_write_time(p, e).time_since_epoch().count();
    parts.push_back(p.filename().string() + ":" + std::to_string(size) + ":" + std::to_string(time));
  };
  if (fs::is_directory(path, ec)) {
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) add(it->path());
  } else {
    add(path);
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const std::string& p : parts) out += p + "\n";
  return out;
}

constexpr double kFollowCheckS = 0.5;  // how often a followed trace's files are looked at

}  // namespace

int App::InitWindow(bool headless) {
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  if (headless) io.IniFilename = nullptr;  // screenshots must not depend on a previous session
  RegisterPanelSizesSettings(&sizes_);
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
  return 0;
}

void App::OpenPath(const std::string& path) {
  loaders_.push_back(std::make_unique<TraceLoader>(path));
  activate_.push_back(loaders_.back().get());
}

void App::FollowPath(const std::string& path) {
  follow_path_ = path;
  follow_index_ = -1;
  follow_loader_.reset();
  follow_signature_ = FilesSignature(path);  // before reading: a change while it loads is seen later
  follow_checked_ = std::chrono::steady_clock::now();
  OpenPath(path);
  follow_first_ = loaders_.back().get();
}

void App::PollFollow() {
  if (follow_index_ < 0 || follow_index_ >= static_cast<int>(traces_.size())) return;
  const auto now = std::chrono::steady_clock::now();
  if (!follow_loader_ && std::chrono::duration<double>(now - follow_checked_).count() >= kFollowCheckS) {
    follow_checked_ = now;
    std::string signature = FilesSignature(follow_path_);
    if (signature != follow_signature_) {
      follow_signature_ = std::move(signature);
      follow_loader_ = std::make_unique<TraceLoader>(follow_path_);
    }
  }
  if (!follow_loader_ || !follow_loader_->done()) return;
  if (auto model = follow_loader_->model()) {
    // The selection stays (ids are stable as a job appends); the timeline keeps its view, or
    // follows the newest time when it showed the end.
    redistribute_panels_.timeline.KeepViewAcrossReload();
    traces_[static_cast<size_t>(follow_index_)].model = model;
    traces_[static_cast<size_t>(follow_index_)].flight = follow_loader_->analysis();
    std::printf("follow: %s: %zu redistributes, %zu ops\n", follow_path_.c_str(),
                model->RedistributeIds().size(), model->OpIds().size());
    std::fflush(stdout);
  } else {
    follow_signature_.clear();  // a rank was mid-line: read again at the next check
  }
  follow_loader_.reset();
}

void App::OpenRequested() {
  for (const std::string& path : options_.traces) loaders_.push_back(std::make_unique<TraceLoader>(path));
  if (!options_.follow.empty()) FollowPath(options_.follow);
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
  if (options_.view == GuiView::kGallery) {
    show_gallery_ = true;
    if (options_.select >= 0) gallery_.Select(options_.select, options_.step);
  }
  if (options_.view == GuiView::kSandbox) show_sandbox_ = true;
  if (options_.sandbox_run) {
    sandbox_.RunLocal();
    sandbox_pending_ = sandbox_.busy();
    if (!sandbox_.error().empty())
      std::fprintf(stderr, "shardscope-gui: sandbox: %s\n", sandbox_.error().c_str());
  }
}

int App::Run() {
  const bool headless =
      !options_.screenshot.empty() || !options_.loading_screenshot.empty() || options_.bench_frames > 0;
  if (int code = InitWindow(headless)) return code;
  TraceLoader::SetDumpDelayForTests(options_.dump_delay_ms);
  OpenRequested();

  int exit_code = 0;
  BenchTimes bench;
  while (!platform_->ShouldClose()) {
    auto t_start = std::chrono::steady_clock::now();
    Frame();
    const double since_start =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (first_frame_s_ < 0) first_frame_s_ = since_start;
    if (Ready() && first_ready_s_ < 0) first_ready_s_ = since_start;
    if (Ready() && options_.load_times && !load_times_printed_) {
      load_times_printed_ = true;
      std::printf(
          "load times: first frame with loaded data %.2f s (ranks %lld/%lld), verdict %.2f s, "
          "everything loaded %.2f s\n",
          first_data_s_, static_cast<long long>(first_data_ranks_), static_cast<long long>(first_data_total_),
          first_verdict_s_ >= 0 ? first_verdict_s_ : first_ready_s_, first_ready_s_);
      std::fflush(stdout);
    }
    if (bad_selection_) {
      exit_code = 2;
      break;
    }
    if (Ready()) ++ready_frames_;
    if (!options_.loading_screenshot.empty() && !loading_shot_taken_ && drew_loading_ &&
        data_frames_ >= kSettleFrames && LoadingScriptSettled()) {
      loading_shot_taken_ = true;
      std::string geometry;
      if (!options_.geometry.empty())
        geometry = std::filesystem::path(options_.loading_screenshot).replace_extension(".json").string();
      if ((exit_code = CaptureTo(options_.loading_screenshot, geometry)) != 0 || options_.screenshot.empty())
        break;
    }
    if ((!options_.screenshot.empty() || !options_.loading_screenshot.empty()) &&
        ready_frames_ >= kSettleFrames && ScriptSettled()) {
      if (!options_.loading_screenshot.empty() && !loading_shot_taken_) {
        std::fprintf(stderr,
                     "shardscope-gui: --loading-screenshot: no frame showed partly loaded data (only "
                     "Flight Recorder dumps appear rank by rank; other traces appear once all is read, "
                     "and a small set of dumps may be read first: --dump-delay-ms slows it)\n");
        exit_code = 2;
        break;
      }
      exit_code = Capture();
      break;
    }
    if (options_.bench_frames > 0 && Ready()) {
      glFinish();
      bench.frame_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count());
      if (static_cast<int>(bench.frame_ms.size()) > kSettleFrames) {
        bench.prepare += prepare_ms_, bench.build += build_ms_, bench.render += render_ms_;
      }
      if (static_cast<int>(bench.frame_ms.size()) >= options_.bench_frames + kSettleFrames) break;
    }
    platform_->SwapBuffers();
    ++frames_drawn_;
    if (Ready()) ++frames_ready_;
    if (headless) {
      // While traces load the window shows progress (and for dumps the ranks read so far): four frames a
      // second are enough, and the reader's threads get the cores (a frame costs tens of ms on a software
      // renderer).
      const bool loading =
          std::any_of(loaders_.begin(), loaders_.end(), [](const auto& l) { return !l->done(); }) ||
          profiler_.Busy();
      // A script's loading phase steps once per frame.
      if (loading)
        std::this_thread::sleep_for(std::chrono::milliseconds(script_early_ ? 20 : kLoadingFrameMs));
      continue;
    }
    double timeout = IdleTimeout();
    if (options_.quit_after_s > 0) {
      const double left = options_.quit_after_s -
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      if (left <= 0) break;
      timeout = timeout < 0 ? left : std::min(timeout, left);
    }
    platform_->WaitEvents(timeout);
  }
  if (options_.quit_after_s > 0 && exit_code == 0) {
    std::printf("frames drawn %lld, %lld with the traces loaded\n", static_cast<long long>(frames_drawn_),
                static_cast<long long>(frames_ready_));
    if (!options_.geometry.empty() && !WriteGeometry()) exit_code = 2;
  }
  if (!bench.frame_ms.empty()) PrintBench(std::move(bench));
  loaders_.clear();
  renderer_.reset();
  platform_.reset();
  ImGui::DestroyContext();
  return exit_code;
}

double App::IdleTimeout() {
  // An event (or a script step) may change what the next frames show, and ImGui needs a few frames
  // to settle hover, popups and sizes after one: draw on until kSettleFrames quiet frames passed.
  if (platform_->events() != seen_events_) {
    seen_events_ = platform_->events();
    quiet_frames_ = 0;
    return 0;
  }
  if (quiet_frames_ < kSettleFrames) {
    ++quiet_frames_;
    return 0;
  }
  // Progress bars need a few frames a second, a sandbox run a poll now and then, a script a frame
  // per step.
  if (std::any_of(loaders_.begin(), loaders_.end(), [](const auto& l) { return !l->done(); }))
    return kLoadingFrameMs / 1000.0;
  if (!Ready()) return 0.1;
  if (!ScriptSettled()) return 0;
  if (selection_.playing) return std::max(0.0, kPlayPeriodS - play_accum_);
  if (follow_loader_) return 0.1;
  if (follow_index_ >= 0) return kFollowCheckS;  // a followed trace is looked at twice a second
  if (ImGui::GetIO().WantTextInput) return 0.5;  // the text cursor blinks
  return -1;
}

void App::PrintBench(BenchTimes bench) const {
  std::vector<double>& frame_ms = bench.frame_ms;
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
    return sorted.empty() ? 0.0 : sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
  };
  std::printf("frames %zu  view %s  %dx%d  ranks %lld  events %zu  quads/frame %zu  vertices/frame %zu\n",
              sorted.size(), GuiViewText(options_.view).c_str(), fb_w_, fb_h_,
              static_cast<long long>(m ? m->world : 0), events, renderer_->quads_last_frame(),
              renderer_->vertices_last_frame());
  std::printf("frame time ms: mean %.2f  p50 %.2f  p95 %.2f  max %.2f\n",
              sorted.empty() ? 0.0 : sum / sorted.size(), pct(0.5), pct(0.95),
              sorted.empty() ? 0.0 : sorted.back());
  double n = static_cast<double>(std::max<size_t>(1, sorted.size()));
  std::printf("  of which: prepare %.2f ms  ImGui/panel draw calls %.2f ms  GL render + glFinish %.2f ms\n",
              bench.prepare / n, bench.build / n, bench.render / n);
  std::printf("first frame (loading bar) %.2f s, first frame with the traces loaded %.2f s after start\n",
              first_frame_s_, first_ready_s_);
  if (profiler_.OwnsMain()) {
    const ProfilerGeometry& p = profiler_.geometry();
    std::printf(
        "profiler view: built in %.2f s after the read (worker thread); %zu ops, %zu kernels; %zu items "
        "drawn in the last frame\n",
        profiler_.build_seconds(), p.ops, p.kernels, p.draw_items);
  }
  if (first_data_s_ >= 0)
    std::printf("first frame with loaded data %.2f s (ranks %lld/%lld), with triage's verdict %.2f s\n",
                first_data_s_, static_cast<long long>(first_data_ranks_),
                static_cast<long long>(first_data_total_), first_verdict_s_);
}

bool App::Ready() const {
  return std::all_of(loaders_.begin(), loaders_.end(), [](const auto& l) { return l->done(); }) &&
         !sandbox_.busy() && !sandbox_pending_ && !profiler_.Busy();
}

void App::Frame() {
  auto now = std::chrono::steady_clock::now();
  double dt = std::chrono::duration<double>(now - last_frame_).count();
  last_frame_ = now;
  // Headless: wherever Xvfb's pointer sits must not hover anything (tooltips would cover pixels);
  // only a --keys click moves it.
  platform_->NewFrame(NextScriptEvent(), !options_.screenshot.empty() ||
                                             !options_.loading_screenshot.empty() ||
                                             options_.bench_frames > 0);
  panels_.clear();
  drew_loading_ = false;
  renderer_->NewFrame();
  ImGui::NewFrame();
  for (const std::string& path : platform_->TakeDrops()) OpenPath(path);  // drag-and-drop
  PollLoaders();
  PollFollow();
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
  } else if (options_.view == GuiView::kMain) {
    DrawMain();
  } else if (options_.view != GuiView::kGallery && options_.view != GuiView::kSandbox) {
    DrawFocused(options_.view);
  }
  ImGui::End();

  if (show_gallery_) {
    PlaceWindow(vp, options_.view == GuiView::kGallery, ImVec2(1100, 800));
    gallery_.Draw(renderer_.get(), &show_gallery_, options_.view == GuiView::kGallery);
  }
  if (show_sandbox_) {
    PlaceWindow(vp, options_.view == GuiView::kSandbox, ImVec2(760, 640));
    ImGui::Begin("Sandbox", &show_sandbox_,
                 options_.view == GuiView::kSandbox ? ImGuiWindowFlags_NoDecoration : 0);
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

const InputEvent* App::NextScriptEvent() {
  // The script starts once the traces are loaded and the panels settled (its clicks aim at where
  // --geometry saw things), one step per frame; after a leading `loading` step, once a few frames
  // showed loaded data, until a `ready` step waits for the load to end.
  ++since_script_;
  if (script_wait_ > 0) {
    --script_wait_;
    return nullptr;
  }
  if (script_next_ >= options_.script.size()) return nullptr;
  const InputEvent::Kind kind = options_.script[script_next_].kind;
  const bool ready = ready_frames_ >= kSettleFrames;
  if (kind == InputEvent::Kind::kLoading) {
    if (!ready && data_frames_ < kSettleFrames) return nullptr;
    script_early_ = !ready;
    ++script_next_;
    since_script_ = 0;
    return nullptr;
  }
  if (kind == InputEvent::Kind::kReady) {
    if (!ready) return nullptr;
    script_early_ = false;
    ++script_next_;
    since_script_ = 0;
    return nullptr;
  }
  if (!ready && !script_early_) return nullptr;
  const InputEvent* e = &options_.script[script_next_++];
  script_wait_ = e->kind == InputEvent::Kind::kClick || e->kind == InputEvent::Kind::kRightClick ? 2
                 : e->kind == InputEvent::Kind::kDrag ? kDragFrames + 2
                                                      : 0;
  since_script_ = 0;
  return e;
}

bool App::LoadingScriptSettled() const {
  // Without a leading `loading` step the script waits for the load: nothing to wait for here.
  if (options_.script.empty() || options_.script.front().kind != InputEvent::Kind::kLoading) return true;
  const bool at_ready = script_next_ >= options_.script.size() ||
                        options_.script[script_next_].kind == InputEvent::Kind::kReady;
  return script_early_ && at_ready && script_wait_ == 0 && since_script_ >= kSettleFrames;
}

bool App::ScriptSettled() const {
  return options_.script.empty() ||
         (script_next_ >= options_.script.size() && script_wait_ == 0 && since_script_ >= kSettleFrames);
}

void App::RecordPanel(const char* name, PanelShows shows) {
  const ImVec2 p = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  // ImGui's ideal content width (last frame's layout, unclipped) against the room it had.
  const ImGuiWindow* w = ImGui::GetCurrentWindow();
  panels_.push_back(
      {name, p.x, p.y, p.x + size.x, p.y + size.y, shows, w->ContentSizeIdeal.x, w->WorkRect.GetWidth()});
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
    auto activate = std::find(activate_.begin(), activate_.end(), it->get());
    const bool make_active = activate != activate_.end();
    if (make_active) activate_.erase(activate);
    if (options_.load_times) {  // when each stage of the load began (Flight Recorder dumps)
      std::string line;
      for (const auto& [stage, at] : (*it)->stages()) {
        char part[96];
        std::snprintf(part, sizeof part, "%s%s %.2f s", line.empty() ? "" : ", ", stage.c_str(), at);
        line += part;
      }
      if (!line.empty()) std::printf("load stages of %s: %s\n", (*it)->path().c_str(), line.c_str());
    }
    if (auto model = (*it)->model()) {
      traces_.push_back({(*it)->path(), model, (*it)->analysis()});
      if (active_ < 0 || make_active) {
        if (active_ >= 0) selection_ = Selection{};  // another trace: its own default selection
        active_ = static_cast<int>(traces_.size()) - 1;
      }
      if (it->get() == follow_first_) {
        follow_index_ = active_;
        std::printf("follow: %s: %zu redistributes, %zu ops\n", follow_path_.c_str(),
                    model->RedistributeIds().size(), model->OpIds().size());
        std::fflush(stdout);
      }
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
    if (ids_model_ != nullptr) ++model_serial_;
    ids_model_ = nullptr;
    ctx_ = ViewContext{nullptr, nullptr, &selection_, renderer_.get(), model_serial_};
    return;
  }
  if (ids_model_ != model) {
    // Seen every frame, so two models in a row never share an address (the next one is read while
    // this one is alive); panels that skipped frames compare the serial too.
    ++model_serial_;
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
    if (!options_.search.empty()) redistribute_panels_.list.SetQuery(options_.search);
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
  if (selection_.redistribute_id >= 0 || selection_.op_id >= 0) selection_.cleared = false;
  if (selection_.redistribute_id < 0 && !ids.empty() && !selection_.cleared)
    selection_.redistribute_id = ids.front();
  if (view_model_ != model || view_serial_ != model_serial_ || view_id_ != selection_.redistribute_id) {
    view_ = BuildRedistributeView(*model, selection_.redistribute_id);
    view_model_ = model;
    view_serial_ = model_serial_;
    view_id_ = selection_.redistribute_id;
  }
  int64_t steps = view_.num_steps();
  selection_.step = std::clamp<int64_t>(selection_.step, 0, std::max<int64_t>(0, steps - 1));
  selection_.focus_rank =
      std::clamp<int64_t>(selection_.focus_rank, 0, std::max<int64_t>(0, model->world - 1));
  ctx_ = ViewContext{model, view_.first ? &view_ : nullptr, &selection_, renderer_.get(), model_serial_};
}

void App::HandleKeys(double dt) {
  const ImGuiIO& io = ImGui::GetIO();
  // Taps counted from key events (a tap shorter than a frame counts; two taps in a frame move two).
  const KeyTaps& taps = platform_->taps();
  if (taps.Count(InputKey::kCtrlQ) > 0) glfwSetWindowShouldClose(platform_->window(), GLFW_TRUE);
  if (diff_mode_) {
    if (!io.WantTextInput) diff_.HandleKeys(taps);
    return;
  }
  if (profiler_.OwnsMain() && !io.WantTextInput) profiler_.HandleKeys(taps);
  if (taps.Count(InputKey::kCtrlF) > 0) redistribute_panels_.list.FocusSearch();
  if (taps.Count(InputKey::kCtrlG) > 0) redistribute_panels_.timeline.FocusGoTo();
  const trace::Model* model = ActiveModel();
  if (!model || io.WantTextInput) return;
  const std::vector<int64_t>& ids = ids_;
  // Esc clears the selection (as in Tracy and Perfetto): no redistribute, no op, no measured range.
  if (taps.Count(InputKey::kEscape) > 0) {
    selection_ = Selection{-1, 0, selection_.focus_rank, false, -1, false, true};
    redistribute_panels_.timeline.ClearMeasure();
    SyncSelection();
  }
  auto pos = std::find(ids.begin(), ids.end(), selection_.redistribute_id);
  const int64_t moves = taps.Count(InputKey::kDown) - taps.Count(InputKey::kUp);
  if (moves != 0 && pos == ids.end() && !ids.empty()) {  // nothing selected: Down the first, Up the last
    selection_.redistribute_id = moves > 0 ? ids.front() : ids.back();
    selection_.step = 0;
    SyncSelection();
  } else if (moves != 0 && pos != ids.end()) {
    const int64_t at =
        std::clamp<int64_t>((pos - ids.begin()) + moves, 0, static_cast<int64_t>(ids.size()) - 1);
    if (ids[static_cast<size_t>(at)] != selection_.redistribute_id) {
      selection_.redistribute_id = ids[static_cast<size_t>(at)];
      selection_.step = 0;
      SyncSelection();  // the step keys below move within the new redistribute
    }
  }
  int64_t steps = view_.num_steps();
  selection_.step =
      std::clamp<int64_t>(selection_.step + taps.Count(InputKey::kRight) - taps.Count(InputKey::kLeft), 0,
                          std::max<int64_t>(0, steps - 1));
  if (taps.Count(InputKey::kSpace) % 2 == 1) selection_.playing = !selection_.playing;
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
  redistribute_panels_.Prepare(ctx_);
  stats_.Prepare();
  program_.Prepare(ctx_);
  profiler_.Prepare(ctx_,
                    active_ >= 0 && !diff_mode_ ? traces_[static_cast<size_t>(active_)].model : nullptr);
  // Profiler traces open on the profiler view: the flight lanes' check and triage wait until asked for.
  if (!profiler_.OwnsMain() || sizes_.maximized == GuiView::kFlight)
    flight_.Prepare(ctx_, ActiveModel() ? traces_[static_cast<size_t>(active_)].flight : nullptr);
  if (show_gallery_) gallery_.Prepare();
}

int App::Capture() { return CaptureTo(options_.screenshot, options_.geometry); }

int App::CaptureTo(const std::string& screenshot, const std::string& geometry) {
  std::vector<uint8_t> pixels = renderer_->ReadBackBuffer(fb_w_, fb_h_);
  // Encoded in memory, then written with every write and the close checked: stbi_write_png
  // ignores fwrite's result, so a full disk left a truncated PNG reported as written.
  std::string png;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  std::FILE* file = nullptr;
  if (!stbi_write_png_to_func(append, &png, fb_w_, fb_h_, 4, pixels.data(), fb_w_ * 4) ||
      (file = std::fopen(screenshot.c_str(), "wb")) == nullptr) {
    std::fprintf(stderr, "shardscope-gui: cannot write %s: %s\n", screenshot.c_str(),
                 png.empty() ? "PNG encoding failed" : std::strerror(errno));
    return 2;
  }
  const bool written = std::fwrite(png.data(), 1, png.size(), file) == png.size();
  const int write_errno = errno;
  if (std::fclose(file) != 0 || !written) {
    std::fprintf(stderr, "shardscope-gui: writing %s failed: %s (the screenshot is incomplete)\n",
                 screenshot.c_str(), std::strerror(written ? errno : write_errno));
    return 2;
  }
  if (!geometry.empty() && !WriteGeometry(geometry)) return 2;
  std::printf("wrote %s (%dx%d, view %s)\n", screenshot.c_str(), fb_w_, fb_h_,
              GuiViewText(options_.view).c_str());
  return 0;
}

bool App::WriteGeometry() { return WriteGeometry(options_.geometry); }

bool App::WriteGeometry(const std::string& path) {
  {
    std::vector<DiffCanvasGeometry> canvases;
    if (diff_mode_) {
      canvases = diff_.canvases();
    } else {
      for (const CanvasGeometry& c : options_.view == GuiView::kGallery
                                         ? gallery_.layout_geometry()
                                         : redistribute_panels_.layout.geometry())
        canvases.push_back({"", c});
    }
    GeometrySources sources{
        fb_w_,          fb_h_,    GuiViewText(options_.view), &canvases, diff_mode_ ? &diff_ : nullptr,
        &program_,      &flight_, &redistribute_panels_.list, &panels_,  &selection_,
        errors_.rect(), &stats_};
    sources.mesh = &redistribute_panels_.mesh;
    if (!diff_mode_) sources.profiler = &profiler_;
    if (!diff_mode_) sources.timeline = &redistribute_panels_.timeline;
    if (!diff_mode_) sources.layout_table = &redistribute_panels_.layout.table_geometry();
    if (ActiveModel()) sources.trace = traces_[static_cast<size_t>(active_)].label;
    sources.traces = static_cast<int>(traces_.size());
    sources.draw_vertices = renderer_->vertices_last_frame();
    std::ofstream out(path);
    out << GeometryJson(sources).dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "shardscope-gui: cannot write %s\n", path.c_str());
      return false;
    }
  }
  return true;
}

int RunApp(const AppOptions& options) {
  App app(options);
  return app.Run();
}

}  // namespace shardscope::app::gui
