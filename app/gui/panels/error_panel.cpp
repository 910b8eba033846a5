#include "panels/error_panel.hpp"

#include <imgui.h>

#include <cstdio>

#include "rank_palette.hpp"

namespace shardscope::app::gui {

void ErrorPanel::Prepare(const std::vector<LoadFailure>& failures, const trace::Model* model,
                         const std::string& prefix) {
  failures_ = failures;
  diagnostics_.clear();
  total_diagnostics_ = 0;
  AddDiagnostics(model, prefix);
}

void ErrorPanel::AddDiagnostics(const trace::Model* model, const std::string& prefix) {
  if (!model) return;
  for (const trace::Diagnostic& d : model->diagnostics) {
    ++total_diagnostics_;
    if (diagnostics_.size() >= kMaxListed) continue;
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
    // A few diagnostics are listed; many (a wrapped ring buffer on every rank of a dump set) are
    // folded to the first one under a header that lists them all when opened, so they never push
    // the views off the window.
    char header[128];
    std::snprintf(header, sizeof header, "%zu diagnostic%s while loading%s###load_diagnostics",
                  total_diagnostics_, total_diagnostics_ == 1 ? "" : "s",
                  total_diagnostics_ > diagnostics_.size() ? " (the first 50 are listed)" : "");
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.75f, 0.3f, 1));
    const bool open =
        ImGui::TreeNodeEx(header, diagnostics_.size() <= kListedOpen ? ImGuiTreeNodeFlags_DefaultOpen : 0);
    ImGui::PopStyleColor();
    if (open) {
      for (const std::string& d : diagnostics_) ImGui::BulletText("%s", d.c_str());
      ImGui::TreePop();
    } else {
      ImGui::BulletText("%s", diagnostics_.front().c_str());
      ImGui::SameLine();
      ImGui::TextDisabled("and %zu more (open the header above to list them)", total_diagnostics_ - 1);
    }
  }
}

}  // namespace shardscope::app::gui
