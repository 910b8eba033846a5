#pragma once
// `shardscope import debugmode`: re-plans every redistribute of a PyTorch DebugMode dump with
// shardscope's planner, compares the plan with the one PyTorch recorded (a verdict per
// redistribute), replays the redistributes on the local backend with verification, and writes an
// ordinary shardscope trace (ops as opaque op events, PyTorch's plan beside shardscope's).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/engine/core/mesh.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/program/debugmode.hpp"
#include "shardscope/trace/import_verdict.hpp"

namespace shardscope::program {

struct ImportOptions {
  engine::Mesh mesh;                ///< the job's device mesh (the dump does not print it)
  std::filesystem::path trace_dir;  ///< where to write the trace; empty: no trace, no replay
  engine::PlanOptions plan;         ///< planner knobs for shardscope's plans
  /// Redistributes of tensors with more elements than this are planned and judged but not
  /// replayed (a warning says so); the distinct replayed tensors hold at most 4x this in total.
  int64_t max_replay_elements = int64_t{1} << 24;
};

/// What shardscope made of one recorded redistribute (aligned with DebugModeDump::redistributes).
struct ImportedRedistribute {
  std::string shardscope_notation;  ///< shardscope's plan notation, "" when it could not plan
  std::map<std::string, int> shardscope_collectives;  ///< kind -> collectives shardscope's plan runs
  /// kSame, kDiffers, kCorruptingMerge or kNotReplayable.
  trace::ImportVerdict verdict = trace::ImportVerdict::kNotReplayable;
  std::string reason;     ///< one line; "" for same
  bool replayed = false;  ///< ran on the local backend (and matched the definition)
  double seconds = 0;     ///< the replay's wall time (slowest rank), 0 when not replayed
  int64_t trace_id = -1;  ///< its redistribute id in the written trace, -1 when not written
};

/// What shardscope made of one recorded op (aligned with DebugModeDump::ops). An op whose aten
/// name and arguments map exactly onto one of shardscope's (docs/import.md) is propagated with
/// the placements its inputs had when PyTorch ran it (after the recorded redistributes) and,
/// with a trace, computed on the local backend and verified against the definition; any other
/// op is opaque (recorded placements in and out, nothing computed).
struct ImportedOp {
  std::string shardscope_op;  ///< "mm", "add", ...; "" when opaque
  /// kSame: shardscope's strategy keeps the inputs as PyTorch placed them and gives the
  /// recorded outputs' placements (where the dump shows them); kDiffers: it needs other input
  /// placements or gives other outputs (the reason shows both); kNotComputed: shardscope could
  /// not propagate or run it (the reason says why); kOpaque: not one of shardscope's ops.
  trace::ImportVerdict verdict = trace::ImportVerdict::kOpaque;
  /// One line: why not same; for an opaque op with a known name, why it is not shardscope's; for
  /// one left out of the replay (--max-replay-elements), "not computed: ..."; else "".
  std::string reason;
  std::vector<std::string> inputs;              ///< the inputs' placements as it ran, PyTorch's text form
  std::vector<std::string> recorded_outputs;    ///< PyTorch's output placements, where shown
  std::vector<std::string> shardscope_outputs;  ///< shardscope's output placements (requested ones)
  bool computed = false;                        ///< ran on the local backend (and matched the definition)
  int64_t trace_id = -1;                        ///< its op id in the written trace, -1 when not written
};

struct ImportResult {
  DebugModeDump dump;
  std::vector<ImportedRedistribute> redistributes;
  std::vector<ImportedOp> ops;        ///< aligned with dump.ops
  std::vector<DumpWarning> warnings;  ///< the reader's and the importer's, by line
  int64_t replays = 0;                ///< distinct redistributes actually run
  int64_t op_runs = 0;                ///< distinct ops actually computed
  double replay_seconds = 0;          ///< wall time of the replay run(s)
};

/// Imports a dump's text. Throws Error(kInvalidInput) for a dump without DTensor content and for
/// a mesh that cannot fit it (a placement count other than the mesh's dims, a recorded
/// collective whose group size is not the size of the mesh dims its plan step acts on, a printed
/// "DM(...)" mesh other than `mesh`); the message names the dump line and a mesh that would fit.
/// Replay failures are verdicts (not_replayable), not errors.
ImportResult ImportDebugMode(std::string_view text, const ImportOptions& options);

}  // namespace shardscope::program
