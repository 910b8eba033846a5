#include "gallery_window.hpp"

#include <imgui.h>

#include <algorithm>

#include "sample_data.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

// One bordered, titled child region of the gallery showing `panel`.
template <class Panel>
void Section(const char* id, const char* title, ImVec2 size, ImGuiWindowFlags flags, Panel& panel,
             ViewContext& ctx) {
  ImGui::BeginChild(id, size, true, flags);
  SectionTitle(title);
  panel.Draw(ctx);
  ImGui::EndChild();
}

}  // namespace

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
  panels_.Prepare(ctx_);
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
  Section("##g_list", "Redistributes", ImVec2(w * 0.3f, h * 0.22f), 0, panels_.list, ctx_);
  ImGui::SameLine();
  Section("##g_timeline", "Timeline", ImVec2(0, h * 0.22f), ImGuiWindowFlags_NoScrollWithMouse,
          panels_.timeline, ctx_);
  Section("##g_inspector", "Inspector", ImVec2(w * 0.36f, h * 0.42f), 0, panels_.inspector, ctx_);
  ImGui::SameLine();
  Section("##g_layout", "Layout", ImVec2(0, h * 0.42f), ImGuiWindowFlags_NoScrollWithMouse, panels_.layout,
          ctx_);
  Section("##g_mesh", "Mesh and bytes", ImVec2(w * 0.6f, 0), 0, panels_.mesh, ctx_);
  ImGui::SameLine();
  Section("##g_merge", "Merges", ImVec2(0, 0), 0, panels_.merge, ctx_);
  ImGui::End();
}

}  // namespace shardscope::app::gui
