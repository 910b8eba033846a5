#pragma once
// The trace an imported DebugMode dump writes: the replay's events rearranged in dump order.

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "debugmode_ops.hpp"
#include "shardscope/program/debugmode_import.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::program {

using Where = std::pair<int, int64_t>;  // (run, id in that run); run -1 when not run

// One replay run's events per rank: redistribute id -> its events, op id -> its op event.
struct RunEvents {
  std::vector<std::map<int64_t, std::vector<trace::Event>>> redistributes;
  std::vector<std::map<int64_t, trace::Op>> ops;
};

/// Splits a replay run's trace by rank into redistributes (by id) and op events (by id).
RunEvents SplitEvents(trace::Model& model, int64_t ranks);

/// Writes one rank file per rank of options.mesh to options.trace_dir: the dump's redistributes
/// at their lines and its ops after their last redistribute, on one continuous clock per rank.
/// A replayed redistribute (replay_of[i] = its run and id) is written with its replayed events
/// and PyTorch's recorded plan; a computed op (op_of[j]) as its replayed op event renamed to the
/// dump's tensors; the others as records of what the dump shows. Fills trace_id of every
/// redistribute and op. Throws Error(kInvalidInput) when a file cannot be written.
void WriteImportTrace(ImportResult& result, const ImportOptions& options,
                      const std::vector<const ComputableOp*>& ops, const std::vector<RunEvents>& runs,
                      const std::vector<Where>& replay_of, const std::vector<Where>& op_of);

}  // namespace shardscope::program
