#pragma once
// Structural diff of two traces for CI (`shardscope diff`): redistributes are aligned by order and
// signature, then plans, collectives, bytes, shard shapes, predicted cost and (optionally) time are
// compared. Pure functions over two Models; no I/O.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardscope/trace/model.hpp"

namespace shardscope::trace {

/// What a difference is about; `--fail-on` selects the categories that fail the diff.
enum class DiffCategory {
  kPlan,         ///< planner, notation, plan steps, skipped merges, outcome, added/removed redistributes
  kCollectives,  ///< collective kinds and rank-side call counts
  kBytes,        ///< bytes per collective, per rank, dtype
  kShapes,       ///< per-rank local shard shapes and offsets
  kCost,         ///< predicted cost of the plan
  kOps,          ///< ops: added/removed, chosen strategy, placements, candidates, implicit redistributes
  kTime,         ///< measured duration (and op candidate costs) beyond the threshold
};

/// "plan", "collectives", "bytes", "shapes", "cost", "ops", "time".
std::string_view DiffCategoryName(DiffCategory category);

/// What to compare and what fails. Time is compared only when `time_threshold_pct` is set.
struct DiffOptions {
  std::set<DiffCategory> fail_on = {DiffCategory::kPlan,   DiffCategory::kCollectives, DiffCategory::kBytes,
                                    DiffCategory::kShapes, DiffCategory::kCost,        DiffCategory::kOps};
  std::optional<double> time_threshold_pct;  ///< a slowdown above this many percent is a difference
};

/// Parses a `--fail-on` list: comma-separated plan, collectives, bytes, shapes, cost, ops, time:N%
/// (or time:N), all (= every category but time). Throws Error(kInvalidInput) naming the bad token.
DiffOptions ParseFailOn(std::string_view text);

/// One difference, reported as one line. Ids are the redistribute ids (op ids when `op` is true)
/// in each trace (absent for an added or removed one, and for run-level differences).
struct Difference {
  DiffCategory category = DiffCategory::kPlan;
  bool op = false;  ///< about an op (ids are op ids), not a redistribute
  std::optional<int64_t> baseline_id, candidate_id;
  std::string subject;    ///< "weight [512, 256] S(0),S(1) -> R,S(1)" ("run" for run-level)
  std::string what;       ///< "notation", "rank 3 bytes", "added", ...
  std::string baseline;   ///< the baseline value as text ("" when absent)
  std::string candidate;  ///< the candidate value as text ("" when absent)
  bool failing = false;   ///< category is in fail_on
  bool operator==(const Difference&) const = default;
};

/// All differences in baseline order, plus alignment counts.
struct DiffResult {
  std::vector<Difference> differences;
  int64_t baseline_redistributes = 0;
  int64_t candidate_redistributes = 0;
  int64_t aligned = 0;
  int64_t baseline_ops = 0;  ///< distinct op ids of each trace
  int64_t candidate_ops = 0;
  int64_t aligned_ops = 0;
  DiffOptions options;
  /// True when a difference of a fail_on category was found.
  bool Failed() const;
};

/// Aligns and compares two traces. Redistributes are matched by signature (tensor, global shape,
/// src/dst placements and orders) in order (longest common subsequence); between two matched ones,
/// the rest are paired by their place in the program (tensor, global shape, the op name and
/// argument that caused them) in order, so a redistribute whose placements, planner or dtype
/// changed is compared (a "placements" difference when they changed) rather than removed and added;
/// what stays unmatched is "removed" (baseline only) or "added" (candidate only). Ops are aligned the same
/// way by name and input tensor names and compared first (differences of category ops; candidate costs as
/// time, only when a time threshold is set). Pure.
DiffResult DiffTraces(const Model& baseline, const Model& candidate, const DiffOptions& options);

/// One line per difference ("<category>  #<id> <subject>: <what>: <baseline> -> <candidate>"), then
/// a summary line. Deterministic. Pure.
std::string FormatDiffText(const DiffResult& result);

/// The same as JSON for tools (schema in docs/trace-tools.md). Pure.
nlohmann::json DiffJson(const DiffResult& result);

}  // namespace shardscope::trace
