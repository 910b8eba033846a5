#pragma once
// Triage of a hung or diverged job from its Flight Recorder dumps (docs/triage.md): a wait-for graph
// over ranks and stuck collectives, followed across process groups to the ranks that wait for
// nobody; culprits are those root causes only, every rank blocked behind them is a victim.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardscope/trace/model.hpp"

namespace shardscope::trace {

/// A named device mesh (--mesh dp=8,tp=8), row-major: rank = sum(coord[i] * stride[i]).
struct TriageMesh {
  std::vector<std::string> names;
  std::vector<int64_t> shape;
};

/// Parses "dp=8,tp=8" (names and extents, extents >= 1); throws Error(kInvalidInput) naming --mesh.
TriageMesh ParseTriageMesh(const std::string& text);

/// One root cause: the ranks at fault (empty for a network hang) and the collective they broke.
struct TriageRoot {
  std::string cls;                ///< not_enqueued, not_started, deadlock, size_mismatch, dtype_mismatch,
                                  ///< kind_mismatch, skipped_collective, extra_collective, p2p_mismatch,
                                  ///< dead_rank, network_hang, straggler
  std::vector<int64_t> culprits;  ///< sorted
  std::string process_group;      ///< pg name as in the dump ("" when unknown)
  std::string pg_desc;
  std::optional<int64_t> seq;  ///< collective_seq_id (p2p: p2p_seq_id) of the first bad collective
  std::string mesh_dim;        ///< mesh dims the group spans ("tp", "dp,tp"), "" without a mesh
  std::string summary;         ///< one sentence
  std::vector<std::string> evidence;
};

/// Ranks of one process group that share a state at the wavefront.
struct WavefrontState {
  std::string state;  ///< "started seq 142", "done through seq 141", "no dump", ...
  std::vector<int64_t> ranks;
};

struct WavefrontGroup {
  std::string name, desc, mesh_dim;
  int64_t size = 0;
  std::vector<WavefrontState> states;  ///< the least advanced first
};

struct TriageResult {
  std::string verdict = "clean";  ///< clean, hang, mismatch or straggler
  std::vector<TriageRoot> roots;
  std::vector<int64_t> culprits;  ///< union of the roots' culprits, sorted
  std::vector<int64_t> victims;   ///< ranks blocked behind a root (never a culprit), sorted
  std::vector<WavefrontGroup> wavefront;
  std::vector<std::string> notes;
  int64_t world = 0;
  int64_t dumps = 0;    ///< ranks with a dump
  int64_t entries = 0;  ///< entries read
  /// The class of the result: the roots' common class, "multiple" when they differ, "" when clean.
  std::string Class() const;
};

/// Triage of a model read from Flight Recorder dumps (or a shardscope trace: its collectives in
/// order per rank and group, all completed). Pure, deterministic.
TriageResult TriageModel(const Model& model, const TriageMesh& mesh = {});

/// Reads and triages `paths`: dump directories or files are read one file at a time with `jobs`
/// threads (0 = every core), keeping only what triage needs; anything else is read with
/// ReadAnyTrace. Throws Error(kInvalidInput) for a bad input, like the readers.
TriageResult TriagePaths(const std::vector<std::filesystem::path>& paths, const TriageMesh& mesh = {},
                         int jobs = 0);

/// The report: verdict, root cause, evidence, the wavefront per group with ranks as ranges.
std::string FormatTriageText(const TriageResult& result);
/// {"verdict", "culprits", "class", "process_group", "pg_desc", "seq", "victims", "wavefront",
///  "evidence", "roots", "notes", "world", "dumps", "entries"} (docs/triage.md).
nlohmann::json TriageJson(const TriageResult& result);

/// "0-6, 8, 10-12": ascending ranks as ranges.
std::string FormatRankRanges(const std::vector<int64_t>& sorted_ranks);

}  // namespace shardscope::trace
