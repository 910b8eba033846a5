#pragma once
// Search over a trace (issue 18 item 8): redistributes by tensor, placements, planned and recorded
// collective kinds; ops by name, tensors and placements. GL-free: the list panel draws the hits.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/trace/model.hpp"

namespace shardscope::app::gui {

/// One searchable thing of a trace: a redistribute id or an op id, with the line the list shows.
struct SearchEntry {
  enum class Kind { kRedistribute, kOp } kind = Kind::kRedistribute;
  int64_t id = 0;
  std::string text;  ///< the list line, e.g. "#3  w  S(0),R -> R,R  1 step"
  /// Lower-case words searched: tensor, placements, kinds, op name; for redistributes also the
  /// causing op and argument when the tensor has no name of its own (dt$2), and an imported
  /// record's verdict, reason, dump line ("line 10") and process groups ("pg 3").
  std::string haystack;
  bool failed = false;  ///< some rank failed or did not finish it
  /// An imported redistribute's verdict when not "same" ("differs", "corrupting_merge",
  /// "not_replayable"; the list marks it), else "".
  std::string verdict;
  std::vector<int64_t> ranks;  ///< ranks that ran a redistribute (ascending): a query term rN matches these
};

/// One entry per redistribute id (ascending) and then per op id (ascending), from the lowest rank's
/// record, ops that carry no sharding decision (IsPlainOp) left out; at most `limit` of each kind.
std::vector<SearchEntry> BuildSearchIndex(const trace::Model& model, size_t limit = 100000);

/// True when every whitespace-separated term of `query` occurs in the entry's haystack, ignoring
/// case; an empty query matches everything.
bool SearchMatches(const SearchEntry& entry, std::string_view query);

/// Positions in `entries` of the entries that match `query`, in order.
std::vector<size_t> Search(const std::vector<SearchEntry>& entries, std::string_view query);

}  // namespace shardscope::app::gui
