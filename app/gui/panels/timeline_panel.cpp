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

constexpr float kLabelWidth = 56.0f;       // rank labels
constexpr float kGroupLabelWidth = 80.0f;  // group labels ("- dp=127")
constexpr float kAxisHeight = 20.0f;
constexpr float kScrollbarWidth = 10.0f;
constexpr float kGroupedLaneHeight = 18.0f;  // with groups every row is tall enough for its label

double NiceStep(double range) {
  double raw = range / 8.0;
  double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

}  // namespace

void TimelinePanel::Prepare(const ViewContext& ctx) {
  PrepareCursor(ctx);
  if (ctx.model == key_model_ && ctx.model_serial == key_serial_) return;
  key_model_ = ctx.model, key_serial_ = ctx.model_serial;
  const bool keep = std::exchange(keep_view_, false) && ctx.model;
  const int64_t old_t0 = data_.t0, old_end = data_.t1 - data_.t0;
  const double old_start = view_start_, old_stop = view_end_;
  const float old_scroll = scroll_y_;
  const std::vector<bool> old_expanded = expanded_;
  data_ = ctx.model ? BuildTimeline(*ctx.model) : TimelineData{};
  range_stats_valid_ = false;
  kinds_.clear();
  if (ctx.model) {
    auto add = [this](const auto& collectives) {
      for (const trace::Collective& c : collectives) {
        if (std::find(kinds_.begin(), kinds_.end(), c.kind()) == kinds_.end()) kinds_.push_back(c.kind());
      }
    };
    for (const trace::RedistributeRecord& rec : ctx.model->redistributes) add(rec.collectives);
    for (const trace::OpRecord& rec : ctx.model->ops) add(rec.collectives);
    std::sort(kinds_.begin(), kinds_.end());
  }
  view_start_ = 0;
  view_end_ = static_cast<double>(data_.t1 - data_.t0) * 1.02;
  scroll_y_ = 0;
  expanded_.assign(data_.groups.size(), false);
  if (keep) {
    // Times are kept absolute (the first event can move when a rank starts late). A view that
    // reached the old end follows the newest time: the whole trace if it showed all of it, else
    // the same span ending at the new end.
    const double shift = static_cast<double>(old_t0 - data_.t0);
    const double new_end = static_cast<double>(data_.t1 - data_.t0);
    if (old_stop >= static_cast<double>(old_end)) {
      if (old_start > 0) view_end_ = new_end * 1.02, view_start_ = view_end_ - (old_stop - old_start);
    } else {
      view_start_ = old_start + shift, view_end_ = old_stop + shift;
    }
    scroll_y_ = old_scroll;
    if (old_expanded.size() == expanded_.size()) expanded_ = old_expanded;
    RebuildRows();
    return;  // the measured range, go-to and followed selection stay as they were
  }
  has_measure_ = false;
  pinned_.clear();  // another trace: its own lanes
  goto_rank_ = pending_goto_ = -1;
  goto_error_.clear();
  // The selection at load shows in the whole trace: only later changes are followed.
  followed_id_ = ctx.selection ? ctx.selection->redistribute_id : -1;
  followed_op_ = ctx.selection ? ctx.selection->op_id : -1;
  RebuildRows();
}

void TimelinePanel::RebuildRows() {
  rows_ = BuildRows(data_, expanded_);
  // Pinned ranks first (in the order pinned), out of the scrolled rows below them.
  const int64_t lanes = static_cast<int64_t>(data_.lane_rank.size());
  pinned_.erase(
      std::remove_if(pinned_.begin(), pinned_.end(), [&](int64_t r) { return r < 0 || r >= lanes; }),
      pinned_.end());
  if (!pinned_.empty()) {
    std::vector<TimelineRow> rows;
    for (int64_t rank : pinned_) {
      int32_t group = -1;
      for (size_t g = 0; g < data_.groups.size(); ++g) {
        const TimelineGroup& tg = data_.groups[g];
        if (rank >= tg.first_rank && rank < tg.first_rank + tg.size) group = static_cast<int32_t>(g);
      }
      rows.push_back({group, rank});
    }
    for (const TimelineRow& row : rows_) {
      if (row.rank < 0 || std::find(pinned_.begin(), pinned_.end(), row.rank) == pinned_.end())
        rows.push_back(row);
    }
    rows_ = std::move(rows);
  }
  pinned_rows_ = pinned_.size();
  row_of_rank_ = RowOfRank(rows_, data_.groups, data_.lane_rank.size());
  // A pinned rank is on its pinned row (a collapsed group row below also lists it).
  for (size_t i = 0; i < pinned_rows_; ++i)
    row_of_rank_[static_cast<size_t>(rows_[i].rank)] = static_cast<int32_t>(i);
}

bool TimelinePanel::TogglePin(int64_t rank) {
  if (rank < 0 || rank >= static_cast<int64_t>(data_.lane_rank.size())) return false;
  auto it = std::find(pinned_.begin(), pinned_.end(), rank);
  if (it == pinned_.end()) {
    pinned_.push_back(rank);
  } else {
    pinned_.erase(it);
  }
  RebuildRows();
  return true;
}

size_t TimelinePanel::RowAt(float y, const Frame& f) const {
  if (y < f.y0 || y >= f.bottom) return rows_.size();
  const float top = ScrollTop(f);
  const float row_f = y < top ? (y - f.y0) / f.lane_h : (y - f.y0 + scroll_y_) / f.lane_h;
  const size_t row = static_cast<size_t>(std::max(0.0f, row_f));
  return row < rows_.size() ? row : rows_.size();
}

std::vector<size_t> TimelinePanel::VisibleRows(const Frame& f) const {
  std::vector<size_t> out;
  for (size_t r = 0; r < pinned_rows_ && r < rows_.size(); ++r)
    if (RowTop(r, f) < f.bottom) out.push_back(r);
  const float top = ScrollTop(f);
  if (top >= f.bottom) return out;
  const size_t first = pinned_rows_ + static_cast<size_t>(scroll_y_ / f.lane_h);
  for (size_t r = first; r < rows_.size() && RowTop(r, f) < f.bottom; ++r)
    if (RowTop(r, f) + f.lane_h > top) out.push_back(r);
  return out;
}

std::pair<float, float> TimelinePanel::RowClip(size_t row, const Frame& f) const {
  const float y = RowTop(row, f);
  if (row < pinned_rows_) return {y, std::min(y + f.lane_h, f.bottom)};
  return {std::max(y, ScrollTop(f)), std::min(y + f.lane_h, f.bottom)};
}

float TimelinePanel::RowY(int64_t rank, float lane_h) const {
  if (rank < 0 || rank >= static_cast<int64_t>(row_of_rank_.size())) return 0;
  return static_cast<float>(row_of_rank_[static_cast<size_t>(rank)]) * lane_h;
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
      if (c.step() != step) continue;
      auto [it, added] = flow_of_group.try_emplace(c.group(), flows_.size());
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
            const bool pinned =
                p.first >= 0 && p.first < static_cast<int64_t>(row_of_rank_.size()) &&
                row_of_rank_[static_cast<size_t>(p.first)] >= 0 &&
                static_cast<size_t>(row_of_rank_[static_cast<size_t>(p.first)]) < pinned_rows_;
            return ImVec2(to_x(p.second),
                          top + RowY(p.first, lane_h) + 0.75f * lane_h - (pinned ? 0 : scroll_y));
          };
          const ImVec2 p0 = at(flow[k - 1]), p1 = at(flow[k]);
          // Members on one row (a collapsed group) or both off screen: nothing to join.
          if (p0.y == p1.y || std::max(p0.y, p1.y) < top || std::min(p0.y, p1.y) > bottom) continue;
          list->AddLine(p0, p1, IM_COL32(255, 255, 255, 150), 1.0f);
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

void TimelinePanel::DrawGoTo(float x, float y, float w) {
  ImGui::SetCursorScreenPos(ImVec2(x, y));
  ImGui::SetNextItemWidth(w);
  if (focus_goto_) {
    ImGui::SetKeyboardFocusHere();
    focus_goto_ = false;
  }
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(3, 1));
  // Goes as you type: every edit that reads as a rank scrolls to it (no Enter needed).
  // A hint that fits the label column (56 px): the tooltip says the rest.
  if (ImGui::InputTextWithHint("##goto_rank", "rank", goto_text_, sizeof goto_text_,
                               ImGuiInputTextFlags_CharsDecimal)) {
    int64_t rank = 0;
    bool digits = goto_text_[0] != 0;
    for (const char* c = goto_text_; *c && digits; ++c) {
      digits = *c >= '0' && *c <= '9' && rank < (int64_t{1} << 40);
      rank = rank * 10 + (*c - '0');
    }
    const int64_t lanes = static_cast<int64_t>(data_.lane_rank.size());
    goto_error_.clear();
    if (digits && rank < lanes) {
      pending_goto_ = rank;
    } else if (digits) {  // said, not clamped: a clamped rank would look like the one asked for
      goto_error_ = "no rank " + std::string(goto_text_) + ": ranks are 0.." + std::to_string(lanes - 1);
    }
  }
  goto_active_ = ImGui::IsItemActive();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "go to rank (G or Ctrl+G): its lane (group expanded), layout row and shards, mesh cell");
  ImGui::PopStyleVar();
}

void TimelinePanel::GoToRank(ViewContext& ctx, int64_t rank, float lane_h, float plot_h) {
  const int64_t lanes = static_cast<int64_t>(data_.lane_rank.size());
  if (lanes == 0) return;
  rank = std::clamp<int64_t>(rank, 0, lanes - 1);
  for (size_t g = 0; g < data_.groups.size(); ++g) {
    const TimelineGroup& group = data_.groups[g];
    if (rank >= group.first_rank && rank < group.first_rank + group.size && !expanded_[g]) {
      expanded_[g] = true;
      RebuildRows();
    }
  }
  scroll_y_ = RowY(rank, lane_h) - (plot_h - lane_h) / 2;
  goto_rank_ = rank;
  ctx.selection->focus_rank = rank;
  ctx.selection->focus_chosen = true;
}

void TimelinePanel::ZoomToSelection(const ViewContext& ctx) {
  int64_t a = 0, b = 0;
  const bool found = IdRange(data_.bars, ctx.selection->redistribute_id, a, b) ||
                     (ctx.selection->op_id >= 0 && IdRange(data_.ops, ctx.selection->op_id, a, b));
  if (!found) return;
  const double pad = std::max(25.0, static_cast<double>(b - a) * 0.05);
  view_start_ = static_cast<double>(a - data_.t0) - pad;
  view_end_ = static_cast<double>(b - data_.t0) + pad;
}

void TimelinePanel::FollowSelection(const ViewContext& ctx) {
  const Selection& sel = *ctx.selection;
  if (sel.redistribute_id == followed_id_ && sel.op_id == followed_op_) return;
  const bool op_changed = sel.op_id != followed_op_ && sel.redistribute_id == followed_id_;
  followed_id_ = sel.redistribute_id, followed_op_ = sel.op_id;
  int64_t a = 0, b = 0;
  const bool found = op_changed ? sel.op_id >= 0 && IdRange(data_.ops, sel.op_id, a, b)
                                : IdRange(data_.bars, sel.redistribute_id, a, b) ||
                                      (sel.op_id >= 0 && IdRange(data_.ops, sel.op_id, a, b));
  if (!found) return;
  const double s = static_cast<double>(a - data_.t0), e = static_cast<double>(b - data_.t0);
  if (s >= view_start_ && e <= view_end_) return;
  const double span = view_end_ - view_start_;
  if (e - s <= span * 0.9) {
    view_start_ = (s + e) / 2 - span / 2;
    view_end_ = view_start_ + span;
  } else {
    const double pad = std::max(25.0, (e - s) * 0.05);
    view_start_ = s - pad, view_end_ = e + pad;
  }
}

void TimelinePanel::HandleNavigation(const ViewContext& ctx, const Frame& f, float scrollbar_x) {
  ImGuiIO& io = ImGui::GetIO();
  const bool hovered = ImGui::IsItemHovered(), active = ImGui::IsItemActive();
  const float plot_w = std::max(10.0f, f.x1 - f.x0);
  double span = f.span;
  auto t_at = [&](float x) { return view_start_ + (std::clamp(x, f.x0, f.x1) - f.x0) / plot_w * span; };
  auto zoom = [&](double factor, double around) {
    double total = static_cast<double>(data_.t1 - data_.t0) * 1.5;
    double new_span = std::clamp(span * factor, 50.0, std::max(total, 100.0));
    double frac = (around - view_start_) / span;
    view_start_ = around - frac * new_span;
    view_end_ = view_start_ + new_span;
    span = new_span;
  };
  // Wheel: zoom around the pointer; over the labels or the scrollbar, or with Shift, scroll lanes.
  if (hovered && io.MouseWheel != 0.0f) {
    if (io.KeyShift || io.MousePos.x < f.x0 || io.MousePos.x >= scrollbar_x) {
      scroll_y_ -= io.MouseWheel * f.lane_h * 3;
    } else {
      zoom(std::pow(0.8, io.MouseWheel), view_start_ + (io.MousePos.x - f.x0) / plot_w * span);
    }
  }
  if (!io.WantTextInput && !goto_active_) {
    for (ImWchar c : io.InputQueueCharacters) {
      double mid = view_start_ + span / 2;
      if (c == '+' || c == '=' || c == 'w' || c == 'W') zoom(0.8, mid);
      if (c == '-' || c == 's' || c == 'S') zoom(1.25, mid);
      if (c == 'a' || c == 'A') view_start_ -= span * 0.1, view_end_ -= span * 0.1;
      if (c == 'd' || c == 'D') view_start_ += span * 0.1, view_end_ += span * 0.1;
      if (c == 'f' || c == 'F') ZoomToSelection(ctx);
      if (c == '0') view_start_ = 0, view_end_ = static_cast<double>(data_.t1 - data_.t0) * 1.02;
      if (c == 'g' || c == 'G') focus_goto_ = true;
    }
  }
  // A press picks the gesture: the scrollbar scrolls, the axis row (or Shift) measures, else pan.
  if (ImGui::IsItemActivated()) {
    const ImVec2 p = io.MouseClickedPos[ImGuiMouseButton_Left];
    scrolling_ = p.x >= scrollbar_x && p.y >= f.y0;
    measuring_ = !scrolling_ && p.x >= f.x0 && (p.y < f.y0 || io.KeyShift);
    if (measuring_) has_measure_ = range_stats_valid_ = false, measure_a_ = measure_b_ = t_at(p.x);
  }
  if (active && scrolling_) {
    const float plot_h = f.bottom - f.y0, content_h = f.lane_h * static_cast<float>(rows_.size());
    const float thumb = std::max(16.0f, plot_h * plot_h / std::max(content_h, 1.0f));
    scroll_y_ = (io.MousePos.y - f.y0 - thumb / 2) / std::max(1.0f, plot_h - thumb) * (content_h - plot_h);
  } else if (active && measuring_ && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
    has_measure_ = true;
    const double b = t_at(io.MousePos.x);
    if (b != measure_b_) range_stats_valid_ = false;
    measure_b_ = b;
  } else if (active && !measuring_ && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
    dragging_ = true;
    view_start_ -= io.MouseDelta.x / plot_w * span;
    view_end_ -= io.MouseDelta.x / plot_w * span;
    scroll_y_ -= io.MouseDelta.y;
  }
}

void TimelinePanel::DrawMeasure(ImDrawList* list, const Frame& f, float axis_top) const {
  if (!has_measure_) return;
  const double a = std::min(measure_a_, measure_b_), b = std::max(measure_a_, measure_b_);
  const float plot_w = std::max(10.0f, f.x1 - f.x0);
  auto x_of = [&](double t) {
    return std::clamp(f.x0 + static_cast<float>((t - view_start_) / f.span * plot_w), f.x0, f.x1);
  };
  const float xa = x_of(a), xb = std::max(x_of(b), x_of(a) + 1);
  list->PushClipRect(ImVec2(f.x0, axis_top), ImVec2(f.x1, f.bottom), true);
  list->AddRectFilled(ImVec2(xa, axis_top), ImVec2(xb, f.bottom), IM_COL32(120, 170, 255, 40));
  list->AddLine(ImVec2(xa, axis_top), ImVec2(xa, f.bottom), IM_COL32(120, 170, 255, 220));
  list->AddLine(ImVec2(xb, axis_top), ImVec2(xb, f.bottom), IM_COL32(120, 170, 255, 220));
  const std::string label = FormatTimeNs(b - a);
  const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
  const float lx = std::clamp((xa + xb - ts.x) / 2, f.x0, std::max(f.x0, f.x1 - ts.x - 4));
  list->AddRectFilled(ImVec2(lx - 3, axis_top + 1), ImVec2(lx + ts.x + 3, axis_top + ts.y + 3),
                      IM_COL32(30, 50, 90, 235));
  list->AddText(ImVec2(lx, axis_top + 2), IM_COL32(200, 220, 255, 255), label.c_str());
  list->PopClipRect();
}

void TimelinePanel::DrawRangeStats(const ViewContext& ctx, const Frame& f) {
  if (!has_measure_) return;
  if (!range_stats_valid_) {
    const double a = std::min(measure_a_, measure_b_), b = std::max(measure_a_, measure_b_);
    range_stats_ = ComputeRangeStats(*ctx.model, data_, data_.t0 + static_cast<int64_t>(std::floor(a)),
                                     data_.t0 + static_cast<int64_t>(std::ceil(b)));
    range_stats_valid_ = true;
  }
  const RangeStats& r = range_stats_;
  // Top right of the plot, under the axis: the lanes to the left stay visible beside it.
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float w = std::min(380.0f, std::max(120.0f, (f.x1 - f.x0) * 0.6f));
  const float want_h = line * (4.5f + static_cast<float>(r.ranks.size())) + 12;
  const float h = std::min(want_h, std::max(line * 3, f.bottom - f.y0 - 4));
  const ImVec2 at(f.x1 - w - 2, f.y0 + 2);
  ImGui::SetCursorScreenPos(at);
  ImGui::PushStyleColor(ImGuiCol_ChildBg, IM_COL32(22, 30, 48, 240));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(6, 4));
  ImGui::BeginChild("##range_stats", ImVec2(w, h), true);
  ImGui::TextColored(ImVec4(0.6f, 0.75f, 1.0f, 1.0f), "range %s",
                     FormatTimeNs(static_cast<double>(r.end_ns - r.start_ns)).c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("from %s", FormatTimeNs(static_cast<double>(r.start_ns - data_.t0)).c_str());
  ImGui::SameLine(std::max(ImGui::GetCursorPosX(), w - 30));
  if (ImGui::SmallButton("x##range_close")) ClearMeasure();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("drop the range (also Esc)");
  ImGui::TextWrapped("%lld redistributes, %lld ops, %lld collective calls, %s sent",
                     static_cast<long long>(r.redistributes), static_cast<long long>(r.ops),
                     static_cast<long long>(r.collectives),
                     FormatBytes(static_cast<double>(r.bytes_sent)).c_str());
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "everything overlapping the range; a collective's bytes count whole, its busy time only inside "
        "the range");
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (!r.ranks.empty() && ImGui::BeginTable("##range_ranks", 5, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* c : {"rank", "calls", "sent", "busy", "redistr."}) ImGui::TableSetupColumn(c);
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(r.ranks.size()));
    while (clipper.Step()) {
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const RangeRankStats& k = r.ranks[static_cast<size_t>(i)];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        RankSwatch(k.rank, ctx.world());
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(k.collectives));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(FormatBytes(static_cast<double>(k.bytes_sent)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(FormatTimeNs(static_cast<double>(k.busy_ns)).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(k.redistributes + k.ops));
      }
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
  ImGui::PopStyleVar();
  ImGui::PopStyleColor();
  geometry_.range_box_x0 = at.x, geometry_.range_box_y0 = at.y;
  geometry_.range_box_x1 = at.x + w, geometry_.range_box_y1 = at.y + h;
}

void TimelinePanel::DrawScrollbar(ImDrawList* list, const Frame& f, float x, float content_h) const {
  const float plot_h = f.bottom - f.y0;
  if (content_h <= plot_h) return;
  const float thumb = std::max(16.0f, plot_h * plot_h / content_h);
  const float at = f.y0 + scroll_y_ / (content_h - plot_h) * (plot_h - thumb);
  list->AddRectFilled(ImVec2(x, f.y0), ImVec2(x + kScrollbarWidth, f.bottom), IM_COL32(30, 30, 36, 255));
  list->AddRectFilled(ImVec2(x + 2, at), ImVec2(x + kScrollbarWidth - 2, at + thumb),
                      scrolling_ ? IM_COL32(170, 170, 185, 255) : IM_COL32(110, 110, 125, 255), 3.0f);
}

void TimelinePanel::Draw(ViewContext& ctx) {
  shows_ = {};
  geometry_ = {};
  if (!ctx.model) {
    ImGui::TextDisabled("no trace loaded");
    return;
  }
  shows_ = {ctx.selection->redistribute_id,
            has_cursor_ && cursor_id_ == ctx.selection->redistribute_id ? cursor_step_ : -1, -1};
  ImGuiIO& io = ImGui::GetIO();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  avail.y = std::max(avail.y, 60.0f);
  const float label_w = data_.groups.empty() ? kLabelWidth : kGroupLabelWidth;
  DrawGoTo(origin.x + 1, origin.y, label_w - 4);  // before the canvas, so that it keeps the pointer
  ImGui::SetCursorScreenPos(origin);
  ImGui::InvisibleButton("##timeline_canvas", avail, ImGuiButtonFlags_MouseButtonLeft);
  const bool canvas_hovered = ImGui::IsItemHovered();
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float plot_h = avail.y - kAxisHeight;
  const float rows = std::max(1.0f, static_cast<float>(rows_.size()));
  const float lane_h = std::clamp(plot_h / rows, data_.groups.empty() ? 3.0f : kGroupedLaneHeight, 26.0f);
  const float content_h = lane_h * static_cast<float>(rows_.size());
  const bool scrollbar = content_h > plot_h;
  Frame f;
  f.label_x = origin.x;
  f.x0 = origin.x + label_w;
  f.x1 = origin.x + avail.x - (scrollbar ? kScrollbarWidth + 2 : 0);
  f.y0 = origin.y + kAxisHeight;
  f.bottom = origin.y + avail.y;
  f.lane_h = lane_h;
  f.span = std::max(1.0, view_end_ - view_start_);
  const float scrollbar_x = scrollbar ? f.x1 + 2 : origin.x + avail.x + 1;
  FollowSelection(ctx);
  HandleNavigation(ctx, f, scrollbar_x);
  if (pending_goto_ >= 0) GoToRank(ctx, pending_goto_, lane_h, plot_h), pending_goto_ = -1;
  scroll_y_ = std::clamp(scroll_y_, 0.0f, std::max(0.0f, lane_h * static_cast<float>(rows_.size()) - plot_h));
  f.span = std::max(1.0, view_end_ - view_start_);
  f.vs = data_.t0 + static_cast<int64_t>(view_start_);
  f.ve = data_.t0 + static_cast<int64_t>(view_end_);
  const float plot_w = std::max(10.0f, f.x1 - f.x0);

  // Axis. Its labels stop short of the legend (right-aligned in the same row) instead of under it.
  float legend_x = f.x1 - 18;
  for (const std::string& k : kinds_) legend_x -= ImGui::CalcTextSize(k.c_str()).x + 10;
  list->PushClipRect(ImVec2(f.x0, origin.y), ImVec2(f.x1, f.bottom), true);
  double tick = NiceStep(f.span);
  for (double t = std::ceil(view_start_ / tick) * tick; t <= view_end_; t += tick) {
    float x = f.x0 + static_cast<float>((t - view_start_) / f.span * plot_w);
    list->AddLine(ImVec2(x, origin.y + kAxisHeight - 5), ImVec2(x, f.bottom), IM_COL32(255, 255, 255, 22));
    const std::string label = FormatTimeNs(t);
    if (x + 2 + ImGui::CalcTextSize(label.c_str()).x < legend_x - 4)
      list->AddText(ImVec2(x + 2, origin.y + 2), IM_COL32(170, 170, 180, 255), label.c_str());
  }
  list->PopClipRect();
  // Hovering the legend explains every mark of the plot.
  const ImVec2 mouse = io.MousePos;
  if (mouse.x >= legend_x && mouse.x < f.x1 && mouse.y >= origin.y && mouse.y < origin.y + kAxisHeight) {
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(
        "bars: redistributes on each rank's lane (selected: brighter); inside them,\n"
        "  collectives in their kind's colour (this legend); teal bars: ops");
    ImGui::TextUnformatted(
        "yellow band: the selected step, from the first rank entering it to the last\n"
        "  leaving; red part: skew between the first and the last rank to enter");
    ImGui::TextUnformatted(
        "white flow lines: one collective across its ranks, through each member's start;\n"
        "  a kink is a rank that came late");
    ImGui::TextUnformatted(
        "blue band on the axis: a measured range (drag on the axis); outlined lane: the\n"
        "  rank gone to");
    ImGui::EndTooltip();
  }

  Hit hit;
  DrawLanes(ctx, list, f, ImGui::IsItemHovered(), hit);
  DrawLabels(ctx, list, f);
  DrawCursorAndLegend(list, f.x0, f.x1, f.y0, f.bottom, origin.y + 2, view_start_, f.span, lane_h, scroll_y_);
  DrawMeasure(list, f, origin.y);
  DrawScrollbar(list, f, scrollbar_x, content_h);
  DrawRangeStats(ctx, f);
  if (!goto_error_.empty()) {  // beside the go-to field, over the axis row
    const ImVec2 at(f.x0 + 4, origin.y + 1), ts = ImGui::CalcTextSize(goto_error_.c_str());
    list->AddRectFilled(ImVec2(at.x - 3, at.y), ImVec2(at.x + ts.x + 3, at.y + ts.y + 2),
                        IM_COL32(90, 20, 20, 240));
    list->AddText(ImVec2(at.x, at.y + 1), IM_COL32(255, 170, 170, 255), goto_error_.c_str());
  }
  if (hit.count > 0) DrawTooltip(ctx, hit);

  // A click (no drag) on a label toggles its group; on a span selects it.
  if (ImGui::IsItemDeactivated() && !dragging_ && !measuring_ && !scrolling_) {
    const ImVec2 p = io.MouseClickedPos[ImGuiMouseButton_Left];
    const size_t row = RowAt(p.y, f);
    if (p.x < f.x0 && row < rows_.size() && rows_[row].rank < 0 && rows_[row].group >= 0) {
      const size_t g = static_cast<size_t>(rows_[row].group);
      expanded_[g] = !expanded_[g];
      RebuildRows();
    } else if (hit.count == 1) {
      Select(ctx, hit);
    }
  }
  if (!ImGui::IsMouseDown(ImGuiMouseButton_Left)) dragging_ = scrolling_ = measuring_ = false;
  DrawLaneMenu(f, canvas_hovered);

  RecordGeometry(f, scrollbar);
}

void TimelinePanel::DrawLaneMenu(const Frame& f, bool canvas_hovered) {
  // Right click on a rank's lane (label or plot): pin it to the top, or unpin it.
  const ImGuiIO& io = ImGui::GetIO();
  if (canvas_hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
    const size_t row = RowAt(io.MousePos.y, f);
    if (row < rows_.size() && rows_[row].rank >= 0) {
      menu_rank_ = rows_[row].rank;
      ImGui::OpenPopup("##lane_menu");
    }
  }
  if (!ImGui::BeginPopup("##lane_menu")) return;
  const bool pinned = std::find(pinned_.begin(), pinned_.end(), menu_rank_) != pinned_.end();
  auto item = [&](const std::string& label) {
    const bool chosen = ImGui::MenuItem(label.c_str());
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    geometry_.menu.push_back({label, a.x, a.y, b.x, b.y});
    return chosen;
  };
  const std::string rank = "r" + std::to_string(menu_rank_);
  if (item(pinned ? "Unpin " + rank : "Pin " + rank + " to the top")) TogglePin(menu_rank_);
  if (!pinned_.empty() && item("Unpin all lanes")) pinned_.clear(), RebuildRows();
  ImGui::EndPopup();
}

void TimelinePanel::RecordGeometry(const Frame& f, bool scrollbar) {
  geometry_.plot_x0 = f.x0, geometry_.plot_x1 = f.x1, geometry_.y0 = f.y0, geometry_.y1 = f.bottom;
  geometry_.view_start_ns = view_start_, geometry_.view_end_ns = view_end_;
  geometry_.trace_ns = data_.t1 - data_.t0;
  geometry_.t0_ns = data_.t0;
  geometry_.rows = rows_.size();
  geometry_.first_row = pinned_rows_ + static_cast<size_t>(scroll_y_ / f.lane_h);
  geometry_.pinned = pinned_;
  for (size_t g = 0; g < expanded_.size(); ++g)
    if (expanded_[g]) geometry_.expanded.push_back(static_cast<int32_t>(g));
  geometry_.has_measure = has_measure_;
  geometry_.measure_start_ns = std::min(measure_a_, measure_b_);
  geometry_.measure_end_ns = std::max(measure_a_, measure_b_);
  if (has_measure_) geometry_.range = range_stats_;
  geometry_.goto_rank = goto_rank_;
  geometry_.goto_error = goto_error_;
  geometry_.scrollbar = scrollbar;
}

}  // namespace shardscope::app::gui
