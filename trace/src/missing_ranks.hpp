#pragma once
// Private: the warning both readers (rank-<R>.jsonl directories and Flight Recorder dumps) give
// when a run's ranks have no file, and the world a set of dumps spans.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardscope/trace/model.hpp"

namespace shardscope::trace::detail {

/// "warning: N of W ranks have no `what` (r, r, ...)", listing the first eight ranks in [0, world)
/// not in `present` (ascending, one entry per file), with N = world - present.size(); nullopt when
/// there are at least `world` files.
inline std::optional<Diagnostic> MissingRanks(const std::vector<int64_t>& present, int64_t world,
                                              const std::string& what) {
  if (static_cast<int64_t>(present.size()) >= world) return std::nullopt;
  std::string missing;
  int listed = 0;
  size_t next = 0;
  for (int64_t r = 0; r < world && listed <= 8; ++r) {
    if (next < present.size() && present[next] == r) {
      ++next;
      continue;
    }
    missing += (listed ? ", " : "") + (listed == 8 ? std::string("...") : std::to_string(r));
    ++listed;
  }
  return Diagnostic{"", 0,
                    "warning: " + std::to_string(world - static_cast<int64_t>(present.size())) + " of " +
                        std::to_string(world) + " ranks have no " + what + " (" + missing + ")"};
}

/// A set of Flight Recorder dumps spans ranks [0, max_rank]: every rank's header gets that world
/// as a 1-D mesh (dumps carry no mesh).
inline void SetDumpWorld(Model& model, int64_t max_rank) {
  model.world = max_rank + 1;
  for (RankTrace& rt : model.ranks) {
    rt.header.world = model.world;
    rt.header.mesh_shape = {model.world};
    rt.header.mesh_dim_names = {""};
  }
}

}  // namespace shardscope::trace::detail
