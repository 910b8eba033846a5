// The timeline's rows: rank lanes and group lanes (unions of their members' spans), drawn with
// sub-pixel spans merged (ForEachLodItem), their labels, and the tooltip of the hovered item.
#include <algorithm>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <imgui.h>

#include "gl_renderer.hpp"
#include "panels/timeline_panel.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

Rgb BarColor(int64_t id, bool selected) {
  if (selected) return {235, 200, 90};
  static const Rgb kShades[] = {{70, 84, 110}, {84, 100, 90}, {100, 84, 104}, {96, 96, 80}};
  return kShades[static_cast<size_t>(id % 4)];
}

// The span a drawn item stands for: itself on a rank lane, the slowest member's on a group lane.
const TimelineSpan& Rep(const TimelineSpan& s) { return s; }
const TimelineSpan& Rep(const GroupSpan& s) { return s.slowest; }

// First span of a lane that can reach `t` (spans sorted by start; `max_len` bounds any span).
template <class Span>
size_t FirstVisible(const std::vector<Span>& spans, int64_t t, int64_t max_len) {
  int64_t from = t - max_len;
  return static_cast<size_t>(std::lower_bound(spans.begin(), spans.end(), from,
                                              [](const Span& s, int64_t v) { return s.start < v; }) -
                             spans.begin());
}

// A group lane's unions are disjoint and sorted, so their ends are sorted too: the first that ends
// at or after `t`, however long it is.
size_t FirstVisible(const std::vector<GroupSpan>& spans, int64_t t, int64_t /*max_len*/) {
  return static_cast<size_t>(std::lower_bound(spans.begin(), spans.end(), t,
                                              [](const GroupSpan& s, int64_t v) { return s.end < v; }) -
                             spans.begin());
}

template <class Span>
int64_t MaxLen(const std::vector<Span>& spans, double view_span) {
  int64_t max_len = 0;
  for (size_t i = 0; i < spans.size() && i < 64; ++i)
    max_len = std::max(max_len, spans[i].end - spans[i].start);
  if (spans.size() > 64) max_len = std::max<int64_t>(max_len, static_cast<int64_t>(view_span));
  return max_len;
}

}  // namespace

void TimelinePanel::DrawLanes(ViewContext& ctx, ImDrawList* list, const Frame& f, bool hovered, Hit& hit) {
  const ImGuiIO& io = ImGui::GetIO();
  const float lane_h = f.lane_h, plot_w = std::max(10.0f, f.x1 - f.x0);
  const int64_t min_ns = std::max<int64_t>(1, static_cast<int64_t>(f.span / plot_w));  // one pixel
  const int64_t world = ctx.world();
  // Pinned rows and scrolled rows are clipped apart: a scrolled row slides under the pinned ones.
  std::vector<Quad> pinned_quads, scrolled_quads;
  std::vector<Quad>* quads_ptr = &scrolled_quads;
  float clip_top = f.y0, clip_bottom = f.bottom;
  // One pass over a row's spans: pass 0 op bars, 1 redistribute bars, 2 collectives.
  auto draw = [&](const auto& spans, int pass, float top, float bottom, const TimelineRow& row) {
    ForEachLodItem(
        spans, FirstVisible(spans, f.vs, MaxLen(spans, f.span)), f.vs, f.ve, min_ns,
        [&](size_t i, size_t count, int64_t a, int64_t b) {
          const TimelineSpan& s = Rep(spans[i]);
          float sx0 = std::max(f.to_x(a, data_, view_start_), f.x0 - 2);
          float sx1 = std::min(f.to_x(b, data_, view_start_), f.x1 + 2);
          if (sx1 - sx0 < 1.0f) sx1 = sx0 + 1.0f;
          Rgb color;
          if (pass == 0) {
            color = s.redistribute_id == ctx.selection->op_id ? Rgb{120, 200, 190} : Rgb{60, 110, 110};
          } else if (pass == 1) {
            color = BarColor(s.redistribute_id, s.redistribute_id == ctx.selection->redistribute_id);
          } else {
            color = CollectiveKindColor(SpanCollective(*ctx.model, s).kind());
          }
          // Merged sub-pixel spans are hatched (zoom in to separate them).
          quads_ptr->push_back(
              MakeQuad(sx0, top, sx1, bottom, color, count > 1 ? QuadStyle::kHatch : QuadStyle::kSolid));
          if (hovered && io.MousePos.x >= sx0 && io.MousePos.x < sx1 &&
              io.MousePos.y >= std::max(top, clip_top) && io.MousePos.y < std::min(bottom, clip_bottom)) {
            hit = Hit{&s, nullptr, count, a, b, row};
            if constexpr (std::is_same_v<std::decay_t<decltype(spans[i])>, GroupSpan>)
              hit.group_span = &spans[i];
          }
        });
  };
  for (size_t r : VisibleRows(f)) {
    const TimelineRow& row = rows_[r];
    const float ly = RowTop(r, f);
    std::tie(clip_top, clip_bottom) = RowClip(r, f);
    std::vector<Quad>& quads = r < pinned_rows_ ? pinned_quads : scrolled_quads;
    quads_ptr = &quads;
    const float bar_bottom = lane_h >= 8 ? ly + lane_h * 0.5f : ly + lane_h - 1;
    if (row.rank < 0) {  // a group lane: a tinted background, then the unions
      const TimelineGroup& g = data_.groups[static_cast<size_t>(row.group)];
      quads.push_back(MakeQuad(f.label_x, ly, f.x1, ly + lane_h, kTimelineGroupBackground));
      draw(g.ops, 0, ly + 1, bar_bottom, row);
      draw(g.bars, 1, ly + 1, bar_bottom, row);
      if (lane_h >= 8) draw(g.collectives, 2, ly + lane_h * 0.5f, ly + lane_h - 1, row);
      continue;
    }
    const size_t lane = static_cast<size_t>(row.rank);
    if (lane_h >= 3)
      quads.push_back(
          MakeQuad(f.label_x, ly + 1, f.label_x + 6, ly + lane_h - 1, RankColor(row.rank, world)));
    draw(data_.ops[lane], 0, ly + 1, bar_bottom, row);
    draw(data_.bars[lane], 1, ly + 1, bar_bottom, row);
    if (lane_h >= 8) draw(data_.collectives[lane], 2, ly + lane_h * 0.5f, ly + lane_h - 1, row);
  }
  const float top = ScrollTop(f);
  ImGui::PushClipRect(ImVec2(f.label_x, top), ImVec2(f.x1, f.bottom), true);
  if (ctx.renderer) ctx.renderer->DrawQuads(list, std::move(scrolled_quads));
  ImGui::PopClipRect();
  if (!pinned_quads.empty()) {
    ImGui::PushClipRect(ImVec2(f.label_x, f.y0), ImVec2(f.x1, top), true);
    if (ctx.renderer) ctx.renderer->DrawQuads(list, std::move(pinned_quads));
    ImGui::PopClipRect();
  }
}

void TimelinePanel::DrawLabels(ViewContext& ctx, ImDrawList* list, const Frame& f) {
  const float lane_h = f.lane_h;
  ImGui::PushClipRect(ImVec2(f.label_x, f.y0), ImVec2(f.x1, f.bottom), true);
  const float text_h = ImGui::GetTextLineHeight();
  for (size_t r : VisibleRows(f)) {
    const TimelineRow& row = rows_[r];
    const float ly = RowTop(r, f);
    const auto [clip_top, clip_bottom] = RowClip(r, f);
    list->PushClipRect(ImVec2(f.label_x, clip_top), ImVec2(f.x1, clip_bottom), true);
    std::string label;
    if (row.rank < 0) {
      const TimelineGroup& g = data_.groups[static_cast<size_t>(row.group)];
      label = (expanded_[static_cast<size_t>(row.group)] ? "- " : "+ ") + g.label;
    } else {
      label = (row.group >= 0 ? "  r" : "r") + std::to_string(row.rank);
    }
    const bool pinned = r < pinned_rows_;
    geometry_.visible.push_back({row.group, row.rank, label, pinned, f.label_x, ly, f.x0, ly + lane_h});
    if (pinned) {  // a pin mark at the label's right end, and a line under the last pinned row
      const float px = f.x0 - 8, py = ly + lane_h * 0.5f;
      list->AddTriangleFilled(ImVec2(px - 4, py - 3), ImVec2(px + 4, py - 3), ImVec2(px, py + 3),
                              IM_COL32(235, 200, 90, 255));
      if (r + 1 == pinned_rows_)
        list->AddLine(ImVec2(f.label_x, ly + lane_h - 1), ImVec2(f.x1, ly + lane_h - 1),
                      IM_COL32(235, 200, 90, 200), 1.5f);
    }
    if (row.rank >= 0 && row.rank == goto_rank_)  // the rank gone to: outlined across the plot
      list->AddRect(ImVec2(f.label_x, ly), ImVec2(f.x1, ly + lane_h), IM_COL32(120, 170, 255, 230), 0.0f, 0,
                    1.5f);
    if (lane_h >= 12)
      list->AddText(ImVec2(f.label_x + 9, ly + (lane_h - text_h) * 0.5f), IM_COL32(220, 220, 225, 255),
                    label.c_str());
    if (lane_h < 14) {
      list->PopClipRect();
      continue;
    }
    // Bar labels: op bars by op name (light on teal), redistribute bars by id and tensor; on a
    // group lane the slowest rank of each union.
    for (const bool op_bars : {true, false}) {
      const bool group = row.rank < 0;
      const TimelineGroup* g = group ? &data_.groups[static_cast<size_t>(row.group)] : nullptr;
      const size_t lane = group ? 0 : static_cast<size_t>(row.rank);
      auto label_of = [&](const TimelineSpan& s, int64_t slowest) -> std::string {
        std::string text = op_bars
                               ? ctx.model->ops[static_cast<size_t>(s.op_record)].op->name().str()
                               : "#" + std::to_string(s.redistribute_id) + " " +
                                     ctx.model->redistributes[static_cast<size_t>(s.record)].begin->tensor();
        return slowest < 0 ? text : text + "  slowest r" + std::to_string(slowest);
      };
      auto each = [&](const auto& spans, auto&& slowest_of) {
        for (size_t i = FirstVisible(spans, f.vs, static_cast<int64_t>(f.span)); i < spans.size(); ++i) {
          if (spans[i].start > f.ve) break;
          const float sx0 = std::max(f.to_x(spans[i].start, data_, view_start_), f.x0);
          const float sx1 = std::min(f.to_x(spans[i].end, data_, view_start_), f.x1);
          if (sx1 - sx0 < 40) continue;
          const TimelineSpan& s = Rep(spans[i]);
          if (op_bars && !group) {  // an op whose implicit redistribute runs inside it: that bar's label wins
            const std::vector<TimelineSpan>& bars = data_.bars[lane];
            auto inside = std::lower_bound(bars.begin(), bars.end(), s.start,
                                           [](const TimelineSpan& b, int64_t t) { return b.start < t; });
            if (inside != bars.end() && inside->start <= s.end) continue;
          }
          if (op_bars && group) continue;  // group lanes name the redistributes only
          list->PushClipRect(ImVec2(sx0, ly), ImVec2(sx1, ly + lane_h), true);
          list->AddText(ImVec2(sx0 + 3, ly),
                        op_bars ? IM_COL32(225, 235, 235, 255) : IM_COL32(15, 15, 20, 255),
                        label_of(s, slowest_of(spans[i])).c_str());
          list->PopClipRect();
        }
      };
      if (group) {
        each(op_bars ? g->ops : g->bars, [](const GroupSpan& s) { return s.slowest_rank; });
      } else {
        each(op_bars ? data_.ops[lane] : data_.bars[lane], [](const TimelineSpan&) { return int64_t{-1}; });
      }
    }
    list->PopClipRect();
  }
  ImGui::PopClipRect();
  DrawGroupTooltip(f);
}

void TimelinePanel::DrawGroupTooltip(const Frame& f) const {
  // Hovering a group's label: its ranks and who finished first and last over the whole trace.
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (ImGui::IsItemHovered() && m.x < f.x0 && m.y >= f.y0) {
    const size_t r = RowAt(m.y, f);
    if (r < rows_.size() && rows_[r].rank < 0) {
      const TimelineGroup& g = data_.groups[static_cast<size_t>(rows_[r].group)];
      ImGui::BeginTooltip();
      ImGui::Text("%s: ranks %lld-%lld (click to %s)", g.label.c_str(), static_cast<long long>(g.first_rank),
                  static_cast<long long>(g.first_rank + g.size - 1),
                  expanded_[static_cast<size_t>(rows_[r].group)] ? "collapse" : "expand");
      if (g.slowest_rank >= 0) {
        ImGui::Text("slowest r%lld (last span ends at %s), fastest r%lld (%s)",
                    static_cast<long long>(g.slowest_rank),
                    FormatTimeNs(static_cast<double>(g.slowest_end - data_.t0)).c_str(),
                    static_cast<long long>(g.fastest_rank),
                    FormatTimeNs(static_cast<double>(g.fastest_end - data_.t0)).c_str());
      }
      ImGui::EndTooltip();
    }
  }
}

void TimelinePanel::DrawTooltip(const ViewContext& ctx, const Hit& hit) const {
  ImGui::BeginTooltip();
  if (hit.count > 1) {
    ImGui::Text("%zu spans merged (narrower than a pixel): zoom in to separate them", hit.count);
    ImGui::Text("from %s to %s", FormatTimeNs(static_cast<double>(hit.start - data_.t0)).c_str(),
                FormatTimeNs(static_cast<double>(hit.end - data_.t0)).c_str());
    ImGui::EndTooltip();
    return;
  }
  const TimelineSpan* s = hit.span;
  if (hit.group_span) {
    const GroupSpan& g = *hit.group_span;
    ImGui::Text("%s: %d ranks busy for %s (%d spans)",
                data_.groups[static_cast<size_t>(hit.row.group)].label.c_str(), g.members,
                FormatTimeNs(static_cast<double>(g.end - g.start)).c_str(), g.spans);
    ImGui::Text("slowest r%lld ends %s after fastest r%lld", static_cast<long long>(g.slowest_rank),
                FormatTimeNs(static_cast<double>(g.slowest_end - g.fastest_end)).c_str(),
                static_cast<long long>(g.fastest_rank));
    ImGui::Separator();
    ImGui::TextDisabled("the slowest rank's span:");
    RankSwatch(g.slowest_rank, ctx.world());
  } else {
    RankSwatch(hit.row.rank, ctx.world());
  }
  if (s->op_record >= 0 && s->collective < 0) {
    const trace::Op& op = ctx.model->ops[static_cast<size_t>(s->op_record)].op;
    ImGui::Text("op #%lld %s%s%s", static_cast<long long>(op.id), op.name().c_str(),
                op.args().empty() ? "" : "  ", op.args().c_str());
    ImGui::Text("duration %s  %s", FormatTimeNs(static_cast<double>(s->end - s->start)).c_str(),
                op.ok() ? "ok" : ("failed: " + op.error()).c_str());
  } else if (s->collective < 0) {
    const auto& rec = ctx.model->redistributes[static_cast<size_t>(s->record)];
    ImGui::Text("redistribute #%lld %s  %s", static_cast<long long>(s->redistribute_id),
                rec.begin->tensor().c_str(), rec.begin->notation().c_str());
    ImGui::Text("duration %s  predicted %.1f us  %s",
                FormatTimeNs(static_cast<double>(s->end - s->start)).c_str(), rec.begin->cost_us(),
                rec.end ? (rec.end->ok ? "ok" : ("failed: " + rec.end->error).c_str()) : "incomplete");
  } else {
    const trace::Collective& c = SpanCollective(*ctx.model, *s);
    int64_t sent = 0, recv = 0;
    for (int64_t b : c.bytes_sent()) sent += b;
    for (int64_t b : c.bytes_recv()) recv += b;
    if (c.redistribute_id >= 0) {
      ImGui::Text("%s%s  step %lld of #%lld", c.kind().c_str(), c.negotiated() ? " (shape negotiation)" : "",
                  static_cast<long long>(c.step()), static_cast<long long>(c.redistribute_id));
    } else {
      ImGui::Text("%s  run by op #%lld", c.kind().c_str(), static_cast<long long>(c.op_id));
    }
    ImGui::Text("group %s  mesh dims %s", FormatInts(c.group()).c_str(), FormatInts(c.mesh_dims()).c_str());
    ImGui::Text("sent %s  received %s  in %s", FormatBytes(static_cast<double>(sent)).c_str(),
                FormatBytes(static_cast<double>(recv)).c_str(),
                FormatTimeNs(static_cast<double>(c.end_ns - c.start_ns)).c_str());
  }
  ImGui::EndTooltip();
}

void TimelinePanel::Select(ViewContext& ctx, const Hit& hit) const {
  const TimelineSpan& s = *hit.span;
  const int64_t rank = hit.group_span ? hit.group_span->slowest_rank : hit.row.rank;
  if (s.op_record >= 0) {
    ctx.selection->op_id = ctx.model->ops[static_cast<size_t>(s.op_record)].op->id;
  } else {
    ctx.selection->redistribute_id = s.redistribute_id;
    ctx.selection->step = s.step >= 0 ? s.step : 0;
  }
  ctx.selection->focus_rank = rank;
  ctx.selection->focus_chosen = true;
}

}  // namespace shardscope::app::gui
