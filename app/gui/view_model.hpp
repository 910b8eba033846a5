#pragma once
// GL-free view model of the GUI: what the panels show, computed from trace::Model and the
// engine's layout math (never re-derived here). No ImGui, no GL: unit-testable and shared by every
// panel's prepare step.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/core/mesh.hpp"
#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::app::gui {

/// "1.50 KiB", "3.00 MiB", "12 B" (binary units, UI-SKETCH conventions).
std::string FormatBytes(double bytes);
/// "850 ns", "12.1 us", "3.40 ms", "1.20 s".
std::string FormatTimeNs(double ns);
/// "[2, 4, 8]".
std::string FormatInts(const std::vector<int64_t>& values);

/// Mesh dims as every panel names them: "dp,tp" when the mesh names its dims, else "0,1".
std::string FormatMeshDims(const std::vector<int64_t>& dims, const engine::Mesh& mesh);

/// The engine mesh described by a trace header (dim names dropped unless all present and unique).
/// Throws shardscope::Error(kInvalidInput) for an invalid shape.
engine::Mesh MeshFromHeader(const trace::Header& header);

/// Converts one traced plan step to the engine's Transform (placements parsed, `what` in errors).
engine::Transform TransformFromStep(const trace::PlanStep& step, const std::string& what);

/// Measured figures of one executed step over every rank that recorded it.
struct StepMeasure {
  double predicted_us = 0.0;
  std::optional<double> measured_max_ns;  ///< slowest rank's step end - begin
  int64_t slowest_rank = -1;              ///< the rank measured_max_ns comes from (lowest on a tie)
  int64_t bytes_sent = 0;                 ///< sum over ranks and collectives of the step
  int64_t collectives = 0;                ///< collective events of the step over ranks
};

/// One redistribute id across ranks, with the distribution state before every step.
struct RedistributeView {
  int64_t id = -1;
  const trace::RedistributeRecord* first = nullptr;  ///< lowest rank's record (descriptive fields)
  std::vector<const trace::RedistributeRecord*> per_rank;
  engine::Mesh mesh;
  engine::Shape shape;
  /// states[k] = placements and order before optimized step k; states.back() = after the last.
  std::vector<engine::PlanState> states;
  std::vector<StepMeasure> steps;  ///< aligned with first->begin->optimized_plan
  std::string error;               ///< why states could not be built ("" when fine)
  bool ok() const { return first != nullptr && error.empty(); }
  int64_t num_steps() const {
    return first ? static_cast<int64_t>(first->begin->optimized_plan().size()) : 0;
  }
};

/// Builds the view of redistribute `id` (an empty view with error set when the model lacks it).
/// Placement or order strings the engine rejects end up in `error`, never thrown.
RedistributeView BuildRedistributeView(const trace::Model& model, int64_t id);

/// A 2-d projection of a distributed tensor: the plane (row_dim, col_dim) at fixed indices of the
/// other dims, partitioned along every shard boundary into segments; each cell lists its holders.
struct LayoutGrid {
  int row_dim = -1;  ///< -1 for a 0-d tensor (one row)
  int col_dim = -1;  ///< -1 when the tensor has < 2 dims (one column)
  int64_t rows = 1, cols = 1;
  std::vector<int64_t> row_breaks;            ///< ascending, from 0 to rows
  std::vector<int64_t> col_breaks;            ///< ascending, from 0 to cols
  std::vector<std::vector<int32_t>> holders;  ///< per cell (row segment major), ranks ascending
  std::vector<int64_t> empty_ranks;           ///< ranks whose shard has no element
  std::vector<int64_t> off_slice_ranks;       ///< non-empty ranks holding nothing in this slice
  bool partial = false;                       ///< some mesh dim is Partial: values are pending reductions
  std::string partial_text;                   ///< e.g. "P(sum) on mesh dim 1"
  bool truncated = false;                     ///< too many segments: coarse cells
  int64_t num_row_segments() const { return static_cast<int64_t>(row_breaks.size()) - 1; }
  int64_t num_col_segments() const { return static_cast<int64_t>(col_breaks.size()) - 1; }
};

/// Engine layouts of every rank for a state of a redistribute view (ComputeLayouts).
std::vector<engine::RankLayout> LayoutsFor(const RedistributeView& view, const engine::PlanState& state);

/// Projects `layouts` (from LayoutsFor) onto (row_dim, col_dim); `slice[d]` fixes every other dim d.
LayoutGrid ProjectLayout(const std::vector<engine::RankLayout>& layouts, const engine::PlanState& state,
                         const engine::Shape& shape, int row_dim, int col_dim,
                         const std::vector<int64_t>& slice);

/// One holder of a global element: the rank and the element's index in its local shard.
struct Holding {
  int64_t rank = 0;
  std::vector<int64_t> local_index;
};
/// Every rank holding global element `index` (one entry per tensor dim), ascending rank.
std::vector<Holding> HoldersAt(const std::vector<engine::RankLayout>& layouts,
                               const std::vector<int64_t>& index);

}  // namespace shardscope::app::gui
