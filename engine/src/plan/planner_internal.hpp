#pragma once
// Helpers shared by the greedy and graph planners (private to engine/src).

#include <cstdint>
#include <string_view>

#include "shardscope/engine/core/spec.hpp"

namespace shardscope::engine::detail {

/// Throws Error(kUnsupported) when src and dst live on different meshes (PyTorch: "Cross device
/// mesh comm not supported yet!") and Error(kInvalidInput) for mismatched shapes or placement
/// lists that do not fit the mesh or the tensor. `who` prefixes the messages.
void CheckPlannable(const TensorSpec& src, const TensorSpec& dst, std::string_view who);

/// Extent this rank keeps when `spec`'s plain Shard on `mesh_dim` splits `extent` and the rank
/// sits at `index` along that dim: the spec's explicit size when it has one for the mesh dim,
/// else Shard.local_shard_size_and_offset under the spec's chunk rule. Throws
/// Error(kInvalidInput) when explicit sizes do not add up to `extent`.
int64_t ShardExtent(const TensorSpec& spec, int mesh_dim, int64_t extent, int64_t index);

}  // namespace shardscope::engine::detail
