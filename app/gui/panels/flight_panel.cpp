#include "panels/flight_panel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <imgui.h>

#include "shardscope/trace/flight_recorder.hpp"
#include "view_model.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

constexpr float kAxisHeight = 20.0f;

ImU32 Col(Rgb c) { return PackAbgr(c); }

// A rectangle outline of short dashes.
void DashedRect(ImDrawList* list, ImVec2 a, ImVec2 b, ImU32 color) {
  constexpr float kDash = 5.0f, kThick = 2.0f;
  for (float x = a.x; x < b.x; x += 2 * kDash) {
    float e = std::min(x + kDash, b.x);
    list->AddLine({x, a.y + 1}, {e, a.y + 1}, color, kThick);
    list->AddLine({x, b.y - 1}, {e, b.y - 1}, color, kThick);
  }
  for (float y = a.y; y < b.y; y += 2 * kDash) {
    float e = std::min(y + kDash, b.y);
    list->AddLine({a.x + 1, y}, {a.x + 1, e}, color, kThick);
    list->AddLine({b.x - 1, y}, {b.x - 1, e}, color, kThick);
  }
}

// The time axis in milliseconds from the first collective: a 1-2-5 step giving at most about 6
// labels, over [x0, x1] for [0, t_end] ns.
void DrawMsAxis(ImDrawList* list, ImVec2 origin, float x0, float x1, int64_t t_end) {
  auto x_of = [&](int64_t t) {
    return x0 + static_cast<float>(static_cast<double>(t) / static_cast<double>(t_end)) * (x1 - x0);
  };
  const double range_ms = static_cast<double>(t_end) / 1e6;
  const double raw = std::max(range_ms / 6.0, 1e-6);
  const double p10 = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw <= p10 ? p10 : raw <= 2 * p10 ? 2 * p10 : raw <= 5 * p10 ? 5 * p10 : 10 * p10;
  for (double v = 0; v <= range_ms; v += step) {
    float x = x_of(static_cast<int64_t>(v * 1e6));
    list->AddLine({x, origin.y + kAxisHeight - 4}, {x, origin.y + kAxisHeight}, IM_COL32(160, 160, 160, 255));
    char text[32];
    std::snprintf(text, sizeof text, "%.3g ms", v);
    list->AddText({x + 2, origin.y + 2}, IM_COL32(170, 170, 170, 255), text);
  }
}

// Width of a mismatch badge: its letter and a margin.
float BadgeWidth(const FlightMark& m) {
  const char text[2] = {m.letter, 0};
  return ImGui::CalcTextSize(text).x + 4;
}

}  // namespace

void FlightPanel::Prepare(const ViewContext& ctx, std::shared_ptr<const FlightAnalysis> analysis) {
  if (ctx.model == key_model_ && ctx.model_serial == key_serial_) return;
  key_model_ = ctx.model, key_serial_ = ctx.model_serial;
  analysis_.reset();
  expanded_.clear();
  scroll_to_rank_ = goto_rank_ = -1;
  next_culprit_ = 0;
  active_ = ctx.model != nullptr && trace::HasFlightRecords(*ctx.model);
  owns_main_ = active_ && ctx.model->redistributes.empty() && ctx.model->ops.empty();
  if (!active_) {
    RebuildRows();
    return;
  }
  // The loader computed it on its thread; a model made otherwise is analysed here.
  analysis_ =
      analysis ? std::move(analysis) : std::make_shared<const FlightAnalysis>(AnalyzeFlight(*ctx.model));
  // The culprits' groups open (a few: a job with hundreds of culprits is read from the list).
  expanded_.assign(data().groups.size(), false);
  size_t opened = 0;
  for (int64_t r : triage().culprits) {
    for (size_t g = 0; g < data().groups.size() && opened < 16; ++g) {
      const TimelineGroup& group = data().groups[g];
      if (r >= group.first_rank && r < group.first_rank + group.size && !expanded_[g]) {
        expanded_[g] = true;
        ++opened;
      }
    }
  }
  RebuildRows();
  scroll_to_rank_ = triage().culprits.empty() ? -1 : triage().culprits.front();
}

void FlightPanel::RebuildRows() {
  std::vector<int64_t> ranks(static_cast<size_t>(data().world));
  for (size_t r = 0; r < ranks.size(); ++r) ranks[r] = static_cast<int64_t>(r);
  rows_ = BuildRows(ranks, data().groups, expanded_);
  row_of_rank_ = RowOfRank(rows_, data().groups, ranks.size());
}

void FlightPanel::GoToRank(int64_t rank) {
  if (data().world <= 0) return;
  rank = std::clamp<int64_t>(rank, 0, data().world - 1);
  for (size_t g = 0; g < data().groups.size(); ++g) {
    const TimelineGroup& group = data().groups[g];
    if (rank >= group.first_rank && rank < group.first_rank + group.size && !expanded_[g]) {
      expanded_[g] = true;
      RebuildRows();
    }
  }
  scroll_to_rank_ = goto_rank_ = rank;
  go_to_rank_ = static_cast<int>(rank);
  scroll_tries_ = 0;
}

void FlightPanel::Draw(ViewContext& ctx) {
  (void)ctx;
  geometry_.clear();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const float list_w = std::max(320.0f, avail.x * 0.34f);
  DrawLanes(avail.x - list_w - 6, avail.y);
  ImGui::SameLine(0, 6);
  DrawMismatches(avail.y);
}

// "go to rank" (G or Ctrl+G focuses it; goes as you type) and the culprit button.
void FlightPanel::DrawControls() {
  const ImGuiIO& io = ImGui::GetIO();
  if (!io.WantTextInput) {
    for (ImWchar c : io.InputQueueCharacters)
      if (c == 'g' || c == 'G') focus_goto_ = true;
    if (io.KeyCtrl && ImGui::IsKeyPressed('G')) focus_goto_ = true;  // GLFW's key code of G is 'G'
  }
  if (focus_goto_) {
    ImGui::SetKeyboardFocusHere();
    focus_goto_ = false;
  }
  ImGui::SetNextItemWidth(110);
  if (ImGui::InputInt("go to rank", &go_to_rank_, 1, 64)) GoToRank(go_to_rank_);
  geometry_.push_back({"goto", goto_rank_, -1, false, ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y,
                       ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y, ""});
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("go to rank (G or Ctrl+G): its lane, its group expanded");
  if (!triage().culprits.empty()) {
    ImGui::SameLine();
    ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.55f, 0.12f, 0.35f, 1));
    const std::string text = triage().culprits.size() == 1
                                 ? "culprit r" + std::to_string(triage().culprits.front())
                                 : "next culprit (" + std::to_string(triage().culprits.size()) + ")";
    if (ImGui::Button(text.c_str())) {
      GoToRank(triage().culprits[next_culprit_ % triage().culprits.size()]);
      ++next_culprit_;
    }
    ImGui::PopStyleColor();
    geometry_.push_back({"goto_culprit", triage().culprits[next_culprit_ % triage().culprits.size()], -1,
                         false, ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y,
                         ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y, ""});
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("go to triage's culprit (the next one on each click)");
  }
}

// One line of swatches saying what the lanes' colours and marks mean; wraps when narrow.
void FlightPanel::DrawLegend() {
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float line_h = ImGui::GetTextLineHeight();
  const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
  bool first = true;
  auto item = [&](const char* text, auto&& draw_swatch) {
    const float w = 16 + ImGui::CalcTextSize(text).x;
    if (!first) {
      ImGui::SameLine(0, 12);
      if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
    }
    first = false;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    draw_swatch(p, ImVec2(p.x + 11, p.y + line_h));
    list->AddText({p.x + 15, p.y}, IM_COL32(190, 190, 195, 255), text);
    ImGui::Dummy({w, line_h});
  };
  item("culprit (root cause)", [&](ImVec2 a, ImVec2 b) { list->AddRectFilled(a, b, Col(kFlightCulprit)); });
  item("victim (grey label)",
       [&](ImVec2 a, ImVec2 b) { list->AddRectFilled(a, b, IM_COL32(120, 120, 120, 255)); });
  item("never completed", [&](ImVec2 a, ImVec2 b) { list->AddRectFilled(a, b, Col(kFlightIncomplete)); });
  item("never joined", [&](ImVec2 a, ImVec2 b) { DashedRect(list, a, b, Col(kFlightIncomplete)); });
  item("S/D/K: size/dtype/kind differs",
       [&](ImVec2 a, ImVec2 b) { list->AddRectFilled(a, b, Col(kFlightMismatch)); });
}

// The lanes: a row per rank or per group of ranks (above 64 ranks), their collectives, incomplete
// ones, missing ranks' slots and mismatch badges, under a time axis that stays on top.
void FlightPanel::DrawLanes(float width, float height) {
  ImGui::BeginChild("##fr_lanes_frame", ImVec2(width, height), true,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  SectionTitle("Flight Recorder: collectives per rank");
  DrawControls();
  DrawLegend();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const float view_h = std::max(avail.y, 60.0f);
  const int64_t rows = static_cast<int64_t>(rows_.size());
  // Lanes at least 14 px tall (labels never overprint); past the view's height they scroll.
  const float lane_h =
      std::clamp((view_h - kAxisHeight) / std::max<float>(1.0f, static_cast<float>(rows)), 14.0f, 40.0f);
  ImGui::BeginChild("##fr_lanes", ImVec2(avail.x, view_h), false);
  if (scroll_to_rank_ >= 0 && scroll_to_rank_ < static_cast<int64_t>(row_of_rank_.size())) {
    // Kept until ImGui reached it: the scroll limit is known once the lanes were laid out.
    const float row = static_cast<float>(row_of_rank_[static_cast<size_t>(scroll_to_rank_)]);
    const float target = std::max(0.0f, lane_h * (row + 0.5f) - (view_h - kAxisHeight) / 2);
    // (a few frames at most: where everything fits there is nothing to reach)
    if ((std::fabs(ImGui::GetScrollY() - std::min(target, ImGui::GetScrollMaxY())) < 1.0f &&
         ImGui::GetScrollMaxY() > 0) ||
        ++scroll_tries_ > 3)
      scroll_to_rank_ = -1, scroll_tries_ = 0;
    else
      ImGui::SetScrollY(target);
  }
  ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 size{ImGui::GetContentRegionAvail().x, kAxisHeight + lane_h * static_cast<float>(rows)};
  size.y = std::max(size.y, 60.0f);
  ImGui::InvisibleButton("##fr_canvas", size);
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float scroll = ImGui::GetScrollY();
  const float win_top = ImGui::GetWindowPos().y;
  const float view_top = win_top + kAxisHeight, view_bottom = win_top + view_h;
  // The rows in view: [first, last).
  const int64_t first = std::clamp<int64_t>(static_cast<int64_t>(scroll / lane_h) - 1, 0, rows);
  const int64_t last = std::clamp<int64_t>(first + static_cast<int64_t>(view_h / lane_h) + 3, 0, rows);
  // Labels as wide as the widest one: "+ r4032-4095", "  r16383".
  float label_w =
      ImGui::CalcTextSize(("  r" + std::to_string(std::max<int64_t>(0, data().world - 1))).c_str()).x;
  for (const TimelineGroup& g : data().groups)
    label_w = std::max(label_w, ImGui::CalcTextSize(("+ " + g.label).c_str()).x);
  label_w += 20;
  const float x0 = origin.x + label_w, x1 = origin.x + size.x - 4, y0 = origin.y + kAxisHeight;
  auto x_of = [&](int64_t t) {
    return x0 + static_cast<float>(static_cast<double>(t) / static_cast<double>(data().t_end)) * (x1 - x0);
  };
  const float text_h = ImGui::GetTextLineHeight();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool mouse_in_view = hovered && mouse.y >= view_top && mouse.y < view_bottom;
  auto visible = [&](float top, float bottom) { return bottom > view_top && top < view_bottom; };
  // A badge at the left of [a, b]: the mark's letter on the mismatch colour.
  auto badge = [&](ImVec2 a, ImVec2 b, const FlightMark& m) {
    const char text[2] = {m.letter, 0};
    const float w = BadgeWidth(m);
    list->AddRectFilled(a, {a.x + w, b.y}, Col(kFlightMismatch));
    list->AddText({a.x + 2, a.y + (b.y - a.y - text_h) / 2}, IM_COL32(20, 20, 20, 255), text);
    if (visible(a.y, b.y))
      geometry_.push_back({"mark", m.rank, data().spans[m.span].seq, false, a.x, a.y, a.x + w, b.y, m.what});
    return w;
  };
  const FlightSpan* hover = nullptr;
  size_t hover_index = 0;
  const GroupSpan* hover_union = nullptr;
  int32_t hover_group = -1;
  int64_t click_group = -1;
  for (int64_t ri = first; ri < last; ++ri) {
    const TimelineRow& row = rows_[static_cast<size_t>(ri)];
    const float y = y0 + lane_h * static_cast<float>(ri);
    const bool in_view = visible(y, y + lane_h);
    const std::string label =
        FlightRowLabel(data(), row, row.group >= 0 && expanded_[static_cast<size_t>(row.group)]);
    if (in_view) geometry_.push_back({"row", row.rank, row.group, false, origin.x, y, x0, y + lane_h, label});
    if (clicked && row.rank < 0 && mouse.x < x0 && mouse.y >= y && mouse.y < y + lane_h && mouse_in_view)
      click_group = row.group;
    if (row.rank < 0) {  // a group lane: its members' finished collectives above, the stuck ones below
      const TimelineGroup& g = data().groups[static_cast<size_t>(row.group)];
      const FlightGroupLane& lane = data().group_lanes[static_cast<size_t>(row.group)];
      list->AddRectFilled({origin.x, y + 1}, {x1, y + lane_h - 1}, Col(kTimelineGroupBackground));
      list->AddRectFilled({origin.x + 2, y + 3}, {origin.x + 8, y + lane_h - 3},
                          lane.culprits > 0 ? Col(kFlightCulprit) : IM_COL32(140, 140, 150, 255));
      list->AddText({origin.x + 12, y + (lane_h - text_h) / 2},
                    lane.culprits > 0 ? Col(kFlightCulprit) : IM_COL32(220, 220, 225, 255), label.c_str());
      const float mid = y + lane_h * 0.55f;
      for (const auto* unions : {&lane.done, &lane.stuck}) {
        const bool stuck = unions == &lane.stuck;
        float last_x = -1e9f;
        for (const GroupSpan& u : *unions) {
          ImVec2 a{x_of(u.start), stuck ? mid : y + 3},
              b{std::max(x_of(u.end), x_of(u.start) + 2), stuck ? y + lane_h - 3 : mid};
          if (b.x <= last_x) continue;  // within a pixel drawn already
          last_x = b.x;
          const FlightSpan& rep = data().spans[static_cast<size_t>(u.slowest.record)];
          list->AddRectFilled(a, b, Col(stuck ? kFlightIncomplete : CollectiveKindColor(rep.kind())));
          if (mouse_in_view && mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y)
            hover_union = &u, hover_group = row.group;
        }
      }
      float last_badge = -1e9f;
      for (auto it = std::lower_bound(data().marks.begin(), data().marks.end(), g.first_rank,
                                      [](const FlightMark&m, int64_t r) { return m.rank < r; });
           it != data().marks.end() && it->rank < g.first_rank + g.size; ++it) {
        const float bx = x_of(data().spans[it->span].start);
        if (bx < last_badge) continue;  // badges never overprint: one per place
        last_badge = bx + badge({bx, y + 1}, {bx, y + lane_h - 1}, *it) + 2;
      }
      continue;
    }
    const int64_t r = row.rank;
    const bool culprit = data().is_culprit[static_cast<size_t>(r)] != 0;
    const bool victim = data().is_victim[static_cast<size_t>(r)] != 0;
    list->AddRectFilled({x0, y + 1}, {x1, y + lane_h - 1}, Col(kFlightLaneBackground));
    list->AddRectFilled({origin.x + 2, y + 3}, {origin.x + 8, y + lane_h - 3},
                        culprit ? Col(kFlightCulprit) : RankImColor(r, data().world));
    list->AddText({origin.x + 12, y + (lane_h - text_h) / 2},
                  culprit  ? Col(kFlightCulprit)
                  : victim ? IM_COL32(120, 120, 120, 255)
                           : IM_COL32(220, 220, 220, 255),
                  label.c_str());
    if (culprit) {
      list->AddRect({x0, y + 1}, {x1, y + lane_h - 1}, Col(kFlightCulprit), 0, 0, 2.0f);
      if (in_view)
        geometry_.push_back(
            {"culprit_lane", r, -1, false, origin.x + 2, y + 3, origin.x + 8, y + lane_h - 3, ""});
    }
    if (r == goto_rank_)  // the rank gone to: outlined across the lane
      list->AddRect({origin.x, y}, {x1, y + lane_h}, IM_COL32(120, 170, 255, 230), 0, 0, 1.5f);
    const size_t begin = data().rank_begin[static_cast<size_t>(r)],
                 end = data().rank_begin[static_cast<size_t>(r) + 1];
    auto mark_of = [&](size_t i) -> const FlightMark* {
      for (auto it = std::lower_bound(data().marks.begin(), data().marks.end(), r,
                                      [](const FlightMark&m, int64_t rank) { return m.rank < rank; });
           it != data().marks.end() && it->rank == r; ++it)
        if (it->span == i) return &*it;
      return nullptr;
    };
    float last_x = -1e9f;
    struct Pending {
      const FlightMark* mark;
      ImVec2 a, b;
    };
    std::vector<Pending> row_marks;
    for (size_t i = begin; i < end; ++i) {
      const FlightSpan& s = data().spans[i];
      ImVec2 a{x_of(s.start), y + 3}, b{std::max(x_of(s.end), x_of(s.start) + 3), y + lane_h - 3};
      const FlightMark* m = mark_of(i);
      if (b.x <= last_x && !s.incomplete && m == nullptr) continue;  // within a pixel drawn already
      last_x = std::max(last_x, b.x);
      Rgb color = s.incomplete ? kFlightIncomplete : CollectiveKindColor(s.kind());
      list->AddRectFilled(a, b, Col(color));
      // The badge goes on after the rank's later spans (an incomplete span lies under them).
      const float badge_w = m != nullptr ? BadgeWidth(*m) : 0.0f;
      if (m != nullptr) row_marks.push_back({m, a, b});
      // An incomplete span runs to the axis end, under the rank's later ones: its label gets only
      // the part left of the next span of the rank, so labels never overprint ("secsecseq 9").
      float visible_right = b.x;
      if (i + 1 < end && data().spans[i + 1].start >= s.start)
        visible_right = std::min(visible_right, x_of(data().spans[i + 1].start));
      if (visible_right - a.x - badge_w > 44 && s.seq >= 0) {
        std::string t = "seq " + std::to_string(s.seq);
        const float tx = a.x + badge_w + 3;
        list->PushClipRect({tx, a.y}, {visible_right, b.y}, true);
        list->AddText({tx, a.y + (b.y - a.y - text_h) / 2}, ContrastText(color), t.c_str());
        list->PopClipRect();
        const float text_right = std::min(visible_right, tx + ImGui::CalcTextSize(t.c_str()).x);
        if (in_view)
          geometry_.push_back({"label", s.rank, s.seq, s.incomplete, tx, a.y, text_right, b.y, ""});
      }
      if (in_view) geometry_.push_back({"span", s.rank, s.seq, s.incomplete, a.x, a.y, b.x, b.y, ""});
      if (mouse_in_view && mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y)
        hover = &s, hover_index = i;
    }
    for (const Pending& p : row_marks) badge(p.a, p.b, *p.mark);
  }
  std::map<int64_t, float> slot_text_right;  // per rank: where the slot texts drawn so far end
  for (const FlightSlot& s : data().slots) {
    if (s.rank < 0 || s.rank >= static_cast<int64_t>(row_of_rank_.size())) continue;
    const int32_t ri = row_of_rank_[static_cast<size_t>(s.rank)];
    if (ri < first || ri >= last || rows_[static_cast<size_t>(ri)].rank != s.rank) continue;
    float y = y0 + lane_h * static_cast<float>(ri);
    ImVec2 a{x_of(s.start), y + 2}, b{std::max(x_of(s.end), x_of(s.start) + 8), y + lane_h - 2};
    DashedRect(list, a, b, Col(kFlightIncomplete));
    // A rank missing from several groups' collectives has their slots on top of each other: the
    // first one's text only where it has room (the tooltip and the list name them all).
    float& text_right = slot_text_right[s.rank];
    if (a.x + 6 >= text_right) {
      std::string t = "seq " + std::to_string(s.seq) + " missing";
      list->PushClipRect(a, b, true);
      list->AddText({a.x + 6, a.y + (b.y - a.y - text_h) / 2}, Col(kFlightIncomplete), t.c_str());
      list->PopClipRect();
      text_right = std::max(text_right, std::min(b.x, a.x + 6 + ImGui::CalcTextSize(t.c_str()).x) + 4);
    }
    if (visible(a.y, b.y)) geometry_.push_back({"slot", s.rank, s.seq, false, a.x, a.y, b.x, b.y, ""});
  }
  if (click_group >= 0) {
    expanded_[static_cast<size_t>(click_group)] = !expanded_[static_cast<size_t>(click_group)];
    RebuildRows();
  }
  // The time axis stays at the top of the view over the scrolled lanes.
  list->AddRectFilled({origin.x, win_top}, {origin.x + size.x, win_top + kAxisHeight},
                      IM_COL32(24, 25, 30, 255));
  DrawMsAxis(list, {origin.x, win_top}, x0, x1, data().t_end);
  geometry_.push_back({"lanes", -1, -1, false, origin.x, view_top, origin.x + size.x, view_bottom, ""});
  if (hover != nullptr) {
    ImGui::BeginTooltip();
    for (const std::string& line : FlightSpanDetails(data(), hover_index))
      ImGui::TextUnformatted(line.c_str());
    if (data().is_culprit[static_cast<size_t>(hover->rank)])
      ImGui::TextColored(ImVec4(1.0f, 0.25f, 0.63f, 1), "triage: a culprit (root cause)");
    else if (data().is_victim[static_cast<size_t>(hover->rank)])
      ImGui::TextDisabled("triage: a victim (blocked behind the root cause)");
    ImGui::EndTooltip();
  } else if (hover_union != nullptr) {
    const TimelineGroup& g = data().groups[static_cast<size_t>(hover_group)];
    const FlightGroupLane& lane = data().group_lanes[static_cast<size_t>(hover_group)];
    const bool stuck = &lane.stuck.front() <= hover_union && hover_union <= &lane.stuck.back();
    ImGui::BeginTooltip();
    ImGui::Text("%s: ranks %lld-%lld, %lld culprits, %lld victims", g.label.c_str(),
                static_cast<long long>(g.first_rank), static_cast<long long>(g.first_rank + g.size - 1),
                static_cast<long long>(lane.culprits), static_cast<long long>(lane.victims));
    ImGui::Text("%d collectives of %d ranks %s, from %s", hover_union->spans, hover_union->members,
                stuck ? "never completed" : "completed",
                FormatTimeNs(static_cast<double>(hover_union->start)).c_str());
    if (!stuck)
      ImGui::Text("last to finish: r%lld at %s", static_cast<long long>(hover_union->slowest_rank),
                  FormatTimeNs(static_cast<double>(hover_union->slowest_end)).c_str());
    if (lane.marks > 0)
      ImGui::Text("%lld size/dtype/kind mismatches marked", static_cast<long long>(lane.marks));
    ImGui::TextDisabled("click the group's label to expand it");
    ImGui::EndTooltip();
  } else if (hovered && mouse.x < x0 && mouse_in_view) {
    ImGui::SetTooltip("click a group's label to expand or collapse it");
  }
  ImGui::EndChild();
  ImGui::EndChild();
}

// The checker's mismatches, each with its culprits, and its notes.
void FlightPanel::DrawMismatches(float height) {
  ImGui::BeginChild("##fr_mismatches", ImVec2(0, height), true);
  SectionTitle("Triage");
  {
    ImVec2 a = ImGui::GetCursorScreenPos();
    const bool clean = triage().verdict == "clean";
    ImGui::TextColored(clean ? ImVec4(0.5f, 0.85f, 0.5f, 1) : ImVec4(1.0f, 0.25f, 0.63f, 1),
                       "verdict: %s%s%s", triage().verdict.c_str(), triage().roots.empty() ? "" : ", ",
                       triage().roots.empty() ? "" : triage().Class().c_str());
    if (!triage().roots.empty()) {
      ImGui::TextWrapped("culprits: %s", triage().culprits.empty()
                                             ? "none"
                                             : trace::FormatRankRanges(triage().culprits).c_str());
      ImGui::TextDisabled("%zu victims", triage().victims.size());
    }
    ImGui::PushTextWrapPos(0.0f);
    for (const trace::TriageRoot& root : triage().roots) ImGui::TextWrapped("%s", root.summary.c_str());
    ImGui::PopTextWrapPos();
    ImVec2 b = ImGui::GetCursorScreenPos();
    geometry_.push_back({"triage", triage().culprits.empty() ? -1 : triage().culprits.front(), -1, false, a.x,
                         a.y, a.x + ImGui::GetContentRegionAvail().x, b.y, ""});
    ImGui::Separator();
  }
  SectionTitle("Mismatches (Flight Recorder classes)");
  if (check().mismatches.empty()) ImGui::TextColored(ImVec4(0.5f, 0.85f, 0.5f, 1), "all ranks matched");
  // The checker blames every rank that differs; triage knows which of them only wait behind the
  // root cause. Mismatches naming a triage culprit come first; those whose ranks are all victims
  // say so, greyed, so the list never reads as more culprits than triage found.
  const int64_t world = data().world;
  auto is_victim = [&](int64_t r) {
    return r >= 0 && r < world && data().is_victim[static_cast<size_t>(r)] != 0;
  };
  auto names_culprit = [&](const trace::Mismatch& mm) {
    return std::any_of(mm.culprits.begin(), mm.culprits.end(), [&](int64_t r) {
      return r >= 0 && r < world && data().is_culprit[static_cast<size_t>(r)] != 0;
    });
  };
  std::vector<const trace::Mismatch*> order;
  order.reserve(check().mismatches.size());
  for (const trace::Mismatch& mm : check().mismatches) order.push_back(&mm);
  std::stable_partition(order.begin(), order.end(),
                        [&](const trace::Mismatch* mm) { return names_culprit(*mm); });
  size_t shown = 0;
  for (const trace::Mismatch* mm_ptr : order) {
    const trace::Mismatch& mm = *mm_ptr;
    if (++shown > 40) {
      ImGui::TextDisabled("... %zu more (shardscope check lists them all)", check().mismatches.size() - 40);
      break;
    }
    ImVec2 a = ImGui::GetCursorScreenPos();
    ImGui::TextColored(ImVec4(0.95f, 0.45f, 0.4f, 1), "%s",
                       std::string(trace::MismatchClassName(mm.kind)).c_str());
    if (!mm.culprits.empty()) {
      const bool victims =
          !triage().culprits.empty() && std::all_of(mm.culprits.begin(), mm.culprits.end(), is_victim);
      std::string who = victims ? "" : "culprit";
      for (size_t i = 0; i < mm.culprits.size(); ++i)
        who += (i ? ", " : victims ? "rank " : " rank ") + std::to_string(mm.culprits[i]);
      ImGui::SameLine();
      if (victims)
        ImGui::TextDisabled("%s (a victim: waits behind triage's culprit)", who.c_str());
      else
        ImGui::TextUnformatted(who.c_str());
    }
    // At thousands of ranks a message lists thousands of them: its start is enough here (16-bit
    // vertex indices bound what one window can draw).
    ImGui::TextWrapped(
        "%s", mm.message.size() > 600 ? (mm.message.substr(0, 600) + " ...").c_str() : mm.message.c_str());
    ImVec2 b = ImGui::GetCursorScreenPos();
    geometry_.push_back({"mismatch", mm.culprits.empty() ? -1 : mm.culprits.front(), mm.seq_id.value_or(-1),
                         false, a.x, a.y, a.x + ImGui::GetContentRegionAvail().x, b.y, ""});
    ImGui::Separator();
  }
  ImGui::PushTextWrapPos(0.0f);
  for (size_t i = 0; i < check().notes.size() && i < 20; ++i)
    ImGui::TextDisabled("note: %s", check().notes[i].substr(0, 600).c_str());
  ImGui::PopTextWrapPos();
  ImGui::EndChild();
}

}  // namespace shardscope::app::gui

namespace shardscope::app::gui {
namespace {

constexpr Rgb kLoadNotRead{58, 60, 68};
constexpr Rgb kLoadRead{70, 130, 180};

// The rank cells' colours (FlightLoadSnapshot::rank_status), in legend order.
Rgb LoadCellColor(uint8_t status, bool culprit) {
  if (culprit) return kFlightCulprit;
  switch (status) {
    case 1:
      return kLoadRead;
    case 2:
      return kFlightIncomplete;
    case 3:
      return kFlightMismatch;
    default:
      return kLoadNotRead;
  }
}

const char* LoadStatusText(uint8_t status) {
  switch (status) {
    case 1:
      return "read, every collective completed";
    case 2:
      return "read, waits in a collective it never completed";
    case 3:
      return "read, behind: the least advanced of a group";
    default:
      return "not read yet";
  }
}

}  // namespace

void FlightPanel::DrawLoading(const FlightLoadSnapshot& s, const std::string& loader_path, double elapsed_s) {
  geometry_.clear();
  SectionTitle("Flight Recorder: ranks read so far");
  // What a user debugging a hang looks for first: who is behind, who waits.
  ImGui::Text("ranks %lld/%lld read, %.1f s (%s): %lld behind in a group, %lld waiting in a collective",
              static_cast<long long>(s.ranks_loaded),
              static_cast<long long>(s.files_total > 0 ? s.files_total : s.world), elapsed_s, s.stage.c_str(),
              static_cast<long long>(s.behind_ranks), static_cast<long long>(s.stuck_ranks));
  ImGui::TextDisabled(
      "%s: %lld entries; %lld of %zu process groups have ranks behind. The lanes open once the "
      "model is read too.",
      loader_path.c_str(), static_cast<long long>(s.entries), static_cast<long long>(s.behind_groups),
      s.groups.size());
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const float list_w = std::max(360.0f, avail.x * 0.45f);
  DrawLoadingGrid(s, avail.x - list_w - 6, avail.y);
  ImGui::SameLine(0, 6);
  DrawLoadingGroups(s, avail.y);
}

// A cell per rank, row-major, coloured by what its dump says so far; go to rank outlines one.
void FlightPanel::DrawLoadingGrid(const FlightLoadSnapshot& s, float width, float height) {
  ImGui::BeginChild("##fr_load_grid", ImVec2(width, height), true, ImGuiWindowFlags_NoScrollbar);
  const ImGuiIO& io = ImGui::GetIO();
  if (!io.WantTextInput) {
    for (ImWchar c : io.InputQueueCharacters)
      if (c == 'g' || c == 'G') focus_goto_ = true;
    if (io.KeyCtrl && ImGui::IsKeyPressed('G')) focus_goto_ = true;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) goto_rank_ = -1;
  }
  if (focus_goto_) {
    ImGui::SetKeyboardFocusHere();
    focus_goto_ = false;
  }
  ImGui::SetNextItemWidth(110);
  if (ImGui::InputInt("go to rank", &go_to_rank_, 1, 64))
    goto_rank_ = std::clamp<int64_t>(go_to_rank_, 0, std::max<int64_t>(0, s.world - 1));
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("go to rank (G or Ctrl+G): its cell outlined, its places listed");
  std::vector<char> culprit(static_cast<size_t>(s.world), 0);
  if (s.triage)
    for (int64_t r : s.triage->culprits)
      if (r >= 0 && r < s.world) culprit[static_cast<size_t>(r)] = 1;
  {  // legend
    ImDrawList* list = ImGui::GetWindowDrawList();
    const float line_h = ImGui::GetTextLineHeight();
    const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
    const char* names[] = {"not read yet", "read", "waits in a collective", "behind in a group", "culprit"};
    const Rgb colors[] = {kLoadNotRead, kLoadRead, kFlightIncomplete, kFlightMismatch, kFlightCulprit};
    for (int i = 0; i < 5; ++i) {  // culprit too before triage's result: the grid must not move
      const float w = 16 + ImGui::CalcTextSize(names[i]).x;
      if (i > 0) {
        ImGui::SameLine(0, 12);
        if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
      }
      const ImVec2 p = ImGui::GetCursorScreenPos();
      list->AddRectFilled(p, ImVec2(p.x + 11, p.y + line_h), Col(colors[i]));
      list->AddText({p.x + 15, p.y}, IM_COL32(190, 190, 195, 255), names[i]);
      ImGui::Dummy({w, line_h});
    }
  }
  // The grid, then a few lines below it for the rank gone to (the grid stays put when they change).
  constexpr int kGotoLines = 4;
  ImVec2 area = ImGui::GetContentRegionAvail();
  area.y = std::max(20.0f, area.y - kGotoLines * ImGui::GetTextLineHeightWithSpacing() - 4);
  const int64_t n = std::max<int64_t>(1, s.world);
  // A row label ("r64") left of every few rows; columns a power of two (rows then start at round
  // ranks) with square cells that fill the area.
  const float label_w = ImGui::CalcTextSize("r00000").x + 6;
  const ImVec2 origin(ImGui::GetCursorScreenPos().x + label_w, ImGui::GetCursorScreenPos().y);
  area.x = std::max(20.0f, area.x - label_w);
  const double ideal = std::sqrt(static_cast<double>(n) * area.x / std::max(1.0f, area.y));
  int64_t cols = 1;
  while (cols * 2 <= ideal && cols * 2 <= n) cols *= 2;
  const int64_t rows = (n + cols - 1) / cols;
  const float cell =
      std::max(1.0f, std::min(area.x / static_cast<float>(cols), area.y / static_cast<float>(rows)));
  {
    const float line_h = ImGui::GetTextLineHeight();
    const int64_t every = std::max<int64_t>(1, static_cast<int64_t>(std::ceil((line_h + 2) / cell)));
    for (int64_t row = 0; row < rows; row += every) {
      const std::string text = "r" + std::to_string(row * cols);
      const float y = origin.y + static_cast<float>(row) * cell + (cell - line_h) / 2;
      ImGui::GetWindowDrawList()->AddText({origin.x - label_w, std::max(origin.y - 2, y)},
                                          IM_COL32(150, 150, 155, 255), text.c_str());
    }
  }
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float gap = cell >= 6 ? 1.0f : 0.0f;
  for (int64_t r = 0; r < s.world; ++r) {
    const float x = origin.x + static_cast<float>(r % cols) * cell,
                y = origin.y + static_cast<float>(r / cols) * cell;
    list->AddRectFilled(
        {x, y}, {x + cell - gap, y + cell - gap},
        Col(LoadCellColor(s.rank_status[static_cast<size_t>(r)], culprit[static_cast<size_t>(r)] != 0)));
  }
  // The rank gone to (outlined): where it stands in each of its groups.
  std::vector<std::string> goto_lines;
  if (goto_rank_ >= 0 && goto_rank_ < s.world) {
    const uint8_t st = s.rank_status[static_cast<size_t>(goto_rank_)];
    goto_lines.push_back("rank " + std::to_string(goto_rank_) + ": " + LoadStatusText(st));
    for (const FlightLoadGroup& g : s.groups)
      for (const FlightLoadGroup::State& state : g.states)
        if (std::binary_search(state.ranks.begin(), state.ranks.end(), goto_rank_))
          goto_lines.push_back("  pg " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")") + ": " +
                               state.text);
  }
  geometry_.push_back({"loading_grid", s.ranks_loaded, s.world, false, origin.x, origin.y,
                       origin.x + static_cast<float>(cols) * cell, origin.y + static_cast<float>(rows) * cell,
                       std::to_string(cols)});
  if (goto_rank_ >= 0 && goto_rank_ < s.world) {
    const float x = origin.x + static_cast<float>(goto_rank_ % cols) * cell,
                y = origin.y + static_cast<float>(goto_rank_ / cols) * cell;
    list->AddRect({x - 2, y - 2}, {x + cell + 1, y + cell + 1}, IM_COL32(255, 255, 255, 255), 0, 0, 2);
    geometry_.push_back(
        {"loading_goto", goto_rank_, -1, false, x, y, x + cell, y + cell, goto_lines.front()});
  }
  ImGui::InvisibleButton("##fr_load_cells", ImVec2(std::max(1.0f, area.x + label_w), std::max(1.0f, area.y)));
  if (ImGui::IsItemHovered()) {
    const ImVec2 m = io.MousePos;
    const int64_t c = static_cast<int64_t>(std::floor((m.x - origin.x) / cell)),
                  row = static_cast<int64_t>(std::floor((m.y - origin.y) / cell));
    const int64_t r = row * cols + c;
    if (c >= 0 && c < cols && row >= 0 && r < s.world) {
      const uint8_t st = s.rank_status[static_cast<size_t>(r)];
      ImGui::SetTooltip("rank %lld: %s%s (click: go to it)", static_cast<long long>(r), LoadStatusText(st),
                        culprit[static_cast<size_t>(r)] ? "; triage's culprit" : "");
      if (ImGui::IsItemClicked()) goto_rank_ = r, go_to_rank_ = static_cast<int>(r);
    }
  }
  for (size_t i = 0; i < goto_lines.size() && i < static_cast<size_t>(kGotoLines); ++i)
    ImGui::TextUnformatted(goto_lines[i].c_str());
  if (goto_lines.size() > static_cast<size_t>(kGotoLines))
    ImGui::TextDisabled("... and %zu more groups", goto_lines.size() - kGotoLines);
  ImGui::EndChild();
}

// Triage's verdict once every dump is read, then the process groups, ranks behind first.
void FlightPanel::DrawLoadingGroups(const FlightLoadSnapshot& s, float height) {
  ImGui::BeginChild("##fr_load_groups", ImVec2(0, height), true);
  SectionTitle("Triage");
  {
    ImVec2 a = ImGui::GetCursorScreenPos();
    if (s.triage) {
      const trace::TriageResult& t = *s.triage;
      const bool clean = t.verdict == "clean";
      ImGui::TextColored(clean ? ImVec4(0.5f, 0.85f, 0.5f, 1) : ImVec4(1.0f, 0.25f, 0.63f, 1),
                         "verdict: %s%s%s", t.verdict.c_str(), t.roots.empty() ? "" : ", ",
                         t.roots.empty() ? "" : t.Class().c_str());
      if (!t.roots.empty()) {
        ImGui::TextWrapped("culprits: %s",
                           t.culprits.empty() ? "none" : trace::FormatRankRanges(t.culprits).c_str());
        ImGui::TextDisabled("%zu victims", t.victims.size());
      }
      ImGui::PushTextWrapPos(0.0f);
      for (const trace::TriageRoot& root : t.roots) ImGui::TextWrapped("%s", root.summary.c_str());
      ImGui::PopTextWrapPos();
      ImVec2 b = ImGui::GetCursorScreenPos();
      geometry_.push_back({"triage", t.culprits.empty() ? -1 : t.culprits.front(), -1, false, a.x, a.y,
                           a.x + ImGui::GetContentRegionAvail().x, b.y, t.verdict});
    } else {
      ImGui::TextDisabled(
          "verdict: once triage has read every dump (before the model, a few bytes an entry)");
    }
    ImGui::Separator();
  }
  SectionTitle("Process groups: where their read ranks stand, behind first");
  size_t shown = 0;
  for (const FlightLoadGroup& g : s.groups) {
    if (++shown > 200) {
      ImGui::TextDisabled("... %zu more groups", s.groups.size() - 200);
      break;
    }
    ImVec2 a = ImGui::GetCursorScreenPos();
    ImGui::TextColored(g.Behind() ? ImVec4(1.0f, 0.77f, 0.16f, 1) : ImVec4(0.75f, 0.75f, 0.78f, 1),
                       "pg %s%s%s: %lld/%lld ranks read", g.name.c_str(), g.desc.empty() ? "" : " ",
                       g.desc.empty() ? "" : ("(" + g.desc + ")").c_str(), static_cast<long long>(g.loaded),
                       static_cast<long long>(g.size));
    size_t k = 0;
    for (const FlightLoadGroup::State& st : g.states) {
      if (++k > 6) {
        ImGui::TextDisabled("    ... %zu more places", g.states.size() - 6);
        break;
      }
      const std::string& ranks = st.ranks_text;
      const ImVec4 color = st.place.step < 2 ? ImVec4(0.95f, 0.45f, 0.4f, 1) : ImVec4(0.8f, 0.8f, 0.82f, 1);
      ImGui::PushID(static_cast<int>(shown * 8 + k));
      ImGui::PushStyleColor(ImGuiCol_Text, color);
      if (ImGui::Selectable(("    " + st.text + ": r" + ranks).c_str(), false)) {
        goto_rank_ = st.ranks.front();
        go_to_rank_ = static_cast<int>(goto_rank_);
      }
      ImGui::PopStyleColor();
      ImGui::PopID();
    }
    ImVec2 b = ImGui::GetCursorScreenPos();
    geometry_.push_back({"loading_group", g.states.empty() ? -1 : g.states.front().ranks.front(), g.loaded,
                         g.Behind(), a.x, a.y, a.x + ImGui::GetContentRegionAvail().x, b.y, g.name});
  }
  ImGui::EndChild();
}

}  // namespace shardscope::app::gui
