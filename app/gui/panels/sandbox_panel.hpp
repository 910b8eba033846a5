#pragma once
// Sandbox: build a redistribute (mesh, shape, dtype, src, dst, orders, planner, flatten) and plan
// it with engine::MakePlan on every rank; the result opens as a new trace in the same session.
// Plan-only until the engine's executor lands: timings and bytes are synthetic (sample_data.hpp).

#include <memory>
#include <string>

#include "app_state.hpp"

namespace shardscope::app::gui {

/// The sandbox panel. Main thread only.
class SandboxPanel {
 public:
  /// Nothing to precompute; kept for the panel contract. No ImGui calls.
  void Prepare() {}
  /// Draws the form and the last plan (or its error).
  void Draw(ViewContext& ctx);
  /// The model built by the last "Plan" click, once (null otherwise).
  std::shared_ptr<const trace::Model> TakeResult() { return std::move(result_); }
  /// Short description of the last built redistribute, e.g. "2x2 S(0),R -> R,R".
  const std::string& last_title() const { return title_; }

 private:
  void Build();

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
  std::string error_, title_, summary_;
  std::shared_ptr<const trace::Model> result_;
};

}  // namespace shardscope::app::gui
