#include "panels/diff_panel.hpp"

#include <algorithm>
#include <cmath>
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
    for (int k = 0; k < 2; ++k) {
      const trace::Model* m = k == 0 ? baseline : candidate;
      timelines_[k] = built_ ? BuildTimeline(*m) : TimelineData{};
    }
    const int64_t longest =
        std::max(timelines_[0].t1 - timelines_[0].t0, timelines_[1].t1 - timelines_[1].t0);
    overlay_start_ = 0, overlay_end_ = static_cast<double>(std::max<int64_t>(longest, 1)) * 1.02;
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
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled(
      "(rank-side calls, bytes sent, time in collectives; each cell the baseline above the candidate, "
      "in the overlay's colours)");
  ImGui::PopTextWrapPos();
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
      // Baseline above candidate, in the overlaid timelines' colours (narrow panels keep every digit).
      auto pair = [](const std::string& a, const std::string& b) {
        ImGui::TextColored(ImVec4(0.55f, 0.72f, 1.0f, 1.0f), "%s", a.c_str());
        ImGui::TextColored(ImVec4(1.0f, 0.68f, 0.38f, 1.0f), "%s", b.c_str());
      };
      ImGui::TableNextColumn();
      pair(std::to_string(t.calls[0]), std::to_string(t.calls[1]));
      ImGui::TableNextColumn();
      pair(FormatBytes(static_cast<double>(t.bytes[0])), FormatBytes(static_cast<double>(t.bytes[1])));
      ImGui::TableNextColumn();
      pair(FormatTimeNs(static_cast<double>(t.time_ns[0])), FormatTimeNs(static_cast<double>(t.time_ns[1])));
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
}

void DiffPanel::DrawOverlay(float height) {
  ImGui::BeginChild("##diff_overlay", ImVec2(0, height), true,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  static constexpr Rgb kSide[2] = {{90, 150, 230}, {240, 150, 60}};
  ImGui::TextColored(ImVec4(0.55f, 0.80f, 1.0f, 1.0f), "Timelines, overlaid");
  ImGui::SameLine();
  for (int k = 0; k < 2; ++k) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetTextLineHeight();
    ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + h, p.y + h), Im(kSide[k]));
    ImGui::Dummy(ImVec2(h, h));
    ImGui::SameLine();
    ImGui::TextDisabled("%s %s%s", k == 0 ? "baseline (upper half)" : "candidate (lower half)",
                        FormatTimeNs(static_cast<double>(timelines_[k].t1 - timelines_[k].t0)).c_str(),
                        k == 0 ? "," : "");
    ImGui::SameLine();
  }
  ImGui::TextDisabled("(time from each run's first event; selected pair bright; click a bar to select)");
  const DiffRow* row = SelectedRow();
  const int64_t sel[2] = {row && row->baseline_id ? *row->baseline_id : -1,
                          row && row->candidate_id ? *row->candidate_id : -1};
  // Lanes: one per rank up to 32 ranks, else one lane holding every rank's bars.
  const int64_t ranks =
      static_cast<int64_t>(std::max(timelines_[0].lane_rank.size(), timelines_[1].lane_rank.size()));
  const bool per_rank = ranks <= 32;
  const int64_t lanes = per_rank ? std::max<int64_t>(ranks, 1) : 1;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  avail.y = std::max(avail.y, 30.0f);
  ImGui::InvisibleButton("##overlay_canvas", avail);
  const bool hovered = ImGui::IsItemHovered(), clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  constexpr float kAxis = 16.0f, kLabels = 40.0f;
  const float x0 = origin.x + kLabels, x1 = origin.x + avail.x - 4, y0 = origin.y + kAxis;
  const float y1 = origin.y + avail.y;
  const float lane_h = std::max(4.0f, (y1 - y0) / static_cast<float>(lanes));
  ImGuiIO& io = ImGui::GetIO();
  double span = std::max(1.0, overlay_end_ - overlay_start_);
  // Wheel zooms around the pointer, as on the main timeline.
  if (hovered && io.MouseWheel != 0.0f && io.MousePos.x >= x0) {
    const double at = overlay_start_ + (io.MousePos.x - x0) / std::max(1.0f, x1 - x0) * span;
    const double factor = std::pow(0.8, io.MouseWheel);
    overlay_start_ = at - (at - overlay_start_) * factor;
    overlay_end_ = overlay_start_ + span * factor;
    span = std::max(1.0, overlay_end_ - overlay_start_);
  }
  ImDrawList* list = ImGui::GetWindowDrawList();
  auto to_x = [&](double t) { return x0 + static_cast<float>((t - overlay_start_) / span * (x1 - x0)); };
  // Axis.
  const double raw = span / 8.0;
  const double p10 = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  double tick = 10 * p10;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * p10) {
      tick = m * p10;
      break;
    }
  }
  list->PushClipRect(ImVec2(x0, origin.y), ImVec2(x1, y1), true);
  for (double t = std::ceil(overlay_start_ / tick) * tick; t <= overlay_end_; t += tick) {
    const float x = to_x(t);
    list->AddLine(ImVec2(x, y0 - 4), ImVec2(x, y1), IM_COL32(255, 255, 255, 22));
    list->AddText(ImVec2(x + 2, origin.y), IM_COL32(170, 170, 180, 255), FormatTimeNs(t).c_str());
  }
  list->PopClipRect();
  overlay_ = {};
  overlay_.shown = true;
  overlay_.x0 = x0, overlay_.y0 = y0, overlay_.x1 = x1, overlay_.y1 = y1;
  overlay_.view_start_ns = overlay_start_, overlay_.view_end_ns = overlay_end_;
  overlay_.lanes = lanes, overlay_.per_rank = per_rank;
  const DiffOverlayBar* hit = nullptr;
  std::vector<DiffOverlayBar> hits;
  list->PushClipRect(ImVec2(origin.x, y0), ImVec2(x1, y1), true);
  const int64_t min_ns = std::max<int64_t>(1, static_cast<int64_t>(span / std::max(1.0f, x1 - x0)));
  for (int64_t lane = 0; lane < lanes; ++lane) {
    const float ly = y0 + static_cast<float>(lane) * lane_h;
    if (per_rank && lane_h >= 10) {
      const std::string label = "r" + std::to_string(lane);
      list->AddText(ImVec2(origin.x + 2, ly + (lane_h - ImGui::GetTextLineHeight()) / 2),
                    IM_COL32(220, 220, 225, 255), label.c_str());
    }
    if (lane > 0) list->AddLine(ImVec2(x0, ly), ImVec2(x1, ly), IM_COL32(255, 255, 255, 30));
    for (int k = 0; k < 2; ++k) {
      const TimelineData& d = timelines_[k];
      const float top = ly + 1 + (k == 0 ? 0 : lane_h / 2), bottom = ly + (k == 0 ? lane_h / 2 : lane_h - 1);
      for (const bool op : {true, false}) {
        std::vector<TimelineSpan> merged;
        const std::vector<TimelineSpan>* spans = nullptr;
        if (per_rank) {
          const auto& lanes_of = op ? d.ops : d.bars;
          if (lane >= static_cast<int64_t>(lanes_of.size())) continue;
          spans = &lanes_of[static_cast<size_t>(lane)];
        } else {
          for (const auto& l : op ? d.ops : d.bars) merged.insert(merged.end(), l.begin(), l.end());
          std::sort(merged.begin(), merged.end(),
                    [](const TimelineSpan& a, const TimelineSpan& b) { return a.start < b.start; });
          spans = &merged;
        }
        const int64_t vs = d.t0 + static_cast<int64_t>(overlay_start_),
                      ve = d.t0 + static_cast<int64_t>(overlay_end_);
        ForEachLodItem(*spans, 0, vs, ve, min_ns, [&](size_t i, size_t count, int64_t a, int64_t b) {
          const TimelineSpan& sp = (*spans)[i];
          const bool selected = !op && count == 1 && sp.redistribute_id == sel[k];
          float bx0 = std::max(to_x(static_cast<double>(a - d.t0)), x0 - 2);
          float bx1 = std::min(to_x(static_cast<double>(b - d.t0)), x1 + 2);
          if (bx1 - bx0 < 1.0f) bx1 = bx0 + 1.0f;
          const Rgb c = op ? Rgb{60, 110, 110} : kSide[k];
          list->AddRectFilled(ImVec2(bx0, top), ImVec2(bx1, bottom), Im(c, selected ? 255 : 150));
          if (selected) list->AddRect(ImVec2(bx0, top), ImVec2(bx1, bottom), IM_COL32(255, 255, 255, 230));
          DiffOverlayBar bar{k, per_rank ? lane : 0, sp.redistribute_id, op, selected, bx0, top, bx1, bottom};
          if (count == 1 && overlay_.bars.size() < 2000) overlay_.bars.push_back(bar);
          if (count == 1 && !op && io.MousePos.x >= bx0 && io.MousePos.x < bx1 && io.MousePos.y >= top &&
              io.MousePos.y < bottom)
            hits.push_back(bar);
        });
      }
    }
  }
  list->PopClipRect();
  for (int k = 0; k < 2; ++k) overlay_.duration_ns[k] = timelines_[k].t1 - timelines_[k].t0;
  if (!hits.empty()) hit = &hits.back();
  if (hit && hovered) {
    ImGui::BeginTooltip();
    ImGui::Text("%s: redistribute #%lld on %s", hit->side == 0 ? "baseline" : "candidate",
                static_cast<long long>(hit->id),
                per_rank ? ("r" + std::to_string(hit->lane)).c_str() : "some rank");
    ImGui::TextDisabled("click: select its row");
    ImGui::EndTooltip();
  }
  if (hit && clicked) {  // select the row holding that redistribute on that side
    for (size_t i = 0; i < diff_.rows.size(); ++i) {
      const auto& id = hit->side == 0 ? diff_.rows[i].baseline_id : diff_.rows[i].candidate_id;
      if (id && *id == hit->id) {
        if (static_cast<int64_t>(i) != selected_) step_ = 0;
        selected_ = static_cast<int64_t>(i);
        scroll_to_selected_ = true;
        break;
      }
    }
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
  // Shares sum to 0.70 at most: the layouts keep a third of the height even in a 1280x720 window.
  float rows_h = fit(line + row * static_cast<float>(diff_.rows.size() + 1) + frame, 90.0f, 0.16f);
  float diffs_h = fit(line * static_cast<float>(lines + 1) + frame, 60.0f, 0.10f);
  float steps_h = fit(line + row * static_cast<float>(steps_.size() + 1) + frame, 70.0f, 0.12f);
  const size_t overlay_lanes = std::max(timelines_[0].lane_rank.size(), timelines_[1].lane_rank.size());
  const float overlay_h = fit(
      line + 16 + 22.0f * static_cast<float>(overlay_lanes <= 32 ? std::max<size_t>(overlay_lanes, 1) : 2) +
          frame,
      70.0f, 0.14f);
  float gap = ImGui::GetStyle().ItemSpacing.x;
  DrawRows(rows_h);
  DrawDifferences(diffs_h);
  DrawOverlay(overlay_h);
  float half = (avail.x - gap) * 0.5f;
  const float compare_h =
      fit(line + row * static_cast<float>(std::max(compare_.size(), 2 * totals_.size()) + 2) + frame, 80.0f,
          0.18f);
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
  NotationText(v.first->begin->notation(), std::min<int64_t>(step_, std::max<int64_t>(0, v.num_steps() - 1)));
  ImGuiTableFlags flags =
      ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY;
  std::snprintf(id, sizeof id, "##diff_steps_table_%d", side);
  if (ImGui::BeginTable(id, 7, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, kMarkerColumn);
    ImGui::TableSetupColumn("#");
    SetupPlanStepColumns();
    ImGui::TableHeadersRow();
    const auto& plan = v.first->begin->optimized_plan();
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
