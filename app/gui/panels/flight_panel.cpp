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
  triage_ = {};
  is_culprit_.clear();
  is_victim_.clear();
  scroll_to_rank_ = -1;
  active_ = ctx.model != nullptr && trace::HasFlightRecords(*ctx.model);
  owns_main_ = active_ && ctx.model->redistributes.empty() && ctx.model->ops.empty();
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
  triage_ = trace::TriageModel(m);
  is_culprit_.assign(static_cast<size_t>(std::max<int64_t>(0, world_)), 0);
  is_victim_.assign(is_culprit_.size(), 0);
  for (int64_t r : triage_.culprits)
    if (r >= 0 && r < world_) is_culprit_[static_cast<size_t>(r)] = 1;
  for (int64_t r : triage_.victims)
    if (r >= 0 && r < world_) is_victim_[static_cast<size_t>(r)] = 1;
  scroll_to_rank_ = triage_.culprits.empty() ? -1 : triage_.culprits.front();
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
  ImGui::BeginChild("##fr_lanes_frame", ImVec2(width, height), true,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  SectionTitle("Flight Recorder: collectives per rank");
  ImGui::SetNextItemWidth(110);
  if (ImGui::InputInt("go to rank", &go_to_rank_, 1, 64, ImGuiInputTextFlags_EnterReturnsTrue))
    scroll_to_rank_ = std::clamp<int64_t>(go_to_rank_, 0, std::max<int64_t>(0, world_ - 1));
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const float view_h = std::max(avail.y, 60.0f);
  // Lanes at least 14 px tall (labels never overprint); past the view's height they scroll.
  const float lane_h =
      std::clamp((view_h - kAxisHeight) / std::max<float>(1.0f, static_cast<float>(world_)), 14.0f, 40.0f);
  ImGui::BeginChild("##fr_lanes", ImVec2(avail.x, view_h), false);
  if (scroll_to_rank_ >= 0) {
    // Kept until ImGui reached it: the scroll limit is known once the lanes were laid out.
    const float target = std::max(0.0f, lane_h * static_cast<float>(scroll_to_rank_) - view_h / 2);
    if (std::fabs(ImGui::GetScrollY() - target) < 1.0f)
      scroll_to_rank_ = -1;
    else
      ImGui::SetScrollY(target);
  }
  ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 size{ImGui::GetContentRegionAvail().x, kAxisHeight + lane_h * static_cast<float>(world_)};
  size.y = std::max(size.y, 60.0f);
  ImGui::InvisibleButton("##fr_canvas", size);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float scroll = ImGui::GetScrollY();
  const float win_top = ImGui::GetWindowPos().y;
  // The lanes in view: [first, last).
  const int64_t first =
      std::clamp<int64_t>(static_cast<int64_t>((scroll - kAxisHeight) / lane_h) - 1, 0, world_);
  const int64_t last = std::clamp<int64_t>(first + static_cast<int64_t>(view_h / lane_h) + 3, 0, world_);
  const float x0 = origin.x + kLabelWidth, x1 = origin.x + size.x - 4, y0 = origin.y + kAxisHeight;
  auto x_of = [&](int64_t t) {
    return x0 + static_cast<float>(static_cast<double>(t) / static_cast<double>(t_end_)) * (x1 - x0);
  };
  for (int64_t r = first; r < last; ++r) {
    float y = y0 + lane_h * static_cast<float>(r);
    const bool culprit = !is_culprit_.empty() && is_culprit_[static_cast<size_t>(r)];
    const bool victim = !is_victim_.empty() && is_victim_[static_cast<size_t>(r)];
    list->AddRectFilled({x0, y + 1}, {x1, y + lane_h - 1}, Col(kFlightLaneBackground));
    char text[32];
    std::snprintf(text, sizeof text, "rank %lld", static_cast<long long>(r));
    list->AddRectFilled({origin.x + 2, y + 3}, {origin.x + 8, y + lane_h - 3},
                        culprit ? Col(kFlightCulprit) : RankImColor(r, world_));
    list->AddText({origin.x + 12, y + (lane_h - ImGui::GetTextLineHeight()) / 2},
                  culprit  ? Col(kFlightCulprit)
                  : victim ? IM_COL32(120, 120, 120, 255)
                           : IM_COL32(220, 220, 220, 255),
                  text);
    if (culprit) {
      list->AddRect({x0, y + 1}, {x1, y + lane_h - 1}, Col(kFlightCulprit), 0, 0, 2.0f);
      geometry_.push_back({"culprit_lane", r, -1, false, origin.x + 2, y + 3, origin.x + 8, y + lane_h - 3});
    }
  }
  const FlightSpan* hover = nullptr;
  ImVec2 mouse = ImGui::GetIO().MousePos;
  auto begin = std::lower_bound(spans_.begin(), spans_.end(), first,
                                [](const FlightSpan& s, int64_t r) { return s.rank < r; });
  for (auto it = begin; it != spans_.end() && it->rank < last; ++it) {
    const FlightSpan& s = *it;
    if (s.rank < 0 || s.rank >= world_) continue;
    float y = y0 + lane_h * static_cast<float>(s.rank);
    ImVec2 a{x_of(s.start), y + 3}, b{std::max(x_of(s.end), x_of(s.start) + 3), y + lane_h - 3};
    Rgb color = s.incomplete ? kFlightIncomplete : CollectiveKindColor(s.kind);
    list->AddRectFilled(a, b, Col(color));
    // An incomplete span runs to the axis end, under the rank's later ones: its label gets only
    // the part left of the next span of the rank, so labels never overprint ("secsecseq 9").
    float visible_right = b.x;
    if (auto next = std::next(it); next != spans_.end() && next->rank == s.rank && next->start >= s.start)
      visible_right = std::min(visible_right, x_of(next->start));
    if (visible_right - a.x > 44 && s.seq >= 0) {
      std::string t = "seq " + std::to_string(s.seq);
      list->PushClipRect(a, {visible_right, b.y}, true);
      list->AddText({a.x + 3, a.y + (b.y - a.y - ImGui::GetTextLineHeight()) / 2}, ContrastText(color),
                    t.c_str());
      list->PopClipRect();
      const float text_right = std::min(visible_right, a.x + 3 + ImGui::CalcTextSize(t.c_str()).x);
      geometry_.push_back({"label", s.rank, s.seq, s.incomplete, a.x + 3, a.y, text_right, b.y});
    }
    geometry_.push_back({"span", s.rank, s.seq, s.incomplete, a.x, a.y, b.x, b.y});
    if (hovered && mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y) hover = &s;
  }
  for (const FlightSlot& s : slots_) {
    if (s.rank < first || s.rank >= last) continue;
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
  // The time axis stays at the top of the view over the scrolled lanes.
  list->AddRectFilled({origin.x, win_top}, {origin.x + size.x, win_top + kAxisHeight},
                      IM_COL32(24, 25, 30, 255));
  DrawMsAxis(list, {origin.x, win_top}, x0, x1, t_end_);
  if (hover != nullptr) {
    ImGui::BeginTooltip();
    ImGui::Text("rank %lld  process group %s", static_cast<long long>(hover->rank), hover->pg.c_str());
    if (hover->seq >= 0) ImGui::Text("seq %lld", static_cast<long long>(hover->seq));
    ImGui::TextUnformatted(hover->label.c_str());
    if (!is_culprit_.empty() && is_culprit_[static_cast<size_t>(hover->rank)])
      ImGui::TextUnformatted("triage: a culprit (root cause)");
    else if (!is_victim_.empty() && is_victim_[static_cast<size_t>(hover->rank)])
      ImGui::TextUnformatted("triage: a victim (blocked behind the root cause)");
    ImGui::EndTooltip();
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
    const bool clean = triage_.verdict == "clean";
    ImGui::TextColored(clean ? ImVec4(0.5f, 0.85f, 0.5f, 1) : ImVec4(1.0f, 0.25f, 0.63f, 1),
                       "verdict: %s%s%s", triage_.verdict.c_str(), triage_.roots.empty() ? "" : ", ",
                       triage_.roots.empty() ? "" : triage_.Class().c_str());
    if (!triage_.roots.empty()) {
      ImGui::TextWrapped("culprits: %s", triage_.culprits.empty()
                                             ? "none"
                                             : trace::FormatRankRanges(triage_.culprits).c_str());
      ImGui::TextDisabled("%zu victims", triage_.victims.size());
    }
    ImGui::PushTextWrapPos(0.0f);
    for (const trace::TriageRoot& root : triage_.roots) ImGui::TextWrapped("%s", root.summary.c_str());
    ImGui::PopTextWrapPos();
    ImVec2 b = ImGui::GetCursorScreenPos();
    geometry_.push_back({"triage", triage_.culprits.empty() ? -1 : triage_.culprits.front(), -1, false, a.x,
                         a.y, a.x + ImGui::GetContentRegionAvail().x, b.y});
    ImGui::Separator();
  }
  SectionTitle("Mismatches (Flight Recorder classes)");
  if (check_.mismatches.empty()) ImGui::TextColored(ImVec4(0.5f, 0.85f, 0.5f, 1), "all ranks matched");
  // The checker blames every rank that differs; triage knows which of them only wait behind the
  // root cause. Mismatches naming a triage culprit come first; those whose ranks are all victims
  // say so, greyed, so the list never reads as more culprits than triage found.
  auto is_victim = [&](int64_t r) { return r >= 0 && r < world_ && is_victim_[static_cast<size_t>(r)] != 0; };
  auto names_culprit = [&](const trace::Mismatch& mm) {
    return std::any_of(mm.culprits.begin(), mm.culprits.end(), [&](int64_t r) {
      return r >= 0 && r < world_ && is_culprit_[static_cast<size_t>(r)] != 0;
    });
  };
  std::vector<const trace::Mismatch*> order;
  order.reserve(check_.mismatches.size());
  for (const trace::Mismatch& mm : check_.mismatches) order.push_back(&mm);
  std::stable_partition(order.begin(), order.end(),
                        [&](const trace::Mismatch* mm) { return names_culprit(*mm); });
  size_t shown = 0;
  for (const trace::Mismatch* mm_ptr : order) {
    const trace::Mismatch& mm = *mm_ptr;
    if (++shown > 40) {
      ImGui::TextDisabled("... %zu more (shardscope check lists them all)", check_.mismatches.size() - 40);
      break;
    }
    ImVec2 a = ImGui::GetCursorScreenPos();
    ImGui::TextColored(ImVec4(0.95f, 0.45f, 0.4f, 1), "%s",
                       std::string(trace::MismatchClassName(mm.kind)).c_str());
    if (!mm.culprits.empty()) {
      const bool victims =
          !triage_.culprits.empty() && std::all_of(mm.culprits.begin(), mm.culprits.end(), is_victim);
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
                         false, a.x, a.y, a.x + ImGui::GetContentRegionAvail().x, b.y});
    ImGui::Separator();
  }
  ImGui::PushTextWrapPos(0.0f);
  for (size_t i = 0; i < check_.notes.size() && i < 20; ++i)
    ImGui::TextDisabled("note: %s", check_.notes[i].substr(0, 600).c_str());
  ImGui::PopTextWrapPos();
  ImGui::EndChild();
}

}  // namespace shardscope::app::gui
