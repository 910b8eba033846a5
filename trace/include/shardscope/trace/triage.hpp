#pragma once
// Triage of a hung or diverged job from its Flight Recorder dumps (docs/triage.md): a wait-for graph
// over ranks and stuck collectives, followed across process groups to the ranks that wait for
// nobody; culprits are those root causes only, every rank blocked behind them is a victim.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardscope/trace/model.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::trace {

/// A named device mesh (--mesh dp=8,tp=8), row-major: rank = sum(coord[i] * stride[i]).
struct TriageMesh {
  std::vector<std::string> names;
  std::vector<int64_t> shape;
};

/// Parses "dp=8,tp=8" (names and extents, extents >= 1); throws Error(kInvalidInput) naming --mesh.
TriageMesh ParseTriageMesh(const std::string& text);

/// What issued a root's stuck collective, from a shardscope trace (or a DebugMode log) of a rank
/// of its group given beside the dumps: the redistribute and plan step, or the op, that ran it.
struct TriageIssuer {
  std::string source;  ///< "trace" or "debugmode"
  int64_t rank = -1;   ///< the rank whose record named it (-1: a DebugMode log, one rank's view)
  bool issued = true;  ///< false: that rank never issued it; the fields say what it was inside
  int64_t redistribute_id = -1;
  std::string tensor;    ///< the redistributed tensor's name
  std::string src, dst;  ///< the redistribute's placements, PyTorch notation ("S(0),R")
  int64_t step = -1;     ///< the plan step (0-based) that issued the collective, -1 when not known
  std::string step_src, step_dst, comm;  ///< that step's placements and collective kind
  std::string op;                        ///< the op it served or ran, "" when none
  int64_t program_step = -1;             ///< the op's program step (Op::step), -1 when not known
  int64_t line = -1;                     ///< a DebugMode log's line of the redistribute, -1 for a trace
  std::string text;                      ///< one sentence
};

/// Profiler traces (docs/triage.md, "Profiler traces"): a matched collective is delayed when its
/// last member started more than this after its first (AnalyzeKineto's waits, one clock for all).
inline constexpr int64_t kKinetoLateNs = 100'000;

/// How late one rank arrived at the matched collectives of profiler traces: over all its process
/// groups, or over one. Waits are AnalyzeKineto's (latest start of the collective - a member's start).
struct TriageLateness {
  std::string process_group;   ///< pg name; "" for every group together
  int64_t group_size = 0;      ///< ranks of that group (0 for every group together)
  int64_t collectives = 0;     ///< matched collectives the rank is a member of
  int64_t delayed = 0;         ///< of which delayed (spread over kKinetoLateNs)
  int64_t last = 0;            ///< delayed ones it arrived last at
  int64_t caused_wait_ns = 0;  ///< the other members' waits summed over those
  int64_t worst_wait_ns = 0;   ///< the longest of those waits (one member, one collective)
  int64_t own_wait_ns = 0;     ///< its own waits summed over its collectives
  /// The collective of the worst wait: its group, kind, seq (p2p: between its pair), profiler step.
  std::string worst_process_group, worst_kind;
  int64_t worst_seq = 0, worst_step = -1;
  bool worst_p2p = false;
};

/// A rank named a straggler in profiler traces, with its lateness overall and per process group
/// (the groups where it arrived last first, then by caused wait).
struct TriageStraggler {
  int64_t rank = 0;
  TriageLateness overall;
  std::vector<TriageLateness> groups;
};

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
  std::vector<int64_t> group;               ///< the process group's ranks, sorted ("" group: empty)
  std::optional<TriageIssuer> issuer;       ///< with a trace or DebugMode log beside the dumps
  std::vector<TriageStraggler> stragglers;  ///< class straggler from profiler traces: each culprit's figures
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
  int64_t dumps = 0;      ///< ranks with a dump
  int64_t entries = 0;    ///< entries read (profiler traces: collectives)
  bool profiler = false;  ///< read from PyTorch profiler (Kineto) traces: stragglers from arrivals
  /// The class of the result: the roots' common class, "multiple" when they differ, "" when clean.
  std::string Class() const;
};

/// Triage of a model read from Flight Recorder dumps (or a shardscope trace: its collectives in
/// order per rank and group, all completed). A model read from profiler traces (IsKinetoModel) is
/// voted on by the same rules and its stragglers are found from AnalyzeKineto's arrivals and waits
/// (docs/triage.md, "Profiler traces"). Pure, deterministic.
TriageResult TriageModel(const Model& model, const TriageMesh& mesh = {});

/// Reads and triages `paths`: dump directories or files are read one file at a time with `jobs`
/// threads (0 = every core), keeping only what triage needs; anything else is read with
/// ReadAnyTrace (profiler traces, every path of them, by ReadKineto as one job). Beside dumps, shardscope
/// traces are context, not evidence: they give the mesh and name what issued each root's stuck collective
/// (NameIssuers); without dumps they are the evidence. `context` adds models made elsewhere (a DebugMode log
/// imported by the CLI) as context. Throws Error(kInvalidInput) for a bad input, like the readers.
TriageResult TriagePaths(const std::vector<std::filesystem::path>& paths, const TriageMesh& mesh = {},
                         int jobs = 0, const std::vector<const Model*>& context = {});

struct FlightRecorderDump;
/// TriagePaths that also counts the dump files and bytes in `progress` (when not null) and hands
/// each rank's dump to `each` as it is read (on the reading thread, concurrently), once triage took
/// what it needs of it: a viewer can summarise the ranks read so far, and keep the dumps (move from
/// them) to make the model without reading them again (AssembleFlightRecorderModel). Same result.
TriageResult TriagePaths(const std::vector<std::filesystem::path>& paths, const TriageMesh& mesh, int jobs,
                         const std::vector<const Model*>& context, ReadProgress* progress,
                         const std::function<void(FlightRecorderDump&)>& each);

/// Names, for each root with a process group and seq, the redistribute step or op that issued its
/// stuck collective, from `models` (shardscope traces of some ranks). A Flight Recorder seq id
/// counts a process group's collectives from 1, so collective `seq` of the group is the seq-th
/// collective over the same ranks in a rank's trace (the trace must cover the job from the group's
/// first collective). The culprits' traces are tried first, then the group's other ranks. When
/// the rank's trace has fewer, the rank never issued it: the issuer is then the redistribute left
/// open at the trace's end, or the one after the rank's last collective on the group (issued false).
void NameIssuers(TriageResult& result, const std::vector<const Model*>& models);

/// One collective of a DebugMode log (one rank's view), in log order: the process group name it
/// was issued on (funcol's group_name, the name Flight Recorder dumps use) and what issued it
/// (source "debugmode", rank -1).
struct LoggedCollective {
  std::string group_name;
  TriageIssuer issuer;
};

/// Names the issuer of each root not named by a trace: collective `seq` of the root's process
/// group is the seq-th collective on that group_name in `log` (the log must cover the job from
/// the group's first collective); none when the log holds fewer.
void NameIssuersFromLog(TriageResult& result, const std::vector<LoggedCollective>& log);

/// The report: verdict, root cause, evidence, the wavefront per group with ranks as ranges.
std::string FormatTriageText(const TriageResult& result);
/// {"verdict", "culprits", "class", "process_group", "pg_desc", "seq", "victims", "wavefront",
///  "evidence", "roots", "notes", "world", "dumps", "entries"} (docs/triage.md).
nlohmann::json TriageJson(const TriageResult& result);

/// "0-6, 8, 10-12": ascending ranks as ranges.
std::string FormatRankRanges(const std::vector<int64_t>& sorted_ranks);

}  // namespace shardscope::trace
