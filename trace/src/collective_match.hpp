#pragma once
// Private: indexes over a Model shared by check, diff and export. The collectives grouped by communicator
// (the set of ranks of the group), each member's calls in file order. Shared by the cross-rank check and the
// Chrome exporter so both pair the same calls across ranks.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shardscope/trace/model.hpp"

namespace shardscope::trace::detail {

/// "[1, 2, 3]": integer lists in check and diff messages.
inline std::string FormatInts(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

/// "S(0),R": placement lists joined with commas, as the CLI writes them.
inline std::string JoinComma(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
  return out;
}

/// The calls of one group: `ranks` sorted; `calls[r]` exists for every member with a rank file
/// (possibly empty) and lists its collectives on this group in file order.
struct GroupCalls {
  std::vector<int64_t> ranks;
  std::map<int64_t, std::vector<const Collective*>> calls;
};

/// The records of every redistribute id, each in rank order (one pass; Model::RedistributesWithId
/// scans the whole model per call).
std::map<int64_t, std::vector<const RedistributeRecord*>> RecordsById(const Model& model);

/// Every group that some rank recorded a collective on, ordered by its sorted rank list.
std::vector<GroupCalls> GroupCollectives(const Model& model);

}  // namespace shardscope::trace::detail
