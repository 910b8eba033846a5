#include "panels/diff_panel.hpp"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include <imgui.h>

#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

constexpr float kStripeWidth = 10.0f;
constexpr float kMarkerColumn = 44.0f;
const char* kSideNames[2] = {"baseline", "candidate"};

ImU32 Im(Rgb c, uint8_t alpha = 255) { return PackAbgr(c, alpha); }

// The stripe and textual marker of a differing row, at the left of the row's first cell.
void DrawMarker(DiffRowGeometry& g, ImVec2 row_min, ImVec2 row_max, std::string_view marker) {
  if (marker.empty()) return;
  ImDrawList* list = ImGui::GetWindowDrawList();
  g.mx0 = row_min.x, g.my0 = row_min.y, g.mx1 = row_min.x + kStripeWidth, g.my1 = row_max.y;
  list->AddRectFilled(ImVec2(g.mx0, g.my0), ImVec2(g.mx1, g.my1), Im(kDiffColor));
  std::string text(marker);
  list->AddText(ImVec2(g.mx1 + 5, row_min.y + (row_max.y - row_min.y - ImGui::GetTextLineHeight()) * 0.5f),
                IM_COL32(255, 235, 245, 255), text.c_str());
}

}  // namespace

void DiffPanel::Prepare(const trace::Model* baseline, const std::string& baseline_label,
                        const trace::Model* candidate, const std::string& candidate_label,
                        GlRenderer* renderer) {
  for (auto [side, model, label] : {std::tuple{&sides_[0], baseline, &baseline_label},
                                    std::tuple{&sides_[1], candidate, &candidate_label}}) {
    if (side->model != model) ++side->serial;  // see ViewContext::model_serial
    side->model = model, side->label = *label;
  }
  if (key_baseline_ != baseline || key_candidate_ != candidate) {
    key_baseline_ = baseline, key_candidate_ = candidate;
    built_ = baseline && candidate;
    diff_ = built_ ? BuildDiffView(*baseline, *candidate) : DiffView{};
    totals_ = built_ ? CompareKindTotals(*baseline, *candidate) : std::vector<KindTotals>{};
    selected_ = -1;
    steps_row_ = -2;
  }
  if (built_ && selected_ < 0 && !diff_.rows.empty()) {
    selected_ = 0;
    if (pending_id_ >= 0) {
      auto has = [&](const DiffRow& r, bool baseline_side) {
        const auto& id = baseline_side ? r.baseline_id : r.candidate_id;
        return id && *id == pending_id_;
      };
      auto it =
          std::find_if(diff_.rows.begin(), diff_.rows.end(), [&](const DiffRow& r) { return has(r, true); });
      if (it == diff_.rows.end())
        it = std::find_if(diff_.rows.begin(), diff_.rows.end(),
                          [&](const DiffRow& r) { return has(r, false); });
      if (it != diff_.rows.end()) selected_ = it - diff_.rows.begin();
    } else {
      auto it =
          std::find_if(diff_.rows.begin(), diff_.rows.end(), [](const DiffRow& r) { return r.differs(); });
      if (it != diff_.rows.end()) selected_ = it - diff_.rows.begin();
    }
    scroll_to_selected_ = true;
  }
  const DiffRow* row = SelectedRow();
  for (int k = 0; k < 2; ++k) {
    Side& s = sides_[k];
    std::optional<int64_t> id;
    if (row) id = k == 0 ? row->baseline_id : row->candidate_id;
    int64_t want = id ? *id : -1;
    if (s.model && (s.view_model != s.model || s.view_serial != s.serial || s.view_id != want)) {
      s.view = want >= 0 ? BuildRedistributeView(*s.model, want) : RedistributeView{};
      s.view_model = s.model, s.view_serial = s.serial, s.view_id = want;
    }
    s.selection.redistribute_id = want;
    s.selection.step = std::clamp<int64_t>(step_, 0, std::max<int64_t>(0, s.view.num_steps() - 1));
    s.ctx =
        ViewContext{s.model, s.model && s.view.first ? &s.view : nullptr, &s.selection, renderer, s.serial};
    s.layout.Prepare(s.ctx);
  }
  if (steps_row_ != selected_) {
    steps_row_ = selected_;
    const trace::RedistributeBegin* b = sides_[0].view.first ? &*sides_[0].view.first->begin : nullptr;
    const trace::RedistributeBegin* c = sides_[1].view.first ? &*sides_[1].view.first->begin : nullptr;
    steps_ = row ? DiffSteps(diff_, *row, b, c) : std::vector<DiffStepRow>{};
    compare_ = row ? ComparePair(sides_[0].model, row->baseline_id.value_or(-1), sides_[1].model,
                                 row->candidate_id.value_or(-1))
                   : std::vector<DiffCompareRow>{};
  }
  // Not while loading: --step must survive until the diff exists.
  int64_t max_step = std::max<int64_t>(0, static_cast<int64_t>(steps_.size()) - 1);
  if (built_) step_ = std::clamp<int64_t>(step_, 0, max_step);
}

void DiffPanel::HandleKeys(const KeyTaps& taps) {
  int64_t rows = static_cast<int64_t>(diff_.rows.size());
  for (int i = 0; i < taps.Count(InputKey::kDown) && selected_ + 1 < rows; ++i)
    ++selected_, step_ = 0, scroll_to_selected_ = true;
  for (int i = 0; i < taps.Count(InputKey::kUp) && selected_ > 0; ++i)
    --selected_, step_ = 0, scroll_to_selected_ = true;
  const int64_t delta = taps.Count(InputKey::kRight) - taps.Count(InputKey::kLeft);
  int64_t max_step = std::max<int64_t>(0, static_cast<int64_t>(steps_.size()) - 1);
  if (delta != 0) step_ = std::clamp<int64_t>(step_ + delta, 0, max_step);
}

void DiffPanel::DrawCompare(float width, float height) {
  ImGui::BeginChild("##diff_compare", ImVec2(width, height), true);
  ImGui::TextColored(ImVec4(0.55f, 0.80f, 1.0f, 1.0f), "The selected pair, side by side");
  ImGui::SameLine();
  ImGui::TextDisabled("(!= differs; bytes: what ranks sent; measured marked beyond 10%%)");
  ImGuiTableFlags flags = ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg;
  if (ImGui::BeginTable("##diff_compare_table", 5, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, kMarkerColumn);
    ImGui::TableSetupColumn("what", ImGuiTableColumnFlags_WidthStretch, 1.2f);
    ImGui::TableSetupColumn("baseline", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableSetupColumn("candidate", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableSetupColumn("change", ImGuiTableColumnFlags_WidthFixed, 70.0f);
    ImGui::TableHeadersRow();
    for (const DiffCompareRow& r : compare_) {
      ImGui::TableNextRow();
      if (r.differs) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(120, 80, 20, 90));
      ImGui::TableNextColumn();
      if (r.differs) ImGui::TextColored(ImVec4(1.0f, 0.75f, 0.35f, 1), "!=");
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(r.what.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(r.baseline.empty() ? "-" : r.baseline.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(r.candidate.empty() ? "-" : r.candidate.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(r.change.c_str());
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
}

void DiffPanel::DrawTotals(float height) {
  ImGui::BeginChild("##diff_totals", ImVec2(0, height), true);
  ImGui::TextColored(ImVec4(0.55f, 0.80f, 1.0f, 1.0f), "Per collective kind");
  ImGui::SameLine();
  ImGui::TextDisabled("(rank-side calls, bytes sent, time in collectives; baseline / candidate)");
  ImGuiTableFlags flags = ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg;
  if (ImGui::BeginTable("##diff_totals_table", 4, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* c : {"kind", "calls", "bytes", "time"}) ImGui::TableSetupColumn(c);
    ImGui::TableHeadersRow();
    for (const KindTotals& t : totals_) {
      ImGui::TableNextRow();
      const bool differs = t.calls[0] != t.calls[1] || t.bytes[0] != t.bytes[1];
      if (differs) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(120, 80, 20, 90));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(t.kind.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%lld / %lld", static_cast<long long>(t.calls[0]), static_cast<long long>(t.calls[1]));
      ImGui::TableNextColumn();
      ImGui::Text("%s / %s", FormatBytes(static_cast<double>(t.bytes[0])).c_str(),
                  FormatBytes(static_cast<double>(t.bytes[1])).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%s / %s", FormatTimeNs(static_cast<double>(t.time_ns[0])).c_str(),
                  FormatTimeNs(static_cast<double>(t.time_ns[1])).c_str());
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
}

std::vector<DiffCanvasGeometry> DiffPanel::canvases() const {
  std::vector<DiffCanvasGeometry> out;
  for (int k = 0; k < 2; ++k)
    for (const CanvasGeometry& c : sides_[k].layout.geometry()) out.push_back({kSideNames[k], c});
  return out;
}

void DiffPanel::Draw() {
  row_geometry_.clear();
  step_geometry_.clear();
  SectionTitle("Diff: baseline vs candidate");
  for (int k = 0; k < 2; ++k) {
    const Side& s = sides_[k];
    if (k) ImGui::SameLine(0, 30);
    ImGui::TextDisabled("%s:", kSideNames[k]);
    ImGui::SameLine();
    if (s.model) {
      ImGui::Text("%s  (%lld ranks)", s.label.c_str(), static_cast<long long>(s.model->world));
    } else {
      ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1), "%s  (not loaded)", s.label.c_str());
    }
  }
  if (!built_) {
    ImGui::TextDisabled("The diff appears once both traces are loaded (a trace that failed is named above).");
    return;
  }
  ImVec4 summary_colour = diff_.result.differences.empty() ? ImVec4(0.5f, 0.9f, 0.5f, 1)
                          : diff_.result.Failed()          ? ImVec4(1.0f, 0.55f, 0.45f, 1)
                                                           : ImVec4(1.0f, 0.8f, 0.4f, 1);
  ImGui::TextColored(summary_colour, "%s", diff_.summary.c_str());
  for (size_t d : diff_.run_differences)
    ImGui::TextColored(ImVec4(1, 0.6f, 0.5f, 1), "%s", diff_.lines[d].c_str());
  if (!diff_.error.empty()) ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "%s", diff_.error.c_str());

  // Each region takes what its content needs up to a share of the height; the layouts get the rest.
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImGuiStyle& style = ImGui::GetStyle();
  float line = ImGui::GetTextLineHeightWithSpacing();
  float row = ImGui::GetTextLineHeight() + 2 * style.CellPadding.y;
  float frame = 2 * style.WindowPadding.y + style.ScrollbarSize;
  auto fit = [&](float want, float lo, float share) {
    return std::clamp(want, lo, std::max(lo, avail.y * share));
  };
  const DiffRow* selected = SelectedRow();
  size_t lines = selected ? selected->differences.size() : 0;
  float rows_h = fit(line + row * static_cast<float>(diff_.rows.size() + 1) + frame, 90.0f, 0.28f);
  float diffs_h = fit(line * static_cast<float>(lines + 1) + frame, 60.0f, 0.20f);
  float steps_h = fit(line + row * static_cast<float>(steps_.size() + 1) + frame, 80.0f, 0.22f);
  float gap = ImGui::GetStyle().ItemSpacing.x;
  DrawRows(rows_h);
  DrawDifferences(diffs_h);
  float half = (avail.x - gap) * 0.5f;
  const float compare_h = fit(
      line + row * static_cast<float>(std::max(compare_.size(), totals_.size()) + 1) + frame, 80.0f, 0.24f);
  DrawCompare(avail.x * 0.58f, compare_h);
  ImGui::SameLine(0, gap);
  DrawTotals(compare_h);
  DrawSteps(0, half, steps_h);
  ImGui::SameLine(0, gap);
  DrawSteps(1, half, steps_h);
  DrawLayout(0, half, 0);
  ImGui::SameLine(0, gap);
  DrawLayout(1, half, 0);
}

void DiffPanel::DrawRows(float height) {
  ImGui::BeginChild("##diff_rows", ImVec2(0, height), true);
  ImGui::TextColored(ImVec4(0.55f, 0.80f, 1.0f, 1.0f), "Redistributes, aligned");
  ImGui::SameLine();
  ImGui::TextDisabled("(%zu rows; != changed, - baseline only, + candidate only)", diff_.rows.size());
  ImGuiTableFlags flags = ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg;
  if (ImGui::BeginTable("##diff_rows_table", 3, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, kMarkerColumn);
    ImGui::TableSetupColumn("baseline", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("candidate", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(diff_.rows.size()));
    if (scroll_to_selected_ && selected_ >= 0)
      clipper.ForceDisplayRangeByIndices(static_cast<int>(selected_), static_cast<int>(selected_) + 1);
    while (clipper.Step()) {
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const DiffRow& r = diff_.rows[static_cast<size_t>(i)];
        ImGui::TableNextRow();
        if (r.differs()) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, Im(kDiffTintColor));
        ImGui::TableNextColumn();
        ImGui::PushID(i);
        bool selected = i == selected_;
        if (ImGui::Selectable("##row", selected, ImGuiSelectableFlags_SpanAllColumns)) {
          if (!selected) step_ = 0;
          selected_ = i;
        }
        if (selected && scroll_to_selected_) {
          ImGui::SetScrollHereY(0.5f);
          scroll_to_selected_ = false;
        }
        ImGui::PopID();
        ImVec2 rmin = ImGui::GetItemRectMin(), rmax = ImGui::GetItemRectMax();
        DiffRowGeometry g;
        g.row = i;
        g.kind = std::string(DiffRowKindName(r.kind));
        g.baseline_id = r.baseline_id, g.candidate_id = r.candidate_id;
        g.x0 = rmin.x, g.y0 = rmin.y, g.x1 = rmax.x, g.y1 = rmax.y;
        DrawMarker(g, rmin, rmax, DiffRowMarker(r.kind));
        row_geometry_.push_back(g);
        ImGui::TableNextColumn();
        if (r.baseline_id) {
          ImGui::TextUnformatted(r.baseline_text.c_str());
        } else {
          ImGui::TextDisabled("   (not in baseline)");
        }
        ImGui::TableNextColumn();
        if (r.candidate_id) {
          ImGui::TextUnformatted(r.candidate_text.c_str());
        } else {
          ImGui::TextDisabled("   (not in candidate)");
        }
      }
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
}

void DiffPanel::DrawDifferences(float height) {
  ImGui::BeginChild("##diff_lines", ImVec2(0, height), true, ImGuiWindowFlags_HorizontalScrollbar);
  const DiffRow* row = SelectedRow();
  ImGui::TextColored(ImVec4(0.55f, 0.80f, 1.0f, 1.0f), "Differences of the selected row");
  if (row) {
    ImGui::SameLine();
    ImGui::TextDisabled("(%zu, as `shardscope diff` prints them)", row->differences.size());
    if (row->differences.empty())
      ImGui::TextDisabled("none: same planner, plans, collectives, bytes, shard shapes and predicted cost");
    for (size_t d : row->differences) {
      bool failing = diff_.result.differences[d].failing;
      ImGui::TextColored(failing ? ImVec4(1.0f, 0.72f, 0.62f, 1) : ImVec4(0.75f, 0.75f, 0.78f, 1), "%s",
                         diff_.lines[d].c_str());
    }
  }
  ImGui::EndChild();
}

void DiffPanel::DrawSteps(int side, float width, float height) {
  const Side& s = sides_[side];
  char id[32];
  std::snprintf(id, sizeof id, "##diff_steps_%d", side);
  ImGui::BeginChild(id, ImVec2(width, height), true);
  const RedistributeView& v = s.view;
  ImGui::TextColored(ImVec4(0.55f, 0.80f, 1.0f, 1.0f), "%s steps", side == 0 ? "Baseline" : "Candidate");
  if (!v.first) {
    ImGui::SameLine();
    ImGui::TextDisabled("%s",
                        SelectedRow() ? "(no matching redistribute on this side)" : "(no row selected)");
    ImGui::EndChild();
    return;
  }
  ImGui::SameLine();
  ImGui::TextDisabled("#%lld", static_cast<long long>(v.id));
  ImGui::SameLine();
  NotationText(v.first->begin->notation, std::min<int64_t>(step_, std::max<int64_t>(0, v.num_steps() - 1)));
  ImGuiTableFlags flags =
      ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY;
  std::snprintf(id, sizeof id, "##diff_steps_table_%d", side);
  if (ImGui::BeginTable(id, 7, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, kMarkerColumn);
    ImGui::TableSetupColumn("#");
    SetupPlanStepColumns();
    ImGui::TableHeadersRow();
    const auto& plan = v.first->begin->optimized_plan;
    for (const DiffStepRow& st : steps_) {
      ImGui::TableNextRow();
      if (st.differs) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, Im(kDiffTintColor));
      ImGui::TableNextColumn();
      ImGui::PushID(static_cast<int>(st.step));
      if (ImGui::Selectable("##step", st.step == step_, ImGuiSelectableFlags_SpanAllColumns)) step_ = st.step;
      ImGui::PopID();
      ImVec2 rmin = ImGui::GetItemRectMin(), rmax = ImGui::GetItemRectMax();
      DiffRowGeometry g;
      g.row = st.step;
      g.kind = st.differs ? "changed" : "same";
      g.side = kSideNames[side];
      g.x0 = rmin.x, g.y0 = rmin.y, g.x1 = rmax.x, g.y1 = rmax.y;
      DrawMarker(g, rmin, rmax, st.differs ? "!=" : "");
      step_geometry_.push_back(g);
      size_t k = static_cast<size_t>(st.step);
      ImGui::TableNextColumn();
      ImGui::Text("%zu", k);
      if (k >= plan.size()) {
        ImGui::TableNextColumn();
        ImGui::TextDisabled("(no such step)");
        continue;
      }
      const trace::PlanStep& p = plan[k];
      PlanStepCells(p, FormatInts(p.mesh_dims));
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
}

void DiffPanel::DrawLayout(int side, float width, float height) {
  Side& s = sides_[side];
  char id[32];
  std::snprintf(id, sizeof id, "##diff_layout_%d", side);
  ImGui::BeginChild(id, ImVec2(width, height), true, ImGuiWindowFlags_NoScrollWithMouse);
  ImGui::TextColored(ImVec4(0.55f, 0.80f, 1.0f, 1.0f), "%s layout", side == 0 ? "Baseline" : "Candidate");
  ImGui::Separator();
  if (!s.ctx.redistribute) {
    ImGui::TextDisabled("%s", SelectedRow() ? "no matching redistribute on this side" : "no row selected");
  } else {
    s.layout.Draw(s.ctx);
  }
  ImGui::EndChild();
}

}  // namespace shardscope::app::gui
