#include "panels/mesh_panel.hpp"

#include <algorithm>
#include <cmath>

#include <imgui.h>

#include "gl_renderer.hpp"
#include "widgets.hpp"

namespace shardscope::app::gui {
namespace {

constexpr int64_t kMaxMatrixWorld = 512;
constexpr size_t kMaxArrows = 160;

Rgb Heat(double f) {
  // Dark blue -> orange -> yellow.
  f = std::clamp(f, 0.0, 1.0);
  auto lerp = [](double a, double b, double t) { return static_cast<uint8_t>(a + (b - a) * t); };
  if (f < 0.5) return {lerp(30, 220, f * 2), lerp(40, 110, f * 2), lerp(90, 40, f * 2)};
  return {lerp(220, 255, (f - 0.5) * 2), lerp(110, 230, (f - 0.5) * 2), lerp(40, 90, (f - 0.5) * 2)};
}

}  // namespace

BytesMatrix ComputeBytesMatrix(const RedistributeView& view, int64_t world, int64_t step) {
  BytesMatrix m;
  m.world = world;
  if (world <= 0 || world > kMaxMatrixWorld) return m;
  m.bytes.assign(static_cast<size_t>(world * world), 0);
  for (const trace::RedistributeRecord* rec : view.per_rank) {
    for (const trace::Collective& c : rec->collectives) {
      if (step >= 0 && c.step != step) continue;
      for (size_t i = 0; i < c.group.size() && i < c.bytes_sent.size(); ++i) {
        int64_t peer = c.group[i];
        if (peer < 0 || peer >= world || rec->rank < 0 || rec->rank >= world) continue;
        m.bytes[static_cast<size_t>(rec->rank * world + peer)] += c.bytes_sent[i];
        m.total += c.bytes_sent[i];
      }
    }
  }
  for (int64_t b : m.bytes) m.max = std::max(m.max, b);
  return m;
}

void MeshPanel::Prepare(const ViewContext& ctx) {
  const RedistributeView* view = ctx.redistribute;
  if (!view || !view->ok()) {
    key_model_ = nullptr, key_id_ = -1, key_step_ = -1;
    return;
  }
  if (key_model_ == ctx.model && key_serial_ == ctx.model_serial && key_id_ == view->id &&
      key_step_ == ctx.selection->step && key_focus_ == ctx.selection->focus_rank &&
      static_cast<int64_t>(group_of_.size()) == view->mesh.size()) {
    return;
  }
  key_model_ = ctx.model, key_serial_ = ctx.model_serial, key_id_ = view->id, key_step_ = ctx.selection->step,
  key_focus_ = ctx.selection->focus_rank;
  step_dims_.clear();
  if (view->num_steps() > 0) {
    for (int64_t d : view->first->begin->optimized_plan[static_cast<size_t>(ctx.selection->step)].mesh_dims) {
      if (d >= 0 && d < view->mesh.ndim()) step_dims_.push_back(static_cast<int>(d));
    }
  }
  int64_t world = view->mesh.size();
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
  matrix_ = ComputeBytesMatrix(*view, world, view->num_steps() > 0 ? ctx.selection->step : -1);
}

void MeshPanel::Draw(ViewContext& ctx) {
  const RedistributeView* view = ctx.redistribute;
  if (!view || !view->ok()) {
    ImGui::TextDisabled(view ? view->error.c_str() : "No redistribute selected.");
    return;
  }
  const engine::Mesh& mesh = view->mesh;
  int64_t world = mesh.size();
  ImGui::Text("mesh %s", mesh.ToString().c_str());
  ImGui::SameLine();
  if (step_dims_.empty()) {
    ImGui::TextDisabled("(no step)");
  } else {
    const std::string dims = FormatMeshDims(std::vector<int64_t>(step_dims_.begin(), step_dims_.end()), mesh);
    ImGui::Text("step %lld acts on mesh dim%s %s; group of r%lld: %s", static_cast<long long>(key_step_),
                step_dims_.size() > 1 ? "s" : "", dims.c_str(),
                static_cast<long long>(ctx.selection->focus_rank), FormatInts(focus_group_).c_str());
  }
  ImGui::TextDisabled("click a rank to focus it; highlighted = its group for this step; arrows = bytes sent");

  ImVec2 avail = ImGui::GetContentRegionAvail();
  float half = avail.x * 0.5f - 8;
  // Mesh grid: the last mesh dim along x, the one before along y; beyond 2-D one such grid per
  // coordinate of the leading dims (small multiples, each titled "pp=0"), never folded together.
  auto dim_name = [&](int d) {
    return mesh.has_dim_names() ? mesh.dim_names()[static_cast<size_t>(d)] : "dim " + std::to_string(d);
  };
  const int nd = mesh.ndim();
  const int64_t cols = mesh.size(nd - 1);
  const int64_t rows = nd >= 2 ? mesh.size(nd - 2) : 1;
  const int64_t blocks = world / std::max<int64_t>(1, rows * cols);
  const int64_t per_line =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(blocks)))));
  const int64_t lines = (blocks + per_line - 1) / per_line;
  const float gap = blocks > 1 ? 14.0f : 0.0f, title_h = blocks > 1 ? ImGui::GetTextLineHeight() + 2 : 0.0f;
  ImGui::TextDisabled("x: %s%s", dim_name(nd - 1).c_str(),
                      nd >= 2 ? ("   y: " + dim_name(nd - 2)).c_str() : "");
  avail = ImGui::GetContentRegionAvail();
  float cell = std::max(
      2.0f, std::min((half - gap * static_cast<float>(per_line - 1)) / static_cast<float>(cols * per_line),
                     (avail.y - 24 - (gap + title_h) * static_cast<float>(lines)) /
                         static_cast<float>(rows * lines)));
  cell = std::min(cell, 140.0f);
  ImVec2 o = ImGui::GetCursorScreenPos();
  // Top-left corner of rank r's cell.
  auto corner = [&](int64_t r) {
    const int64_t b = r / (rows * cols), w = r % (rows * cols);
    const float bx = static_cast<float>(b % per_line) * (static_cast<float>(cols) * cell + gap);
    const float by =
        static_cast<float>(b / per_line) * (static_cast<float>(rows) * cell + gap + title_h) + title_h;
    return ImVec2(o.x + bx + static_cast<float>(w % cols) * cell,
                  o.y + by + static_cast<float>(w / cols) * cell);
  };
  ImGui::InvisibleButton("##mesh_grid", ImVec2(std::max(half, 10.0f), std::max(10.0f, avail.y - 4)));
  bool grid_hovered = ImGui::IsItemHovered();
  bool grid_clicked = ImGui::IsItemClicked();
  ImDrawList* list = ImGui::GetWindowDrawList();
  std::vector<Quad> quads;
  auto centre = [&](int64_t r) {
    const ImVec2 c = corner(r);
    return ImVec2(c.x + 0.5f * cell, c.y + 0.5f * cell);
  };
  for (int64_t r = 0; r < world; ++r) {
    const ImVec2 c = corner(r);
    bool in_focus = std::find(focus_group_.begin(), focus_group_.end(), r) != focus_group_.end();
    quads.push_back(MakeQuad(c.x + 1, c.y + 1, c.x + cell - 1, c.y + cell - 1, RankColor(r, world),
                             QuadStyle::kMeshCell, in_focus || focus_group_.empty() ? 1.0f : 0.0f));
  }
  for (int64_t b = 0; b < blocks && blocks > 1; ++b) {  // small multiple titles: "pp=0, dp=1"
    const std::vector<int64_t> coord = mesh.Coordinate(b * rows * cols);
    std::string title;
    for (int d = 0; d + 2 < nd; ++d)
      title += (d ? ", " : "") + dim_name(d) + "=" + std::to_string(coord[static_cast<size_t>(d)]);
    const ImVec2 c = corner(b * rows * cols);
    list->AddText(ImVec2(c.x, c.y - title_h), IM_COL32(170, 175, 185, 255), title.c_str());
  }
  if (ctx.renderer) ctx.renderer->DrawQuads(list, std::move(quads));
  if (cell >= 28) {
    for (int64_t r = 0; r < world; ++r) {
      ImVec2 c = centre(r);
      std::string label = "r" + std::to_string(r);
      ImVec2 ts = ImGui::CalcTextSize(label.c_str());
      list->AddText(ImVec2(c.x - ts.x / 2, c.y - ts.y), ContrastText(RankColor(r, world)), label.c_str());
      if (!step_dims_.empty() && cell >= 40) {
        std::string g = "g" + std::to_string(group_of_[static_cast<size_t>(r)]);
        ImVec2 gs = ImGui::CalcTextSize(g.c_str());
        list->AddText(ImVec2(c.x - gs.x / 2, c.y), ContrastText(RankColor(r, world)), g.c_str());
      }
    }
  }
  // Arrows for the biggest transfers.
  if (!matrix_.bytes.empty() && matrix_.max > 0) {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t i = 0; i < world; ++i) {
      for (int64_t j = 0; j < world; ++j) {
        if (i != j && matrix_.At(i, j) > 0) pairs.push_back({i, j});
      }
    }
    std::sort(pairs.begin(), pairs.end(),
              [&](auto a, auto b) { return matrix_.At(a.first, a.second) > matrix_.At(b.first, b.second); });
    // Arrows read for pairwise and ring-like steps; a step where ranks talk to many peers shows
    // its groups (highlight, g labels) and the matrix instead of a scribble of arrows.
    if (static_cast<int64_t>(pairs.size()) > world) pairs.clear();
    if (pairs.size() > kMaxArrows) pairs.resize(kMaxArrows);
    for (auto [i, j] : pairs) {
      ImVec2 a = centre(i), b = centre(j);
      float dx = b.x - a.x, dy = b.y - a.y, len = std::sqrt(dx * dx + dy * dy);
      if (len < 1) continue;
      float nx = -dy / len * cell * 0.12f,
            ny = dx / len * cell * 0.12f;  // offset so i->j and j->i do not overlap
      a = ImVec2(a.x + nx, a.y + ny);
      b = ImVec2(b.x + nx - dx / len * cell * 0.25f, b.y + ny - dy / len * cell * 0.25f);
      float f = static_cast<float>(matrix_.At(i, j)) / static_cast<float>(matrix_.max);
      ImU32 col = IM_COL32(255, 255, 255, static_cast<int>(90 + 150 * f));
      list->AddLine(a, b, col, 1.0f + 2.5f * f);
      float hx = dx / len, hy = dy / len, hs = 4 + 4 * f;
      list->AddTriangleFilled(b, ImVec2(b.x - hx * hs * 2 - hy * hs, b.y - hy * hs * 2 + hx * hs),
                              ImVec2(b.x - hx * hs * 2 + hy * hs, b.y - hy * hs * 2 - hx * hs), col);
    }
  }
  if (grid_hovered) {
    ImVec2 m = ImGui::GetIO().MousePos;
    int64_t r = -1;
    for (int64_t k = 0; k < world && r < 0; ++k) {
      const ImVec2 c = corner(k);
      if (m.x >= c.x && m.x < c.x + cell && m.y >= c.y && m.y < c.y + cell) r = k;
    }
    if (r >= 0) {
      ImGui::BeginTooltip();
      RankSwatch(r, world);
      ImGui::Text("coordinate %s", FormatInts(mesh.Coordinate(r)).c_str());
      if (!matrix_.bytes.empty()) {
        int64_t out = 0, in = 0;
        for (int64_t k = 0; k < world; ++k) out += matrix_.At(r, k), in += matrix_.At(k, r);
        ImGui::Text("sent %s  received %s", FormatBytes(static_cast<double>(out)).c_str(),
                    FormatBytes(static_cast<double>(in)).c_str());
      }
      ImGui::EndTooltip();
      if (grid_clicked) ctx.selection->focus_rank = r;
    }
  }

  // Bytes matrix.
  ImGui::SameLine(0, 16);
  ImGui::BeginGroup();
  if (matrix_.bytes.empty()) {
    ImGui::TextDisabled("bytes matrix shown up to %lld ranks", static_cast<long long>(kMaxMatrixWorld));
  } else {
    ImGui::Text("bytes sent row -> column, step %lld: %s", static_cast<long long>(ctx.selection->step),
                FormatBytes(static_cast<double>(matrix_.total)).c_str());
    ImVec2 mo = ImGui::GetCursorScreenPos();
    float label_w = world <= 32 ? 30.0f : 0.0f;
    float side =
        std::min(ImGui::GetContentRegionAvail().x - label_w, ImGui::GetContentRegionAvail().y - label_w - 4);
    side = std::max(side, 40.0f);
    float mc = side / static_cast<float>(world);
    ImGui::InvisibleButton("##bytes_matrix", ImVec2(side + label_w, side + label_w));
    bool hovered = ImGui::IsItemHovered();
    std::vector<Quad> mq;
    float mx0 = mo.x + label_w, my0 = mo.y + label_w;
    for (int64_t i = 0; i < world; ++i) {
      for (int64_t j = 0; j < world; ++j) {
        int64_t b = matrix_.At(i, j);
        Rgb c = b == 0
                    ? Rgb{38, 40, 48}
                    : Heat(static_cast<double>(b) / static_cast<double>(std::max<int64_t>(1, matrix_.max)));
        mq.push_back(MakeQuad(mx0 + j * mc, my0 + i * mc, mx0 + (j + 1) * mc - (mc > 4 ? 1 : 0),
                              my0 + (i + 1) * mc - (mc > 4 ? 1 : 0), c));
      }
    }
    for (int64_t r = 0; r < world && label_w > 0; ++r) {
      mq.push_back(MakeQuad(mo.x, my0 + r * mc + 1, mo.x + 6, my0 + (r + 1) * mc - 1, RankColor(r, world)));
      mq.push_back(MakeQuad(mx0 + r * mc + 1, mo.y, mx0 + (r + 1) * mc - 1, mo.y + 6, RankColor(r, world)));
    }
    if (ctx.renderer) ctx.renderer->DrawQuads(list, std::move(mq));
    if (label_w > 0 && mc >= 14) {
      for (int64_t r = 0; r < world; ++r) {
        list->AddText(ImVec2(mo.x + 8, my0 + r * mc + (mc - ImGui::GetTextLineHeight()) / 2),
                      IM_COL32(220, 220, 220, 255), std::to_string(r).c_str());
        list->AddText(ImVec2(mx0 + r * mc + mc / 2 - 4, mo.y + 8), IM_COL32(220, 220, 220, 255),
                      std::to_string(r).c_str());
      }
    }
    if (mc >= 44) {
      for (int64_t i = 0; i < world; ++i) {
        for (int64_t j = 0; j < world; ++j) {
          if (matrix_.At(i, j) == 0) continue;
          std::string t = FormatBytes(static_cast<double>(matrix_.At(i, j)));
          list->AddText(ImVec2(mx0 + j * mc + 3, my0 + i * mc + 3), IM_COL32(10, 10, 10, 255), t.c_str());
        }
      }
    }
    if (hovered) {
      ImVec2 m = ImGui::GetIO().MousePos;
      int64_t j = static_cast<int64_t>((m.x - mx0) / mc), i = static_cast<int64_t>((m.y - my0) / mc);
      if (i >= 0 && j >= 0 && i < world && j < world) {
        ImGui::SetTooltip("r%lld -> r%lld: %s", static_cast<long long>(i), static_cast<long long>(j),
                          FormatBytes(static_cast<double>(matrix_.At(i, j))).c_str());
      }
    }
  }
  ImGui::EndGroup();
}

}  // namespace shardscope::app::gui
