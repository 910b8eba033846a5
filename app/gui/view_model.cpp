#include "view_model.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/error.hpp"

namespace shardscope::app::gui {

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char buf[64];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s", bytes, kUnits[unit]);
  }
  return buf;
}

std::string FormatTimeNs(double ns) {
  char buf[64];
  if (ns < 1e3) {
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  } else if (ns < 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  } else if (ns < 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  }
  return buf;
}

std::string FormatInts(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

std::string FormatMeshDims(const std::vector<int64_t>& dims, const engine::Mesh& mesh) {
  std::string out;
  for (int64_t d : dims) {
    const bool named = mesh.has_dim_names() && d >= 0 && d < mesh.ndim();
    out += (out.empty() ? "" : ",") + (named ? mesh.dim_names()[static_cast<size_t>(d)] : std::to_string(d));
  }
  return out.empty() ? "-" : out;
}

engine::Mesh MeshFromHeader(const trace::Header& header) {
  std::vector<std::string> names = header.mesh_dim_names;
  std::set<std::string> unique(names.begin(), names.end());
  bool usable = names.size() == header.mesh_shape.size() && unique.size() == names.size() &&
                std::none_of(names.begin(), names.end(), [](const std::string& n) { return n.empty(); });
  engine::Shape shape = header.mesh_shape;
  if (shape.empty()) shape = {header.world};
  return engine::Mesh(shape, usable ? names : std::vector<std::string>{});
}

engine::Transform TransformFromStep(const trace::PlanStep& step, const std::string& what) {
  engine::Transform t;
  for (int64_t d : step.mesh_dims) t.mesh_dims.push_back(static_cast<int>(d));
  t.src = engine::ParsePlacement(step.src, what + " src");
  t.dst = engine::ParsePlacement(step.dst, what + " dst");
  t.logical_shape = step.logical_shape;
  t.flattened = step.flattened;
  t.avg_scale = static_cast<int64_t>(step.avg_scale);
  t.comm = engine::CommKindOf(t.src, t.dst);
  t.cost_us = step.cost_us;
  return t;
}

RedistributeView BuildRedistributeView(const trace::Model& model, int64_t id) {
  RedistributeView view;
  view.id = id;
  view.per_rank = model.RedistributesWithId(id);
  if (view.per_rank.empty()) {
    view.error = "no redistribute with id " + std::to_string(id);
    return view;
  }
  view.first = view.per_rank.front();
  const trace::RedistributeBegin& begin = view.first->begin;
  view.steps.resize(begin.optimized_plan().size());
  for (size_t k = 0; k < begin.optimized_plan().size(); ++k)
    view.steps[k].predicted_us = begin.optimized_plan()[k].cost_us;
  for (const trace::RedistributeRecord* rec : view.per_rank) {
    for (const trace::StepRecord& s : rec->steps) {
      if (s.begin->step < 0 || s.begin->step >= static_cast<int64_t>(view.steps.size()) || !s.end) continue;
      auto& m = view.steps[static_cast<size_t>(s.begin->step)];
      double d = static_cast<double>(s.end->t_ns - s.begin->t_ns);
      if (!m.measured_max_ns || d > *m.measured_max_ns) m.slowest_rank = rec->rank;
      m.measured_max_ns = std::max(m.measured_max_ns.value_or(0.0), d);
    }
    for (const trace::Collective& c : rec->collectives) {
      if (c.step() < 0 || c.step() >= static_cast<int64_t>(view.steps.size())) continue;
      auto& m = view.steps[static_cast<size_t>(c.step())];
      for (int64_t b : c.bytes_sent()) m.bytes_sent += b;
      ++m.collectives;
    }
  }
  try {
    const trace::Header* header = nullptr;
    for (const trace::RankTrace& r : model.ranks) {
      if (r.header.rank == view.first->rank) header = &r.header;
    }
    if (!header && !model.ranks.empty()) header = &model.ranks.front().header;
    if (!header) throw InvalidInput("trace has no header");
    view.mesh = MeshFromHeader(*header);
    view.shape = begin.global_shape();
    engine::Placements placements;
    for (size_t m = 0; m < begin.src_placements().size(); ++m) {
      placements.push_back(
          engine::ParsePlacement(begin.src_placements()[m], "src_placements[" + std::to_string(m) + "]"));
    }
    engine::NormalizePlacements(placements, static_cast<int>(view.shape.size()), "src_placements");
    // The engine's one parser of the trace's order text, and the executor's own walk of the
    // plan, so the layouts drawn are the ones the run had (literal _StridedShards included).
    const std::optional<engine::ShardOrder> order =
        engine::ParseShardOrderStr(begin.src_order(), placements, "src_order");
    engine::PlanState state = engine::ExecutionStartState(placements, order ? &*order : nullptr, view.mesh,
                                                          static_cast<int>(view.shape.size()));
    view.states.push_back(state);
    for (size_t k = 0; k < begin.optimized_plan().size(); ++k) {
      engine::Transform t = TransformFromStep(begin.optimized_plan()[k], "step " + std::to_string(k));
      if (t.src.IsShardLike() && t.src.dim < 0) t.src.dim += static_cast<int>(view.shape.size());
      if (t.dst.IsShardLike() && t.dst.dim < 0) t.dst.dim += static_cast<int>(view.shape.size());
      state = engine::ExecutionAdvance(state, t, view.mesh);
      view.states.push_back(state);
    }
  } catch (const std::exception& e) {
    view.error = e.what();
  }
  return view;
}

std::vector<engine::RankLayout> LayoutsFor(const RedistributeView& view, const engine::PlanState& state) {
  engine::LayoutInput input;
  input.mesh = &view.mesh;
  input.placements = &state.placements;
  input.order = &state.order;  // complete: built by ExecutionStartState / ExecutionAdvance
  input.shape = &view.shape;
  return engine::ComputeLayouts(input);
}

namespace {

bool Contains(const engine::IndexSet& set, int64_t index) {
  for (const engine::Interval& iv : set) {
    if (index >= iv.begin && index < iv.end) return true;
  }
  return false;
}

// Breakpoints of every interval along one dim, capped so that huge strided layouts degrade to
// coarse cells instead of millions of slivers.
std::vector<int64_t> Breaks(const std::vector<const engine::RankLayout*>& present, int dim, int64_t extent,
                            bool& truncated) {
  std::vector<int64_t> breaks{0, extent};
  if (dim >= 0) {
    for (const engine::RankLayout* l : present) {
      for (const engine::Interval& iv : l->indices[static_cast<size_t>(dim)]) {
        breaks.push_back(iv.begin);
        breaks.push_back(iv.end);
      }
    }
  }
  std::sort(breaks.begin(), breaks.end());
  breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());
  constexpr size_t kMaxBreaks = 1025;
  if (breaks.size() > kMaxBreaks) {
    truncated = true;
    std::vector<int64_t> coarse;
    for (size_t i = 0; i < kMaxBreaks - 1; ++i)
      coarse.push_back(breaks[i * (breaks.size() - 1) / (kMaxBreaks - 1)]);
    coarse.push_back(breaks.back());
    coarse.erase(std::unique(coarse.begin(), coarse.end()), coarse.end());
    breaks = coarse;
  }
  return breaks;
}

// Segments [first, last) of `breaks` that overlap [begin, end).
std::pair<size_t, size_t> SegmentsOf(const std::vector<int64_t>& breaks, int64_t begin, int64_t end) {
  size_t first = static_cast<size_t>(std::upper_bound(breaks.begin(), breaks.end(), begin) - breaks.begin());
  first = first == 0 ? 0 : first - 1;
  size_t last = static_cast<size_t>(std::lower_bound(breaks.begin(), breaks.end(), end) - breaks.begin());
  return {first, std::max(first, last)};
}

}  // namespace

LayoutGrid ProjectLayout(const std::vector<engine::RankLayout>& layouts, const engine::PlanState& state,
                         const engine::Shape& shape, int row_dim, int col_dim,
                         const std::vector<int64_t>& slice) {
  LayoutGrid grid;
  grid.row_dim = row_dim;
  grid.col_dim = col_dim;
  grid.rows = row_dim >= 0 ? shape[static_cast<size_t>(row_dim)] : 1;
  grid.cols = col_dim >= 0 ? shape[static_cast<size_t>(col_dim)] : 1;
  for (size_t m = 0; m < state.placements.size(); ++m) {
    if (state.placements[m].IsPartial()) {
      grid.partial = true;
      if (!grid.partial_text.empty()) grid.partial_text += ", ";
      grid.partial_text += state.placements[m].ToString() + " on mesh dim " + std::to_string(m);
    }
  }
  std::vector<const engine::RankLayout*> present;
  for (const engine::RankLayout& l : layouts) {
    int64_t numel = 1;
    for (int64_t e : l.local_shape) numel *= e;
    if (numel == 0) {
      grid.empty_ranks.push_back(l.rank);
      continue;
    }
    bool in_slice = true;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (static_cast<int>(d) == row_dim || static_cast<int>(d) == col_dim) continue;
      int64_t at = d < slice.size() ? slice[d] : 0;
      if (!Contains(l.indices[d], at)) in_slice = false;
    }
    if (in_slice) {
      present.push_back(&l);
    } else {
      grid.off_slice_ranks.push_back(l.rank);
    }
  }
  grid.row_breaks = Breaks(present, row_dim, grid.rows, grid.truncated);
  grid.col_breaks = Breaks(present, col_dim, grid.cols, grid.truncated);
  size_t nr = grid.row_breaks.size() - 1, nc = grid.col_breaks.size() - 1;
  grid.holders.assign(nr * nc, {});
  const engine::IndexSet whole{{0, 1}};
  for (const engine::RankLayout* l : present) {
    const engine::IndexSet& rows = row_dim >= 0 ? l->indices[static_cast<size_t>(row_dim)] : whole;
    const engine::IndexSet& cols = col_dim >= 0 ? l->indices[static_cast<size_t>(col_dim)] : whole;
    for (const engine::Interval& r : rows) {
      if (r.size() == 0) continue;
      auto [r0, r1] = SegmentsOf(grid.row_breaks, r.begin, r.end);
      for (const engine::Interval& c : cols) {
        if (c.size() == 0) continue;
        auto [c0, c1] = SegmentsOf(grid.col_breaks, c.begin, c.end);
        for (size_t i = r0; i < r1 && i < nr; ++i) {
          for (size_t j = c0; j < c1 && j < nc; ++j) {
            auto& h = grid.holders[i * nc + j];
            if (h.empty() || h.back() != static_cast<int32_t>(l->rank))
              h.push_back(static_cast<int32_t>(l->rank));
          }
        }
      }
    }
  }
  return grid;
}

std::vector<Holding> HoldersAt(const std::vector<engine::RankLayout>& layouts,
                               const std::vector<int64_t>& index) {
  std::vector<Holding> out;
  for (const engine::RankLayout& l : layouts) {
    Holding h{l.rank, {}};
    bool holds = l.indices.size() == index.size();
    for (size_t d = 0; d < index.size() && holds; ++d) {
      // Local index = position of the global index in the rank's storage order (intervals in order).
      int64_t pos = 0;
      bool found = false;
      for (const engine::Interval& iv : l.indices[d]) {
        if (index[d] >= iv.begin && index[d] < iv.end) {
          pos += index[d] - iv.begin;
          found = true;
          break;
        }
        pos += iv.size();
      }
      holds = found;
      h.local_index.push_back(pos);
    }
    if (holds) out.push_back(std::move(h));
  }
  return out;
}

}  // namespace shardscope::app::gui
