#include "panels/mesh_panel.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <imgui.h>

#include "gl_renderer.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

constexpr size_t kMaxArrows = 160;
constexpr int64_t kMaxRing = 64;  // 1-D meshes up to this size are drawn on a ring

Rgb Heat(double f) {
  // Dark blue -> orange -> yellow.
  f = std::clamp(f, 0.0, 1.0);
  auto lerp = [](double a, double b, double t) { return static_cast<uint8_t>(a + (b - a) * t); };
  if (f < 0.5) return {lerp(30, 220, f * 2), lerp(40, 110, f * 2), lerp(90, 40, f * 2)};
  return {lerp(220, 255, (f - 0.5) * 2), lerp(110, 230, (f - 0.5) * 2), lerp(40, 90, (f - 0.5) * 2)};
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

std::string DimName(const engine::Mesh& mesh, int d) {
  return mesh.has_dim_names() ? mesh.dim_names()[static_cast<size_t>(d)] : "dim " + std::to_string(d);
}

// "dp=0-7, tp=8" for the leading coordinates [origin, origin + extent) of dims [0, dims).
std::string BoxTitle(const engine::Mesh& mesh, const std::vector<int64_t>& origin,
                     const std::vector<int64_t>& extent, int dims) {
  std::string title;
  for (int d = 0; d < dims; ++d) {
    const size_t i = static_cast<size_t>(d);
    title += (d ? ", " : "") + DimName(mesh, d) + "=" + std::to_string(origin[i]);
    if (extent[i] > 1) title += "-" + std::to_string(origin[i] + extent[i] - 1);
  }
  return title;
}

}  // namespace

// Where the cells of a row-major box of `shape` go: the last dim along x, the one before along y;
// beyond 2-D one such grid per coordinate of the leading dims (small multiples, each titled). A
// 1-D box of up to kMaxRing cells sits on a ring, so that arrows between neighbours do not lie on
// one line.
struct MeshGridLayout {
  int64_t cols = 1, rows = 1, blocks = 1, per_line = 1;
  float cell = 2, gap = 0, title_h = 0;
  bool ring = false;
  ImVec2 origin, centre;
  float radius = 0;
  int64_t count = 1;

  MeshGridLayout(const std::vector<int64_t>& shape, bool allow_ring, ImVec2 at, float width, float height) {
    const size_t nd = shape.size();
    count = std::max<int64_t>(1, Product(shape));
    origin = at;
    ring = allow_ring && nd == 1 && count > 2 && count <= kMaxRing;
    if (ring) {
      const float side = std::min(width, height);
      cell = std::clamp(side * 3.1f / static_cast<float>(count + 3), 8.0f, 64.0f);
      radius = std::max(10.0f, side * 0.5f - cell * 0.5f - 2);
      centre = ImVec2(at.x + side * 0.5f, at.y + side * 0.5f);
      return;
    }
    cols = nd >= 1 ? shape[nd - 1] : 1;
    rows = nd >= 2 ? shape[nd - 2] : 1;
    blocks = count / std::max<int64_t>(1, rows * cols);
    per_line = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(blocks)))));
    const int64_t lines = (blocks + per_line - 1) / per_line;
    gap = blocks > 1 ? 14.0f : 0.0f;
    title_h = blocks > 1 ? ImGui::GetTextLineHeight() + 2 : 0.0f;
    cell =
        std::min((width - gap * static_cast<float>(per_line - 1)) / static_cast<float>(cols * per_line),
                 (height - (gap + title_h) * static_cast<float>(lines)) / static_cast<float>(rows * lines));
    cell = std::clamp(cell, 3.0f, 140.0f);
  }
  // Top-left corner of cell k (row-major over the box).
  ImVec2 Corner(int64_t k) const {
    if (ring) {
      const double a = 2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(count);
      return ImVec2(centre.x + radius * static_cast<float>(std::sin(a)) - cell / 2,
                    centre.y - radius * static_cast<float>(std::cos(a)) - cell / 2);
    }
    const int64_t b = k / (rows * cols), w = k % (rows * cols);
    const float bx = static_cast<float>(b % per_line) * (static_cast<float>(cols) * cell + gap);
    const float by =
        static_cast<float>(b / per_line) * (static_cast<float>(rows) * cell + gap + title_h) + title_h;
    return ImVec2(origin.x + bx + static_cast<float>(w % cols) * cell,
                  origin.y + by + static_cast<float>(w / cols) * cell);
  }
  ImVec2 Centre(int64_t k) const {
    const ImVec2 c = Corner(k);
    return ImVec2(c.x + 0.5f * cell, c.y + 0.5f * cell);
  }
  // The cell under `p`, -1 for none.
  int64_t Hit(ImVec2 p) const {
    for (int64_t k = 0; k < count; ++k) {
      const ImVec2 c = Corner(k);
      if (p.x >= c.x && p.x < c.x + cell && p.y >= c.y && p.y < c.y + cell) return k;
    }
    return -1;
  }
};

namespace {

// Arrows for the biggest transfers of `m` between the cells of `g`, as curves from cell edge to
// cell edge that bow to one side (so i->j and j->i part, and an arrow between two cells of a row
// or ring arcs clear of the labels of the cells between them). Returns them, sampled.
std::vector<MeshArrowGeometry> DrawArrows(ImDrawList* list, const MeshGridLayout& g, const BytesMatrix& m) {
  std::vector<MeshArrowGeometry> out;
  if (m.max <= 0) return out;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j)
      if (i != j && m.At(i, j) > 0) pairs.push_back({i, j});
  std::sort(pairs.begin(), pairs.end(),
            [&](auto a, auto b) { return m.At(a.first, a.second) > m.At(b.first, b.second); });
  // Arrows read for pairwise and ring-like steps, and for every pair of a small mesh (an
  // all_to_all of 8 ranks is 56 arcs); a bigger step where ranks talk to many peers shows its
  // groups (highlight, g labels) and the matrix instead of a scribble of arrows.
  if (static_cast<int64_t>(pairs.size()) > m.rows && m.rows > 8) pairs.clear();
  if (pairs.size() > kMaxArrows) pairs.resize(kMaxArrows);
  for (auto [i, j] : pairs) {
    const ImVec2 ci = g.Centre(i), cj = g.Centre(j);
    const float dx = cj.x - ci.x, dy = cj.y - ci.y, len = std::sqrt(dx * dx + dy * dy);
    if (len < 1) continue;
    const float ux = dx / len, uy = dy / len, nx = -uy, ny = ux;  // along and to the left of i->j
    // On a ring the chord between two cells runs inside the circle, clear of every label: a slight
    // bow parts i->j from j->i. On a grid a row's cells lie on the line: arc over them.
    const float bow = g.ring ? 0.08f * len + 0.1f * g.cell : 0.22f * len + 0.3f * g.cell;
    const ImVec2 ctrl(ci.x + dx / 2 + nx * bow, ci.y + dy / 2 + ny * bow);
    // Leave and enter the cells through their edges, towards the control point.
    auto edge = [&](ImVec2 c, ImVec2 towards) {
      const float ex = towards.x - c.x, ey = towards.y - c.y;
      const float t = 0.5f * g.cell / std::max({std::fabs(ex), std::fabs(ey), 1e-3f});
      return ImVec2(c.x + ex * t * 1.08f, c.y + ey * t * 1.08f);
    };
    const ImVec2 a = edge(ci, ctrl), b = edge(cj, ctrl);
    const float f = static_cast<float>(m.At(i, j)) / static_cast<float>(m.max);
    const ImU32 col = IM_COL32(255, 255, 255, static_cast<int>(90 + 150 * f));
    list->AddBezierQuadratic(a, ctrl, b, col, 1.0f + 2.5f * f);
    const float tx = b.x - ctrl.x, ty = b.y - ctrl.y, tl = std::max(1e-3f, std::sqrt(tx * tx + ty * ty));
    const float hx = tx / tl, hy = ty / tl, hs = 3 + 3 * f;
    list->AddTriangleFilled(b, ImVec2(b.x - hx * hs * 2 - hy * hs, b.y - hy * hs * 2 + hx * hs),
                            ImVec2(b.x - hx * hs * 2 + hy * hs, b.y - hy * hs * 2 - hx * hs), col);
    MeshArrowGeometry geo{i, j, {}};
    for (int k = 0; k <= 16; ++k) {
      const float t = static_cast<float>(k) / 16, u = 1 - t;
      geo.points.push_back(
          {u * u * a.x + 2 * u * t * ctrl.x + t * t * b.x, u * u * a.y + 2 * u * t * ctrl.y + t * t * b.y});
    }
    out.push_back(std::move(geo));
  }
  return out;
}

// "dp 0-7" / "tp 8-15" in overview blocks big enough to hold the lines.
void DrawBlockLabels(ImDrawList* list, const MeshGridLayout& g, const MeshBlocks& blocks,
                     const engine::Mesh& mesh) {
  for (int64_t k = 0; k < g.count && g.cell >= 56; ++k) {
    const ImVec2 c = g.Corner(k);
    const std::vector<int64_t> origin = blocks.Origin(k), extent = blocks.Extent(k);
    for (int d = 0; d < mesh.ndim(); ++d) {
      const size_t i = static_cast<size_t>(d);
      const std::string t = DimName(mesh, d) + " " + std::to_string(origin[i]) + "-" +
                            std::to_string(origin[i] + extent[i] - 1);
      if (ImGui::CalcTextSize(t.c_str()).x + 6 > g.cell) break;
      list->AddText(ImVec2(c.x + 3, c.y + 2 + static_cast<float>(d) * ImGui::GetTextLineHeight()),
                    IM_COL32(10, 10, 10, 255), t.c_str());
    }
  }
}

}  // namespace

void MeshPanel::Prepare(const ViewContext& ctx) {
  const RedistributeView* view = ctx.redistribute;
  if (!view || !view->ok()) {
    key_model_ = nullptr, key_id_ = -1, key_step_ = -1;
    return;
  }
  const int64_t world = view->mesh.size();
  if (key_model_ == ctx.model && key_serial_ == ctx.model_serial && key_id_ == view->id &&
      key_step_ == ctx.selection->step && key_focus_ == ctx.selection->focus_rank && key_drill_ == drill_ &&
      key_negotiation_ == negotiation_ && static_cast<int64_t>(group_of_.size()) == world) {
    return;
  }
  if (key_model_ != ctx.model || key_serial_ != ctx.model_serial) drill_ = -1;  // a new trace: overview
  key_model_ = ctx.model, key_serial_ = ctx.model_serial, key_id_ = view->id, key_step_ = ctx.selection->step,
  key_focus_ = ctx.selection->focus_rank, key_negotiation_ = negotiation_;
  step_dims_.clear();
  if (view->num_steps() > 0) {
    for (int64_t d :
         view->first->begin->optimized_plan()[static_cast<size_t>(ctx.selection->step)].mesh_dims) {
      if (d >= 0 && d < view->mesh.ndim()) step_dims_.push_back(static_cast<int>(d));
    }
  }
  group_of_.assign(static_cast<size_t>(world), 0);
  focus_group_.clear();
  if (!step_dims_.empty()) {
    // Group id = the rank's coordinate on the other mesh dims (row-major), so groups number 0..G-1.
    std::vector<int> others;
    for (int d = 0; d < view->mesh.ndim(); ++d) {
      if (std::find(step_dims_.begin(), step_dims_.end(), d) == step_dims_.end()) others.push_back(d);
    }
    for (int64_t r = 0; r < world; ++r) {
      auto coord = view->mesh.Coordinate(r);
      int64_t g = 0;
      for (int d : others) g = g * view->mesh.size(d) + coord[static_cast<size_t>(d)];
      group_of_[static_cast<size_t>(r)] = g;
    }
    focus_group_ = view->mesh.Group(std::clamp<int64_t>(ctx.selection->focus_rank, 0, world - 1), step_dims_);
  }
  in_focus_.assign(static_cast<size_t>(world), focus_group_.empty() ? 1 : 0);
  for (int64_t r : focus_group_) in_focus_[static_cast<size_t>(r)] = 1;
  const int64_t step = view->num_steps() > 0 ? ctx.selection->step : -1;
  totals_ = ComputeByteTotals(*view, step);
  const std::vector<int64_t> shape(view->mesh.shape().begin(), view->mesh.shape().end());
  blocks_ = world > kDetailRanks ? AggregateMesh(shape, kOverviewBlocks) : MeshBlocks{};
  if (!blocks_.blocks.empty() && drill_ >= blocks_.count()) drill_ = -1;
  key_drill_ = drill_;
  shown_.clear();
  focus_blocks_.clear();
  block_sent_.clear();
  if (!blocks_.blocks.empty() && drill_ < 0) {  // overview: blocks and a block x block matrix
    const std::vector<int64_t> block_of = blocks_.BlockOfEach();
    for (int64_t r : focus_group_) focus_blocks_.push_back(block_of[static_cast<size_t>(r)]);
    std::sort(focus_blocks_.begin(), focus_blocks_.end());
    focus_blocks_.erase(std::unique(focus_blocks_.begin(), focus_blocks_.end()), focus_blocks_.end());
    const int64_t n = blocks_.count();
    matrix_ = ComputeBytesMatrix(*view, step, negotiation_, block_of, n, block_of, n);
    const BytesMatrix data =
        negotiation_ ? ComputeBytesMatrix(*view, step, false, block_of, n, block_of, n) : matrix_;
    block_sent_.assign(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) block_sent_[static_cast<size_t>(i)] += data.At(i, j);
    return;
  }
  if (blocks_.blocks.empty()) {
    box_origin_.assign(shape.size(), 0);
    box_extent_ = shape;
    for (int64_t r = 0; r < world; ++r) shown_.push_back(r);
  } else {
    box_origin_ = blocks_.Origin(drill_);
    box_extent_ = blocks_.Extent(drill_);
    shown_ = blocks_.Ranks(drill_);
  }
  std::vector<int64_t> local_of(static_cast<size_t>(world), -1);
  for (size_t k = 0; k < shown_.size(); ++k)
    local_of[static_cast<size_t>(shown_[k])] = static_cast<int64_t>(k);
  const int64_t n = static_cast<int64_t>(shown_.size());
  matrix_ = ComputeBytesMatrix(*view, step, negotiation_, local_of, n, local_of, n);
}

std::string MeshPanel::BlockText(const engine::Mesh& mesh, int64_t block) const {
  return BoxTitle(mesh, blocks_.Origin(block), blocks_.Extent(block), static_cast<int>(blocks_.shape.size()));
}

void MeshPanel::Draw(ViewContext& ctx) {
  cells_.clear();
  arrows_.clear();
  labels_.clear();
  const RedistributeView* view = ctx.redistribute;
  if (!view || !view->ok()) {
    if (view) {
      ImGui::TextDisabled("%s", view->error.c_str());
    } else {
      NoRedistributeHint(ctx.model, "No redistribute selected.");
    }
    return;
  }
  const engine::Mesh& mesh = view->mesh;
  ImGui::Text("mesh %s", mesh.ToString().c_str());
  ImGui::SameLine();
  if (step_dims_.empty()) {
    ImGui::TextDisabled("(no step)");
  } else {
    const std::string dims = FormatMeshDims(std::vector<int64_t>(step_dims_.begin(), step_dims_.end()), mesh);
    const std::string group =
        focus_group_.size() <= 16 ? FormatInts(focus_group_) : std::to_string(focus_group_.size()) + " ranks";
    ImGui::TextWrapped("step %lld acts on mesh dim%s %s; group of r%lld: %s",
                       static_cast<long long>(key_step_), step_dims_.size() > 1 ? "s" : "", dims.c_str(),
                       static_cast<long long>(ctx.selection->focus_rank), group.c_str());
  }
  const bool overview = !blocks_.blocks.empty() && key_drill_ < 0;
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  if (overview) {
    const std::string per_block = FormatInts(blocks_.block);
    ImGui::TextWrapped(
        "%lld ranks in %lld blocks of %s ranks; colour = data bytes sent, outlined = blocks "
        "of r%lld's group; click a block to expand it",
        static_cast<long long>(mesh.size()), static_cast<long long>(blocks_.count()), per_block.c_str(),
        static_cast<long long>(ctx.selection->focus_rank));
  } else if (!blocks_.blocks.empty()) {
    if (ImGui::SmallButton("back to all blocks")) drill_ = -1;
    ImGui::SameLine();
    ImGui::TextWrapped("block %s (%zu ranks); click a rank to focus it", BlockText(mesh, key_drill_).c_str(),
                       shown_.size());
  } else {
    ImGui::TextWrapped(
        "click a rank to focus it; highlighted = its group for this step; gN = the rank's group for "
        "this step (ranks with the same N run one collective); arrows = bytes sent");
  }
  ImGui::PopStyleColor();
  ImGui::TextDisabled("x: %s%s", DimName(mesh, mesh.ndim() - 1).c_str(),
                      mesh.ndim() >= 2 ? ("   y: " + DimName(mesh, mesh.ndim() - 2)).c_str() : "");
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float half = std::max(10.0f, avail.x * 0.5f - 8);
  ImGui::BeginGroup();
  DrawGrid(ctx, half, std::max(10.0f, avail.y - 4));
  ImGui::EndGroup();
  ImGui::SameLine(0, 16);
  ImGui::BeginGroup();
  DrawMatrix(ctx);
  ImGui::EndGroup();
}

void MeshPanel::DrawGrid(ViewContext& ctx, float width, float height) {
  const engine::Mesh& mesh = ctx.redistribute->mesh;
  const int64_t world = mesh.size();
  const int nd = mesh.ndim();
  const bool overview = !blocks_.blocks.empty() && key_drill_ < 0;
  const MeshGridLayout g(overview ? blocks_.blocks : box_extent_, !overview, ImGui::GetCursorScreenPos(),
                         width, height);
  ImGui::InvisibleButton("##mesh_grid", ImVec2(width, height));
  const bool hovered = ImGui::IsItemHovered(), clicked = ImGui::IsItemClicked();
  ImDrawList* list = ImGui::GetWindowDrawList();
  std::vector<Quad> quads;
  const float pad = g.cell >= 6 ? 1.0f : 0.0f;
  int64_t max_sent = 1;
  for (int64_t b : block_sent_) max_sent = std::max(max_sent, b);
  for (int64_t k = 0; k < g.count; ++k) {
    const ImVec2 c = g.Corner(k);
    if (overview) {
      const int64_t sent = block_sent_[static_cast<size_t>(k)];
      quads.push_back(MakeQuad(
          c.x + pad, c.y + pad, c.x + g.cell - pad, c.y + g.cell - pad,
          sent == 0 ? Rgb{38, 40, 48}
                    : Heat(0.15 + 0.85 * static_cast<double>(sent) / static_cast<double>(max_sent))));
    } else {
      const int64_t r = shown_[static_cast<size_t>(k)];
      quads.push_back(MakeQuad(c.x + pad, c.y + pad, c.x + g.cell - pad, c.y + g.cell - pad,
                               RankColor(r, world), QuadStyle::kMeshCell,
                               in_focus_[static_cast<size_t>(r)] ? 1.0f : 0.0f));
    }
    cells_.push_back(
        {overview, overview ? k : shown_[static_cast<size_t>(k)], c.x, c.y, c.x + g.cell, c.y + g.cell});
  }
  for (int64_t b = 0; b < g.blocks && g.blocks > 1; ++b) {  // small multiple titles: "pp=0, dp=1"
    const int64_t k = b * g.rows * g.cols;
    const std::string title = overview ? BoxTitle(mesh, blocks_.Origin(k), blocks_.Extent(k), nd - 2)
                                       : BoxTitle(mesh, mesh.Coordinate(shown_[static_cast<size_t>(k)]),
                                                  std::vector<int64_t>(static_cast<size_t>(nd), 1), nd - 2);
    const ImVec2 c = g.Corner(k);
    list->AddText(ImVec2(c.x, c.y - g.title_h), IM_COL32(170, 175, 185, 255), title.c_str());
  }
  if (ctx.renderer) ctx.renderer->DrawQuads(list, std::move(quads));
  if (overview) {
    for (int64_t b : focus_blocks_) {
      const ImVec2 c = g.Corner(b);
      list->AddRect(c, ImVec2(c.x + g.cell, c.y + g.cell), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
    }
    DrawBlockLabels(list, g, blocks_, mesh);
  } else {
    DrawRankLabels(list, g, world);
    arrows_ = DrawArrows(list, g, matrix_);
  }
  const int64_t k = hovered ? g.Hit(ImGui::GetIO().MousePos) : -1;
  if (k >= 0) GridTooltip(ctx, k);
  if (k >= 0 && clicked && overview) ExpandBlock(ctx, k);
  if (k >= 0 && clicked && !overview) {
    ctx.selection->focus_rank = shown_[static_cast<size_t>(k)];
    ctx.selection->focus_chosen = true;
  }
}

void MeshPanel::ExpandBlock(ViewContext& ctx, int64_t block) {
  // The block's first rank takes the focus, so that the expanded block shows its group.
  drill_ = block;
  ctx.selection->focus_rank = blocks_.Ranks(block).front();
}

void MeshPanel::DrawRankLabels(ImDrawList* list, const MeshGridLayout& g, int64_t world) {
  for (int64_t k = 0; k < g.count && g.cell >= 28; ++k) {
    const int64_t r = shown_[static_cast<size_t>(k)];
    const ImVec2 c = g.Centre(k);
    const std::string label = "r" + std::to_string(r);
    const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
    if (ts.x + 2 > g.cell) continue;
    list->AddText(ImVec2(c.x - ts.x / 2, c.y - ts.y), ContrastText(RankColor(r, world)), label.c_str());
    labels_.push_back({label, c.x - ts.x / 2, c.y - ts.y, c.x + ts.x / 2, c.y});
    if (!step_dims_.empty() && g.cell >= 40) {
      const std::string grp = "g" + std::to_string(group_of_[static_cast<size_t>(r)]);
      const ImVec2 gs = ImGui::CalcTextSize(grp.c_str());
      list->AddText(ImVec2(c.x - gs.x / 2, c.y), ContrastText(RankColor(r, world)), grp.c_str());
      labels_.push_back({grp, c.x - gs.x / 2, c.y, c.x + gs.x / 2, c.y + gs.y});
    }
  }
}

void MeshPanel::GridTooltip(const ViewContext& ctx, int64_t k) const {
  const engine::Mesh& mesh = ctx.redistribute->mesh;
  ImGui::BeginTooltip();
  if (!blocks_.blocks.empty() && key_drill_ < 0) {
    ImGui::Text("block %s: %zu ranks", BlockText(mesh, k).c_str(), blocks_.Ranks(k).size());
    ImGui::Text("data bytes sent %s",
                FormatBytes(static_cast<double>(block_sent_[static_cast<size_t>(k)])).c_str());
    ImGui::TextDisabled("click to expand");
  } else {
    const int64_t r = shown_[static_cast<size_t>(k)];
    RankSwatch(r, mesh.size());
    ImGui::Text("coordinate %s", FormatInts(mesh.Coordinate(r)).c_str());
    int64_t out = 0, in = 0;
    for (int64_t j = 0; j < matrix_.cols; ++j) out += matrix_.At(k, j), in += matrix_.At(j, k);
    ImGui::Text("sent %s  received %s%s", FormatBytes(static_cast<double>(out)).c_str(),
                FormatBytes(static_cast<double>(in)).c_str(),
                blocks_.blocks.empty() ? "" : " (in this block)");
  }
  ImGui::EndTooltip();
}

void MeshPanel::DrawMatrix(ViewContext& ctx) {
  const int64_t world = ctx.redistribute->mesh.size();
  const bool overview = !blocks_.blocks.empty() && key_drill_ < 0;
  // Data and shape negotiation apart (item 7): the negotiation collectives only exchange shapes.
  ImGui::TextWrapped("bytes sent row -> column, step %lld%s", static_cast<long long>(ctx.selection->step),
                     overview ? " (blocks)" : "");
  ImGui::TextWrapped("data %s, shape negotiation %s", FormatBytes(static_cast<double>(totals_.data)).c_str(),
                     FormatBytes(static_cast<double>(totals_.negotiation)).c_str());
  ImGui::Checkbox("show shape negotiation", &negotiation_);
  if (overview) ImGui::TextDisabled("click a row to expand its block");
  const int64_t n = matrix_.rows;
  if (n == 0) return;
  if (matrix_.total == 0)
    ImGui::TextDisabled(negotiation_ ? "no shape negotiation in this step" : "no data sent");
  const ImVec2 mo = ImGui::GetCursorScreenPos();
  const float label_w = !overview && n <= 32 ? 30.0f : 0.0f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float side = std::max(40.0f, std::min(avail.x - label_w, avail.y - label_w - 4));
  const float mc = side / static_cast<float>(n);
  ImGui::InvisibleButton("##bytes_matrix", ImVec2(side + label_w, side + label_w));
  const bool hovered = ImGui::IsItemHovered(), clicked = ImGui::IsItemClicked();
  ImDrawList* list = ImGui::GetWindowDrawList();
  std::vector<Quad> mq;
  const float mx0 = mo.x + label_w, my0 = mo.y + label_w, gap = mc > 4 ? 1.0f : 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t b = matrix_.At(i, j);
      const Rgb c =
          b == 0 ? Rgb{38, 40, 48}
                 : Heat(static_cast<double>(b) / static_cast<double>(std::max<int64_t>(1, matrix_.max)));
      mq.push_back(
          MakeQuad(mx0 + j * mc, my0 + i * mc, mx0 + (j + 1) * mc - gap, my0 + (i + 1) * mc - gap, c));
    }
  }
  for (int64_t k = 0; k < n && label_w > 0; ++k) {
    const Rgb c = RankColor(shown_[static_cast<size_t>(k)], world);
    mq.push_back(MakeQuad(mo.x, my0 + k * mc + 1, mo.x + 6, my0 + (k + 1) * mc - 1, c));
    mq.push_back(MakeQuad(mx0 + k * mc + 1, mo.y, mx0 + (k + 1) * mc - 1, mo.y + 6, c));
  }
  if (ctx.renderer) ctx.renderer->DrawQuads(list, std::move(mq));
  if (label_w > 0 && mc >= 14) {
    for (int64_t k = 0; k < n; ++k) {
      const std::string t = std::to_string(shown_[static_cast<size_t>(k)]);
      list->AddText(ImVec2(mo.x + 8, my0 + k * mc + (mc - ImGui::GetTextLineHeight()) / 2),
                    IM_COL32(220, 220, 220, 255), t.c_str());
      list->AddText(ImVec2(mx0 + k * mc + mc / 2 - 4, mo.y + 8), IM_COL32(220, 220, 220, 255), t.c_str());
    }
  }
  for (int64_t i = 0; i < n && mc >= 52; ++i) {  // byte labels where they fit their cell
    for (int64_t j = 0; j < n; ++j) {
      if (matrix_.At(i, j) == 0) continue;
      const std::string t = FormatBytes(static_cast<double>(matrix_.At(i, j)));
      if (ImGui::CalcTextSize(t.c_str()).x + 6 > mc) continue;
      list->AddText(ImVec2(mx0 + j * mc + 3, my0 + i * mc + 3), IM_COL32(10, 10, 10, 255), t.c_str());
    }
  }
  if (!hovered) return;
  const ImVec2 m = ImGui::GetIO().MousePos;
  const int64_t j = static_cast<int64_t>((m.x - mx0) / mc), i = static_cast<int64_t>((m.y - my0) / mc);
  if (i < 0 || j < 0 || i >= n || j >= n) return;
  const std::string bytes = FormatBytes(static_cast<double>(matrix_.At(i, j)));
  if (overview) {
    ImGui::SetTooltip("block %s -> block %s: %s", BlockText(ctx.redistribute->mesh, i).c_str(),
                      BlockText(ctx.redistribute->mesh, j).c_str(), bytes.c_str());
    if (clicked) ExpandBlock(ctx, i);
  } else {
    ImGui::SetTooltip("r%lld -> r%lld: %s", static_cast<long long>(shown_[static_cast<size_t>(i)]),
                      static_cast<long long>(shown_[static_cast<size_t>(j)]), bytes.c_str());
  }
}

}  // namespace shardscope::app::gui
