#include "panels/merge_panel.hpp"

#include <algorithm>

#include <imgui.h>

#include "widgets.hpp"

namespace shardscope::app::gui {

void MergePanel::Prepare(const ViewContext& ctx) {
  const RedistributeView* view = ctx.redistribute;
  if (!view || !view->first) {
    key_model_ = nullptr, key_id_ = -1;
    merged_.clear();
    return;
  }
  if (key_model_ == ctx.model && key_serial_ == ctx.model_serial && key_id_ == view->id &&
      key_focus_ == ctx.selection->focus_rank)
    return;
  key_model_ = ctx.model, key_serial_ = ctx.model_serial, key_id_ = view->id,
  key_focus_ = ctx.selection->focus_rank;
  merged_.clear();
  const auto& b = *view->first->begin;
  // A flattened step replaced the raw transforms with the same src -> dst whose mesh dims it
  // covers (PyTorch R-new merges consecutive same-kind transforms into one over their union).
  std::vector<bool> used(b.raw_plan().size(), false);
  for (size_t k = 0; k < b.optimized_plan().size(); ++k) {
    const trace::PlanStep& s = b.optimized_plan()[k];
    if (!s.flattened) continue;
    Merged m;
    m.step = k;
    for (size_t r = 0; r < b.raw_plan().size(); ++r) {
      const trace::PlanStep& raw = b.raw_plan()[r];
      bool covered =
          !raw.mesh_dims.empty() && std::all_of(raw.mesh_dims.begin(), raw.mesh_dims.end(), [&](int64_t d) {
            return std::find(s.mesh_dims.begin(), s.mesh_dims.end(), d) != s.mesh_dims.end();
          });
      if (!used[r] && covered && raw.comm == s.comm) {
        m.replaced.push_back(r);
        used[r] = true;
      }
    }
    if (view->ok()) {
      std::vector<int> dims;
      for (int64_t d : s.mesh_dims) dims.push_back(static_cast<int>(d));
      try {
        m.group =
            view->mesh.Group(std::clamp<int64_t>(ctx.selection->focus_rank, 0, view->mesh.size() - 1), dims);
      } catch (const std::exception&) {
      }
    }
    merged_.push_back(std::move(m));
  }
}

void MergePanel::Draw(ViewContext& ctx) {
  const RedistributeView* view = ctx.redistribute;
  shows_ = {key_id_, key_id_ >= 0 ? ctx.selection->step : -1, -1};
  if (!view || !view->first) {
    NoRedistributeHint(ctx.model, "No redistribute selected.");
    return;
  }
  const auto& b = *view->first->begin;
  ImGui::Text("%zu raw transform%s -> %zu executed", b.raw_plan().size(), b.raw_plan().size() == 1 ? "" : "s",
              b.optimized_plan().size());
  if (merged_.empty()) ImGui::TextDisabled("no flattened step");
  for (const Merged& m : merged_) {
    const trace::PlanStep& s = b.optimized_plan()[m.step];
    bool current = static_cast<int64_t>(m.step) == ctx.selection->step;
    // Every line wraps: the panel is a third of a 1280 px window.
    ImGui::PushStyleColor(ImGuiCol_Text, current ? ImVec4(1, 0.82f, 0.25f, 1) : ImVec4(0.6f, 0.9f, 0.6f, 1));
    ImGui::TextWrapped("merged: step %zu  %s -> %s  %s over mesh dims %s", m.step, s.src.c_str(),
                       s.dst.c_str(), s.comm.c_str(), FormatMeshDims(s.mesh_dims, view->mesh).c_str());
    ImGui::PopStyleColor();
    ImGui::Indent();
    for (size_t r : m.replaced) {
      const trace::PlanStep& raw = b.raw_plan()[r];
      ImGui::Bullet();
      ImGui::TextWrapped("replaced raw #%zu: mesh dims %s  %s -> %s  %s  %.1f us", r,
                         FormatMeshDims(raw.mesh_dims, view->mesh).c_str(), raw.src.c_str(), raw.dst.c_str(),
                         raw.comm.c_str(), raw.cost_us);
    }
    ImGui::TextWrapped("flattened group of r%lld: %s", static_cast<long long>(ctx.selection->focus_rank),
                       FormatInts(m.group).c_str());
    ImGui::TextWrapped("avg_scale %g%s", s.avg_scale,
                       s.avg_scale != 1.0 ? " (P(avg) divided once after the merged sum)" : "");
    ImGui::Unindent();
  }
  ImGui::Spacing();
  if (b.skipped_merges().empty()) {
    ImGui::TextDisabled("no merge skipped");
  } else {
    ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1), "%zu merge%s not made:", b.skipped_merges().size(),
                       b.skipped_merges().size() == 1 ? "" : "s");
  }
  for (const trace::SkippedMerge& s : b.skipped_merges()) {
    // Wrapped: a reason is a phrase (uneven_tensor_shape, no_flattened_mesh) that a narrow panel
    // would otherwise cut.
    ImGui::Bullet();
    ImGui::TextWrapped("%s over mesh dims %s: %s", s.comm.c_str(),
                       FormatMeshDims(s.mesh_dims, view->mesh).c_str(), s.reason.c_str());
    if (!s.hint.empty()) {
      ImGui::Indent();
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextDisabled("to enable: %s", s.hint.c_str());
      ImGui::PopTextWrapPos();
      ImGui::Unindent();
    }
  }
}

}  // namespace shardscope::app::gui
