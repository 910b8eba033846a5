#include "gallery_window.hpp"

#include <imgui.h>

#include <algorithm>

#include "sample_data.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {

void GalleryWindow::Prepare() {
  if (!model_ && error_.empty()) {
    try {
      model_ = MakeSampleModel();
      if (!selected_) selection_.redistribute_id = 0;
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }
  if (!model_) return;
  if (view_id_ != selection_.redistribute_id) {
    view_ = BuildRedistributeView(*model_, selection_.redistribute_id);
    view_id_ = selection_.redistribute_id;
  }
  selection_.step = std::clamp<int64_t>(selection_.step, 0, std::max<int64_t>(0, view_.num_steps() - 1));
  ctx_ = ViewContext{model_.get(), view_.first ? &view_ : nullptr, &selection_, nullptr, 0};
  list_.Prepare(ctx_);
  inspector_.Prepare(ctx_);
  timeline_.Prepare(ctx_);
  layout_.Prepare(ctx_);
  mesh_.Prepare(ctx_);
  merge_.Prepare(ctx_);
}

void GalleryWindow::Draw(GlRenderer* renderer, bool* open, bool fullscreen) {
  ImGuiWindowFlags flags = fullscreen ? ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove : 0;
  if (!ImGui::Begin("Gallery: every panel on sample data", fullscreen ? nullptr : open, flags)) {
    ImGui::End();
    return;
  }
  if (!error_.empty()) {
    ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "sample data failed: %s", error_.c_str());
    ImGui::End();
    return;
  }
  ctx_.renderer = renderer;
  ImGui::TextDisabled("sample: 2x2 mesh (dp,tp), plans from the engine's planner, synthetic timings");
  float w = ImGui::GetContentRegionAvail().x;
  float h = ImGui::GetContentRegionAvail().y;
  ImGui::BeginChild("##g_list", ImVec2(w * 0.3f, h * 0.22f), true);
  SectionTitle("Redistributes");
  list_.Draw(ctx_);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##g_timeline", ImVec2(0, h * 0.22f), true, ImGuiWindowFlags_NoScrollWithMouse);
  SectionTitle("Timeline");
  timeline_.Draw(ctx_);
  ImGui::EndChild();
  ImGui::BeginChild("##g_inspector", ImVec2(w * 0.36f, h * 0.42f), true);
  SectionTitle("Inspector");
  inspector_.Draw(ctx_);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##g_layout", ImVec2(0, h * 0.42f), true, ImGuiWindowFlags_NoScrollWithMouse);
  SectionTitle("Layout");
  layout_.Draw(ctx_);
  ImGui::EndChild();
  ImGui::BeginChild("##g_mesh", ImVec2(w * 0.6f, 0), true);
  SectionTitle("Mesh and bytes");
  mesh_.Draw(ctx_);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##g_merge", ImVec2(0, 0), true);
  SectionTitle("Merges");
  merge_.Draw(ctx_);
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace shardscope::app::gui
