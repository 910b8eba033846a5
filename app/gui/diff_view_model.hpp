#pragma once
// GL-free model of the GUI's diff mode: two traces' redistributes aligned exactly as
// `shardscope diff` aligns them (trace::DiffTraces), one row per aligned pair or unmatched
// redistribute, and every difference worded as the CLI prints it. No ImGui, no GL: unit-testable.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::app::gui {

/// What a diff row is: an aligned pair without or with differences, or a redistribute of one side.
enum class DiffRowKind { kSame, kChanged, kRemoved, kAdded };

/// "same", "changed", "removed" (baseline only), "added" (candidate only).
std::string_view DiffRowKindName(DiffRowKind kind);
/// The row's marker, readable without colour: "", "!=", "-", "+" (the CLI's -#id / +#id signs).
std::string_view DiffRowMarker(DiffRowKind kind);

/// One row of the aligned lists. A missing id is a gap on that side.
struct DiffRow {
  DiffRowKind kind = DiffRowKind::kSame;
  std::optional<int64_t> baseline_id, candidate_id;
  std::string baseline_text, candidate_text;  ///< "#3  w  S(0),R -> R,R  2 steps"; "" for a gap
  std::vector<size_t> differences;            ///< indices into DiffView::result.differences
  bool differs() const { return kind != DiffRowKind::kSame; }
};

/// The whole diff as the GUI shows it.
struct DiffView {
  trace::DiffResult result;             ///< trace::DiffTraces' output, unchanged
  std::vector<std::string> lines;       ///< lines[i]: result.differences[i] as `shardscope diff` prints it
  std::string summary;                  ///< the CLI's summary line
  std::vector<size_t> run_differences;  ///< differences of the run itself (world, mesh): no ids
  std::vector<DiffRow> rows;            ///< baseline order, unmatched ones where the CLI reports them
  std::string error;                    ///< "" unless the alignment could not be recovered from the result
};

/// Diffs `baseline` against `candidate` with trace::DiffTraces and lays the result out as rows.
/// The alignment is recovered from the result alone: unmatched redistributes are the differences
/// with one id, and the rest pair up in id order (DiffTraces aligns in order). Pure.
DiffView BuildDiffView(const trace::Model& baseline, const trace::Model& candidate,
                       const trace::DiffOptions& options = {});

/// One row of the side-by-side step tables of an aligned pair (optimized plans, index by index).
struct DiffStepRow {
  int64_t step = 0;
  bool in_baseline = false, in_candidate = false;
  bool differs = false;  ///< missing on one side, a different transform, or named by a difference
};

/// Compares the optimized plans of row `row` step by step: a step differs when one plan lacks it,
/// when its transform (mesh dims, src -> dst, comm, logical shape, flattening) differs, or when one
/// of the row's differences names it ("optimized plan step K", "bytes of step K ...", "... after
/// step K"). `baseline` / `candidate` are the sides' begin events (null for a gap). Pure.
std::vector<DiffStepRow> DiffSteps(const DiffView& view, const DiffRow& row,
                                   const trace::RedistributeBegin* baseline,
                                   const trace::RedistributeBegin* candidate);

/// The redistribute `id` of `model` on its lowest rank, or null.
const trace::RedistributeRecord* FirstRecord(const trace::Model& model, int64_t id);

}  // namespace shardscope::app::gui
