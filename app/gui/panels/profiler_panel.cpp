#include "panels/profiler_panel.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string_view>
#include <thread>

#include "platform_glfw.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

constexpr float kLabelWidth = 64.0f;
constexpr float kAxisHeight = 20.0f;
constexpr float kStepBand = 16.0f;  // step labels under the time axis
constexpr float kLaneGap = 5.0f;
constexpr float kSideWidth = 340.0f;
constexpr float kScrollbarWidth = 10.0f;
constexpr int32_t kMaxOpRows = 6;           // deeper ops are not drawn (the tooltip of the lane says so)
constexpr size_t kMaxGeometryItems = 6000;  // --geometry records at most this many spans

ImU32 Col(Rgb c, uint8_t alpha = 255) { return PackAbgr(c, alpha); }

Rgb Darker(Rgb c, float f) {
  return {static_cast<uint8_t>(c.r * f), static_cast<uint8_t>(c.g * f), static_cast<uint8_t>(c.b * f)};
}

// Ops take a muted colour from their name (stable across frames and ranks).
Rgb OpColor(std::string_view name) {
  static constexpr Rgb kOps[] = {{70, 130, 150}, {88, 118, 170}, {70, 150, 120}, {120, 110, 165},
                                 {150, 120, 80}, {90, 140, 100}, {140, 95, 120}, {80, 125, 135}};
  const size_t h = std::hash<std::string_view>{}(name);
  return kOps[h % (sizeof kOps / sizeof kOps[0])];
}
constexpr Rgb kMergedOps{96, 110, 124};

double NiceStep(double range) {
  const double raw = range / 8.0;
  const double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

}  // namespace

float ProfilerPanel::RowsHeight() const {
  if (!show_ops_ || !data_) return 0;
  return OpRow() * static_cast<float>(std::clamp(data_->depth, 1, kMaxOpRows));
}

float ProfilerPanel::LaneHeight() const { return RowsHeight() + KernelRow() + kLaneGap; }

void ProfilerPanel::Prepare(const ViewContext& ctx, std::shared_ptr<const trace::Model> owner) {
  if (building_.valid() && building_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    data_ = building_.get();
    build_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - build_started_).count();
    view_start_ = 0;
    view_end_ = static_cast<double>(data_->t1 - data_->t0) * 1.02;
    scroll_y_ = 0;
    selected_ = focus_lane_ = focus_kernel_ = selected_op_row_ = selected_op_ = -1;
    show_ops_ = true;
  }
  if (ctx.model == key_model_ && ctx.model_serial == key_serial_) return;
  key_model_ = ctx.model, key_serial_ = ctx.model_serial;
  active_ = ctx.model != nullptr && owner && HasProfilerLanes(*ctx.model);
  data_.reset();
  if (building_.valid()) building_.wait();  // a previous model's build: its result is dropped
  building_ = {};
  if (!active_) return;
  build_started_ = std::chrono::steady_clock::now();
  building_ = std::async(std::launch::async, [owner]() {
    auto out = std::make_shared<ProfilerData>(BuildProfilerData(*owner));
    Platform::Wake();  // the idle loop draws the finished view
    return out;
  });
}

void ProfilerPanel::Select(int32_t collective, int32_t lane, int32_t kernel) {
  selected_ = collective;
  focus_lane_ = lane;
  focus_kernel_ = kernel;
  selected_op_row_ = selected_op_ = -1;
}

void ProfilerPanel::ZoomTo(int64_t a, int64_t b) {
  if (!data_) return;
  const double pad = std::max(500.0, static_cast<double>(b - a) * 0.15);
  view_start_ = static_cast<double>(a - data_->t0) - pad;
  view_end_ = static_cast<double>(b - data_->t0) + pad;
}

void ProfilerPanel::GoToLane(int32_t lane) {
  if (!data_ || lane < 0 || lane >= static_cast<int32_t>(data_->lanes.size())) return;
  pending_lane_ = lane;
  if (focus_lane_ != lane) focus_lane_ = lane, focus_kernel_ = -1;
}

void ProfilerPanel::HandleKeys(const KeyTaps& taps) {
  if (!data_ || data_->lanes.empty()) return;
  if (taps.Count(InputKey::kEscape) > 0) selected_ = focus_kernel_ = selected_op_row_ = selected_op_ = -1;
  const int lanes_moved = taps.Count(InputKey::kDown) - taps.Count(InputKey::kUp);
  if (lanes_moved != 0) {
    const int32_t from = focus_lane_ < 0 ? 0 : focus_lane_;
    const int32_t to =
        std::clamp<int32_t>(from + lanes_moved, 0, static_cast<int32_t>(data_->lanes.size()) - 1);
    // The same collective on the new rank, when that rank ran it.
    int32_t kernel = -1;
    if (selected_ >= 0) {
      for (const ProfilerMember& m : data_->members[static_cast<size_t>(selected_)])
        if (m.lane == to) kernel = m.kernel;
    }
    focus_lane_ = to;
    focus_kernel_ = kernel;
    pending_lane_ = to;
  }
  const int moves = taps.Count(InputKey::kRight) - taps.Count(InputKey::kLeft);
  if (moves == 0) return;
  if (focus_lane_ < 0) focus_lane_ = 0;
  const ProfilerLane& lane = data_->lanes[static_cast<size_t>(focus_lane_)];
  if (lane.kernels.empty()) return;
  int32_t k = focus_kernel_;
  if (k < 0) {
    // Nothing on this lane selected yet: the first kernel at or after the view's start (Right) or
    // the last before its end (Left).
    const int64_t at = data_->t0 + static_cast<int64_t>(moves > 0 ? view_start_ : view_end_);
    auto it = std::lower_bound(lane.kernels.begin(), lane.kernels.end(), at,
                               [](const ProfilerKernelSpan& s, int64_t t) { return s.start < t; });
    k = static_cast<int32_t>(it - lane.kernels.begin()) + (moves > 0 ? -1 : 0);
  }
  k = std::clamp<int32_t>(k + moves, 0, static_cast<int32_t>(lane.kernels.size()) - 1);
  Select(lane.kernels[static_cast<size_t>(k)].collective, focus_lane_, k);
  // Keep the kernel in view (centred at the same zoom when it left the view).
  const ProfilerKernelSpan& s = lane.kernels[static_cast<size_t>(k)];
  const double a = static_cast<double>(s.start - data_->t0), b = static_cast<double>(s.end - data_->t0);
  if (a < view_start_ || b > view_end_) {
    const double span = view_end_ - view_start_;
    view_start_ = (a + b) / 2 - span / 2;
    view_end_ = view_start_ + span;
  }
}

void ProfilerPanel::HandleNavigation(const Frame& f, float scrollbar_x) {
  ImGuiIO& io = ImGui::GetIO();
  const bool hovered = ImGui::IsItemHovered(), active = ImGui::IsItemActive();
  const float plot_w = std::max(10.0f, f.x1 - f.x0);
  double span = f.span;
  const double total = static_cast<double>(data_->t1 - data_->t0);
  auto zoom = [&](double factor, double around) {
    const double new_span = std::clamp(span * factor, 100.0, std::max(total * 1.5, 1000.0));
    const double frac = (around - view_start_) / span;
    view_start_ = around - frac * new_span;
    view_end_ = view_start_ + new_span;
    span = new_span;
  };
  if (hovered && io.MouseWheel != 0.0f) {
    if (io.KeyShift || io.MousePos.x < f.x0 || io.MousePos.x >= scrollbar_x) {
      scroll_y_ -= io.MouseWheel * LaneHeight() * 2;
    } else {
      zoom(std::pow(0.8, io.MouseWheel), view_start_ + (io.MousePos.x - f.x0) / plot_w * span);
    }
  }
  if (!io.WantTextInput && !goto_active_) {
    for (ImWchar c : io.InputQueueCharacters) {
      const double mid = view_start_ + span / 2;
      if (c == '+' || c == '=' || c == 'w' || c == 'W') zoom(0.8, mid);
      if (c == '-' || c == 's' || c == 'S') zoom(1.25, mid);
      if (c == 'a' || c == 'A') view_start_ -= span * 0.1, view_end_ -= span * 0.1;
      if (c == 'd' || c == 'D') view_start_ += span * 0.1, view_end_ += span * 0.1;
      if (c == '0') view_start_ = 0, view_end_ = total * 1.02;
      if (c == 'f' || c == 'F') {
        int64_t a = INT64_MAX, b = INT64_MIN;
        if (selected_ >= 0) {
          for (const ProfilerMember& m : data_->members[static_cast<size_t>(selected_)]) {
            const ProfilerKernelSpan& s =
                data_->lanes[static_cast<size_t>(m.lane)].kernels[static_cast<size_t>(m.kernel)];
            a = std::min(a, s.start), b = std::max(b, s.end);
          }
        } else if (focus_lane_ >= 0 && focus_kernel_ >= 0) {
          const ProfilerKernelSpan& s =
              data_->lanes[static_cast<size_t>(focus_lane_)].kernels[static_cast<size_t>(focus_kernel_)];
          a = s.start, b = s.end;
        }
        if (a <= b) ZoomTo(a, b);
      }
    }
  }
  if (ImGui::IsItemActivated()) {
    const ImVec2 p = io.MouseClickedPos[ImGuiMouseButton_Left];
    scrolling_ = p.x >= scrollbar_x && p.y >= f.y0;
  }
  const float plot_h = f.bottom - f.y0;
  const float content_h = LaneHeight() * static_cast<float>(data_->lanes.size());
  if (active && scrolling_) {
    const float thumb = std::max(16.0f, plot_h * plot_h / std::max(content_h, 1.0f));
    scroll_y_ = (io.MousePos.y - f.y0 - thumb / 2) / std::max(1.0f, plot_h - thumb) * (content_h - plot_h);
  } else if (active && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
    dragging_ = true;
    view_start_ -= io.MouseDelta.x / plot_w * span;
    view_end_ -= io.MouseDelta.x / plot_w * span;
    scroll_y_ -= io.MouseDelta.y;
  }
}

void ProfilerPanel::DrawControls(ViewContext& ctx) {
  const ProfilerData& d = *data_;
  ImGui::TextColored(ImVec4(0.55f, 0.8f, 1.0f, 1.0f), "Profiler traces");
  ImGui::SameLine();
  ImGui::Text("%zu ranks  %zu ops  %zu collective kernels  %lld collectives matched, %lld unmatched",
              d.lanes.size(), d.ops, d.kernels, static_cast<long long>(d.analysis.matched),
              static_cast<long long>(d.analysis.unmatched));
  ImGui::SetNextItemWidth(70);
  if (ImGui::InputTextWithHint("##profiler_goto", "rank", goto_text_, sizeof goto_text_,
                               ImGuiInputTextFlags_CharsDecimal)) {
    goto_error_.clear();
    if (goto_text_[0] != '\0') {
      const int64_t rank = std::atoll(goto_text_);
      const int32_t lane = d.LaneOf(rank);
      if (lane >= 0) {
        GoToLane(lane);
        ctx.selection->focus_rank = rank;
      } else {
        goto_error_ = "no rank " + std::string(goto_text_) + " in these traces";
      }
    }
  }
  goto_active_ = ImGui::IsItemActive();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("go to rank (type its number; G focuses this field)");
  ImGui::SameLine();
  ImGui::TextUnformatted("go to rank");
  ImGui::SameLine();
  if (!d.stragglers.empty()) {
    char label[64];
    std::snprintf(label, sizeof label, "straggler r%lld", static_cast<long long>(d.stragglers.front().first));
    if (ImGui::SmallButton(label)) GoToLane(d.LaneOf(d.stragglers.front().first));
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    geometry_.items.push_back(
        {"straggler_button", d.stragglers.front().first, -1, -1, label, false, false, a.x, a.y, b.x, b.y});
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("scroll to the rank that arrived last at the most collectives");
    ImGui::SameLine();
  }
  ImGui::Checkbox("CPU ops", &show_ops_);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("show each rank's CPU-op rows over its GPU-kernel row");
  if (!goto_error_.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1.0f, 0.6f, 0.6f, 1.0f), "%s", goto_error_.c_str());
  }
  // Legend: kinds, wait, straggler, connector.
  for (const std::string& k : d.kinds) {
    ImGui::SameLine();
    const Rgb c = CollectiveKindColor(k);
    ImGui::PushStyleColor(ImGuiCol_Button, Col(c));
    ImGui::PushStyleColor(ImGuiCol_Text, ContrastText(c));
    ImGui::SmallButton(k.c_str());
    ImGui::PopStyleColor(2);
  }
  ImGui::SameLine();
  ImGui::TextColored(ImVec4(1.0f, 0.3f, 0.3f, 1.0f), "| red: arrived last");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "a red bar and triangle over a kernel: that rank arrived last at the collective (the straggler);\n"
        "the darker start of every kernel is the time its rank waited for the last one;\n"
        "a selected collective is outlined on every rank that ran it and joined by a yellow line");
}

void ProfilerPanel::DrawAxis(ImDrawList* list, const Frame& f, float top) {
  const ProfilerData& d = *data_;
  const float plot_w = std::max(10.0f, f.x1 - f.x0);
  list->PushClipRect(ImVec2(f.x0, top), ImVec2(f.x1, f.bottom), true);
  const double tick = NiceStep(f.span);
  for (double t = std::ceil(view_start_ / tick) * tick; t <= view_end_; t += tick) {
    const float x = f.x0 + static_cast<float>((t - view_start_) / f.span * plot_w);
    list->AddLine(ImVec2(x, top + kAxisHeight - 5), ImVec2(x, f.bottom), IM_COL32(255, 255, 255, 18));
    list->AddText(ImVec2(x + 2, top + 2), IM_COL32(170, 170, 180, 255), FormatTimeNs(t).c_str());
  }
  // Step band: the lowest rank's ProfilerStep#N spans, labelled where they fit.
  const float band = top + kAxisHeight;
  if (!d.lanes.empty()) {
    const std::vector<ProfilerStepSpan>& steps = d.lanes.front().steps;
    auto it = std::lower_bound(steps.begin(), steps.end(), f.vs,
                               [](const ProfilerStepSpan& s, int64_t t) { return s.end < t; });
    int drawn = 0;
    for (; it != steps.end() && it->start <= f.ve && drawn < 4000; ++it, ++drawn) {
      const float a = f.to_x(it->start, d.t0, view_start_), b = f.to_x(it->end, d.t0, view_start_);
      list->AddRectFilled(ImVec2(a, band + 1), ImVec2(std::max(a + 1, b), band + kStepBand - 2),
                          (it->step % 2) ? IM_COL32(70, 64, 40, 255) : IM_COL32(58, 54, 36, 255));
      list->AddLine(ImVec2(a, band), ImVec2(a, f.bottom), IM_COL32(235, 200, 90, 60));
      const std::string label = "ProfilerStep#" + std::to_string(it->step);
      const std::string short_label = "#" + std::to_string(it->step);
      const float w = b - a;
      const char* text = ImGui::CalcTextSize(label.c_str()).x + 6 < w         ? label.c_str()
                         : ImGui::CalcTextSize(short_label.c_str()).x + 6 < w ? short_label.c_str()
                                                                              : nullptr;
      if (text) list->AddText(ImVec2(std::max(a, f.x0) + 3, band + 1), IM_COL32(235, 210, 120, 255), text);
      if (geometry_.items.size() < kMaxGeometryItems)
        geometry_.items.push_back({"step", d.lanes.front().rank, -1, it->step, text ? text : "", false, false,
                                   a, band, b, band + kStepBand});
    }
  }
  list->PopClipRect();
}

void ProfilerPanel::DrawLane(ImDrawList* list, const Frame& f, size_t lane_index, float y, bool hovered,
                             Hit& hit) {
  const ProfilerData& d = *data_;
  const ProfilerLane& lane = d.lanes[lane_index];
  const float rows_h = RowsHeight();
  const float lane_h = rows_h + KernelRow();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool mouse_in_lane =
      hovered && mouse.y >= y && mouse.y < y + lane_h && mouse.x >= f.x0 && mouse.x < f.x1;
  list->AddRectFilled(ImVec2(f.x0, y), ImVec2(f.x1, y + lane_h),
                      Col(lane_index % 2 ? Rgb{36, 38, 47} : kProfilerLaneBackground));
  const double ns_per_px = f.span / std::max(1.0f, f.x1 - f.x0);
  auto clampx = [&](float x) { return std::clamp(x, f.x0 - 2, f.x1 + 2); };
  // This lane's step boundaries.
  {
    auto it = std::lower_bound(lane.steps.begin(), lane.steps.end(), f.vs,
                               [](const ProfilerStepSpan& s, int64_t t) { return s.end < t; });
    for (int n = 0; it != lane.steps.end() && it->start <= f.ve && n < 2000; ++it, ++n) {
      const float x = f.to_x(it->start, d.t0, view_start_);
      list->AddLine(ImVec2(x, y), ImVec2(x, y + lane_h), IM_COL32(235, 200, 90, 110));
    }
  }
  // CPU-op rows.
  if (show_ops_) {
    const std::vector<trace::Op>& ops = model_->ranks[lane.rank_index].events.Of<trace::Op>();
    const int32_t rows = std::min<int32_t>(static_cast<int32_t>(lane.rows.size()), kMaxOpRows);
    for (int32_t r = 0; r < rows; ++r) {
      const std::vector<ProfilerOpSpan>& row = lane.rows[static_cast<size_t>(r)];
      const float ry = y + OpRow() * static_cast<float>(r);
      ForEachRowItem(row, f.vs, f.ve, ns_per_px, 3.0, [&](size_t first, size_t count, int64_t a, int64_t b) {
        const float x0 = clampx(f.to_x(a, d.t0, view_start_));
        const float x1 = std::max(x0 + 1.0f, clampx(f.to_x(b, d.t0, view_start_)));
        ++geometry_.draw_items;
        const std::string_view name = count == 1
                                          ? std::string_view(ops[static_cast<size_t>(row[first].op)].name())
                                          : std::string_view();
        const Rgb c = count == 1 ? OpColor(name) : kMergedOps;
        const bool selected = selected_op_row_ == r && selected_op_ >= 0 && count == 1 &&
                              static_cast<size_t>(selected_op_) == first &&
                              focus_lane_ == static_cast<int32_t>(lane_index);
        list->AddRectFilled(ImVec2(x0, ry + 1), ImVec2(x1, ry + OpRow() - 1), Col(c));
        if (selected)
          list->AddRect(ImVec2(x0, ry), ImVec2(x1, ry + OpRow()), Col(kProfilerSelected), 0, 0, 2.0f);
        if (count == 1 && x1 - x0 > 16) {
          // The whole name where it fits, else without its namespace ("aten::mm" -> "mm").
          std::string_view text = name;
          const size_t colons = name.rfind("::");
          if (ImGui::CalcTextSize(name.data(), name.data() + name.size()).x + 4 > x1 - x0 &&
              colons != name.npos)
            text = name.substr(colons + 2);
          list->PushClipRect(ImVec2(std::max(x0, f.x0), ry), ImVec2(std::min(x1, f.x1), ry + OpRow()), true);
          list->AddText(ImVec2(std::max(x0, f.x0) + 2, ry), ContrastText(c), text.data(),
                        text.data() + text.size());
          list->PopClipRect();
        }
        if (count == 1 && geometry_.items.size() < kMaxGeometryItems)
          geometry_.items.push_back(
              {"op", lane.rank, -1, r, std::string(name), false, selected, x0, ry, x1, ry + OpRow()});
        if (mouse_in_lane && mouse.y >= ry && mouse.y < ry + OpRow() && mouse.x >= x0 - 1 &&
            mouse.x < x1 + 1) {
          hit = {static_cast<int32_t>(lane_index), -1, r, static_cast<int32_t>(first), count, a, b};
        }
      });
    }
  }
  // GPU-kernel row.
  const float ky = y + rows_h;
  const std::vector<trace::Collective>& cols = model_->ranks[lane.rank_index].events.Of<trace::Collective>();
  auto first = std::lower_bound(lane.kernels.begin(), lane.kernels.end(), f.vs - lane.longest_kernel,
                                [](const ProfilerKernelSpan& s, int64_t t) { return s.start < t; });
  size_t run_first = 0, run_count = 0;
  int64_t run_a = 0, run_b = 0;
  bool run_last = false;
  auto flush = [&]() {
    if (run_count == 0) return;
    const float x0 = clampx(f.to_x(run_a, d.t0, view_start_));
    const float x1 = std::max(x0 + 1.0f, clampx(f.to_x(run_b, d.t0, view_start_)));
    ++geometry_.draw_items;
    list->AddRectFilled(ImVec2(x0, ky + 2), ImVec2(x1, ky + KernelRow() - 2), IM_COL32(150, 150, 160, 255));
    if (run_last) list->AddRectFilled(ImVec2(x0, ky), ImVec2(x1, ky + 3), Col(kProfilerStraggler));
    if (mouse_in_lane && mouse.y >= ky && mouse.x >= x0 - 1 && mouse.x < x1 + 1)
      hit = {
          static_cast<int32_t>(lane_index), static_cast<int32_t>(run_first), -1, -1, run_count, run_a, run_b};
    run_count = 0;
    run_last = false;
  };
  for (auto it = first; it != lane.kernels.end() && it->start <= f.ve; ++it) {
    if (it->end < f.vs) continue;
    const size_t k = static_cast<size_t>(it - lane.kernels.begin());
    const float x0 = f.to_x(it->start, d.t0, view_start_), x1 = f.to_x(it->end, d.t0, view_start_);
    if (x1 - x0 < 2.0f) {  // narrow: merged with its narrow neighbours less than a pixel apart
      if (run_count > 0 && f.to_x(it->start, d.t0, view_start_) - f.to_x(run_b, d.t0, view_start_) < 1.0f) {
        ++run_count;
        run_b = std::max(run_b, it->end);
        run_last = run_last || it->last;
        continue;
      }
      flush();
      run_first = k, run_count = 1, run_a = it->start, run_b = it->end, run_last = it->last;
      continue;
    }
    flush();
    ++geometry_.draw_items;
    const trace::Collective& c = cols[static_cast<size_t>(it->event)];
    const Rgb color = CollectiveKindColor(std::string(c.kind()));
    const float cx0 = clampx(x0), cx1 = clampx(x1);
    const float wx = clampx(f.to_x(it->wait_end, d.t0, view_start_));
    // The wait (until the last member started) darker, the transfer in the kind's colour.
    if (wx > cx0)
      list->AddRectFilled(ImVec2(cx0, ky + 2), ImVec2(wx, ky + KernelRow() - 2), Col(Darker(color, 0.42f)));
    list->AddRectFilled(ImVec2(std::max(cx0, wx), ky + 2),
                        ImVec2(std::max(cx1, wx + 1), ky + KernelRow() - 2), Col(color));
    const bool selected = selected_ >= 0 && it->collective == selected_;
    if (it->last) {
      list->AddRectFilled(ImVec2(cx0, ky), ImVec2(std::max(cx1, cx0 + 3), ky + 3), Col(kProfilerStraggler));
      list->AddTriangleFilled(ImVec2(x0 - 4, ky - 3), ImVec2(x0 + 4, ky - 3), ImVec2(x0, ky + 3),
                              Col(kProfilerStraggler));
      if (geometry_.items.size() < kMaxGeometryItems)
        geometry_.items.push_back({"straggler", lane.rank, it->collective,
                                   c.HasFlight() ? c.flight.seq_id : -1, std::string(c.kind()), true,
                                   selected, cx0, ky, std::max(cx1, cx0 + 3), ky + 3});
    }
    if (x1 - x0 > 40) {
      const std::string text = std::string(c.kind());
      list->PushClipRect(ImVec2(std::max(cx0, wx), ky), ImVec2(std::min(cx1, f.x1), ky + KernelRow()), true);
      list->AddText(ImVec2(std::max(std::max(cx0, wx), f.x0) + 2, ky + 1), ContrastText(color), text.c_str());
      list->PopClipRect();
    }
    if (geometry_.items.size() < kMaxGeometryItems) {
      const int64_t seq = !c.HasFlight()            ? -1
                          : c.flight_shape().is_p2p ? c.flight.p2p_seq_id
                                                    : c.flight.seq_id;
      geometry_.items.push_back({"kernel", lane.rank, it->collective, seq, std::string(c.kind()), it->last,
                                 selected, cx0, ky + 2, cx1, ky + KernelRow() - 2});
    }
    if (mouse_in_lane && mouse.y >= ky && mouse.x >= x0 - 1 && mouse.x < x1 + 1)
      hit = {static_cast<int32_t>(lane_index), static_cast<int32_t>(k), -1, -1, 1, it->start, it->end};
  }
  flush();
}

void ProfilerPanel::DrawSelection(ImDrawList* list, const Frame& f) {
  if (selected_ < 0 || !data_) return;
  const ProfilerData& d = *data_;
  const float lane_h = LaneHeight(), rows_h = RowsHeight();
  const std::vector<ProfilerMember>& members = d.members[static_cast<size_t>(selected_)];
  list->PushClipRect(ImVec2(f.x0, f.y0), ImVec2(f.x1, f.bottom), true);
  ImVec2 prev;
  bool have_prev = false;
  for (const ProfilerMember& m : members) {
    const ProfilerKernelSpan& s = d.lanes[static_cast<size_t>(m.lane)].kernels[static_cast<size_t>(m.kernel)];
    const float y = f.y0 + static_cast<float>(m.lane) * lane_h - scroll_y_ + rows_h;
    const float x0 = std::clamp(f.to_x(s.start, d.t0, view_start_), f.x0 - 4, f.x1 + 4);
    const float x1 = std::clamp(f.to_x(s.end, d.t0, view_start_), f.x0 - 4, f.x1 + 4);
    const ImVec2 at(x0, y + KernelRow() / 2);
    if (have_prev) {
      list->AddLine(prev, at, Col(kProfilerConnector), 2.0f);
      if (geometry_.items.size() < kMaxGeometryItems)
        geometry_.items.push_back({"connector", d.lanes[static_cast<size_t>(m.lane)].rank, selected_, -1, "",
                                   false, true, prev.x, prev.y, at.x, at.y});
    }
    prev = at, have_prev = true;
    if (y + KernelRow() < f.y0 || y > f.bottom) continue;
    list->AddRect(ImVec2(x0 - 1, y), ImVec2(std::max(x1, x0 + 2) + 1, y + KernelRow()),
                  Col(s.last ? kProfilerStraggler : kProfilerSelected), 0, 0, 2.0f);
  }
  list->PopClipRect();
}

void ProfilerPanel::DrawTooltip(const ViewContext& ctx, const Hit& hit) const {
  const ProfilerData& d = *data_;
  const ProfilerLane& lane = d.lanes[static_cast<size_t>(hit.lane)];
  const trace::RankTrace& rt = ctx.model->ranks[lane.rank_index];
  ImGui::BeginTooltip();
  if (hit.count > 1) {
    ImGui::Text("r%lld: %zu %s merged at this zoom (%s); zoom in to see them",
                static_cast<long long>(lane.rank), hit.count, hit.kernel >= 0 ? "kernels" : "ops",
                FormatTimeNs(static_cast<double>(hit.end - hit.start)).c_str());
  } else if (hit.kernel >= 0) {
    const ProfilerKernelSpan& s = lane.kernels[static_cast<size_t>(hit.kernel)];
    const trace::Collective& c = rt.events.Of<trace::Collective>()[static_cast<size_t>(s.event)];
    ImGui::Text("r%lld  %s  kernel %s", static_cast<long long>(lane.rank), std::string(c.kind()).c_str(),
                FormatTimeNs(static_cast<double>(s.end - s.start)).c_str());
    if (c.HasFlight())
      ImGui::Text("process group %s (%zu ranks)  seq %lld", std::string(c.flight_shape().pg_name).c_str(),
                  c.group().size(),
                  static_cast<long long>(c.flight_shape().is_p2p ? c.flight.p2p_seq_id : c.flight.seq_id));
    if (s.collective >= 0) {
      const trace::KinetoCollective& kc = d.analysis.collectives[static_cast<size_t>(s.collective)];
      ImGui::Text("bytes S %s  time t %s  step %lld", FormatBytes(static_cast<double>(kc.bytes)).c_str(),
                  FormatTimeNs(static_cast<double>(kc.time_ns)).c_str(), static_cast<long long>(kc.step));
      const int64_t wait = kc.wait_ns.count(lane.rank) ? kc.wait_ns.at(lane.rank) : 0;
      if (s.last) {
        int64_t most = 0;
        for (const auto& [r, w] : kc.wait_ns) most = std::max(most, w);
        ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "arrived last (straggler): the others waited up to %s",
                           FormatTimeNs(static_cast<double>(most)).c_str());
      } else {
        ImGui::Text("waited %s for r%lld (arrived last)", FormatTimeNs(static_cast<double>(wait)).c_str(),
                    static_cast<long long>(kc.last_rank));
      }
      if (!kc.matched) ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "not matched on every member rank");
    } else {
      ImGui::TextDisabled("not matched across ranks");
    }
    ImGui::TextDisabled("click: select it on every rank");
  } else if (hit.op >= 0) {
    const ProfilerOpSpan& s = lane.rows[static_cast<size_t>(hit.row)][static_cast<size_t>(hit.op)];
    const trace::Op& op = rt.events.Of<trace::Op>()[static_cast<size_t>(s.op)];
    ImGui::Text("r%lld  %s  %s", static_cast<long long>(lane.rank), std::string(op.name()).c_str(),
                FormatTimeNs(static_cast<double>(s.end - s.start)).c_str());
    ImGui::Text("depth %d  step %lld  at %s", hit.row, static_cast<long long>(op.step),
                FormatTimeNs(static_cast<double>(s.start - d.t0)).c_str());
  }
  ImGui::EndTooltip();
}

void ProfilerPanel::DrawSide(ViewContext& ctx, float height) {
  const ProfilerData& d = *data_;
  ImGui::BeginChild("##profiler_side", ImVec2(0, height), true);
  SectionTitle("Arrived last (stragglers)");
  if (d.stragglers.empty()) {
    ImGui::TextDisabled("every matched collective started together on its ranks");
  } else if (ImGui::BeginTable(
                 "##stragglers", 2,
                 ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingStretchProp,
                 ImVec2(0, std::min(150.0f, 22.0f * static_cast<float>(d.stragglers.size() + 1))))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("rank");
    ImGui::TableSetupColumn("last at (collectives)");
    ImGui::TableHeadersRow();
    for (const auto& [rank, count] : d.stragglers) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      char label[32];
      std::snprintf(label, sizeof label, "r%lld##st%lld", static_cast<long long>(rank),
                    static_cast<long long>(rank));
      if (ImGui::Selectable(label, focus_lane_ >= 0 && d.lanes[static_cast<size_t>(focus_lane_)].rank == rank,
                            ImGuiSelectableFlags_SpanAllColumns))
        GoToLane(d.LaneOf(rank));
      const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
      geometry_.items.push_back({"straggler_row", rank, -1, count, "", false, false, a.x, a.y, b.x, b.y});
      ImGui::TableNextColumn();
      ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "%lld", static_cast<long long>(count));
    }
    ImGui::EndTable();
  }
  SectionTitle("Selected collective");
  if (selected_ < 0) {
    if (focus_lane_ >= 0 && focus_kernel_ >= 0) {
      ImGui::TextWrapped("this kernel is not matched across ranks");
    } else {
      ImGui::TextWrapped("click a kernel (or Left / Right on a lane) to see its collective on every rank");
    }
    ImGui::EndChild();
    return;
  }
  const trace::KinetoCollective& kc = d.analysis.collectives[static_cast<size_t>(selected_)];
  ImGui::Text("%s  seq %lld  step %lld", kc.kind.c_str(), static_cast<long long>(kc.seq),
              static_cast<long long>(kc.step));
  ImGui::Text("process group %s, %zu ranks", kc.process_group.c_str(), kc.group.size());
  const double algbw = kc.time_ns > 0 ? static_cast<double>(kc.bytes) / static_cast<double>(kc.time_ns) : 0.0;
  const int64_t n = kc.p2p ? 2 : static_cast<int64_t>(kc.group.size());
  ImGui::Text("S %s  t %s", FormatBytes(static_cast<double>(kc.bytes)).c_str(),
              FormatTimeNs(static_cast<double>(kc.time_ns)).c_str());
  ImGui::Text("algbw %.2f GB/s  busbw %.2f GB/s", algbw, algbw * trace::BusBandwidthFactor(kc.kind, n));
  int64_t most = 0;
  for (const auto& [r, w] : kc.wait_ns) most = std::max(most, w);
  if (most > 0) {
    ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "arrived last: r%lld (others waited up to %s)",
                       static_cast<long long>(kc.last_rank), FormatTimeNs(static_cast<double>(most)).c_str());
  } else {
    ImGui::TextDisabled("every rank started it at the same time");
  }
  if (!kc.matched) ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "not matched on every member rank");
  // Waits, longest first.
  std::vector<std::pair<int64_t, int64_t>> waits(kc.wait_ns.begin(), kc.wait_ns.end());
  std::stable_sort(waits.begin(), waits.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (ImGui::BeginTable(
          "##waits", 3,
          ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingStretchProp)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("rank");
    ImGui::TableSetupColumn("waited");
    ImGui::TableSetupColumn("kernel");
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(waits.size()));
    while (clipper.Step()) {
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const auto& [rank, wait] = waits[static_cast<size_t>(i)];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        RankSwatch(rank, ctx.world());
        if (rank == kc.last_rank && most > 0) {
          ImGui::SameLine();
          ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "last");
        }
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(FormatTimeNs(static_cast<double>(wait)).c_str());
        ImGui::TableNextColumn();
        const int64_t dur = kc.end_ns.at(rank) - kc.start_ns.at(rank);
        ImGui::TextUnformatted(FormatTimeNs(static_cast<double>(dur)).c_str());
      }
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
}

void ProfilerPanel::Draw(ViewContext& ctx) {
  geometry_ = {};
  geometry_.active = active_;
  if (!active_ || !ctx.model) {
    ImGui::TextDisabled("not a profiler trace");
    return;
  }
  if (!data_) {
    geometry_.building = true;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - build_started_).count();
    ImGui::Text("matching collectives across %zu ranks and laying out their ops and kernels... %.1f s",
                ctx.model->ranks.size(), s);
    return;
  }
  const ProfilerData& d = *data_;
  model_ = ctx.model;
  DrawControls(ctx);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  avail.y = std::max(avail.y, 80.0f);
  const float plot_area_w = std::max(200.0f, avail.x - kSideWidth - 6);
  ImGui::InvisibleButton("##profiler_canvas", ImVec2(plot_area_w, avail.y), ImGuiButtonFlags_MouseButtonLeft);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float top = origin.y;
  const float lanes_y = top + kAxisHeight + kStepBand;
  const float plot_h = origin.y + avail.y - lanes_y;
  // Few ranks: the rows grow (up to 1.8x) to use the height; many ranks scroll at the base size.
  scale_ = 1.0f;
  scale_ = std::clamp(plot_h / std::max(1.0f, LaneHeight() * static_cast<float>(d.lanes.size())), 1.0f, 1.8f);
  const float lane_h = LaneHeight();
  const float content_h = lane_h * static_cast<float>(d.lanes.size());
  const bool scrollbar = content_h > plot_h + 0.5f;
  Frame f;
  f.label_x = origin.x;
  f.x0 = origin.x + kLabelWidth;
  f.x1 = origin.x + plot_area_w - (scrollbar ? kScrollbarWidth + 2 : 0);
  f.y0 = lanes_y;
  f.bottom = origin.y + avail.y;
  f.span = std::max(1.0, view_end_ - view_start_);
  const float scrollbar_x = scrollbar ? f.x1 + 2 : origin.x + plot_area_w + 1;
  HandleNavigation(f, scrollbar_x);
  if (pending_lane_ >= 0) {
    scroll_y_ = static_cast<float>(pending_lane_) * lane_h - (plot_h - lane_h) / 2;
    pending_lane_ = -1;
  }
  scroll_y_ = std::clamp(scroll_y_, 0.0f, std::max(0.0f, content_h - plot_h));
  f.span = std::max(1.0, view_end_ - view_start_);
  f.vs = d.t0 + static_cast<int64_t>(std::floor(view_start_));
  f.ve = d.t0 + static_cast<int64_t>(std::ceil(view_end_));

  DrawAxis(list, f, top);
  Hit hit;
  const size_t first = static_cast<size_t>(scroll_y_ / lane_h);
  list->PushClipRect(ImVec2(f.label_x, f.y0), ImVec2(f.x1, f.bottom), true);
  for (size_t l = first; l < d.lanes.size(); ++l) {
    const float y = f.y0 + static_cast<float>(l) * lane_h - scroll_y_;
    if (y >= f.bottom) break;
    list->PushClipRect(ImVec2(f.x0, std::max(y, f.y0) - 4), ImVec2(f.x1, f.bottom), true);
    DrawLane(list, f, l, y, hovered, hit);
    list->PopClipRect();
    // Label cell: the rank's colour, its number, and how often it arrived last.
    const ProfilerLane& lane = d.lanes[l];
    const bool focus = static_cast<int32_t>(l) == focus_lane_;
    list->AddRectFilled(ImVec2(f.label_x, y), ImVec2(f.label_x + 5, y + lane_h - kLaneGap),
                        RankImColor(lane.rank, ctx.world()));
    if (focus)
      list->AddRect(ImVec2(f.label_x, y), ImVec2(f.x0 - 2, y + lane_h - kLaneGap), Col(kProfilerSelected));
    const std::string label = "r" + std::to_string(lane.rank);
    list->AddText(ImVec2(f.label_x + 9, y + 1), IM_COL32(220, 220, 225, 255), label.c_str());
    int64_t last = 0;
    for (const auto& [r, c] : d.stragglers)
      if (r == lane.rank) last = c;
    if (last > 0 && lane_h - kLaneGap >= 26) {
      const std::string text = "last " + std::to_string(last);
      list->AddText(ImVec2(f.label_x + 9, y + 14), Col(kProfilerStraggler), text.c_str());
    }
    if (show_ops_) {
      list->AddText(ImVec2(f.x0 - 22, y + RowsHeight() + 1), IM_COL32(140, 140, 150, 255), "gpu");
    }
    geometry_.items.push_back(
        {"lane", lane.rank, -1, last, label, false, focus, f.label_x, y, f.x0, y + lane_h - kLaneGap});
    if (hovered && hit.lane < 0 && ImGui::GetIO().MousePos.x < f.x0 && ImGui::GetIO().MousePos.y >= y &&
        ImGui::GetIO().MousePos.y < y + lane_h) {
      ImGui::SetTooltip(
          "r%lld: %zu ops in %zu rows, %zu collective kernels, arrived last at %lld collectives%s",
          static_cast<long long>(lane.rank),
          [&] {
            size_t n = 0;
            for (const auto& row : lane.rows) n += row.size();
            return n;
          }(),
          lane.rows.size(), lane.kernels.size(), static_cast<long long>(last),
          lane.rows.size() > static_cast<size_t>(kMaxOpRows) ? " (rows below the 6th not drawn)" : "");
    }
  }
  list->PopClipRect();
  DrawSelection(list, f);
  if (scrollbar) {
    const float thumb = std::max(16.0f, plot_h * plot_h / content_h);
    const float at = f.y0 + scroll_y_ / (content_h - plot_h) * (plot_h - thumb);
    list->AddRectFilled(ImVec2(scrollbar_x, f.y0), ImVec2(scrollbar_x + kScrollbarWidth, f.bottom),
                        IM_COL32(30, 30, 36, 255));
    list->AddRectFilled(ImVec2(scrollbar_x + 2, at), ImVec2(scrollbar_x + kScrollbarWidth - 2, at + thumb),
                        IM_COL32(110, 110, 125, 255), 3.0f);
  }
  if (hit.lane >= 0 && !dragging_) DrawTooltip(ctx, hit);
  // A click (no drag) selects the kernel's collective, or the op.
  if (ImGui::IsItemDeactivated() && !dragging_ && !scrolling_) {
    if (hit.lane >= 0 && hit.count == 1 && hit.kernel >= 0) {
      const ProfilerKernelSpan& s =
          d.lanes[static_cast<size_t>(hit.lane)].kernels[static_cast<size_t>(hit.kernel)];
      Select(s.collective, hit.lane, hit.kernel);
      ctx.selection->focus_rank = d.lanes[static_cast<size_t>(hit.lane)].rank;
    } else if (hit.lane >= 0 && hit.count == 1 && hit.op >= 0) {
      selected_ = -1;
      focus_lane_ = hit.lane, focus_kernel_ = -1;
      selected_op_row_ = hit.row, selected_op_ = hit.op;
    }
  }
  if (!ImGui::IsMouseDown(ImGuiMouseButton_Left)) dragging_ = scrolling_ = false;

  ImGui::SameLine(0, 6);
  DrawSide(ctx, avail.y);

  geometry_.plot_x0 = f.x0, geometry_.plot_x1 = f.x1, geometry_.y0 = f.y0, geometry_.y1 = f.bottom;
  geometry_.view_start_ns = view_start_, geometry_.view_end_ns = view_end_;
  geometry_.t0_ns = d.t0, geometry_.trace_ns = d.t1 - d.t0;
  geometry_.lanes = d.lanes.size(), geometry_.first_lane = first;
  geometry_.ops = d.ops, geometry_.kernels = d.kernels;
  geometry_.depth = d.depth;
  geometry_.show_ops = show_ops_;
  geometry_.matched = d.analysis.matched, geometry_.unmatched = d.analysis.unmatched;
  geometry_.focus_rank = focus_lane_ >= 0 ? d.lanes[static_cast<size_t>(focus_lane_)].rank : -1;
  geometry_.stragglers = d.stragglers;
  geometry_.selected = selected_;
  if (selected_ >= 0) {
    const trace::KinetoCollective& kc = d.analysis.collectives[static_cast<size_t>(selected_)];
    geometry_.selected_kind = kc.kind, geometry_.selected_pg = kc.process_group;
    geometry_.selected_seq = kc.seq, geometry_.selected_step = kc.step, geometry_.last_rank = kc.last_rank;
    geometry_.selected_bytes = kc.bytes, geometry_.selected_time_ns = kc.time_ns;
    geometry_.waits.assign(kc.wait_ns.begin(), kc.wait_ns.end());
  }
}

}  // namespace shardscope::app::gui
