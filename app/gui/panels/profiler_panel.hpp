#pragma once
// Profiler view: a trace read from PyTorch profiler (Kineto) files (HasProfilerLanes: decided by
// the data) drawn as, per rank, a CPU-op lane (ops nested by time, one row per depth, names inside
// the wide ones) over a GPU-kernel lane (the collectives' kernels in their kind's colour, the part
// a rank spent waiting for the last member darker), the ProfilerStep#N boundaries across the lanes
// and labelled on the axis, and every collective's straggler (the rank that arrived last) marked
// in red. Clicking a kernel selects its collective: its kernels on every member rank are outlined
// and joined by a connector, and the side panel lists kind, group, bytes, time, bandwidth and every
// member's wait. The match, last arrivals and waits are trace::AnalyzeKineto's. Only the lanes
// and spans in view are visited; sub-pixel spans merge (ForEachRowItem), so zoom and pan stay fast
// at 64 ranks with millions of ops. The view is built on a worker thread after the trace loads.

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "input_script.hpp"
#include "profiler_model.hpp"
#include "rank_palette.hpp"

struct ImDrawList;

namespace shardscope::app::gui {

/// The straggler's mark (a bar over its kernel, a triangle at its start) and its label count.
inline constexpr Rgb kProfilerStraggler{255, 64, 64};
/// The outline of the selected collective's kernels.
inline constexpr Rgb kProfilerSelected{255, 255, 255};
/// The connector joining the selected collective across its ranks.
inline constexpr Rgb kProfilerConnector{255, 214, 80};
/// Lane background (even lanes; odd lanes a little lighter).
inline constexpr Rgb kProfilerLaneBackground{30, 32, 40};

/// What the last Draw put on screen, for --geometry and the tests: "kernel" (a kernel drawn on its
/// own: rank, collective, seq, kind in label, last, selected), "op" (an op drawn on its own: label
/// its name, depth in seq), "straggler" (a straggler's mark), "connector" (one segment joining two
/// members of the selected collective), "step" (a step label on the axis: seq the step), "lane"
/// (a rank's label cell), "straggler_row" (a row of the side panel's straggler table: seq its count),
/// "straggler_button" (the button that scrolls to the most frequent straggler).
struct ProfilerItemGeometry {
  std::string kind;
  int64_t rank = -1;
  int64_t collective = -1;
  int64_t seq = -1;
  std::string label;
  bool last = false, selected = false;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

/// The view's state as drawn.
struct ProfilerGeometry {
  bool active = false, building = false;
  float plot_x0 = 0, plot_x1 = 0, y0 = 0, y1 = 0;
  double view_start_ns = 0, view_end_ns = 0;  ///< from t0
  int64_t t0_ns = 0, trace_ns = 0;
  size_t lanes = 0, first_lane = 0, ops = 0, kernels = 0;
  int32_t depth = 0;  ///< op rows per lane
  bool show_ops = true;
  int64_t matched = 0, unmatched = 0;
  size_t draw_items = 0;  ///< rectangles the lanes took this frame (ops, kernels, merged runs)
  int64_t selected = -1;  ///< index of the selected collective (analysis order), -1: none
  std::string selected_kind, selected_pg;
  int64_t selected_seq = -1, selected_step = -1, last_rank = -1, selected_bytes = 0, selected_time_ns = 0;
  std::vector<std::pair<int64_t, int64_t>> waits;  ///< (rank, wait ns) of the selected collective
  int64_t focus_rank = -1;
  std::vector<std::pair<int64_t, int64_t>> stragglers;  ///< (rank, last arrivals), most first
  std::vector<ProfilerItemGeometry> items;
};

/// The profiler panel. Main thread only.
class ProfilerPanel {
 public:
  /// Starts building the view on a worker thread when the model changed and reads as profiler
  /// traces; collects the result when it is done. `owner` keeps the model alive meanwhile.
  void Prepare(const ViewContext& ctx, std::shared_ptr<const trace::Model> owner);
  /// Draws the lanes and the side panel into the remaining region of the current window.
  void Draw(ViewContext& ctx);
  /// Keys (taps, so a tap shorter than a frame counts): Left / Right the previous / next kernel on
  /// the focused rank's lane, Up / Down the focused rank, Esc clears the selection.
  void HandleKeys(const KeyTaps& taps);
  /// The active model reads as profiler traces: this view fills the main window.
  bool OwnsMain() const { return active_; }
  /// The view is being built (the app is not ready for a screenshot yet).
  bool Busy() const { return building_.valid(); }
  const ProfilerGeometry& geometry() const { return geometry_; }
  /// Seconds the last build took (matching, lanes), on its worker thread.
  double build_seconds() const { return build_s_; }

 private:
  struct Frame {
    float x0 = 0, x1 = 0, y0 = 0, bottom = 0, label_x = 0;
    double span = 1;  // ns in view
    int64_t vs = 0, ve = 0;
    float to_x(int64_t t, int64_t t0, double view_start) const {
      return x0 + static_cast<float>((static_cast<double>(t - t0) - view_start) / span * (x1 - x0));
    }
  };
  struct Hit {
    int32_t lane = -1;
    int32_t kernel = -1;        // into the lane's kernels
    int32_t row = -1, op = -1;  // an op row and the span's index in it
    size_t count = 0;           // > 1: merged spans
    int64_t start = 0, end = 0;
  };

  float OpRow() const { return 13.0f * scale_; }
  float KernelRow() const { return 16.0f * scale_; }
  float LaneHeight() const;
  float RowsHeight() const;  // op rows of a lane
  void HandleNavigation(const Frame& f, float scrollbar_x);
  void DrawControls(ViewContext& ctx);
  void DrawAxis(ImDrawList* list, const Frame& f, float top);
  void DrawLane(ImDrawList* list, const Frame& f, size_t lane, float y, bool hovered, Hit& hit);
  void DrawSelection(ImDrawList* list, const Frame& f);
  void DrawTooltip(const ViewContext& ctx, const Hit& hit) const;
  void DrawSide(ViewContext& ctx, float height);
  void Select(int32_t collective, int32_t lane, int32_t kernel);
  void ZoomTo(int64_t a, int64_t b);
  void GoToLane(int32_t lane);

  const void* key_model_ = nullptr;
  uint64_t key_serial_ = 0;
  const trace::Model* model_ = nullptr;  // the model being drawn (Draw's)
  bool active_ = false;
  std::future<std::shared_ptr<ProfilerData>> building_;
  std::chrono::steady_clock::time_point build_started_{};
  std::shared_ptr<ProfilerData> data_;
  double build_s_ = 0;
  ProfilerGeometry geometry_;
  double view_start_ = 0, view_end_ = 1;  // ns from data_->t0
  float scroll_y_ = 0;
  float scale_ = 1.0f;  // row heights grow when few lanes leave room
  bool dragging_ = false, scrolling_ = false;
  bool show_ops_ = true;
  int32_t selected_ = -1;      // analysis collective
  int32_t focus_lane_ = -1;    // lane of the last click / key move
  int32_t focus_kernel_ = -1;  // kernel on that lane
  int32_t selected_op_row_ = -1, selected_op_ = -1;
  int32_t pending_lane_ = -1;  // scroll to it on the next Draw
  char goto_text_[16] = {};
  bool goto_active_ = false;
  std::string goto_error_;
};

}  // namespace shardscope::app::gui
