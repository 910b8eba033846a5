#include "panels/layout_panel.hpp"

#include <algorithm>
#include <cstdio>

#include <imgui.h>

#include "axis_labels.hpp"
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

// Element indices at the shard boundaries of `breaks`, thinned so that no two overlap.
void AxisLabels(ImDrawList* list, const std::vector<int64_t>& breaks, bool along_x, float origin, float other,
                float scale) {
  const ImU32 color = IM_COL32(170, 175, 185, 255);
  const float line = ImGui::GetTextLineHeight();
  auto extent = [&](int64_t v) { return along_x ? ImGui::CalcTextSize(std::to_string(v).c_str()).x : line; };
  for (const AxisLabel& l : PlaceAxisLabels(breaks, origin, scale, extent, along_x ? 6.0f : 1.0f)) {
    const std::string text = std::to_string(l.value);
    if (along_x) {
      list->AddText(ImVec2(l.lo, other - line - 2), color, text.c_str());
    } else {
      list->AddText(ImVec2(other - ImGui::CalcTextSize(text.c_str()).x - 4, l.lo), color, text.c_str());
    }
  }
}

// Where one side's canvas lies on screen: element column `col` starts at px(col), row `row` at py(row).
struct Canvas {
  const LayoutGrid& grid;
  float x0, y0, w, h;
  float px(int64_t col) const { return x0 + static_cast<float>(static_cast<double>(col) / grid.cols * w); }
  float py(int64_t row) const { return y0 + static_cast<float>(static_cast<double>(row) / grid.rows * h); }
};

// The cells in their holders' colours (hatched when partial; several holders on diagonal bands).
// Returns whether any cell has several holders.
bool DrawCells(ViewContext& ctx, ImDrawList* list, const Canvas& c, int64_t world) {
  const LayoutGrid& grid = c.grid;
  const float x0 = c.x0, y0 = c.y0, w = c.w, h = c.h;
  std::vector<Quad> quads;
  size_t nr = static_cast<size_t>(grid.num_row_segments()), nc = static_cast<size_t>(grid.num_col_segments());
  quads.reserve(nr * nc + 1);
  quads.push_back(MakeQuad(x0 - 1, y0 - 1, x0 + w + 1, y0 + h + 1, Rgb{70, 72, 80}));
  QuadStyle style = grid.partial ? QuadStyle::kHatch : QuadStyle::kSolid;
  bool shared = false;
  for (size_t i = 0; i < nr; ++i) {
    float cy0 = c.py(grid.row_breaks[i]), cy1 = c.py(grid.row_breaks[i + 1]);
    for (size_t j = 0; j < nc; ++j) {
      float cx0 = c.px(grid.col_breaks[j]), cx1 = c.px(grid.col_breaks[j + 1]);
      const auto& holders = grid.holders[i * nc + j];
      if (holders.size() <= 1) {
        quads.push_back(MakeQuad(cx0, cy0, cx1, cy1,
                                 holders.empty() ? kCanvasColor : RankColor(holders[0], world),
                                 holders.empty() ? QuadStyle::kSolid : style));
        continue;
      }
      // Several holders (Replicate, or Partial over several ranks): the whole cell shows each
      // holder's colour on anti-diagonal bands, never axis-aligned stripes that read as shards.
      shared = true;
      const int bands = static_cast<int>(std::min<size_t>(holders.size(), 32));
      for (int k = 0; k < bands; ++k) {
        quads.push_back(MakeQuad(cx0, cy0, cx1, cy1, RankColor(holders[static_cast<size_t>(k)], world),
                                 QuadStyle::kReplica, ReplicaParam(k, bands, grid.partial)));
      }
    }
  }
  if (ctx.renderer) ctx.renderer->DrawQuads(list, std::move(quads));
  return shared;
}

// The element grid (faint) when elements are big enough to see, then the borders between shards.
void DrawBorders(ImDrawList* list, const Canvas& c) {
  const LayoutGrid& grid = c.grid;
  const float x0 = c.x0, y0 = c.y0, w = c.w, h = c.h;
  size_t nr = static_cast<size_t>(grid.num_row_segments()), nc = static_cast<size_t>(grid.num_col_segments());
  if (w / grid.cols >= 6 && h / grid.rows >= 6 && grid.cols <= 256 && grid.rows <= 256) {
    for (int64_t col = 1; col < grid.cols; ++col)
      list->AddLine(ImVec2(c.px(col), y0), ImVec2(c.px(col), y0 + h), IM_COL32(0, 0, 0, 40));
    for (int64_t r = 1; r < grid.rows; ++r)
      list->AddLine(ImVec2(x0, c.py(r)), ImVec2(x0 + w, c.py(r)), IM_COL32(0, 0, 0, 40));
  }
  // Borders between shards: 2 px where shards are wide, 1 px and fainter down to 4 px shards, none
  // below (at thousands of ranks borders would cover the colours).
  const float row_px = h / static_cast<float>(std::max<size_t>(nr, 1));
  const float col_px = w / static_cast<float>(std::max<size_t>(nc, 1));
  auto border = [](float px) { return px >= 12 ? IM_COL32(10, 10, 14, 200) : IM_COL32(10, 10, 14, 110); };
  for (size_t i = 1; i < nr && row_px >= 4; ++i) {
    list->AddLine(ImVec2(x0, c.py(grid.row_breaks[i])), ImVec2(x0 + w, c.py(grid.row_breaks[i])),
                  border(row_px), row_px >= 12 ? 2.0f : 1.0f);
  }
  for (size_t j = 1; j < nc && col_px >= 4; ++j) {
    list->AddLine(ImVec2(c.px(grid.col_breaks[j]), y0), ImVec2(c.px(grid.col_breaks[j]), y0 + h),
                  border(col_px), col_px >= 12 ? 2.0f : 1.0f);
  }
}

// Labels in each cell's top-left corner (the centre stays the rank's colour), at most 400.
void DrawCellLabels(ImDrawList* list, const Canvas& c) {
  const LayoutGrid& grid = c.grid;
  size_t nr = static_cast<size_t>(grid.num_row_segments()), nc = static_cast<size_t>(grid.num_col_segments());
  int labels = 0;
  float min_label_h = ImGui::GetTextLineHeight() + 4;
  for (size_t i = 0; i < nr && labels < 400; ++i) {
    if (c.py(grid.row_breaks[i + 1]) - c.py(grid.row_breaks[i]) < min_label_h) continue;
    for (size_t j = 0; j < nc && labels < 400; ++j) {
      const auto& holders = grid.holders[i * nc + j];
      if (holders.empty()) continue;
      float cx0 = c.px(grid.col_breaks[j]), cy0 = c.py(grid.row_breaks[i]);
      float cw = c.px(grid.col_breaks[j + 1]) - cx0, ch = c.py(grid.row_breaks[i + 1]) - cy0;
      if (cw < 16) continue;
      std::string text = (holders.size() > 1 ? (grid.partial ? "P " : "R ") : "") + HolderLabel(holders);
      ImVec2 ts = ImGui::CalcTextSize(text.c_str());
      if (ts.x + 6 > cw || ts.y + 4 > ch) continue;
      LabelBox(list, ImVec2(cx0 + 4, cy0 + 3), text, IM_COL32(0, 0, 0, 150), IM_COL32(255, 255, 255, 255));
      ++labels;
    }
  }
}

// Under the mouse: which ranks hold the element and where in their local shard (`slice` fixes the
// dims the canvas does not show).
void ElementTooltip(ImDrawList* list, const Canvas& c, const std::vector<engine::RankLayout>& layouts,
                    const std::vector<int64_t>& slice, const char* which, int64_t world) {
  const LayoutGrid& grid = c.grid;
  const float x0 = c.x0, y0 = c.y0, w = c.w, h = c.h;
  ImVec2 mouse = ImGui::GetIO().MousePos;
  if (!ImGui::IsWindowHovered() || mouse.x < x0 || mouse.x >= x0 + w || mouse.y < y0 || mouse.y >= y0 + h)
    return;
  int64_t col = std::clamp<int64_t>(static_cast<int64_t>((mouse.x - x0) / w * grid.cols), 0, grid.cols - 1);
  int64_t row = std::clamp<int64_t>(static_cast<int64_t>((mouse.y - y0) / h * grid.rows), 0, grid.rows - 1);
  std::vector<int64_t> index = slice;
  if (grid.row_dim >= 0) index[static_cast<size_t>(grid.row_dim)] = row;
  if (grid.col_dim >= 0) index[static_cast<size_t>(grid.col_dim)] = col;
  list->AddRect(ImVec2(c.px(col), c.py(row)), ImVec2(c.px(col + 1), c.py(row + 1)),
                IM_COL32(255, 255, 255, 255), 0, 0, 2);
  auto holders = HoldersAt(layouts, index);
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

// Legend: replicas, partial, empty shards, ranks outside the slice; wrapped within this side so
// that it never runs over the other canvas.
void Legend(const LayoutGrid& grid, float width, bool shared) {
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width - 4);
  const size_t fit = static_cast<size_t>(std::max(4.0f, width / 44.0f));  // ranks listed per line
  if (shared) {
    ImGui::TextDisabled("diagonal bands = held by several ranks (%s), one band colour per holder",
                        grid.partial ? "partial values" : "replicas");
  }
  if (grid.partial)
    ImGui::TextColored(ImVec4(0.9f, 0.7f, 1.0f, 1), "hatched = partial: %s", grid.partial_text.c_str());
  if (!grid.empty_ranks.empty())
    ImGui::TextWrapped("empty shards: %s", RankList(grid.empty_ranks, fit).c_str());
  if (!grid.off_slice_ranks.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ImGui::TextWrapped("not in this slice: %s", RankList(grid.off_slice_ranks, fit).c_str());
    ImGui::PopStyleColor();
  }
  if (grid.truncated) ImGui::TextDisabled("many shard boundaries: cells merged for display");
  ImGui::PopTextWrapPos();
}

// The focus rank's cells outlined (white over a dark edge, visible on every rank colour); their
// bounding box goes to `geo`.
void OutlineFocus(ImDrawList* list, const Canvas& c, int64_t focus, CanvasGeometry& geo) {
  geo.focus_rank = focus;
  const LayoutGrid& grid = c.grid;
  const size_t nr = static_cast<size_t>(grid.num_row_segments()),
               nc = static_cast<size_t>(grid.num_col_segments());
  bool any = false;
  for (size_t i = 0; i < nr; ++i) {
    for (size_t j = 0; j < nc; ++j) {
      const auto& holders = grid.holders[i * nc + j];
      if (std::find(holders.begin(), holders.end(), focus) == holders.end()) continue;
      const ImVec2 a(c.px(grid.col_breaks[j]), c.py(grid.row_breaks[i]));
      const ImVec2 b(c.px(grid.col_breaks[j + 1]), c.py(grid.row_breaks[i + 1]));
      list->AddRect(ImVec2(a.x + 1, a.y + 1), ImVec2(b.x - 1, b.y - 1), IM_COL32(0, 0, 0, 220), 0, 0, 4.0f);
      list->AddRect(ImVec2(a.x + 1, a.y + 1), ImVec2(b.x - 1, b.y - 1), IM_COL32(255, 255, 255, 255), 0, 0,
                    2.0f);
      geo.focus_x0 = any ? std::min(geo.focus_x0, a.x) : a.x,
      geo.focus_y0 = any ? std::min(geo.focus_y0, a.y) : a.y;
      geo.focus_x1 = any ? std::max(geo.focus_x1, b.x) : b.x,
      geo.focus_y1 = any ? std::max(geo.focus_y1, b.y) : b.y;
      any = true;
    }
  }
}

}  // namespace

void LayoutPanel::DrawAxes(ImDrawList* list, const LayoutGrid& grid, float x0, float y0, float w, float h) {
  AxisLabels(list, grid.col_breaks, true, x0, y0, w / static_cast<float>(grid.cols));
  AxisLabels(list, grid.row_breaks, false, y0, x0, h / static_cast<float>(grid.rows));
}

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
    // A new tensor shows its most informative plane unless the user picked the dims: the two
    // largest extents (in dim order), so that a [1, 96, 8] tensor is not a one-pixel strip.
    if (!dims_chosen_ && view->id != dims_for_id_) {
      std::vector<int> order(static_cast<size_t>(ndim));
      for (int d = 0; d < ndim; ++d) order[static_cast<size_t>(d)] = d;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return view->shape[static_cast<size_t>(a)] > view->shape[static_cast<size_t>(b)];
      });
      row_dim_ = std::min(order[0], order[1]), col_dim_ = std::max(order[0], order[1]);
    }
    dims_for_id_ = view->id;
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
  if (key_model_ == ctx.model && key_serial_ == ctx.model_serial && key_id_ == view->id &&
      key_step_ == step && key_row_ == row_dim_ && key_col_ == col_dim_ && key_slice_ == slice_) {
    return;
  }
  key_model_ = ctx.model, key_serial_ = ctx.model_serial, key_id_ = view->id, key_step_ = step,
  key_row_ = row_dim_, key_col_ = col_dim_;
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
        if (s.begin->step != step || rec->rank < 0 ||
            rec->rank >= static_cast<int64_t>(before_.layouts.size()))
          continue;
        const auto& expect = before_.layouts[static_cast<size_t>(rec->rank)].local_shape;
        if (!s.begin->local_shape_before.empty() && s.begin->local_shape_before != expect &&
            warnings_.size() < 8) {
          warnings_.push_back("r" + std::to_string(rec->rank) + " recorded " +
                              FormatInts(s.begin->local_shape_before) + " before step " +
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
  table_geometry_ = {};
  const RedistributeView* view = ctx.redistribute;
  if (!view || !view->first) {
    NoRedistributeHint(ctx.model, "Select a redistribute (timeline, list or Up/Down) to see its layouts.");
    return;
  }
  if (!error_.empty()) {
    ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "layout unavailable: %s", error_.c_str());
    return;
  }
  int ndim = static_cast<int>(view->shape.size());
  ImGui::Text("%s  %s  %s",
              view->first->begin->tensor().empty() ? "(anonymous)" : view->first->begin->tensor().c_str(),
              engine::FormatShape(view->shape).c_str(), view->first->begin->dtype().c_str());
  if (ndim >= 2) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(70);
    int rows = row_dim_, cols = col_dim_;
    if (ImGui::InputInt("y dim", &rows)) row_dim_ = std::clamp(rows, 0, ndim - 1), dims_chosen_ = true;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(70);
    if (ImGui::InputInt("x dim", &cols)) col_dim_ = std::clamp(cols, 0, ndim - 1), dims_chosen_ = true;
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
  ImGui::SameLine();
  ImGui::Checkbox("[begin,end) table", &show_ranges_);
  for (const std::string& w : warnings_) ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1), "%s", w.c_str());
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const int64_t world = static_cast<int64_t>(before_.layouts.size());
  const float line = ImGui::GetTextLineHeightWithSpacing();
  // The ranges table goes beside the canvases in a wide panel (square elements leave room there),
  // below them otherwise.
  float gap = 12.0f;
  // Beside only when the canvases keep a usable width and the table its every column (else it
  // would need scrolling to show the "after" columns); below, it has the panel's whole width.
  const float table_natural = show_ranges_ ? RangesTableWidth(world) : 0;
  const bool beside = show_ranges_ && avail.x >= 1000 && avail.x - table_natural - 3 * gap >= 2 * 260.0f;
  const float table_w = beside ? std::max(avail.x * 0.42f, table_natural + 4) : 0;
  const float table_h =
      show_ranges_ && !beside
          ? std::min(avail.y * 0.4f, line * static_cast<float>(std::min<int64_t>(world, 16) + 1) + 8)
          : 0;
  float width = std::max(120.0f, (avail.x - table_w - gap * (beside ? 2 : 1)) * 0.5f);
  ImGui::BeginGroup();
  DrawSide(ctx, before_, "before", width, avail.y - table_h);
  ImGui::EndGroup();
  ImGui::SameLine(0, gap);
  ImGui::BeginGroup();
  DrawSide(ctx, after_, "after", width, avail.y - table_h);
  ImGui::EndGroup();
  if (beside) ImGui::SameLine(0, gap);
  if (show_ranges_) DrawRanges(world, ctx.selection->focus_chosen ? ctx.selection->focus_rank : -1);
}

float LayoutPanel::RangesTableWidth(int64_t world) const {
  const char* headers[] = {"rank", "before: local shape", "before: global [begin,end) per dim",
                           "after: local shape", "after: global [begin,end) per dim"};
  float w[5];
  for (int c = 0; c < 5; ++c) w[c] = ImGui::CalcTextSize(headers[c]).x;
  const float line = ImGui::GetTextLineHeight();
  w[0] = std::max(w[0],
                  line + ImGui::GetStyle().ItemSpacing.x +
                      ImGui::CalcTextSize(("r" + std::to_string(std::max<int64_t>(0, world - 1))).c_str()).x);
  for (int64_t r = 0; r < std::min<int64_t>(world, 256); ++r) {
    int c = 1;
    for (const Side* side : {&before_, &after_}) {
      if (static_cast<size_t>(r) >= side->layouts.size()) break;
      const engine::RankLayout& l = side->layouts[static_cast<size_t>(r)];
      w[c] = std::max(w[c], ImGui::CalcTextSize(FormatInts(l.local_shape).c_str()).x);
      w[c + 1] = std::max(w[c + 1], ImGui::CalcTextSize(engine::FormatIndices(l.indices).c_str()).x);
      c += 2;
    }
  }
  const ImGuiStyle& style = ImGui::GetStyle();
  float total = style.ScrollbarSize;
  for (float x : w) total += x + 2 * style.CellPadding.x + 1;
  return total;
}

void LayoutPanel::DrawRanges(int64_t world, int64_t focus) {
  // Each rank's global index ranges per tensor dim (a strided shard has several per dim).
  ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                          ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX;
  if (!ImGui::BeginTable("##ranges", 5, flags, ImVec2(0, ImGui::GetContentRegionAvail().y))) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  SetupColumns({"rank", "before: local shape", "before: global [begin,end) per dim", "after: local shape",
                "after: global [begin,end) per dim"});
  ImGui::TableHeadersRow();
  // A new focus rank (go to rank, a mesh click) scrolls its row into view once; the row stays
  // highlighted.
  const bool scroll_to_focus = focus != table_focus_ && focus >= 0 && focus < world;
  table_focus_ = focus;
  table_geometry_ = {true, -1, -1, focus};
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(world));
  if (scroll_to_focus)
    clipper.ForceDisplayRangeByIndices(static_cast<int>(focus), static_cast<int>(focus) + 1);
  // The table scrolls in its own window under a frozen header row.
  const float header_h = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y;
  const float table_top = ImGui::GetWindowPos().y + header_h - 1,
              table_bottom = ImGui::GetWindowPos().y + ImGui::GetWindowHeight();
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (r == focus) {
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(235, 200, 90, 70));
        if (scroll_to_focus) ImGui::SetScrollHereY(0.5f);
      }
      // Rows wholly inside the table's window (under the frozen header) count as on screen.
      const float y = ImGui::GetCursorScreenPos().y;
      if (y >= table_top && y + ImGui::GetTextLineHeight() <= table_bottom) {
        if (table_geometry_.first < 0) table_geometry_.first = r;
        table_geometry_.last = r + 1;
      }
      RankSwatch(r, world);
      for (const Side* side : {&before_, &after_}) {
        if (static_cast<size_t>(r) >= side->layouts.size()) break;
        const engine::RankLayout& l = side->layouts[static_cast<size_t>(r)];
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(FormatInts(l.local_shape).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(engine::FormatIndices(l.indices).c_str());
      }
    }
  }
  ImGui::EndTable();
}

void LayoutPanel::DrawSide(ViewContext& ctx, const Side& side, const char* which, float width, float height) {
  const LayoutGrid& grid = side.grid;
  int64_t world = std::max<int64_t>(1, static_cast<int64_t>(side.layouts.size()));
  ImGui::Text("%s: ", side.title.c_str());
  ImGui::SameLine(0, 0);
  ImGui::TextColored(ImVec4(1.0f, 0.82f, 0.25f, 1.0f), "%s", side.placements.c_str());
  float legend_h = ImGui::GetTextLineHeightWithSpacing() * 3.5f;
  ImVec2 origin = ImGui::GetCursorScreenPos();
  // Index axes: element indices at every shard boundary, columns above, rows to the left.
  const float axis_top = ImGui::GetTextLineHeight() + 3;
  const float axis_left = ImGui::CalcTextSize(std::to_string(grid.rows).c_str()).x + 6;
  float avail_w = width - 4 - axis_left,
        avail_h = std::max(60.0f, height - ImGui::GetTextLineHeightWithSpacing() - legend_h - axis_top);
  if (grid.rows <= 0 || grid.cols <= 0) {
    ImGui::TextDisabled("empty tensor: nothing to draw");
    return;
  }
  // Square elements when they fit; thin tensors get a minimum band so they stay visible.
  double s = std::min(avail_w / static_cast<double>(grid.cols), avail_h / static_cast<double>(grid.rows));
  float w = static_cast<float>(std::min<double>(avail_w, std::max(s * grid.cols, 48.0)));
  float h = static_cast<float>(std::min<double>(avail_h, std::max(s * grid.rows, 48.0)));
  float x0 = origin.x + 2 + axis_left, y0 = origin.y + 2 + axis_top;
  ImGui::Dummy(ImVec2(width, h + 4 + axis_top));
  ImDrawList* list = ImGui::GetWindowDrawList();
  DrawAxes(list, grid, x0, y0, w, h);

  const Canvas canvas{grid, x0, y0, w, h};
  const bool shared = DrawCells(ctx, list, canvas, world);
  DrawBorders(list, canvas);
  DrawCellLabels(list, canvas);
  CanvasGeometry geo{which,        x0,        y0,        x0 + w,  y0 + h,    grid.row_dim,
                     grid.col_dim, grid.rows, grid.cols, key_id_, key_step_, slice_};
  if (ctx.selection->focus_chosen) OutlineFocus(list, canvas, ctx.selection->focus_rank, geo);
  geometry_.push_back(std::move(geo));
  ElementTooltip(list, canvas, side.layouts, slice_, which, world);
  Legend(grid, width, shared);
}

}  // namespace shardscope::app::gui
