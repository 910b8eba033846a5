#pragma once
// Private: the collectives that carry a flight record (Flight Recorder's fields: process group,
// collective_seq_id, p2p order, sizes, dtypes, state), grouped per process group. One grouping
// shared by check, show and diff, whatever importer produced the records.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::trace::detail {

/// One member rank of a process group: what its file holds of the group.
struct FlightMember {
  bool has_file = false;  ///< the rank has a file in the model
  bool wrapped = false;   ///< its oldest flight record (any group) is not record 0
  std::map<int64_t, const Collective*>
      by_seq;                          ///< collectives by collective_seq_id (a repeat keeps the older)
  std::vector<const Collective*> p2p;  ///< sends and recvs in record order
};

/// A process group as the flight records name it: pg name and description, its global ranks in the
/// group's order (the first record's), and every member (with or without a file).
struct FlightGroup {
  std::string name, desc;
  std::vector<int64_t> ranks;
  std::map<int64_t, FlightMember> members;
};

/// Key of a process group: its name and its sorted member set.
using FlightGroupKey = std::pair<std::string, std::vector<int64_t>>;

/// Every collective of `model` that carries a flight record, by process group; pointers into the
/// model's stored events (valid while it is not changed). Empty when no collective carries one.
std::map<FlightGroupKey, FlightGroup> GroupFlightRecords(const Model& model);

/// The flight records' part of DiffTraces: per process group (name and rank set) and
/// collective_seq_id, a collective only in one trace (added/removed, category collectives), a
/// different profiling name or rank's state (collectives), different sizes or dtypes (bytes).
/// Ids of the differences are the seq ids. Appends to `out`; adds nothing when neither model has a
/// flight record. Pure.
void DiffFlightRecords(const Model& baseline, const Model& candidate, const DiffOptions& options,
                       std::vector<Difference>& out);

}  // namespace shardscope::trace::detail
