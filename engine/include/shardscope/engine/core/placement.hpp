#pragma once
// Placements [PyTorch Shard / _StridedShard / Replicate / Partial] and their text forms, which
// are PyTorch's str(): "S(0)", "_S(0, 2)", "R", "P(sum)".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::engine {

enum class PlacementKind { kReplicate, kShard, kStridedShard, kPartial };
enum class ReduceOp { kSum, kAvg, kMin, kMax, kProduct };

/// "sum", "avg", "min", "max", "product".
std::string_view ReduceOpName(ReduceOp op);
/// Parses a reduce op name; nullopt when unknown.
std::optional<ReduceOp> ParseReduceOp(std::string_view name);

/// One mesh dim's placement. Plain value type.
struct Placement {
  PlacementKind kind = PlacementKind::kReplicate;
  int dim = 0;                   ///< tensor dim for Shard / StridedShard (may be negative until normalized)
  int64_t split_factor = 1;      ///< StridedShard only
  ReduceOp op = ReduceOp::kSum;  ///< Partial only

  static Placement Replicate() { return {}; }
  static Placement Shard(int d) { return {PlacementKind::kShard, d, 1, ReduceOp::kSum}; }
  static Placement StridedShard(int d, int64_t sf) {
    return {PlacementKind::kStridedShard, d, sf, ReduceOp::kSum};
  }
  static Placement Partial(ReduceOp op = ReduceOp::kSum) { return {PlacementKind::kPartial, 0, 1, op}; }

  bool IsReplicate() const { return kind == PlacementKind::kReplicate; }
  /// Plain Shard only (PyTorch's is_shard(); _StridedShard is not a Shard in R-new).
  bool IsShard() const { return kind == PlacementKind::kShard; }
  bool IsShard(int d) const { return IsShard() && dim == d; }
  bool IsStridedShard() const { return kind == PlacementKind::kStridedShard; }
  /// Shard or StridedShard (PyTorch's _is_shard_like).
  bool IsShardLike() const { return IsShard() || IsStridedShard(); }
  bool IsPartial() const { return kind == PlacementKind::kPartial; }
  /// Partial(sum) or Partial(avg): linear in the pending values, so linear ops may pass it through
  /// and merged reductions may run one sum for both (avg is divided out afterwards).
  bool IsLinearPartial() const { return IsPartial() && (op == ReduceOp::kSum || op == ReduceOp::kAvg); }

  /// PyTorch's str(): S(0), _S(0, 2), R, P(sum).
  std::string ToString() const;
  bool operator==(const Placement& other) const;
};

using Placements = std::vector<Placement>;

/// Parses one placement ("S(0)", "S(-1)", "_S(0, 2)", "_S(0,2)", "R", "P", "P(avg)", also the
/// long forms "Shard(0)", "Replicate()", "Partial(sum)"). `what` names the source in errors,
/// e.g. "--from". Throws Error(kInvalidInput) naming the bad token.
Placement ParsePlacement(std::string_view text, std::string_view what);
/// Parses one placement per mesh dim: a comma-separated list (commas inside parentheses belong to
/// the placement), PyTorch's concatenated form "S(0)RP(sum)", its tuple repr "(Shard(dim=0),
/// Replicate())" or a bracket list "[S(0), R]". "[k]" shard order suffixes ("S(0)[1]S(0)[0]")
/// are accepted when they spell the default order; ParsePlacementsWithOrder (shard_order.hpp)
/// returns any order. Throws Error(kInvalidInput) naming the bad token.
Placements ParsePlacements(std::string_view text, std::string_view what);
/// Joins with "," e.g. "S(0),R,P(sum)".
std::string FormatPlacements(const Placements& placements);
/// Concatenated PyTorch style without separators, e.g. "S(0)RP(sum)" (no order suffixes).
std::string ConcatPlacements(const Placements& placements);

/// Normalizes negative Shard dims against `tensor_ndim` and checks every dim is in range;
/// throws Error(kInvalidInput) like "--from: 'S(3)' shards dim 3 but the tensor has 2 dims".
void NormalizePlacements(Placements& placements, int tensor_ndim, std::string_view what);

}  // namespace shardscope::engine
