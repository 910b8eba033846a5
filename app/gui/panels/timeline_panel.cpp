#include "panels/timeline_panel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include <imgui.h>

#include "gl_renderer.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

constexpr float kLabelWidth = 56.0f;
constexpr float kAxisHeight = 20.0f;

Rgb BarColor(int64_t id, bool selected) {
  if (selected) return {235, 200, 90};
  static const Rgb kShades[] = {{70, 84, 110}, {84, 100, 90}, {100, 84, 104}, {96, 96, 80}};
  return kShades[static_cast<size_t>(id % 4)];
}

double NiceStep(double range) {
  double raw = range / 8.0;
  double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

// First span of a lane that can reach `t` (spans sorted by start; `max_len` bounds any span).
size_t FirstVisible(const std::vector<TimelineSpan>& spans, int64_t t, int64_t max_len) {
  int64_t from = t - max_len;
  return static_cast<size_t>(std::lower_bound(spans.begin(), spans.end(), from,
                                              [](const TimelineSpan& s, int64_t v) { return s.start < v; }) -
                             spans.begin());
}

}  // namespace

void TimelinePanel::Prepare(const ViewContext& ctx) {
  PrepareCursor(ctx);
  if (ctx.model == key_model_ && ctx.model_serial == key_serial_) return;
  key_model_ = ctx.model, key_serial_ = ctx.model_serial;
  data_ = ctx.model ? BuildTimeline(*ctx.model) : TimelineData{};
  kinds_.clear();
  if (ctx.model) {
    auto add = [this](const auto& collectives) {
      for (const trace::Collective& c : collectives) {
        if (std::find(kinds_.begin(), kinds_.end(), c.kind) == kinds_.end()) kinds_.push_back(c.kind);
      }
    };
    for (const trace::RedistributeRecord& rec : ctx.model->redistributes) add(rec.collectives);
    for (const trace::OpRecord& rec : ctx.model->ops) add(rec.collectives);
    std::sort(kinds_.begin(), kinds_.end());
  }
  view_start_ = 0;
  view_end_ = static_cast<double>(data_.t1 - data_.t0) * 1.02;
  scroll_y_ = 0;
}

void TimelinePanel::PrepareCursor(const ViewContext& ctx) {
  const RedistributeView* view = ctx.redistribute;
  const int64_t id = view ? view->id : -1, step = ctx.selection ? ctx.selection->step : -1;
  if (cursor_model_ == ctx.model && cursor_serial_ == ctx.model_serial && cursor_id_ == id &&
      cursor_step_ == step)
    return;
  cursor_model_ = ctx.model, cursor_serial_ = ctx.model_serial, cursor_id_ = id, cursor_step_ = step;
  has_cursor_ = false;
  flows_.clear();
  if (!view || !ctx.model) return;
  std::vector<int64_t> offset(static_cast<size_t>(std::max<int64_t>(ctx.model->world, 0)), 0);
  for (const trace::RankTrace& r : ctx.model->ranks) {
    if (r.header.rank >= 0 && r.header.rank < ctx.model->world)
      offset[static_cast<size_t>(r.header.rank)] = r.header.clock.offset_ns;
  }
  int64_t first_enter = std::numeric_limits<int64_t>::max(), last_enter = std::numeric_limits<int64_t>::min();
  int64_t last_leave = std::numeric_limits<int64_t>::min();
  std::map<std::vector<int64_t>, size_t> flow_of_group;
  for (const trace::RedistributeRecord* rec : view->per_rank) {
    if (rec->rank < 0 || rec->rank >= ctx.model->world) continue;
    const int64_t off = offset[static_cast<size_t>(rec->rank)];
    // One collective across its ranks: each member's first collective of the step, by group.
    for (const trace::Collective& c : rec->collectives) {
      if (c.step != step) continue;
      auto [it, added] = flow_of_group.try_emplace(c.group, flows_.size());
      if (added) flows_.emplace_back();
      flows_[it->second].push_back({rec->rank, c.start_ns + off});
      break;
    }
    for (const trace::StepRecord& s : rec->steps) {
      if (s.begin->step != step) continue;
      first_enter = std::min(first_enter, s.begin->t_ns + off);
      last_enter = std::max(last_enter, s.begin->t_ns + off);
      last_leave = std::max(last_leave, (s.end ? s.end->t_ns : s.begin->t_ns) + off);
    }
  }
  if (first_enter > last_leave) return;
  has_cursor_ = true;
  cursor_t0_ = first_enter, cursor_t1_ = last_leave, cursor_last_enter_ = last_enter;
}

void TimelinePanel::DrawCursorAndLegend(ImDrawList* list, float x0, float x1, float top, float bottom,
                                        float axis_y, double view_start, double span, float lane_h,
                                        float scroll_y) const {
  const float plot_w = std::max(1.0f, x1 - x0);
  auto to_x = [&](int64_t t) {
    return x0 + static_cast<float>((static_cast<double>(t - data_.t0) - view_start) / span * plot_w);
  };
  if (has_cursor_) {
    list->PushClipRect(ImVec2(x0, top), ImVec2(x1, bottom), true);
    const float a = std::clamp(to_x(cursor_t0_), x0, x1), b = std::clamp(to_x(cursor_t1_), x0, x1);
    const float skew = std::clamp(to_x(cursor_last_enter_), x0, x1);
    list->AddRectFilled(ImVec2(a, top), ImVec2(std::max(b, a + 1), bottom), IM_COL32(235, 200, 90, 28));
    // Skew: from the first rank entering the step to the last; wide = a straggler held the others.
    if (skew > a + 1) list->AddRectFilled(ImVec2(a, top), ImVec2(skew, bottom), IM_COL32(240, 80, 80, 40));
    list->AddLine(ImVec2(a, top), ImVec2(a, bottom), IM_COL32(235, 200, 90, 220), 1.5f);
    list->AddLine(ImVec2(b, top), ImVec2(b, bottom), IM_COL32(235, 200, 90, 120), 1.0f);
    // Flow lines through each collective's start on its ranks' lanes: a kink is a late rank.
    if (lane_h >= 4 && flows_.size() <= 512) {
      for (const auto& flow : flows_) {
        for (size_t k = 1; k < flow.size() && flow.size() <= 256; ++k) {
          auto at = [&](const std::pair<int64_t, int64_t>& p) {
            return ImVec2(to_x(p.second), top + (static_cast<float>(p.first) + 0.75f) * lane_h - scroll_y);
          };
          list->AddLine(at(flow[k - 1]), at(flow[k]), IM_COL32(255, 255, 255, 150), 1.0f);
        }
      }
    }
    const std::string label = "step " + std::to_string(cursor_step_);
    list->AddText(ImVec2(a + 3, top + 1), IM_COL32(235, 200, 90, 255), label.c_str());
    list->PopClipRect();
  }
  // Legend of the collective colours, right-aligned in the axis row.
  float x = x1 - 18;  // clear of the window edge and its scrollbar
  for (auto it = kinds_.rbegin(); it != kinds_.rend(); ++it) {
    const ImVec2 ts = ImGui::CalcTextSize(it->c_str());
    x -= ts.x;
    list->AddRectFilled(ImVec2(x - 2, axis_y + 1), ImVec2(x + ts.x + 2, axis_y + ts.y + 1),
                        PackAbgr(CollectiveKindColor(*it)));
    list->AddText(ImVec2(x, axis_y + 1), ContrastText(CollectiveKindColor(*it)), it->c_str());
    x -= 10;
  }
}

void TimelinePanel::Draw(ViewContext& ctx) {
  shows_ = {};
  if (!ctx.model) {
    ImGui::TextDisabled("no trace loaded");
    return;
  }
  shows_ = {ctx.selection->redistribute_id,
            has_cursor_ && cursor_id_ == ctx.selection->redistribute_id ? cursor_step_ : -1, -1};
  ImGuiIO& io = ImGui::GetIO();
  ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  avail.y = std::max(avail.y, 60.0f);
  ImGui::InvisibleButton("##timeline_canvas", avail);
  bool hovered = ImGui::IsItemHovered();
  ImDrawList* list = ImGui::GetWindowDrawList();
  size_t lanes = data_.lane_rank.size();
  float plot_h = avail.y - kAxisHeight;
  float lane_h = std::clamp(plot_h / std::max<float>(1.0f, static_cast<float>(lanes)), 3.0f, 26.0f);
  float content_h = lane_h * static_cast<float>(lanes);
  float x0 = origin.x + kLabelWidth, x1 = origin.x + avail.x, y0 = origin.y + kAxisHeight;
  float plot_w = std::max(10.0f, x1 - x0);
  double span = std::max(1.0, view_end_ - view_start_);

  // Zoom (wheel, +/-) around the mouse, pan (drag, A/D, shift+wheel scrolls lanes).
  double mouse_t = view_start_ + (io.MousePos.x - x0) / plot_w * span;
  auto zoom = [&](double factor, double around) {
    double total = static_cast<double>(data_.t1 - data_.t0) * 1.5;
    double new_span = std::clamp(span * factor, 50.0, std::max(total, 100.0));
    double frac = (around - view_start_) / span;
    view_start_ = around - frac * new_span;
    view_end_ = view_start_ + new_span;
  };
  if (hovered && io.MouseWheel != 0.0f) {
    if (io.KeyShift) {
      scroll_y_ -= io.MouseWheel * lane_h * 3;
    } else {
      zoom(std::pow(0.8, io.MouseWheel), mouse_t);
    }
  }
  if (!io.WantTextInput) {
    for (ImWchar c : io.InputQueueCharacters) {
      double mid = view_start_ + span / 2;
      if (c == '+' || c == '=') zoom(0.8, mid);
      if (c == '-') zoom(1.25, mid);
      if (c == 'a' || c == 'A') view_start_ -= span * 0.1, view_end_ -= span * 0.1;
      if (c == 'd' || c == 'D') view_start_ += span * 0.1, view_end_ += span * 0.1;
      if (c == 'f' || c == 'F') view_start_ = 0, view_end_ = static_cast<double>(data_.t1 - data_.t0) * 1.02;
    }
  }
  if (hovered && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
    dragging_ = true;
    view_start_ -= io.MouseDelta.x / plot_w * span;
    view_end_ -= io.MouseDelta.x / plot_w * span;
    scroll_y_ -= io.MouseDelta.y;
  }
  scroll_y_ = std::clamp(scroll_y_, 0.0f, std::max(0.0f, content_h - plot_h));
  span = std::max(1.0, view_end_ - view_start_);

  // Axis.
  list->PushClipRect(origin, ImVec2(x1, origin.y + avail.y), true);
  double tick = NiceStep(span);
  for (double t = std::ceil(view_start_ / tick) * tick; t <= view_end_; t += tick) {
    float x = x0 + static_cast<float>((t - view_start_) / span * plot_w);
    list->AddLine(ImVec2(x, origin.y + kAxisHeight - 5), ImVec2(x, origin.y + avail.y),
                  IM_COL32(255, 255, 255, 22));
    list->AddText(ImVec2(x + 2, origin.y + 2), IM_COL32(170, 170, 180, 255), FormatTimeNs(t).c_str());
  }
  list->PopClipRect();

  // Lanes: only visible ones, only spans overlapping the visible time range; sub-pixel spans
  // collapse into the previous quad so a 1M-event lane costs at most ~plot_w quads.
  size_t first_lane = static_cast<size_t>(scroll_y_ / lane_h);
  size_t last_lane = std::min(lanes, static_cast<size_t>((scroll_y_ + plot_h) / lane_h) + 1);
  std::vector<Quad> quads;
  const TimelineSpan* hit = nullptr;
  size_t hit_lane = 0;
  int64_t vs = data_.t0 + static_cast<int64_t>(view_start_), ve = data_.t0 + static_cast<int64_t>(view_end_);
  auto to_x = [&](int64_t t) {
    return x0 + static_cast<float>((static_cast<double>(t - data_.t0) - view_start_) / span * plot_w);
  };
  int64_t world = ctx.world();
  for (size_t lane = first_lane; lane < last_lane; ++lane) {
    float ly = y0 + lane * lane_h - scroll_y_;
    int64_t rank = data_.lane_rank[lane];
    if (lane_h >= 3)
      quads.push_back(MakeQuad(origin.x, ly + 1, origin.x + 6, ly + lane_h - 1, RankColor(rank, world)));
    // Pass 0: op bars (program traces), under pass 1's redistribute bars; pass 2: collectives.
    for (int pass = 0; pass < 3; ++pass) {
      const auto& spans = pass == 0   ? data_.ops[lane]
                          : pass == 1 ? data_.bars[lane]
                                      : data_.collectives[lane];
      const bool bar = pass < 2;
      float top = bar ? ly + 1 : ly + lane_h * 0.5f;
      float bottom = ly + lane_h - 1;
      if (bar && lane_h >= 8) bottom = ly + lane_h * 0.5f;
      if (!bar && lane_h < 8) continue;
      int64_t max_len = 0;
      for (size_t i = 0; i < spans.size() && i < 64; ++i)
        max_len = std::max(max_len, spans[i].end - spans[i].start);
      if (spans.size() > 64) max_len = std::max<int64_t>(max_len, static_cast<int64_t>(span));
      float last_x1 = -1e9f;
      for (size_t i = FirstVisible(spans, vs, max_len); i < spans.size() && spans[i].start <= ve; ++i) {
        const TimelineSpan& s = spans[i];
        if (s.end < vs) continue;
        float sx0 = std::max(to_x(s.start), x0 - 2), sx1 = std::min(to_x(s.end), x1 + 2);
        if (sx1 - sx0 < 1.0f) sx1 = sx0 + 1.0f;
        if (sx1 <= last_x1 + 0.5f && !quads.empty()) {
          quads.back().x1 = std::max(quads.back().x1, sx1);
        } else {
          Rgb color;
          if (pass == 0) {
            color = s.redistribute_id == ctx.selection->op_id ? Rgb{120, 200, 190} : Rgb{60, 110, 110};
          } else if (pass == 1) {
            color = BarColor(s.redistribute_id, s.redistribute_id == ctx.selection->redistribute_id);
          } else {
            color = CollectiveKindColor(SpanCollective(*ctx.model, s).kind);
          }
          quads.push_back(MakeQuad(sx0, top, sx1, bottom, color));
          last_x1 = sx1;
        }
        if (hovered && io.MousePos.x >= sx0 && io.MousePos.x < sx1 && io.MousePos.y >= top &&
            io.MousePos.y < bottom) {
          hit = &s;
          hit_lane = lane;
        }
      }
    }
  }
  ImGui::PushClipRect(ImVec2(origin.x, y0), ImVec2(x1, origin.y + avail.y), true);
  if (ctx.renderer) ctx.renderer->DrawQuads(list, std::move(quads));
  // Rank labels and bar labels on top of the quads.
  for (size_t lane = first_lane; lane < last_lane; ++lane) {
    float ly = y0 + lane * lane_h - scroll_y_;
    if (lane_h >= 12) {
      list->AddText(ImVec2(origin.x + 9, ly + (lane_h - ImGui::GetTextLineHeight()) * 0.5f),
                    IM_COL32(220, 220, 225, 255), ("r" + std::to_string(data_.lane_rank[lane])).c_str());
    }
    if (lane_h < 14) continue;
    // Op bars are labelled by op name (light text on teal), redistribute bars by id and tensor.
    for (const bool op_bars : {true, false}) {
      const std::vector<TimelineSpan>& spans = op_bars ? data_.ops[lane] : data_.bars[lane];
      for (size_t i = FirstVisible(spans, vs, static_cast<int64_t>(span)); i < spans.size(); ++i) {
        const TimelineSpan& s = spans[i];
        if (s.start > ve) break;
        float sx0 = std::max(to_x(s.start), x0), sx1 = std::min(to_x(s.end), x1);
        if (sx1 - sx0 < 40) continue;
        if (op_bars) {  // an op whose implicit redistribute runs inside it: that bar's label wins
          const std::vector<TimelineSpan>& bars = data_.bars[lane];
          auto inside = std::lower_bound(bars.begin(), bars.end(), s.start,
                                         [](const TimelineSpan& b, int64_t t) { return b.start < t; });
          if (inside != bars.end() && inside->start <= s.end) continue;
        }
        const std::string label =
            op_bars ? ctx.model->ops[static_cast<size_t>(s.op_record)].op.name
                    : "#" + std::to_string(s.redistribute_id) + " " +
                          ctx.model->redistributes[static_cast<size_t>(s.record)].begin->tensor;
        list->PushClipRect(ImVec2(sx0, ly), ImVec2(sx1, ly + lane_h), true);
        list->AddText(ImVec2(sx0 + 3, ly), op_bars ? IM_COL32(225, 235, 235, 255) : IM_COL32(15, 15, 20, 255),
                      label.c_str());
        list->PopClipRect();
      }
    }
  }
  ImGui::PopClipRect();
  DrawCursorAndLegend(list, x0, x1, y0, origin.y + avail.y, origin.y + 2, view_start_, span, lane_h,
                      scroll_y_);

  if (hit) {
    ImGui::BeginTooltip();
    RankSwatch(data_.lane_rank[hit_lane], world);
    if (hit->op_record >= 0 && hit->collective < 0) {
      const trace::Op& op = ctx.model->ops[static_cast<size_t>(hit->op_record)].op;
      ImGui::Text("op #%lld %s%s%s", static_cast<long long>(op.id), op.name.c_str(),
                  op.args.empty() ? "" : "  ", op.args.c_str());
      ImGui::Text("duration %s  %s", FormatTimeNs(static_cast<double>(hit->end - hit->start)).c_str(),
                  op.ok ? "ok" : ("failed: " + op.error).c_str());
    } else if (hit->collective < 0) {
      const auto& rec = ctx.model->redistributes[static_cast<size_t>(hit->record)];
      ImGui::Text("redistribute #%lld %s  %s", static_cast<long long>(hit->redistribute_id),
                  rec.begin->tensor.c_str(), rec.begin->notation.c_str());
      ImGui::Text("duration %s  predicted %.1f us  %s",
                  FormatTimeNs(static_cast<double>(hit->end - hit->start)).c_str(), rec.begin->cost_us,
                  rec.end ? (rec.end->ok ? "ok" : ("failed: " + rec.end->error).c_str()) : "incomplete");
    } else {
      const trace::Collective& c = SpanCollective(*ctx.model, *hit);
      int64_t sent = 0, recv = 0;
      for (int64_t b : c.bytes_sent) sent += b;
      for (int64_t b : c.bytes_recv) recv += b;
      if (c.redistribute_id >= 0) {
        ImGui::Text("%s%s  step %lld of #%lld", c.kind.c_str(), c.negotiated ? " (shape negotiation)" : "",
                    static_cast<long long>(c.step), static_cast<long long>(c.redistribute_id));
      } else {
        ImGui::Text("%s  run by op #%lld", c.kind.c_str(), static_cast<long long>(c.op_id));
      }
      ImGui::Text("group %s  mesh dims %s", FormatInts(c.group).c_str(), FormatInts(c.mesh_dims).c_str());
      ImGui::Text("sent %s  received %s  in %s", FormatBytes(static_cast<double>(sent)).c_str(),
                  FormatBytes(static_cast<double>(recv)).c_str(),
                  FormatTimeNs(static_cast<double>(c.end_ns - c.start_ns)).c_str());
    }
    ImGui::EndTooltip();
  }
  if (ImGui::IsItemDeactivated() && !dragging_ && hit && hit->op_record >= 0) {
    ctx.selection->op_id = ctx.model->ops[static_cast<size_t>(hit->op_record)].op.id;
    ctx.selection->focus_rank = data_.lane_rank[hit_lane];
  } else if (ImGui::IsItemDeactivated() && !dragging_ && hit) {
    ctx.selection->redistribute_id = hit->redistribute_id;
    ctx.selection->step = hit->step >= 0 ? hit->step : 0;
    ctx.selection->focus_rank = data_.lane_rank[hit_lane];
  }
  if (!ImGui::IsMouseDown(ImGuiMouseButton_Left)) dragging_ = false;
}

}  // namespace shardscope::app::gui
