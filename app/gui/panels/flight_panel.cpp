#include "panels/flight_panel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <imgui.h>

#include "shardscope/trace/flight_recorder.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

constexpr float kLabelWidth = 64.0f;
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

}  // namespace

void FlightPanel::Prepare(const ViewContext& ctx) {
  if (ctx.model == key_model_ && ctx.model_serial == key_serial_) return;
  key_model_ = ctx.model, key_serial_ = ctx.model_serial;
  spans_.clear();
  slots_.clear();
  check_ = {};
  active_ = ctx.model != nullptr && trace::IsFlightRecorderModel(*ctx.model);
  if (!active_) return;
  const trace::Model& m = *ctx.model;
  world_ = m.world;
  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = 0;
  for (const trace::RankTrace& rt : m.ranks) {
    for (const trace::Event& ev : rt.events) {
      const auto* c = std::get_if<trace::Collective>(&ev);
      if (c == nullptr || !c->flight) continue;
      t0 = std::min(t0, c->start_ns);
    }
  }
  if (t0 == std::numeric_limits<int64_t>::max()) t0 = 0;
  for (const trace::RankTrace& rt : m.ranks) {
    for (const trace::Event& ev : rt.events) {
      const auto* c = std::get_if<trace::Collective>(&ev);
      if (c == nullptr || !c->flight) continue;
      FlightSpan s;
      s.rank = rt.header.rank;
      s.start = c->start_ns - t0;
      s.end = c->end_ns - t0;
      s.seq = c->flight->is_p2p ? -1 : c->flight->seq_id;
      s.incomplete = c->flight->state != "completed";
      s.kind = c->kind;
      s.pg = c->flight->pg_name;
      s.label = c->flight->profiling_name + " (" + c->flight->state + ")";
      t1 = std::max(t1, std::max(s.start, s.end));
      spans_.push_back(std::move(s));
    }
  }
  // Incomplete collectives never ended: they run to the end of the axis, past every known time.
  t_end_ = std::max<int64_t>(1, t1 + std::max<int64_t>(1, t1 / 8));
  for (FlightSpan& s : spans_)
    if (s.incomplete) s.end = t_end_;
  check_ = trace::CheckTrace(m);
  for (const trace::Mismatch& mm : check_.mismatches) {
    if (mm.kind != trace::MismatchClass::kMissingRanks || !mm.seq_id) continue;
    int64_t start = std::numeric_limits<int64_t>::max(), end = 0;
    for (const FlightSpan& s : spans_) {
      if (s.pg != mm.process_group || s.seq != *mm.seq_id) continue;
      start = std::min(start, s.start);
      end = std::max(end, s.end);
    }
    if (start > end) continue;  // a send/recv without partner: no collective slot to show
    for (int64_t r : mm.culprits) slots_.push_back({r, start, end, *mm.seq_id, mm.process_group});
  }
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

// One lane per rank with its collectives, incomplete ones and the missing rank's slots.
void FlightPanel::DrawLanes(float width, float height) {
  ImGui::BeginChild("##fr_lanes", ImVec2(width, height), true,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  SectionTitle("Flight Recorder: collectives per rank");
  ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 size = ImGui::GetContentRegionAvail();
  size.y = std::max(size.y, 60.0f);
  ImGui::InvisibleButton("##fr_canvas", size);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float plot_h = size.y - kAxisHeight;
  const float lane_h = std::clamp(plot_h / std::max<float>(1.0f, static_cast<float>(world_)), 8.0f, 40.0f);
  const float x0 = origin.x + kLabelWidth, x1 = origin.x + size.x - 4, y0 = origin.y + kAxisHeight;
  auto x_of = [&](int64_t t) {
    return x0 + static_cast<float>(static_cast<double>(t) / static_cast<double>(t_end_)) * (x1 - x0);
  };
  DrawMsAxis(list, origin, x0, x1, t_end_);
  for (int64_t r = 0; r < world_; ++r) {
    float y = y0 + lane_h * static_cast<float>(r);
    list->AddRectFilled({x0, y + 1}, {x1, y + lane_h - 1}, Col(kFlightLaneBackground));
    char text[32];
    std::snprintf(text, sizeof text, "rank %lld", static_cast<long long>(r));
    list->AddRectFilled({origin.x + 2, y + 3}, {origin.x + 8, y + lane_h - 3}, RankImColor(r, world_));
    list->AddText({origin.x + 12, y + (lane_h - ImGui::GetTextLineHeight()) / 2},
                  IM_COL32(220, 220, 220, 255), text);
  }
  const FlightSpan* hover = nullptr;
  ImVec2 mouse = ImGui::GetIO().MousePos;
  for (const FlightSpan& s : spans_) {
    if (s.rank < 0 || s.rank >= world_) continue;
    float y = y0 + lane_h * static_cast<float>(s.rank);
    ImVec2 a{x_of(s.start), y + 3}, b{std::max(x_of(s.end), x_of(s.start) + 3), y + lane_h - 3};
    Rgb color = s.incomplete ? kFlightIncomplete : CollectiveKindColor(s.kind);
    list->AddRectFilled(a, b, Col(color));
    if (b.x - a.x > 44 && s.seq >= 0) {
      std::string t = "seq " + std::to_string(s.seq);
      list->PushClipRect(a, b, true);
      list->AddText({a.x + 3, a.y + (b.y - a.y - ImGui::GetTextLineHeight()) / 2}, ContrastText(color),
                    t.c_str());
      list->PopClipRect();
    }
    geometry_.push_back({"span", s.rank, s.seq, s.incomplete, a.x, a.y, b.x, b.y});
    if (hovered && mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y) hover = &s;
  }
  for (const FlightSlot& s : slots_) {
    if (s.rank < 0 || s.rank >= world_) continue;
    float y = y0 + lane_h * static_cast<float>(s.rank);
    ImVec2 a{x_of(s.start), y + 2}, b{std::max(x_of(s.end), x_of(s.start) + 8), y + lane_h - 2};
    DashedRect(list, a, b, Col(kFlightIncomplete));
    std::string t = "seq " + std::to_string(s.seq) + " missing";
    list->PushClipRect(a, b, true);
    list->AddText({a.x + 6, a.y + (b.y - a.y - ImGui::GetTextLineHeight()) / 2}, Col(kFlightIncomplete),
                  t.c_str());
    list->PopClipRect();
    geometry_.push_back({"slot", s.rank, s.seq, false, a.x, a.y, b.x, b.y});
  }
  if (hover != nullptr) {
    ImGui::BeginTooltip();
    ImGui::Text("rank %lld  process group %s", static_cast<long long>(hover->rank), hover->pg.c_str());
    if (hover->seq >= 0) ImGui::Text("seq %lld", static_cast<long long>(hover->seq));
    ImGui::TextUnformatted(hover->label.c_str());
    ImGui::EndTooltip();
  }
  ImGui::EndChild();
}

// The checker's mismatches, each with its culprits, and its notes.
void FlightPanel::DrawMismatches(float height) {
  ImGui::BeginChild("##fr_mismatches", ImVec2(0, height), true);
  SectionTitle("Mismatches (Flight Recorder classes)");
  if (check_.mismatches.empty()) ImGui::TextColored(ImVec4(0.5f, 0.85f, 0.5f, 1), "all ranks matched");
  for (const trace::Mismatch& mm : check_.mismatches) {
    ImVec2 a = ImGui::GetCursorScreenPos();
    ImGui::TextColored(ImVec4(0.95f, 0.45f, 0.4f, 1), "%s",
                       std::string(trace::MismatchClassName(mm.kind)).c_str());
    if (!mm.culprits.empty()) {
      std::string who = "culprit";
      for (size_t i = 0; i < mm.culprits.size(); ++i)
        who += (i ? ", " : " rank ") + std::to_string(mm.culprits[i]);
      ImGui::SameLine();
      ImGui::TextUnformatted(who.c_str());
    }
    ImGui::TextWrapped("%s", mm.message.c_str());
    ImVec2 b = ImGui::GetCursorScreenPos();
    geometry_.push_back({"mismatch", mm.culprits.empty() ? -1 : mm.culprits.front(), mm.seq_id.value_or(-1),
                         false, a.x, a.y, a.x + ImGui::GetContentRegionAvail().x, b.y});
    ImGui::Separator();
  }
  ImGui::PushTextWrapPos(0.0f);
  for (const std::string& note : check_.notes) ImGui::TextDisabled("note: %s", note.c_str());
  ImGui::PopTextWrapPos();
  ImGui::EndChild();
}

}  // namespace shardscope::app::gui
