#pragma once
// Sandbox: build a redistribute (mesh, shape, dtype, src, dst, orders, planner, flatten) and either
// run it on the `local` backend (program::RunScenario, ranks as threads, traced and verified) or
// only plan it (engine::MakePlan, synthetic timings); the resulting trace opens in the same session.

#include <atomic>
#include <future>
#include <memory>
#include <string>

#include "app_state.hpp"

namespace shardscope::app::gui {

/// The sandbox panel. Main thread only.
class SandboxPanel {
 public:
  /// Collects a finished background run. No ImGui calls.
  void Prepare();
  /// Draws the form and the last plan (or its error).
  void Draw(ViewContext& ctx);
  /// The model built by the last "Plan" click, once (null otherwise).
  std::shared_ptr<const trace::Model> TakeResult() { return std::move(result_); }
  /// Short description of the last built redistribute, e.g. "2x2 S(0),R -> R,R".
  const std::string& last_title() const { return title_; }
  /// Starts running the form's redistribute on the local backend in the background (traced into a
  /// temporary directory, verified); errors show in the panel.
  void RunLocal();
  /// Plans the form's redistribute on every rank (no execution); the result is ready at once.
  void PlanOnly();
  /// True while a local run is in flight.
  bool busy() const { return running_.valid(); }
  /// The form's last error ("" when none).
  const std::string& error() const { return error_; }

 private:
  /// Builds the specs and options from the form; throws the engine's errors.
  struct Request;
  Request MakeRequest() const;

  char mesh_[64] = "2x2";
  char names_[64] = "dp,tp";
  char shape_[64] = "15x6";
  char dtype_[16] = "f32";
  char src_[128] = "S(0),S(0)";
  char dst_[128] = "R,R";
  char src_order_[64] = "";
  char dst_order_[64] = "";
  int planner_ = 0;  // auto, greedy, graph
  bool flatten_ = true;
  bool optimize_ = true;
  bool internal_partial_ = false;  ///< PyTorch's internal path for R -> P targets
  std::string error_, title_, summary_;
  std::shared_ptr<const trace::Model> result_;
  std::future<std::shared_ptr<const trace::Model>> running_;  ///< local-backend run in flight
  std::string running_title_;
  std::shared_ptr<std::atomic<int64_t>> progress_ = std::make_shared<std::atomic<int64_t>>(0);
  int run_counter_ = 0;
};

}  // namespace shardscope::app::gui
