#pragma once
// Cross-rank consistency check of a multi-rank trace (`shardscope check`), after PyTorch Flight
// Recorder's analyzer: collectives are paired per group in call order and compared across ranks,
// then every redistribute is compared across ranks (plan, outcome, shard shapes, checksums).
// Pure functions over a Model; no I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardscope/trace/model.hpp"

namespace shardscope::trace {

/// The kinds of mismatch the check reports (Flight Recorder's names where one exists).
enum class MismatchClass {
  kMissingRankFile,     ///< a rank of the world left no trace file
  kMissingRanks,        ///< some members of a group never issued a collective the others did
  kCollectiveType,      ///< members issued different collective kinds at the same position
  kCollectiveSequence,  ///< same kind, but for a different redistribute or plan step
  kDtype,               ///< members moved different element types
  kSizeOrSyntax,        ///< byte counts inconsistent (pairwise or by the kind's rule), group order
  kAllToAllTotal,       ///< all_to_all: bytes sent by the group != bytes received by it
  kRedistribute,        ///< ranks ran the same redistribute id with different specs or plans
  kState,               ///< a redistribute finished on some ranks and failed/stopped/never began on others
  kShape,               ///< per-rank shard shapes or offsets inconsistent with the specs
  kChecksum,            ///< replicated shards with different checksums
  kOp,                  ///< a rank's op sequence diverges (missing op, name, strategy, outputs, outcome)
};

/// "missing_rank_file", "missing_ranks", "collective_type", "collective_sequence", "dtype",
/// "size_or_syntax", "all_to_all_total", "redistribute", "state", "shape", "checksum", "op".
std::string_view MismatchClassName(MismatchClass c);

/// One mismatch: its class, the culprit ranks (empty when the trace cannot tell), where it is,
/// and a one-line explanation naming the ranks and the first divergent event.
struct Mismatch {
  MismatchClass kind = MismatchClass::kState;
  std::vector<int64_t> culprits;
  std::optional<int64_t> redistribute_id;
  std::optional<int64_t> op_id;  ///< for op mismatches and an op's own collectives (halo exchanges)
  std::optional<int64_t> step;
  std::vector<int64_t> group;   ///< sorted members, for collective mismatches
  std::optional<int64_t> call;  ///< 0-based position of the collective in the group's sequence
  /// Flight Recorder dumps: the process group name and the first divergent collective_seq_id
  /// (p2p_seq_id for a send/recv); empty for shardscope's own traces.
  std::string process_group;
  std::optional<int64_t> seq_id;
  std::string message;
  bool operator==(const Mismatch&) const = default;
};

/// Every mismatch found, in trace order (ops by id, then redistributes by id and step), with what
/// was checked.
struct CheckResult {
  std::vector<Mismatch> mismatches;
  int64_t ranks = 0;          ///< rank files read
  int64_t world = 0;          ///< ranks of the run
  int64_t groups = 0;         ///< communicators seen
  int64_t collectives = 0;    ///< collective calls paired across all members
  int64_t redistributes = 0;  ///< redistribute ids checked
  int64_t ops = 0;            ///< op ids checked
  /// Flight Recorder dumps: all_to_all collectives whose per-peer split the dump does not record
  /// (only their totals were checked: Flight Recorder's "undecided"), and notes that are not
  /// mismatches (a rank's wrapped ring buffer no longer holds a collective).
  int64_t undecided = 0;
  std::vector<std::string> notes;
  bool Clean() const { return mismatches.empty(); }
};

/// Runs every check whose fields the model holds (any mix of kinds). Collectives that carry a
/// flight record follow Flight Recorder's rules: per process group, matched by collective_seq_id,
/// sends and recvs by order per pair of ranks (docs/flight-recorder.md). The others are paired per
/// group in call order; pairing within a group stops at its first mismatch (later calls would be
/// misaligned). Redistribute and op checks go on. Pure.
CheckResult CheckTrace(const Model& model);

/// The first `max_reports` mismatches, one line each, then a summary line. Pure, deterministic.
std::string FormatCheckText(const CheckResult& result, int64_t max_reports);

/// The same as JSON (all counts, the first `max_reports` mismatches). Pure.
nlohmann::json CheckJson(const CheckResult& result, int64_t max_reports);

}  // namespace shardscope::trace
