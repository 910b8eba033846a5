#pragma once
// The one in-memory model of a trace, shared by the CLI (show, diff, check) and the GUI.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "shardscope/trace/event_list.hpp"
#include "shardscope/trace/event_ref.hpp"
#include "shardscope/trace/events.hpp"
#include "shardscope/trace/small_vec.hpp"

namespace shardscope::trace {

/// A recoverable problem found while reading (torn last line, unknown event type, missing rank
/// file, incomplete redistribute). Loading goes on; `line` is 1-based, 0 for the whole file.
struct Diagnostic {
  std::string file;  ///< file name (no directory), "" for the whole trace
  int64_t line = 0;
  std::string message;
  bool operator==(const Diagnostic&) const = default;
};

/// Everything one rank file holds, in file order. `events` stores each event in a column of its
/// type and yields Event values (event_list.hpp); the records of a Model refer to these stored
/// events (event_ref.hpp), so each event is stored once.
struct RankTrace {
  std::string file;  ///< file name (no directory)
  Header header;
  EventList events;
};

/// One executed transform on one rank: its begin and, if the rank got that far, its end.
struct StepRecord {
  EventRef<StepBegin> begin;
  EventRef<StepEnd> end;
};

/// One redistribute on one rank with the steps and collectives that referred to its id, in file
/// order. `end` is empty when the rank stopped before finishing it. The events are those stored in
/// the rank's RankTrace (a record built by hand owns copies instead; event_ref.hpp).
struct RedistributeRecord {
  int64_t rank = 0;
  EventRef<RedistributeBegin> begin;
  EventRef<RedistributeEnd> end;
  SmallVec<StepRecord> steps;  ///< the first held inline (small_vec.hpp)
  EventRefs<Collective> collectives;
};

/// One op on one rank: its event, the implicit redistributes it caused on this rank (ids of
/// redistribute_begin events with op_id == op.id, ascending) and the collectives it ran itself
/// (halo exchanges: redistribute_id -1, op_id == op.id), in file order. Like a redistribute's record,
/// it refers to the events stored in the rank's RankTrace (a record built by hand owns copies).
struct OpRecord {
  int64_t rank = 0;
  EventRef<Op> op;
  SmallVec<int64_t> redistribute_ids;  ///< one held inline (an op's usual count)
  EventRefs<Collective> collectives;
};

/// Id indexes of a Model, built once where it is loaded (Model::Reindex) so that no consumer
/// scans every record to find an id. Records are sorted by (rank, id); an index lists the positions
/// of Model::redistributes / Model::ops in (id, position) order, which is (id, rank) order. When
/// the records are in id order already (one rank, or one record per id and rank ascending with
/// it) the list is left empty and `*_in_id_order` set: the records are their own index. Positions
/// are 4 bytes (a model has fewer than 2^32 records; one with more is not indexed, its lookups scan).
struct ModelIndex {
  std::vector<uint32_t> redistributes;  ///< positions in (id, position) order, unless in id order
  std::vector<uint32_t> ops;            ///< same for ops
  bool redistributes_in_id_order = false;
  bool ops_in_id_order = false;
  size_t indexed_redistributes = 0;  ///< redistributes.size() when built (stale index -> scans)
  size_t indexed_ops = 0;            ///< ops.size() when built
  bool built = false;
};

/// The records of one kind (redistributes or ops) in (id, rank) order through a Model's index:
/// At(k) is the k-th. Valid while the model and its index are unchanged.
template <typename Record>
class IdOrder {
 public:
  IdOrder(const std::vector<Record>& records, const std::vector<uint32_t>& positions, bool in_id_order)
      : records_(records), positions_(positions), in_id_order_(in_id_order) {}
  size_t size() const { return in_id_order_ ? records_.size() : positions_.size(); }
  const Record& At(size_t k) const { return records_[in_id_order_ ? k : positions_[k]]; }

 private:
  const std::vector<Record>& records_;
  const std::vector<uint32_t>& positions_;
  bool in_id_order_;
};

/// A whole run: per-rank headers and events, redistributes grouped by (rank, id), sorted by rank
/// then id, ops sorted by (rank, id), and the diagnostics of loading.
struct Model {
  std::filesystem::path source;                   ///< the directory or file that was read
  int64_t world = 0;                              ///< from the headers (all equal)
  std::vector<RankTrace> ranks;                   ///< sorted by header.rank
  std::vector<RedistributeRecord> redistributes;  ///< sorted by (rank, begin.id)
  std::vector<OpRecord> ops;                      ///< sorted by (rank, op.id); empty without ops
  std::vector<Diagnostic> diagnostics;
  /// Built by the reader; a model assembled or edited by hand calls Reindex() (the lookups below
  /// fall back to scanning when the index does not match the record counts).
  ModelIndex index;

  Model() = default;
  Model(Model&&) noexcept = default;
  Model& operator=(Model&&) noexcept = default;
  ~Model() = default;
  /// A copy whose records refer to the copy's events (not to those of `other`).
  Model(const Model& other);
  Model& operator=(const Model& other);

  /// (Re)builds `index` from redistributes and ops, which must be sorted by (rank, id). O(n log n).
  void Reindex();
  /// The records in (id, rank) order through the index; std::nullopt when the index is stale or
  /// was not built (the caller sorts for itself).
  std::optional<IdOrder<RedistributeRecord>> RedistributesInIdOrder() const;
  std::optional<IdOrder<OpRecord>> OpsInIdOrder() const;

  /// The redistributes with the given id on every rank that ran it, in rank order.
  std::vector<const RedistributeRecord*> RedistributesWithId(int64_t id) const;
  /// Distinct redistribute ids over all ranks, ascending.
  std::vector<int64_t> RedistributeIds() const;
  /// The ops with the given id on every rank that ran it, in rank order.
  std::vector<const OpRecord*> OpsWithId(int64_t id) const;
  /// Distinct op ids over all ranks, ascending.
  std::vector<int64_t> OpIds() const;
  /// The op record of `rank` with the given id, or nullptr.
  const OpRecord* FindOp(int64_t rank, int64_t id) const;
  /// The redistribute record of `rank` with the given id, or nullptr.
  const RedistributeRecord* FindRedistribute(int64_t rank, int64_t id) const;
};

}  // namespace shardscope::trace
