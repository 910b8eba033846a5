#pragma once
// Private: indexes over a Model shared by check, diff and export. The collectives grouped by communicator
// (the set of ranks of the group), each member's calls in file order. Shared by the cross-rank check and the
// Chrome exporter so both pair the same calls across ranks.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shardscope/text.hpp"
#include "shardscope/trace/model.hpp"
#include "shardscope/trace/sums.hpp"

namespace shardscope::trace::detail {

using trace::SaturatingAdd;  // shardscope/trace/sums.hpp
using trace::SumBytes;

/// "[1, 2, 3]": integer lists in check and diff messages.
inline std::string FormatInts(const std::vector<int64_t>& v) { return "[" + JoinInts(v, ", ") + "]"; }
/// FormatInts for a rank list of any length in bounded text: up to kListedRanks in full, else the
/// first and last few, the count and a hash of the order, so that two different lists (also two
/// orders of one set) never read alike. A tiny trace may claim a group of 2^20 ranks: a message per
/// call must not cost megabytes.
std::string FormatRanks(const std::vector<int64_t>& v);
inline constexpr size_t kListedRanks = 16;

/// "rank 3", "ranks 1, 2": who a check or diff message names.
inline std::string RanksPhrase(const std::vector<int64_t>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

/// "S(0),R": placement lists joined with commas, as the CLI writes them.
inline std::string JoinComma(const std::vector<std::string>& v) { return Join(v, ","); }

/// "S(0)R": placements concatenated PyTorch style, as op texts show them.
inline std::string ConcatPlacements(const std::vector<std::string>& placements) {
  std::string out;
  for (const std::string& p : placements) out += p;
  return out;
}

/// "mm(x, w)": an op's name and input tensors ("-" for an absent optional input).
inline std::string OpCallText(const Op& op) {
  std::string out = op.name() + "(";
  for (size_t i = 0; i < op.inputs().size(); ++i)
    out += (i ? ", " : "") + (op.inputs()[i].tensor.empty() ? std::string("-") : op.inputs()[i].tensor.str());
  return out + ")";
}

/// "S(0)R, RS(1) => S(0)S(1)": candidate `index`'s input and output placements; "none" when out of range.
inline std::string OpStrategyText(const Op& op, int64_t index) {
  if (index < 0 || index >= static_cast<int64_t>(op.candidates().size())) return "none";
  const OpStrategy& s = op.candidates()[static_cast<size_t>(index)];
  std::string out;
  for (size_t i = 0; i < s.inputs.size(); ++i) out += (i ? ", " : "") + ConcatPlacements(s.inputs[i]);
  out += " => ";
  for (size_t i = 0; i < s.outputs.size(); ++i)
    out += (i ? ", " : "") + (s.outputs[i].empty() ? "-" : ConcatPlacements(s.outputs[i]));
  return out;
}

/// "y: S(0)S(1) [8, 4], -": each output's placements and global shape ("-" when not requested).
inline std::string OpOutputsText(const Op& op) {
  std::string out;
  for (size_t i = 0; i < op.outputs().size(); ++i) {
    const OpOutput& o = op.outputs()[i];
    out += (i ? ", " : "") +
           (o.requested ? o.tensor + ": " + ConcatPlacements(o.placements) + " " + FormatInts(o.global_shape)
                        : std::string("-"));
  }
  return out;
}

/// The calls of one group: `ranks` sorted; `calls[r]` exists for every member with a rank file
/// (possibly empty) and lists its collectives on this group in file order.
struct GroupCalls {
  std::vector<int64_t> ranks;
  std::map<int64_t, std::vector<const Collective*>> calls;
};

/// Every redistribute / op record in (id, rank) order, one list (each id's records one run); records of
/// one rank with one id keep their order in the model. From the model's id index when it is current.
std::vector<const RedistributeRecord*> RedistributesByIdRank(const Model& model);
std::vector<const OpRecord*> OpsByIdRank(const Model& model);

/// The records of every redistribute id, each in rank order (RedistributesByIdRank's runs).
std::map<int64_t, std::vector<const RedistributeRecord*>> RecordsById(const Model& model);

/// Every group that some rank recorded a collective on, ordered by its sorted rank list. Without
/// `with_flight_records`, the collectives that carry a flight record are left out (the check pairs
/// those per process group and sequence number instead, check_flight.hpp).
std::vector<GroupCalls> GroupCollectives(const Model& model, bool with_flight_records = true);

}  // namespace shardscope::trace::detail
