#include "widgets.hpp"

#include <algorithm>
#include <vector>

#include <imgui_internal.h>

#include "profiler_model.hpp"
#include "view_model.hpp"

namespace shardscope::app::gui {

ImU32 RankImColor(int64_t rank, int64_t world, uint8_t alpha) {
  return PackAbgr(RankColor(rank, world), alpha);
}

Rgb CollectiveKindColor(const std::string& kind) {
  if (kind == "all_gather") return {80, 150, 230};
  if (kind == "reduce_scatter") return {240, 150, 60};
  if (kind == "all_reduce") return {90, 190, 100};
  if (kind == "all_to_all") return {175, 120, 220};
  if (kind == "shape_exchange") return {150, 150, 150};
  return {200, 200, 120};
}

ImU32 ContrastText(Rgb c) {
  double luma = 0.299 * c.r + 0.587 * c.g + 0.114 * c.b;
  return luma > 140 ? IM_COL32(10, 10, 10, 255) : IM_COL32(250, 250, 250, 255);
}

void RankSwatch(int64_t rank, int64_t world) {
  ImVec2 p = ImGui::GetCursorScreenPos();
  float h = ImGui::GetTextLineHeight();
  ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + h, p.y + h), RankImColor(rank, world));
  ImGui::Dummy(ImVec2(h, h));
  ImGui::SameLine();
  ImGui::Text("r%lld", static_cast<long long>(rank));
}

void NotationText(const std::string& notation, int64_t step) {
  // Split at arrows: "->" and the flattened "-->"; segment k is the state before step k.
  struct Piece {
    std::string text;
    bool arrow;
  };
  std::vector<Piece> pieces;
  size_t i = 0, start = 0;
  while (i < notation.size()) {
    if (notation.compare(i, 3, "-->") == 0 || notation.compare(i, 2, "->") == 0) {
      size_t len = notation.compare(i, 3, "-->") == 0 ? 3 : 2;
      pieces.push_back({notation.substr(start, i - start), false});
      pieces.push_back({notation.substr(i, len), true});
      i += len;
      start = i;
    } else {
      ++i;
    }
  }
  pieces.push_back({notation.substr(start), false});
  const ImVec4 dim(0.65f, 0.65f, 0.70f, 1.0f), hot(1.0f, 0.82f, 0.25f, 1.0f);
  int64_t segment = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    bool highlighted = pieces[k].arrow ? segment - 1 == step : (segment == step || segment == step + 1);
    if (k) ImGui::SameLine(0, 0);
    ImGui::TextColored(highlighted ? hot : dim, "%s", pieces[k].text.c_str());
    if (!pieces[k].arrow) ++segment;
  }
}

bool Splitter(const char* id, bool split_vertically, float thickness, float* size1, float* size2, float min1,
              float min2) {
  ImGuiContext& g = *GImGui;
  ImGuiWindow* window = g.CurrentWindow;
  ImGuiID gid = window->GetID(id);
  ImRect bb;
  bb.Min = window->DC.CursorPos;
  bb.Min.x += split_vertically ? *size1 : 0.0f;
  bb.Min.y += split_vertically ? 0.0f : *size1;
  ImVec2 size = split_vertically ? ImVec2(thickness, *size2 > 0 ? ImGui::GetContentRegionAvail().y : 0)
                                 : ImVec2(ImGui::GetContentRegionAvail().x, thickness);
  bb.Max = ImVec2(bb.Min.x + size.x, bb.Min.y + size.y);
  return ImGui::SplitterBehavior(bb, gid, split_vertically ? ImGuiAxis_X : ImGuiAxis_Y, size1, size2, min1,
                                 min2, 0.0f);
}

float SplitterFraction(const char* id, bool split_vertically, float thickness, float total, float* fraction,
                       float min1, float min2) {
  const float room = std::max(0.0f, total - thickness);
  // A window too small for both minima shares what there is in proportion to them.
  const float lo = std::min(min1, room * min1 / std::max(1.0f, min1 + min2));
  const float hi = std::max(lo, room - std::min(min2, room * min2 / std::max(1.0f, min1 + min2)));
  float size1 = std::clamp(*fraction * total, lo, hi);
  float size2 = room - size1;
  if (Splitter(id, split_vertically, thickness, &size1, &size2, lo, room - hi))
    ImGui::MarkIniSettingsDirty();  // remembered in imgui.ini (panel_sizes.hpp)
  if (total > 0) *fraction = size1 / total;
  return size1;
}

void SectionTitle(const char* title) {
  ImGui::TextColored(ImVec4(0.55f, 0.80f, 1.0f, 1.0f), "%s", title);
  ImGui::Separator();
}

void LabelBox(ImDrawList* list, ImVec2 pos, const std::string& text, ImU32 background, ImU32 foreground) {
  ImVec2 size = ImGui::CalcTextSize(text.c_str());
  list->AddRectFilled(ImVec2(pos.x - 2, pos.y - 1), ImVec2(pos.x + size.x + 2, pos.y + size.y + 1),
                      background, 2.0f);
  list->AddText(pos, foreground, text.c_str());
}

void SetupColumns(std::initializer_list<const char*> names) {
  for (const char* name : names) ImGui::TableSetupColumn(name);
}

bool BeginHeaderTable(const char* id, ImGuiTableFlags flags, std::initializer_list<const char*> names) {
  if (!ImGui::BeginTable(id, static_cast<int>(names.size()), flags)) return false;
  SetupColumns(names);
  ImGui::TableHeadersRow();
  return true;
}

void SetupPlanStepColumns() { SetupColumns({"mesh dims", "src -> dst", "comm", "logical shape", "pred"}); }

void PlanStepCells(const trace::PlanStep& step, const std::string& mesh_dims) {
  ImGui::TableNextColumn();
  ImGui::Text("%s%s", mesh_dims.c_str(), step.flattened ? " flat" : "");
  ImGui::TableNextColumn();
  ImGui::Text("%s -> %s", step.src.c_str(), step.dst.c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(step.comm.c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(FormatInts(step.logical_shape).c_str());
  ImGui::TableNextColumn();
  ImGui::Text("%.1f us", step.cost_us);
}

void NoRedistributeHint(const trace::Model* model, const char* fallback) {
  if (!model || !model->redistributes.empty()) {
    ImGui::TextDisabled("%s", fallback);
    return;
  }
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("This trace has no redistributes: nothing was moved between placements.");
  // A model's ops are a program's or a profiler's (IsPlainOp) throughout: the first tells.
  if (!model->ops.empty() && !IsPlainOp(model->ops.front().op)) {
    ImGui::TextDisabled(
        "Its ops are in the Program tab (click one for its placements, strategies and "
        "halo exchanges); their collectives run on the Timeline tab.");
  }
  ImGui::PopTextWrapPos();
}

}  // namespace shardscope::app::gui
