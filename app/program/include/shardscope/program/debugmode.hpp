#pragma once
// PyTorch DebugMode dumps (torch.utils._debug_mode): the text of DebugMode.debug_string() and the
// JSON of DebugMode.save_logs, read into plain data: the DTensor ops in order, every redistribute
// with its placements, PyTorch's plan notation and the collectives recorded under it, and module
// boundaries. Formats: docs/import.md and the reference's section 1. One dump is one rank's view.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/engine/core/placement.hpp"
#include "shardscope/engine/core/shard_order.hpp"

namespace shardscope::program {

/// A tensor argument as printed: "dt$0: f32[8, 8]| S(0)" (a DTensor, global shape) or
/// "t: f32[1, 32]" (a local tensor, local shape).
struct DumpTensor {
  std::string prefix;          ///< "dt", "t" or "ft"
  std::string id;              ///< "$0" when the dump recorded ids, else ""
  std::string dtype;           ///< as printed: "f32", "bf16", ...
  std::vector<int64_t> shape;  ///< global for "dt", local otherwise
  bool has_placements = false;
  std::string placements_text;  ///< as printed after "| " (or inside DM(..)[..]), "" when none
  engine::Placements placements;
  std::optional<engine::ShardOrder> order;  ///< from "[k]" suffixes; empty for the default order
  std::vector<int64_t> printed_mesh;        ///< old form "DM(8)[S(0)]": the mesh shape printed
  bool IsDTensor() const { return prefix == "dt"; }
};

/// A functional collective recorded under a redistribute.
struct DumpCollective {
  int64_t line = 0;         ///< 1-based line (save_logs: call number)
  std::string kind;         ///< "all_gather", "reduce_scatter", "all_reduce", "all_to_all"
  int64_t group_size = -1;  ///< -1 when the call does not carry it (all_reduce, shard_dim_alltoall)
  std::string group_name;
};

/// One redistribute: an outer `redistribute_input(ARG, SRC -> DST)` merged with the inner
/// per-tensor line(s) and the collectives nested under them.
struct DumpRedistribute {
  int64_t line = 0;                   ///< 1-based line of the first line of the record
  int64_t op = -1;                    ///< index into DebugModeDump::ops of the op it serves, -1 when none
  int64_t arg_index = -1;             ///< the op argument it placed (flattened args), -1 when not recorded
  int64_t input = -1;                 ///< that argument as an index into DumpOp::inputs, -1 when unknown
  bool explicit_call = false;         ///< a user's .redistribute() / .full_tensor() ("[explicit]")
  std::vector<int64_t> global_shape;  ///< meaningful when has_global_shape ([] is a 0-d tensor)
  bool has_global_shape = false;
  bool global_shape_inferred = false;  ///< derived from the local shape assuming even shards
  std::string dtype;
  engine::Placements src, dst;
  std::optional<engine::ShardOrder> src_order, dst_order;
  std::string src_text, dst_text;            ///< PyTorch's concatenated forms ("S(0)[0]S(0)[1]")
  std::optional<std::string> pytorch_trace;  ///< the "trace:" notation, P normalized to P(sum)
  std::vector<int64_t> local_shape;          ///< the inner line's local tensor, when has_local_shape
  bool has_local_shape = false;
  std::vector<DumpCollective> collectives;
  std::string module;  ///< innermost [nn.Mod] around it, "" when none
};

/// One op on DTensors (a line whose arguments include a "dt" tensor).
struct DumpOp {
  int64_t line = 0;
  int depth = 0;     ///< call depth (indentation)
  std::string name;  ///< "aten::mm", "torch.mm", "<method 'sum' of ...>"
  std::string args;  ///< the non-tensor arguments as printed, joined by ", "
  /// The top-level arguments as printed, unflattened (tensors and lists included): positional
  /// ones in order, keyword ones ("alpha=2") apart. Used to map an op onto shardscope's.
  std::vector<std::string> positional_args, keyword_args;
  std::vector<DumpTensor> inputs;              ///< every tensor argument (flattened lists), in order
  std::vector<DumpTensor> outputs;             ///< the "  ->  " outputs, when shown
  std::vector<std::string> output_placements;  ///< "-> output:" placements, when shown
  std::vector<int64_t> redistributes;          ///< indexes into DebugModeDump::redistributes
  std::string module;
};

struct DumpWarning {
  int64_t line = 0;
  std::string message;
};

/// Everything read from one dump.
struct DebugModeDump {
  std::string format;  ///< "text" or "save_logs"
  int64_t lines = 0;   ///< lines (text) or calls (save_logs) read
  std::vector<DumpOp> ops;
  std::vector<DumpRedistribute> redistributes;
  std::vector<DumpWarning> warnings;
  /// The mesh shape an old dump printed ("DM(8)"), with its line; empty when none was printed.
  std::vector<int64_t> printed_mesh;
  int64_t printed_mesh_line = 0;
};

/// Parses one tensor argument ("dt$0: f32[8, 8]| S(0)"); nullopt when `text` is not a tensor.
/// Throws Error(kInvalidInput) for a tensor whose placements do not parse.
std::optional<DumpTensor> ParseDumpTensor(std::string_view text);

/// Parses PyTorch's plan notation "S(0)[0]S(0)[1]->S(0)R-->RR" into its states and, per
/// transition, whether it was flattened ("-->"). Throws Error(kInvalidInput) naming the state.
struct NotationPlan {
  std::vector<engine::PlacementsWithOrder> states;
  std::vector<bool> flattened;  ///< states.size() - 1 entries
};
NotationPlan ParseNotation(std::string_view notation, std::string_view what);

/// Reads a dump, detecting the format by content (a JSON object with "logs" is save_logs). A line
/// or call it does not understand becomes a warning; nothing in the dump is fatal except no DTensor
/// content at all, which throws Error(kInvalidInput). Never crashes on hostile input.
DebugModeDump ParseDebugModeDump(std::string_view text);

}  // namespace shardscope::program
