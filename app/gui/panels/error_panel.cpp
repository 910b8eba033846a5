#include "panels/error_panel.hpp"

#include <imgui.h>

#include "rank_palette.hpp"

namespace shardscope::app::gui {

void ErrorPanel::Prepare(const std::vector<LoadFailure>& failures, const trace::Model* model,
                         const std::string& prefix) {
  failures_ = failures;
  diagnostics_.clear();
  AddDiagnostics(model, prefix);
}

void ErrorPanel::AddDiagnostics(const trace::Model* model, const std::string& prefix) {
  if (!model) return;
  for (const trace::Diagnostic& d : model->diagnostics) {
    if (diagnostics_.size() >= 50) break;
    std::string where = d.file.empty() ? "trace" : d.file + (d.line > 0 ? ":" + std::to_string(d.line) : "");
    diagnostics_.push_back(prefix + where + ": " + d.message);
  }
}

void ErrorPanel::Draw(float height) {
  rect_[0] = rect_[1] = rect_[2] = rect_[3] = 0;
  if (!failures_.empty()) {
    float line = ImGui::GetTextLineHeightWithSpacing();
    float h = height > 0 ? height : line * (2.0f + 2.0f * static_cast<float>(failures_.size())) + 16.0f;
    ImGui::PushStyleColor(ImGuiCol_ChildBg,
                          IM_COL32(kErrorPanelColor.r, kErrorPanelColor.g, kErrorPanelColor.b, 255));
    ImGui::BeginChild("##load_errors", ImVec2(0, h), true);
    ImVec2 p0 = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
    rect_[0] = p0.x, rect_[1] = p0.y, rect_[2] = p0.x + size.x, rect_[3] = p0.y + size.y;
    ImGui::TextColored(ImVec4(1, 0.85f, 0.85f, 1), "Could not load %zu trace%s", failures_.size(),
                       failures_.size() == 1 ? "" : "s");
    for (const LoadFailure& f : failures_) {
      ImGui::TextColored(ImVec4(1, 1, 1, 1), "%s", f.path.c_str());
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextColored(ImVec4(1, 0.9f, 0.6f, 1), "  %s", f.message.c_str());
      ImGui::PopTextWrapPos();
    }
    ImGui::EndChild();
    ImGui::PopStyleColor();
  }
  if (!diagnostics_.empty()) {
    ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1), "%zu diagnostic%s while loading:", diagnostics_.size(),
                       diagnostics_.size() == 1 ? "" : "s");
    for (const std::string& d : diagnostics_) ImGui::BulletText("%s", d.c_str());
  }
}

}  // namespace shardscope::app::gui
