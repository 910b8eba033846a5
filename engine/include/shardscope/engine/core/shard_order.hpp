#pragma once
// Shard order [PyTorch ShardOrder]: per tensor dim, the mesh dims that shard it in execution
// order. Default order rule, the "S(0)[1]S(0)[0]" notation, and the _StridedShard encoding.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/engine/core/mesh.hpp"
#include "shardscope/engine/core/placement.hpp"

namespace shardscope::engine {

/// One entry: `tensor_dim` is sharded by `mesh_dims`, in execution order (outermost first).
struct ShardOrderEntry {
  int tensor_dim = 0;
  std::vector<int> mesh_dims;
  bool operator==(const ShardOrderEntry&) const = default;
};
/// Sorted by tensor_dim, no empty entries (PyTorch's canonical form).
using ShardOrder = std::vector<ShardOrderEntry>;

/// PyTorch compute_default_shard_order: shard-like placements appended in mesh-dim order.
ShardOrder DefaultShardOrder(const Placements& placements);
/// PyTorch is_default_device_order: every entry strictly increasing.
bool IsDefaultOrder(const ShardOrder& order);
/// Parses "tensor_dim:mesh_dim,mesh_dim;..." e.g. "0:1,0;1:2". Throws Error(kInvalidInput).
ShardOrder ParseShardOrder(std::string_view text, std::string_view what);
/// Placements and the shard order their text spells.
struct PlacementsWithOrder {
  Placements placements;
  std::optional<ShardOrder> order;  ///< empty when the text has no "[k]" suffixes
};
/// How ParsePlacementsWithOrder reads "[k]" positions.
enum class OrderPositions {
  /// Positions are [0]..[n-1] over the n mesh dims sharding a tensor dim (what a user writes).
  kExact,
  /// Positions give only the relative order (a gap is allowed): newer PyTorch prints a plan's
  /// states with literal _StridedShards this way, counting mesh dims a _StridedShard source left
  /// in its tensor dim's list ("RS(0)[1]S(0)[2]" is order 0:1,2). docs/planning.md.
  kRelative,
};
/// The one parser of placement text (ParsePlacements' forms) that also reads PyTorch's "[k]"
/// shard order suffixes: "S(0)[1]S(0)[0]R" gives S(0),S(0),R with order 0:1,0. A _StridedShard
/// may go without its position, as PyTorch prints it ("S(0)[0]S(0)[1]_S(0, 3)"): it takes the
/// lowest position the others leave free (mesh dim order among several). Throws
/// Error(kInvalidInput).
PlacementsWithOrder ParsePlacementsWithOrder(std::string_view text, std::string_view what,
                                             OrderPositions positions = OrderPositions::kExact);
/// Formats as ParseShardOrder reads it; "" for an empty order.
std::string FormatShardOrder(const ShardOrder& order);
/// Checks `order` is consistent with `placements` (each Shard(d) mesh dim listed exactly once
/// under d, nothing else listed); throws Error(kInvalidInput) naming `what`.
void ValidateShardOrder(const ShardOrder& order, const Placements& placements, std::string_view what);
/// PyTorch DTensorSpec.format_shard_order_str: "S(0)[1]S(0)[0]R" ([k] = position in the order,
/// printed only when the tensor dim is sharded on more than one mesh dim).
std::string FormatShardOrderStr(const Placements& placements, const ShardOrder& order);

/// Inverse of FormatShardOrderStr: reads "S(0)[1]S(0)[0]R" (PyTorch's notation, the form traces
/// store) as the order of `placements`; the text's placements must equal them. Each shard-like
/// placement of a tensor dim sharded on several mesh dims carries its position [k] (one on a
/// single mesh dim may omit it). "" gives nullopt (no explicit order). Also reads the
/// "0:1,0" form written by traces before this notation. Throws Error(kInvalidInput) naming
/// `what`, the token and its column.
std::optional<ShardOrder> ParseShardOrderStr(std::string_view text, const Placements& placements,
                                             std::string_view what);

/// Mutable per-tensor-dim view of an order (PyTorch's _ShardOrder_to_dict), `ndim` entries.
std::vector<std::vector<int>> OrderToLists(const ShardOrder& order, int tensor_ndim);
/// Inverse of OrderToLists (drops empty lists).
ShardOrder ListsToOrder(const std::vector<std::vector<int>>& lists);

/// PyTorch _convert_shard_order_to_StridedShard: placements with _S(d, sf) where the order is
/// not left-to-right.
Placements ShardOrderToStridedPlacements(const Placements& placements, const ShardOrder& order,
                                         const Mesh& mesh);
/// PyTorch _maybe_convert_StridedShard_to_shard_order: plain Shards plus the decoded order, or
/// nullopt when the split factors are not decodable.
std::optional<std::pair<Placements, ShardOrder>> StridedPlacementsToShardOrder(const Placements& placements,
                                                                               const Mesh& mesh);

}  // namespace shardscope::engine
