#pragma once
// JSON building blocks shared by the commands' --json output (schema: docs/cli.md).

#include <nlohmann/json.hpp>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/core/mesh.hpp"

namespace shardscope::app {

/// {"local_shape", "global_offset", "indices"} of one rank's layout; `indices` holds per tensor
/// dim a list of [begin, end) pairs in local storage order (empty list for an empty shard).
nlohmann::json LayoutJson(const engine::RankLayout& layout);
/// {"shape", "dim_names" (only when named), "flattened"} of a mesh.
nlohmann::json MeshJson(const engine::Mesh& mesh);

}  // namespace shardscope::app
