#include "panels/layout_panel.hpp"

#include <algorithm>
#include <cstdio>

#include <imgui.h>

#include "gl_renderer.hpp"
#include "shardscope/engine/core/placement.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

// "r0,r1" for a few holders, "r0..r7 (8)" for a contiguous run, "8 ranks" otherwise.
std::string HolderLabel(const std::vector<int32_t>& holders) {
  if (holders.empty()) return "-";
  if (holders.size() == 1) return "r" + std::to_string(holders[0]);
  bool contiguous = holders.back() - holders.front() + 1 == static_cast<int32_t>(holders.size());
  if (holders.size() <= 3) {
    std::string s;
    for (size_t i = 0; i < holders.size(); ++i) s += (i ? "," : "") + ("r" + std::to_string(holders[i]));
    return s;
  }
  if (contiguous) {
    return "r" + std::to_string(holders.front()) + "..r" + std::to_string(holders.back()) + " (" +
           std::to_string(holders.size()) + ")";
  }
  return std::to_string(holders.size()) + " ranks";
}

std::string RankList(const std::vector<int64_t>& ranks, size_t max_shown = 24) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < max_shown; ++i) s += (i ? " r" : "r") + std::to_string(ranks[i]);
  if (ranks.size() > max_shown) s += " ... (" + std::to_string(ranks.size()) + ")";
  return s;
}

}  // namespace

void LayoutPanel::Prepare(const ViewContext& ctx) {
  const RedistributeView* view = ctx.redistribute;
  if (!view || !view->first) {
    error_ = view ? view->error : "";
    key_model_ = nullptr;
    return;
  }
  int ndim = static_cast<int>(view->shape.size());
  // Clamp the projection to the tensor's rank: 1-d tensors lie along x, 0-d is one cell.
  if (ndim == 0) {
    row_dim_ = -1, col_dim_ = -1;
  } else if (ndim == 1) {
    row_dim_ = -1, col_dim_ = 0;
  } else {
    if (row_dim_ < 0 || row_dim_ >= ndim) row_dim_ = 0;
    if (col_dim_ < 0 || col_dim_ >= ndim || col_dim_ == row_dim_) col_dim_ = row_dim_ == 0 ? 1 : 0;
  }
  slice_.resize(static_cast<size_t>(ndim), 0);
  for (int d = 0; d < ndim; ++d) {
    int64_t extent = view->shape[static_cast<size_t>(d)];
    slice_[static_cast<size_t>(d)] =
        std::clamp<int64_t>(slice_[static_cast<size_t>(d)], 0, std::max<int64_t>(0, extent - 1));
  }
  int64_t step = std::clamp<int64_t>(ctx.selection->step, 0, std::max<int64_t>(0, view->num_steps() - 1));
  if (key_model_ == ctx.model && key_id_ == view->id && key_step_ == step && key_row_ == row_dim_ &&
      key_col_ == col_dim_ && key_slice_ == slice_) {
    return;
  }
  key_model_ = ctx.model, key_id_ = view->id, key_step_ = step, key_row_ = row_dim_, key_col_ = col_dim_;
  key_slice_ = slice_;
  error_ = view->error;
  warnings_.clear();
  before_ = {};
  after_ = {};
  if (!view->ok()) return;
  try {
    size_t b = static_cast<size_t>(std::min<int64_t>(step, static_cast<int64_t>(view->states.size()) - 1));
    size_t a = std::min(b + 1, view->states.size() - 1);
    bool no_steps = view->num_steps() == 0;
    before_.title = no_steps ? "layout (no steps)" : "before step " + std::to_string(step);
    after_.title = no_steps ? "layout (no steps)" : "after step " + std::to_string(step);
    before_.placements = engine::FormatPlacements(view->states[b].placements);
    after_.placements = engine::FormatPlacements(view->states[a].placements);
    before_.layouts = LayoutsFor(*view, view->states[b]);
    after_.layouts = LayoutsFor(*view, view->states[a]);
    before_.grid = ProjectLayout(before_.layouts, view->states[b], view->shape, row_dim_, col_dim_, slice_);
    after_.grid = ProjectLayout(after_.layouts, view->states[a], view->shape, row_dim_, col_dim_, slice_);
    // Cross-check the trace's recorded shard shapes against the engine's layout.
    for (const trace::RedistributeRecord* rec : view->per_rank) {
      for (const trace::StepRecord& s : rec->steps) {
        if (s.begin.step != step || rec->rank < 0 ||
            rec->rank >= static_cast<int64_t>(before_.layouts.size()))
          continue;
        const auto& expect = before_.layouts[static_cast<size_t>(rec->rank)].local_shape;
        if (!s.begin.local_shape_before.empty() && s.begin.local_shape_before != expect &&
            warnings_.size() < 8) {
          warnings_.push_back("r" + std::to_string(rec->rank) + " recorded " +
                              FormatInts(s.begin.local_shape_before) + " before step " +
                              std::to_string(step) + ", engine layout says " + FormatInts(expect));
        }
      }
    }
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

void LayoutPanel::Draw(ViewContext& ctx) {
  geometry_.clear();
  const RedistributeView* view = ctx.redistribute;
  if (!view || !view->first) {
    ImGui::TextDisabled("Select a redistribute (timeline, list or Up/Down) to see its layouts.");
    return;
  }
  if (!error_.empty()) {
    ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "layout unavailable: %s", error_.c_str());
    return;
  }
  int ndim = static_cast<int>(view->shape.size());
  ImGui::Text("%s  %s  %s",
              view->first->begin.tensor.empty() ? "(anonymous)" : view->first->begin.tensor.c_str(),
              engine::FormatShape(view->shape).c_str(), view->first->begin.dtype.c_str());
  if (ndim >= 2) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(70);
    int rows = row_dim_, cols = col_dim_;
    if (ImGui::InputInt("y dim", &rows)) row_dim_ = std::clamp(rows, 0, ndim - 1);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(70);
    if (ImGui::InputInt("x dim", &cols)) col_dim_ = std::clamp(cols, 0, ndim - 1);
    if (row_dim_ == col_dim_) col_dim_ = (row_dim_ + 1) % ndim;
  }
  for (int d = 0; d < ndim; ++d) {
    if (d == row_dim_ || d == col_dim_) continue;
    int64_t extent = view->shape[static_cast<size_t>(d)];
    if (extent <= 1) continue;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(120);
    int v = static_cast<int>(slice_[static_cast<size_t>(d)]);
    char label[32];
    std::snprintf(label, sizeof label, "dim %d", d);
    if (ImGui::SliderInt(label, &v, 0, static_cast<int>(extent - 1))) slice_[static_cast<size_t>(d)] = v;
  }
  for (const std::string& w : warnings_) ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1), "%s", w.c_str());
  ImVec2 avail = ImGui::GetContentRegionAvail();
  float gap = 12.0f;
  float width = std::max(120.0f, (avail.x - gap) * 0.5f);
  ImGui::BeginGroup();
  DrawSide(ctx, before_, "before", width, avail.y);
  ImGui::EndGroup();
  ImGui::SameLine(0, gap);
  ImGui::BeginGroup();
  DrawSide(ctx, after_, "after", width, avail.y);
  ImGui::EndGroup();
}

void LayoutPanel::DrawSide(ViewContext& ctx, const Side& side, const char* which, float width, float height) {
  const LayoutGrid& grid = side.grid;
  int64_t world = std::max<int64_t>(1, static_cast<int64_t>(side.layouts.size()));
  ImGui::Text("%s: ", side.title.c_str());
  ImGui::SameLine(0, 0);
  ImGui::TextColored(ImVec4(1.0f, 0.82f, 0.25f, 1.0f), "%s", side.placements.c_str());
  float legend_h = ImGui::GetTextLineHeightWithSpacing() * 3.5f;
  ImVec2 origin = ImGui::GetCursorScreenPos();
  float avail_w = width - 4,
        avail_h = std::max(60.0f, height - ImGui::GetTextLineHeightWithSpacing() - legend_h);
  if (grid.rows <= 0 || grid.cols <= 0) {
    ImGui::TextDisabled("empty tensor: nothing to draw");
    return;
  }
  // Square elements when they fit; thin tensors get a minimum band so they stay visible.
  double s = std::min(avail_w / static_cast<double>(grid.cols), avail_h / static_cast<double>(grid.rows));
  float w = static_cast<float>(std::min<double>(avail_w, std::max(s * grid.cols, 48.0)));
  float h = static_cast<float>(std::min<double>(avail_h, std::max(s * grid.rows, 48.0)));
  float x0 = origin.x + 2, y0 = origin.y + 2;
  ImGui::Dummy(ImVec2(width, h + 4));
  ImDrawList* list = ImGui::GetWindowDrawList();
  auto px = [&](int64_t col) { return x0 + static_cast<float>(static_cast<double>(col) / grid.cols * w); };
  auto py = [&](int64_t row) { return y0 + static_cast<float>(static_cast<double>(row) / grid.rows * h); };

  std::vector<Quad> quads;
  size_t nr = static_cast<size_t>(grid.num_row_segments()), nc = static_cast<size_t>(grid.num_col_segments());
  quads.reserve(nr * nc + 1);
  quads.push_back(MakeQuad(x0 - 1, y0 - 1, x0 + w + 1, y0 + h + 1, Rgb{70, 72, 80}));
  QuadStyle style = grid.partial ? QuadStyle::kHatch : QuadStyle::kSolid;
  for (size_t i = 0; i < nr; ++i) {
    float cy0 = py(grid.row_breaks[i]), cy1 = py(grid.row_breaks[i + 1]);
    for (size_t j = 0; j < nc; ++j) {
      float cx0 = px(grid.col_breaks[j]), cx1 = px(grid.col_breaks[j + 1]);
      const auto& holders = grid.holders[i * nc + j];
      if (holders.empty()) {
        quads.push_back(MakeQuad(cx0, cy0, cx1, cy1, kCanvasColor));
        continue;
      }
      // Replicated cells show every holder as a vertical band of its colour, repeated in every
      // element when elements are wide enough, so "all of them hold all of it" reads at a glance.
      size_t bands = std::min<size_t>(holders.size(), 32);
      bool per_element = bands > 1 && w / static_cast<float>(grid.cols) >= 6.0f * static_cast<float>(bands);
      int64_t e0 = per_element ? grid.col_breaks[j] : 0, e1 = per_element ? grid.col_breaks[j + 1] : 1;
      for (int64_t e = e0; e < e1; ++e) {
        float ex0 = per_element ? px(e) : cx0, ex1 = per_element ? px(e + 1) : cx1;
        float bw = (ex1 - ex0) / static_cast<float>(bands);
        for (size_t k = 0; k < bands; ++k) {
          quads.push_back(MakeQuad(ex0 + bw * k, cy0, k + 1 == bands ? ex1 : ex0 + bw * (k + 1), cy1,
                                   RankColor(holders[k], world), style));
        }
      }
    }
  }
  if (ctx.renderer) ctx.renderer->DrawQuads(list, std::move(quads));

  // Element grid (faint) when elements are big enough to see, then segment borders.
  if (w / grid.cols >= 6 && h / grid.rows >= 6 && grid.cols <= 256 && grid.rows <= 256) {
    for (int64_t c = 1; c < grid.cols; ++c)
      list->AddLine(ImVec2(px(c), y0), ImVec2(px(c), y0 + h), IM_COL32(0, 0, 0, 40));
    for (int64_t r = 1; r < grid.rows; ++r)
      list->AddLine(ImVec2(x0, py(r)), ImVec2(x0 + w, py(r)), IM_COL32(0, 0, 0, 40));
  }
  if (nr < 512) {
    for (size_t i = 1; i < nr; ++i) {
      list->AddLine(ImVec2(x0, py(grid.row_breaks[i])), ImVec2(x0 + w, py(grid.row_breaks[i])),
                    IM_COL32(10, 10, 14, 200), 2.0f);
    }
  }
  if (nc < 512) {
    for (size_t j = 1; j < nc; ++j) {
      list->AddLine(ImVec2(px(grid.col_breaks[j]), y0), ImVec2(px(grid.col_breaks[j]), y0 + h),
                    IM_COL32(10, 10, 14, 200), 2.0f);
    }
  }
  // Labels in each cell's top-left corner (the centre stays the rank's colour).
  int labels = 0;
  float min_label_h = ImGui::GetTextLineHeight() + 4;
  for (size_t i = 0; i < nr && labels < 400; ++i) {
    if (py(grid.row_breaks[i + 1]) - py(grid.row_breaks[i]) < min_label_h) continue;
    for (size_t j = 0; j < nc && labels < 400; ++j) {
      const auto& holders = grid.holders[i * nc + j];
      if (holders.empty()) continue;
      float cx0 = px(grid.col_breaks[j]), cy0 = py(grid.row_breaks[i]);
      float cw = px(grid.col_breaks[j + 1]) - cx0, ch = py(grid.row_breaks[i + 1]) - cy0;
      if (cw < 16) continue;
      std::string text = HolderLabel(holders);
      ImVec2 ts = ImGui::CalcTextSize(text.c_str());
      if (ts.x + 6 > cw || ts.y + 4 > ch) continue;
      LabelBox(list, ImVec2(cx0 + 4, cy0 + 3), text, IM_COL32(0, 0, 0, 150), IM_COL32(255, 255, 255, 255));
      ++labels;
    }
  }
  geometry_.push_back(CanvasGeometry{which, x0, y0, x0 + w, y0 + h, grid.row_dim, grid.col_dim, grid.rows,
                                     grid.cols, ctx.selection->redistribute_id, ctx.selection->step, slice_});

  // Hover: which ranks hold the element and where in their local shard.
  ImVec2 mouse = ImGui::GetIO().MousePos;
  if (ImGui::IsWindowHovered() && mouse.x >= x0 && mouse.x < x0 + w && mouse.y >= y0 && mouse.y < y0 + h) {
    int64_t col = std::clamp<int64_t>(static_cast<int64_t>((mouse.x - x0) / w * grid.cols), 0, grid.cols - 1);
    int64_t row = std::clamp<int64_t>(static_cast<int64_t>((mouse.y - y0) / h * grid.rows), 0, grid.rows - 1);
    std::vector<int64_t> index = slice_;
    if (grid.row_dim >= 0) index[static_cast<size_t>(grid.row_dim)] = row;
    if (grid.col_dim >= 0) index[static_cast<size_t>(grid.col_dim)] = col;
    list->AddRect(ImVec2(px(col), py(row)), ImVec2(px(col + 1), py(row + 1)), IM_COL32(255, 255, 255, 255), 0,
                  0, 2);
    auto holders = HoldersAt(side.layouts, index);
    ImGui::BeginTooltip();
    ImGui::Text("%s: element %s", which, FormatInts(index).c_str());
    if (holders.empty()) ImGui::TextDisabled("held by no rank");
    for (size_t k = 0; k < holders.size() && k < 16; ++k) {
      RankSwatch(holders[k].rank, world);
      ImGui::SameLine();
      ImGui::Text("at local %s%s", FormatInts(holders[k].local_index).c_str(),
                  grid.partial ? " (partial value)" : "");
    }
    if (holders.size() > 16) ImGui::Text("... %zu holders in all", holders.size());
    ImGui::EndTooltip();
  }

  // Legend: partial, empty shards, ranks outside the slice.
  if (grid.partial)
    ImGui::TextColored(ImVec4(0.9f, 0.7f, 1.0f, 1), "hatched = partial: %s", grid.partial_text.c_str());
  if (!grid.empty_ranks.empty()) ImGui::Text("empty shards: %s", RankList(grid.empty_ranks).c_str());
  if (!grid.off_slice_ranks.empty())
    ImGui::TextDisabled("not in this slice: %s", RankList(grid.off_slice_ranks).c_str());
  if (grid.truncated) ImGui::TextDisabled("many shard boundaries: cells merged for display");
}

}  // namespace shardscope::app::gui
