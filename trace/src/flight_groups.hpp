#pragma once
// Private: the collectives that carry a flight record (Flight Recorder's fields: process group,
// collective_seq_id, p2p order, sizes, dtypes, state), grouped per process group in a compact form:
// 16 bytes per entry, what entries repeat (profiling name, kind, sizes, dtypes, state) interned once.
// One grouping shared by check, show and diff, whatever importer produced the records; `check` of
// Flight Recorder dumps fills it one dump at a time without holding a Model.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::trace::detail {

/// One flight record as check, show and diff need it.
struct FlightEntry {
  int64_t seq = 0;     ///< collective_seq_id; p2p_seq_id for a send or recv
  uint32_t sig = 0;    ///< index into FlightTable::Sig: profiling name, kind, sizes, dtypes
  uint32_t state = 0;  ///< index into FlightTable::State
};

/// What many entries share, interned once per table (equal values, one index).
struct FlightSig {
  IStr profiling_name;
  IStr kind;  ///< the collective's kind ("all_reduce", "send", ...)
  SharedVec<std::vector<int64_t>> input_sizes, output_sizes;
  SharedVec<std::string> input_dtypes, output_dtypes;
};

/// One member rank of a process group: what its file holds of the group.
struct FlightMember {
  bool has_file = false;            ///< the rank has a file (a dump, a rank trace)
  bool wrapped = false;             ///< its oldest flight record (any group) is not record 0
  std::vector<FlightEntry> by_seq;  ///< collectives, ascending seq, one per seq (a repeat keeps the older)
  std::vector<FlightEntry> p2p;     ///< sends and recvs in record order
  /// The entry of collective_seq_id `seq`, or nullptr.
  const FlightEntry* Find(int64_t seq) const;
};

/// A process group as the flight records name it: pg name and description, its global ranks in the
/// group's order (those of the first record: lowest rank order, then record order), and every
/// member (with or without a file).
struct FlightGroup {
  std::string name, desc;
  std::vector<int64_t> ranks;
  std::map<int64_t, FlightMember> members;
};

/// Key of a process group: its name and its sorted member set.
using FlightGroupKey = std::pair<std::string, std::vector<int64_t>>;

/// The flight records of a run by process group. Filled by AddRank (from any thread), then Finish;
/// read-only after that.
class FlightTable {
 public:
  FlightTable();
  FlightTable(FlightTable&&) noexcept;
  FlightTable& operator=(FlightTable&&) noexcept;
  ~FlightTable();

  /// Adds the collectives of `rt` that carry a flight record; `order` is the trace's place among
  /// the run's (its index in the Model, or its rank), which decides whose record names a group.
  /// Thread-safe; memory grows with the entries, not with `rt`, which the caller may then drop.
  void AddRank(int64_t order, const RankTrace& rt);
  /// Completes the groups once every rank was added: every rank of a group is a member, with
  /// has_file when it is in `with_file`.
  void Finish(const std::set<int64_t>& with_file);

  const std::map<FlightGroupKey, FlightGroup>& Groups() const { return groups_; }
  /// Signature `i` of an entry (FlightEntry::sig) and state `i` (FlightEntry::state).
  const FlightSig& Sig(uint32_t i) const;
  const IStr& State(uint32_t i) const;
  /// Every member rank of every group (a rank covered by a group's rules), ascending.
  const std::set<int64_t>& Members() const { return members_; }
  bool Empty() const { return groups_.empty(); }

 private:
  struct Impl;
  uint32_t InternSig(FlightSig sig);  // under the lock
  std::unique_ptr<Impl> impl_;        // the lock, the interned signatures and states, their lookups
  std::map<FlightGroupKey, FlightGroup> groups_;
  std::set<int64_t> members_;
};

/// Every collective of `model` that carries a flight record, by process group. Empty when no
/// collective carries one.
FlightTable GroupFlightRecords(const Model& model);

/// The flight records' part of DiffTraces: per process group (name and rank set) and
/// collective_seq_id, a collective only in one trace (added/removed, category collectives), a
/// different profiling name or rank's state (collectives), different sizes or dtypes (bytes).
/// Ids of the differences are the seq ids. Appends to `out`; adds nothing when neither model has a
/// flight record. Pure.
void DiffFlightRecords(const Model& baseline, const Model& candidate, const DiffOptions& options,
                       std::vector<Difference>& out);

}  // namespace shardscope::trace::detail
