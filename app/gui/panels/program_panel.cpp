#include "panels/program_panel.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

#include <imgui.h>

#include "view_model.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

constexpr ImU32 kEdgeColor = IM_COL32(150, 160, 180, 255);
constexpr ImU32 kLabelBg = IM_COL32(36, 40, 48, 255);
constexpr ImU32 kLabelFg = IM_COL32(225, 230, 240, 255);
constexpr ImU32 kNodeBg = IM_COL32(44, 50, 62, 255);
constexpr ImU32 kRedistributeNodeBg = IM_COL32(38, 56, 72, 255);
constexpr ImU32 kInputBg = IM_COL32(54, 54, 60, 255);
constexpr ImU32 kNodeBorder = IM_COL32(110, 120, 140, 255);
constexpr ImU32 kSelectedBorder = IM_COL32(255, 255, 255, 255);
constexpr ImU32 kFailedBorder = IM_COL32(230, 60, 60, 255);
constexpr ImU32 kDimText = IM_COL32(170, 176, 190, 255);

ImU32 Col(Rgb c, uint8_t alpha = 255) { return PackAbgr(c, alpha); }
ImVec4 Col4(Rgb c) { return ImVec4(c.r / 255.0f, c.g / 255.0f, c.b / 255.0f, 1.0f); }

bool Inside(ImVec2 p, float x0, float y0, float x1, float y1) {
  return p.x >= x0 && p.x < x1 && p.y >= y0 && p.y < y1;
}

std::string CostText(double cost_us) {
  if (cost_us < 0) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", cost_us);
  return buf;
}

std::string Operands(const std::vector<std::vector<std::string>>& operands) {
  std::string s;
  for (size_t i = 0; i < operands.size(); ++i) s += (i ? " | " : "") + JoinPlacements(operands[i]);
  return s;
}

void SelectRedistribute(Selection& sel, int64_t id) {
  sel.redistribute_id = id;
  sel.step = 0;
  sel.playing = false;
}

// The op's outputs: placements, global shape and `rank`'s local shape.
void OutputsTable(const trace::Op& op, int64_t rank, ImGuiTableFlags flags) {
  if (BeginHeaderTable("##op_outputs", flags, {"output", "placements", "global shape", "local shape"})) {
    for (size_t k = 0; k < op.outputs().size(); ++k) {
      const trace::OpOutput& out = op.outputs()[k];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (!out.requested) {
        ImGui::TextDisabled("%zu (not requested)", k);
        continue;
      }
      ImGui::Text("%zu %s", k, out.tensor.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(JoinPlacements(out.placements).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(FormatInts(out.global_shape).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%s (r%lld)", FormatInts(out.local_shape).c_str(), static_cast<long long>(rank));
    }
    ImGui::EndTable();
  }
}

// The op's candidate strategies, the chosen one highlighted.
// Returns the rectangle of the note on what the costs count (for --geometry).
std::array<float, 4> CandidatesTable(const trace::Op& op, ImGuiTableFlags flags) {
  ImGui::Text("candidate strategies (%zu; inputs | ... -> outputs)", op.candidates().size());
  // What the costs count (a chosen 0.00 us beside candidates at tens of us reads as a bug otherwise).
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled(
      "cost: predicted time to redistribute the inputs to the strategy's placements "
      "(PyTorch redistribute_cost, us); the op's own compute is not counted, so a "
      "strategy that takes the inputs as they are costs 0");
  ImGui::PopTextWrapPos();
  const ImVec2 note0 = ImGui::GetItemRectMin(), note1 = ImGui::GetItemRectMax();
  if (ImGui::BeginTable("##op_candidates", 4, flags | ImGuiTableFlags_ScrollY, ImVec2(0, 0))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    SetupColumns({"#", "inputs", "outputs", "cost"});
    ImGui::TableHeadersRow();
    for (size_t c = 0; c < op.candidates().size(); ++c) {
      const trace::OpStrategy& s = op.candidates()[c];
      bool chosen = static_cast<int64_t>(c) == op.chosen();
      ImGui::TableNextRow();
      if (chosen) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(120, 95, 20, 200));
      ImGui::TableNextColumn();
      ImGui::Text("%zu%s", c, chosen ? " chosen" : "");
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(Operands(s.inputs).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(Operands(s.outputs).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(CostText(s.cost_us).c_str());
    }
    ImGui::EndTable();
  }
  return {note0.x, note0.y, note1.x, note1.y};
}

}  // namespace

void ProgramPanel::Prepare(const ViewContext& ctx) {
  if (ctx.model == key_model_ && ctx.model_serial == key_serial_ &&
      metrics_.char_w == built_metrics_.char_w && metrics_.line_h == built_metrics_.line_h &&
      metrics_.width == built_metrics_.width)
    return;
  key_model_ = ctx.model, key_serial_ = ctx.model_serial;
  built_metrics_ = metrics_;
  view_ = ctx.model ? BuildProgramView(*ctx.model, metrics_) : ProgramView{};
  seen_redistribute_ = -2;
  scrolled_op_ = -2;
  frames_since_build_ = 0;
}

void ProgramPanel::Draw(ViewContext& ctx) {
  // The layout uses the real font's metrics; a change rebuilds it next frame.
  metrics_.char_w = ImGui::CalcTextSize("M").x;
  metrics_.line_h = ImGui::GetTextLineHeight() + 2.0f;
  geometry_.clear();
  shows_ = {};
  if (view_.nodes.empty()) {
    ImGui::TextDisabled(ctx.model ? "This trace has no ops (run a program file: docs/program.md)."
                                  : "No trace loaded.");
    return;
  }
  Selection& sel = *ctx.selection;
  // A redistribute selected elsewhere (list, timeline, keys) selects the op that caused it.
  if (sel.redistribute_id != seen_redistribute_) {
    bool first = seen_redistribute_ == -2;
    seen_redistribute_ = sel.redistribute_id;
    // On the first frame an op selected on the command line wins over the default redistribute.
    bool keep_op = first && sel.op_id >= 0;
    if (!keep_op && ctx.redistribute && ctx.redistribute->first &&
        ctx.redistribute->first->begin->op_id >= 0 && ctx.redistribute->id == sel.redistribute_id) {
      sel.op_id = ctx.redistribute->first->begin->op_id;
    }
  }
  if ((sel.op_id < 0 && !sel.cleared) || (sel.op_id >= 0 && view_.NodeOfOp(sel.op_id) < 0))
    sel.op_id = sel.cleared ? -1 : view_.op_ids.front();
  shows_ = {seen_redistribute_, -1, sel.op_id};
  if (sel.op_id != scrolled_op_) {
    scrolled_op_ = sel.op_id;
    scroll_to_selection_ = true;
  }
  ++frames_since_build_;

  ImVec2 avail = ImGui::GetContentRegionAvail();
  float details_w = std::clamp(avail.x * 0.38f, 300.0f, 620.0f);
  if (avail.x < 700) details_w = 0;  // narrow: graph only, details below are not shown
  const float graph_w = details_w > 0 ? avail.x - details_w - 6 : avail.x;
  // The layout fits the graph's width (beside the vertical scrollbar): op boxes in view on open.
  metrics_.width = std::floor(std::max(200.0f, graph_w - ImGui::GetStyle().ScrollbarSize - 4));
  ImGui::BeginChild("##program_graph", ImVec2(details_w > 0 ? graph_w : 0, 0), false,
                    ImGuiWindowFlags_HorizontalScrollbar);
  {
    const ImVec2 p = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
    geometry_.push_back({"graph", -1, -1, -1, "", p.x, p.y, p.x + size.x, p.y + size.y});
  }
  DrawGraph(ctx);
  ImGui::EndChild();
  if (details_w > 0) {
    ImGui::SameLine(0, 6);
    ImGui::BeginChild("##program_details", ImVec2(0, 0), true);
    DrawDetails(ctx);
    ImGui::EndChild();
  }
}

// What one frame of the graph draws with: the draw list, the graph's screen origin (P maps graph
// coordinates to the screen), the visible window rectangle, and the mouse.
struct ProgramPanel::GraphFrame {
  ImDrawList* dl;
  ImVec2 origin, clip0, clip1, mouse;
  bool hovered, clicked;
  bool click_taken = false;  // a click selects one thing: the first badge or node under it
  ImVec2 P(float x, float y) const { return ImVec2(origin.x + x, origin.y + y); }
  bool Visible(float x0, float y0, float x1, float y1) const {
    return x1 > clip0.x && x0 < clip1.x && y1 > clip0.y && y0 < clip1.y;
  }
};

void ProgramPanel::DrawGraph(ViewContext& ctx) {
  Selection& sel = *ctx.selection;
  ImGui::TextDisabled(
      "%zu ops  %lld implicit redistributes (click a badge to open it)", view_.op_ids.size(),
      static_cast<long long>(std::count_if(view_.edges.begin(), view_.edges.end(),
                                           [](const ProgramEdge& e) { return e.redistribute_id >= 0; })));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::Dummy(ImVec2(view_.width, view_.height));
  const ImVec2 clip0 = ImGui::GetWindowPos();
  const ImVec2 clip1(clip0.x + ImGui::GetWindowWidth(), clip0.y + ImGui::GetWindowHeight());
  const bool hovered = ImGui::IsWindowHovered();
  GraphFrame f{
      dl, origin, clip0, clip1, ImGui::GetIO().MousePos, hovered, hovered && ImGui::IsMouseClicked(0)};
  if (scroll_to_selection_) ScrollToSelection(sel);
  DrawEdges(f);
  DrawBadges(f, sel);
  DrawNodes(f, sel);
}

void ProgramPanel::ScrollToSelection(const Selection& sel) {
  // The first frames after a build have no settled window size or content extent (ImGui clamps a
  // scroll to the last frame's): the request waits for them.
  constexpr int kSettledFrames = 2;
  if (frames_since_build_ < kSettledFrames) return;
  int n = view_.NodeOfOp(sel.op_id);
  // Only when the op is not already in view (an op near the program's start leaves it showing).
  if (n >= 0) {
    const ProgramNode& node = view_.nodes[static_cast<size_t>(n)];
    float top = ImGui::GetScrollY(), bottom = top + ImGui::GetWindowHeight() - 40.0f;
    if (node.y0 < top || node.y1 > bottom) ImGui::SetScrollY(std::max(0.0f, node.y0 - 20.0f));
  }
  scroll_to_selection_ = false;
}

void ProgramPanel::DrawEdges(GraphFrame& f) const {
  // Edges first (under the nodes): each producer output's stub and lane once, then each consumer's
  // stub with its arrowhead. Only what meets the window is drawn: a program of 100k ops has 200k
  // edges, and drawing every one (lanes overlapping by the thousand) made each frame seconds long.
  for (const ProgramLaneSpan& s : view_.lane_spans) {
    const ImVec2 lo = f.P(std::min(s.port_x, s.x), s.y0 - 4), hi = f.P(std::max(s.port_x, s.x), s.y1 + 4);
    if (!f.Visible(lo.x, lo.y, hi.x, hi.y)) continue;
    f.dl->AddLine(f.P(s.port_x, s.y_from), f.P(s.x, s.y_from), kEdgeColor, 1.5f);
    f.dl->AddLine(f.P(s.x, s.y0), f.P(s.x, s.y1), kEdgeColor, 1.5f);
    f.dl->AddCircleFilled(f.P(s.x, s.y_from), 2.5f, kEdgeColor);
  }
  for (const ProgramEdge& e : view_.edges) {
    const ImVec2 lo = f.P(e.lane_x - 4, e.y_to - 5), hi = f.P(e.x_to, e.y_to + 5);
    if (!f.Visible(lo.x, lo.y, hi.x, hi.y)) continue;
    ImU32 col = e.redistribute_id >= 0 ? Col(kImplicitRedistributeColor, 200) : kEdgeColor;
    f.dl->AddCircleFilled(f.P(e.lane_x, e.y_to), 2.5f, kEdgeColor);
    f.dl->AddLine(f.P(e.lane_x, e.y_to), f.P(e.x_to - 6, e.y_to), col, 1.5f);
    f.dl->AddTriangleFilled(f.P(e.x_to - 7, e.y_to - 4), f.P(e.x_to - 7, e.y_to + 4), f.P(e.x_to, e.y_to),
                            col);
  }
}

void ProgramPanel::DrawBadges(GraphFrame& f, Selection& sel) {
  // Labels and implicit-redistribute badges on the consumer stubs.
  for (size_t i = 0; i < view_.edges.size(); ++i) {
    const ProgramEdge& e = view_.edges[i];
    float ty = e.y_to - ImGui::GetTextLineHeight() / 2;
    const ImVec2 label = f.P(e.label_x, ty);
    // A label or badge sits on its consumer's row, right of the label's left end.
    if (!f.Visible(label.x - 2, label.y - 2, std::numeric_limits<float>::max(),
                   label.y + ImGui::GetTextLineHeight() + 2))
      continue;
    LabelBox(f.dl, label, e.label, kLabelBg, kLabelFg);
    if (e.redistribute_id < 0) continue;
    ImVec2 a = f.P(e.marker_x0, e.marker_y0), b = f.P(e.marker_x1, e.marker_y1);
    bool selected = sel.redistribute_id == e.redistribute_id;
    bool over = f.hovered && Inside(f.mouse, a.x, a.y, b.x, b.y);
    f.dl->AddRectFilled(a, b, Col(e.imported_differs ? kDiffColor : kImplicitRedistributeColor), 3.0f);
    if (selected || over)
      f.dl->AddRect(ImVec2(a.x - 2, a.y - 2), ImVec2(b.x + 2, b.y + 2), kSelectedBorder, 3.0f, 0, 2.0f);
    f.dl->AddText(f.P(e.marker_x0 + 4, ty), IM_COL32(0, 0, 0, 255), e.marker.c_str());
    if (f.Visible(a.x, a.y, b.x, b.y)) {
      int consumer_op = static_cast<int>(view_.nodes[static_cast<size_t>(e.to_node)].op_id);
      geometry_.push_back(
          {"marker", consumer_op, e.to_input, e.redistribute_id, e.tensor, a.x, a.y, b.x, b.y});
    }
    if (over) {
      ImGui::SetTooltip(
          "implicit redistribute #%lld of %s: %s -> %s\n%s\nclick: open it in the inspector and layout",
          static_cast<long long>(e.redistribute_id), e.tensor.c_str(), JoinPlacements(e.placements).c_str(),
          JoinPlacements(e.required).c_str(), (e.marker_full.empty() ? e.marker : e.marker_full).c_str());
      if (f.clicked && !f.click_taken) {
        SelectRedistribute(sel, e.redistribute_id);
        sel.op_id = view_.nodes[static_cast<size_t>(e.to_node)].op_id;
        seen_redistribute_ = e.redistribute_id;
        f.click_taken = true;
      }
    }
  }
}

void ProgramPanel::DrawNodes(GraphFrame& f, Selection& sel) {
  const float lh = built_metrics_.line_h;
  // Nodes.
  for (const ProgramNode& n : view_.nodes) {
    ImVec2 a = f.P(n.x0, n.y0), b = f.P(n.x1, n.y1);
    if (!f.Visible(a.x, a.y, b.x, b.y)) continue;
    bool over = f.hovered && Inside(f.mouse, a.x, a.y, b.x, b.y);
    if (n.kind == ProgramNode::Kind::kInput) {
      f.dl->AddRectFilled(a, b, kInputBg, 3.0f);
      f.dl->AddRect(a, b, kNodeBorder, 3.0f);
      f.dl->AddText(ImVec2(a.x + 6, (a.y + b.y - ImGui::GetTextLineHeight()) / 2), kLabelFg,
                    n.output_rows.front().c_str());
      geometry_.push_back({"input", -1, -1, -1, n.tensor, a.x, a.y, b.x, b.y});
      if (over) ImGui::SetTooltip("program input %s", n.tensor.c_str());
      continue;
    }
    bool is_op = n.kind == ProgramNode::Kind::kOp;
    bool selected = is_op ? sel.op_id == n.op_id : sel.redistribute_id == n.redistribute_id;
    f.dl->AddRectFilled(a, b, is_op ? kNodeBg : kRedistributeNodeBg, 4.0f);
    f.dl->AddRect(a, b,
                  !n.ok                ? kFailedBorder
                  : selected           ? kSelectedBorder
                  : n.imported_differs ? Col(kDiffColor)
                                       : kNodeBorder,
                  4.0f, 0, selected || !n.ok || n.imported_differs ? 2.0f : 1.0f);
    float y = n.y0 + 4;
    for (size_t k = 0; k < n.lines.size(); ++k, y += lh)
      f.dl->AddText(f.P(n.x0 + 8, y), k == 0 ? kLabelFg : kDimText, n.lines[k].c_str());
    if (!n.note.empty()) {
      std::string text = "! differs from PyTorch: " + n.note;
      size_t max_chars = static_cast<size_t>(std::max(8.0f, (n.x1 - n.x0 - 16) / built_metrics_.char_w));
      if (text.size() > max_chars) text = text.substr(0, max_chars - 3) + "...";
      f.dl->AddText(f.P(n.x0 + 8, y), Col(kNoteColor), text.c_str());
      y += lh;
    }
    if (!n.halo.empty()) {
      ImVec2 h0 = f.P(n.x0 + 6, y - 1);
      ImVec2 h1(h0.x + ImGui::CalcTextSize(n.halo.c_str()).x + 8, h0.y + lh);
      f.dl->AddRectFilled(h0, h1, Col(kHaloColor), 3.0f);
      f.dl->AddText(ImVec2(h0.x + 4, h0.y + 1), IM_COL32(0, 0, 0, 255), n.halo.c_str());
      geometry_.push_back({"halo", n.op_id, -1, -1, "", h0.x, h0.y, h1.x, h1.y});
      y += lh;
    }
    for (size_t k = 0; k < n.input_rows.size(); ++k) {
      f.dl->AddText(f.P(n.x0 + 8, n.input_y[k] - ImGui::GetTextLineHeight() / 2), kDimText,
                    ("in " + std::to_string(k) + ": " + n.input_rows[k]).c_str());
    }
    for (size_t k = 0; k < n.output_rows.size(); ++k) {
      f.dl->AddText(f.P(n.x0 + 8, n.output_y[k] - ImGui::GetTextLineHeight() / 2), kLabelFg,
                    n.output_rows[k].c_str());
      f.dl->AddCircleFilled(f.P(n.x0, n.output_y[k]), 3.0f, kEdgeColor);
    }
    geometry_.push_back(
        {is_op ? "op" : "redistribute", n.op_id, -1, n.redistribute_id, n.tensor, a.x, a.y, b.x, b.y});
    if (over && f.clicked && !f.click_taken) {
      f.click_taken = true;
      if (is_op) {
        sel.op_id = n.op_id;
      } else {
        SelectRedistribute(sel, n.redistribute_id);
        seen_redistribute_ = n.redistribute_id;
      }
    }
  }
}

void ProgramPanel::DrawDetails(ViewContext& ctx) {
  Selection& sel = *ctx.selection;
  int index = view_.NodeOfOp(sel.op_id);
  if (index < 0) return;
  const ProgramNode& n = view_.nodes[static_cast<size_t>(index)];
  const trace::Op& op = n.op->op;
  ImGui::Text("op #%lld  %s%s", static_cast<long long>(op.id), op.name().c_str(),
              op.args().empty() ? "" : ("(" + op.args() + ")").c_str());
  ImGui::TextDisabled("program step %lld, rank %lld's event", static_cast<long long>(op.step),
                      static_cast<long long>(n.op->rank));
  if (!op.ok()) ImGui::TextColored(ImVec4(1, 0.3f, 0.3f, 1), "failed: %s", op.error().c_str());
  ImGui::TextWrapped("rule: %s", op.rule().c_str());
  if (!op.note().empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, Col4(kNoteColor));
    ImGui::TextWrapped("! differs from PyTorch: %s", op.note().c_str());
    ImGui::PopStyleColor();
  }
  if (!n.halo.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, Col4(kHaloColor));
    ImGui::TextWrapped("%s", n.halo.c_str());
    ImGui::PopStyleColor();
  }
  ImGui::Spacing();
  ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  DrawInputs(op, sel, flags);
  ImGui::Spacing();
  OutputsTable(op, n.op->rank, flags);
  ImGui::Spacing();
  const auto note = CandidatesTable(op, flags);
  geometry_.push_back({"cost_note", op.id, -1, -1, "", note[0], note[1], note[2], note[3]});
}

// The op's inputs: current and required placements, and a button opening each implicit redistribute.
void ProgramPanel::DrawInputs(const trace::Op& op, Selection& sel, int flags) {
  if (BeginHeaderTable("##op_inputs", flags, {"input", "current", "required", "implicit redistribute"})) {
    for (size_t i = 0; i < op.inputs().size(); ++i) {
      const trace::OpInput& in = op.inputs()[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%zu %s", i, in.tensor.empty() ? "(none)" : in.tensor.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(JoinPlacements(in.placements).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(JoinPlacements(in.required).c_str());
      ImGui::TableNextColumn();
      if (in.redistribute_id >= 0) {
        std::string label = "open #" + std::to_string(in.redistribute_id) + "##in" + std::to_string(i);
        ImGui::PushStyleColor(ImGuiCol_Button, Col4(kImplicitRedistributeColor));
        ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0, 0, 0, 1));
        if (ImGui::SmallButton(label.c_str())) {
          SelectRedistribute(sel, in.redistribute_id);
          seen_redistribute_ = in.redistribute_id;
        }
        ImGui::PopStyleColor(2);
      } else {
        ImGui::TextDisabled("none");
      }
    }
    ImGui::EndTable();
  }
}

}  // namespace shardscope::app::gui
