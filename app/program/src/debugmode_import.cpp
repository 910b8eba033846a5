// Judging a DebugMode dump against shardscope: the mesh check, shardscope's plan for every
// recorded redistribute and the verdict; the replay and the trace are in debugmode_replay.cpp.
#include "shardscope/program/debugmode_import.hpp"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "debugmode_internal.hpp"
#include "debugmode_ops.hpp"
#include "debugmode_replay.hpp"
#include "shardscope/engine/core/spec.hpp"
#include "shardscope/error.hpp"

namespace shardscope::program {
namespace {

std::string At(int64_t line) { return "line " + std::to_string(line) + ": "; }

std::string MeshText(const engine::Shape& shape) { return engine::FormatShape(shape); }

// One step of a recorded plan that runs a collective: the mesh dims it acts on and its kind.
struct RecordedStep {
  std::vector<int> mesh_dims;
  engine::CommKind comm = engine::CommKind::kLocal;
  std::string text;  ///< "S(0)->R" for messages
};

std::vector<RecordedStep> RecordedSteps(const DumpRedistribute& r) {
  std::vector<RecordedStep> steps;
  if (r.pytorch_trace) {
    NotationPlan plan = ParseNotation(*r.pytorch_trace, "trace");
    for (size_t i = 0; i + 1 < plan.states.size(); ++i) {
      const auto& a = plan.states[i].placements;
      const auto& b = plan.states[i + 1].placements;
      RecordedStep s;
      for (size_t md = 0; md < a.size() && md < b.size(); ++md) {
        if (a[md] == b[md]) continue;
        s.mesh_dims.push_back(static_cast<int>(md));
        s.comm = engine::CommKindOf(a[md], b[md]);
        s.text = a[md].ToString() + "->" + b[md].ToString();
      }
      if (!s.mesh_dims.empty() && s.comm != engine::CommKind::kLocal) steps.push_back(std::move(s));
    }
    return steps;
  }
  // Old dumps without "trace:": one step per mesh dim whose placement changes.
  for (size_t md = 0; md < r.src.size() && md < r.dst.size(); ++md) {
    if (r.src[md] == r.dst[md]) continue;
    engine::CommKind comm = engine::CommKindOf(r.src[md], r.dst[md]);
    if (comm == engine::CommKind::kLocal) continue;
    steps.push_back({{static_cast<int>(md)}, comm, r.src[md].ToString() + "->" + r.dst[md].ToString()});
  }
  return steps;
}

void CheckPlacementCount(int64_t line, const std::string& text, size_t count, const engine::Mesh& mesh) {
  if (count == static_cast<size_t>(mesh.ndim())) return;
  throw InvalidInput(At(line) + "'" + text + "' has " + std::to_string(count) +
                     " placements (one per mesh dim) but --mesh " + MeshText(mesh.shape()) + " has " +
                     std::to_string(mesh.ndim()) + " dims; a " + std::to_string(count) + "-d mesh would fit");
}

// The user's mesh must fit the dump: placement counts, the printed DM(...) mesh, and every
// recorded collective's group size against the mesh dims its plan step acts on.
void CheckMesh(const DebugModeDump& dump, const engine::Mesh& mesh) {
  if (!dump.printed_mesh.empty() && dump.printed_mesh != mesh.shape()) {
    throw InvalidInput(At(dump.printed_mesh_line) + "the dump prints the mesh DM(" +
                       MeshText(dump.printed_mesh) + ") but --mesh is " + MeshText(mesh.shape()) +
                       "; --mesh " + MeshText(dump.printed_mesh) + " would fit");
  }
  for (const DumpOp& op : dump.ops) {
    for (const auto* list : {&op.inputs, &op.outputs}) {
      for (const DumpTensor& t : *list) {
        if (t.has_placements) CheckPlacementCount(op.line, t.placements_text, t.placements.size(), mesh);
      }
    }
  }
  for (const DumpRedistribute& r : dump.redistributes) {
    if (!r.src.empty()) CheckPlacementCount(r.line, r.src_text, r.src.size(), mesh);
    if (!r.dst.empty()) CheckPlacementCount(r.line, r.dst_text, r.dst.size(), mesh);
    std::vector<RecordedStep> steps;
    try {
      steps = RecordedSteps(r);
    } catch (const Error&) {
      continue;  // an unreadable notation is reported by the verdict
    }
    size_t next = 0;
    for (const DumpCollective& c : r.collectives) {
      if (c.group_size < 1) continue;
      // Pair collectives with the plan's steps of the same kind in order; steps over a size-1
      // group run nothing (PyTorch skips num_chunks == 1).
      size_t k = next;
      while (k < steps.size() &&
             (engine::CommKindName(steps[k].comm) != c.kind || mesh.GroupSize(steps[k].mesh_dims) == 1)) {
        ++k;
      }
      if (k == steps.size()) continue;
      next = k + 1;
      int64_t expected = mesh.GroupSize(steps[k].mesh_dims);
      if (expected == c.group_size) continue;
      std::string dims;
      for (int md : steps[k].mesh_dims) dims += (dims.empty() ? "" : ",") + std::to_string(md);
      std::string fit;
      if (steps[k].mesh_dims.size() == 1) {
        engine::Shape shape = mesh.shape();
        shape[static_cast<size_t>(steps[k].mesh_dims[0])] = c.group_size;
        fit = "--mesh " + MeshText(shape) + " would fit";
      } else {
        fit = "a mesh whose dims " + dims + " have " + std::to_string(c.group_size) +
              " ranks together would fit";
      }
      throw InvalidInput(At(c.line) + c.kind + " over a group of " + std::to_string(c.group_size) +
                         " ranks, but its plan step " + steps[k].text + " (line " + std::to_string(r.line) +
                         ") acts on mesh dim " + dims + ", which has " + std::to_string(expected) +
                         " ranks in --mesh " + MeshText(mesh.shape()) + "; " + fit);
    }
  }
}

// PyTorch #194457: a flattened all_gather ("-->") of a tensor dim whose extent the merged group
// does not divide silently corrupts data (R-new has no uneven guard). Returns the reason or "".
std::string CorruptingMerge(const DumpRedistribute& r, const engine::Mesh& mesh) {
  if (!r.pytorch_trace || !r.has_global_shape) return "";
  NotationPlan plan = ParseNotation(*r.pytorch_trace, "trace");
  for (size_t i = 0; i + 1 < plan.states.size(); ++i) {
    if (!plan.flattened[i]) continue;
    const auto& before = plan.states[i];
    const auto& after = plan.states[i + 1].placements;
    std::vector<int> merged;
    int dim = -1;
    bool gather = true;
    for (size_t md = 0; md < before.placements.size(); ++md) {
      if (before.placements[md] == after[md]) continue;
      merged.push_back(static_cast<int>(md));
      const engine::Placement& p = before.placements[md];
      gather = gather && p.IsShardLike() && after[md].IsReplicate() && (dim < 0 || dim == p.dim);
      dim = p.dim;
    }
    if (!gather || merged.size() < 2 || dim < 0 || dim >= static_cast<int>(r.global_shape.size())) continue;
    // The extent the merged group gathers: the global extent split by the mesh dims that shard
    // this tensor dim before the merged ones in the order (rank 0's chunk, torch.chunk sizes).
    engine::ShardOrder order = before.order ? *before.order : engine::DefaultShardOrder(before.placements);
    int64_t extent = r.global_shape[static_cast<size_t>(dim)];
    for (const auto& e : order) {
      if (e.tensor_dim != dim) continue;
      for (int md : e.mesh_dims) {
        if (std::find(merged.begin(), merged.end(), md) != merged.end()) continue;
        int64_t n = mesh.size(md);
        extent = (extent + n - 1) / n;
      }
    }
    int64_t group = mesh.GroupSize(merged);
    if (group > 1 && extent % group != 0) {
      std::string dims;
      for (int md : merged) dims += (dims.empty() ? "" : ",") + std::to_string(md);
      return "PyTorch flattened the all_gather of tensor dim " + std::to_string(dim) + " (extent " +
             std::to_string(extent) + ") over mesh dims " + dims + " (" + std::to_string(group) +
             " ranks), which do not divide it: pytorch#194457, the job got wrong data";
    }
  }
  return "";
}

std::string NormalizedNotation(const std::string& notation) {
  NotationPlan plan = ParseNotation(notation, "trace");
  std::string out;
  for (size_t i = 0; i < plan.states.size(); ++i) {
    if (i > 0) out += plan.flattened[i - 1] ? "-->" : "->";
    out += detail::ConcatText(plan.states[i].placements, plan.states[i].order);
  }
  return out;
}

std::map<std::string, int> RecordedCounts(const DumpRedistribute& r) {
  std::map<std::string, int> counts;
  for (const auto& c : r.collectives) ++counts[c.kind];
  return counts;
}

std::string CountsText(const std::map<std::string, int>& counts) {
  int total = 0;
  std::string parts;
  for (const auto& [kind, n] : counts) {
    total += n;
    parts += (parts.empty() ? "" : ", ") + kind + " " + std::to_string(n);
  }
  return std::to_string(total) + (total == 1 ? " collective" : " collectives") +
         (parts.empty() ? "" : " (" + parts + ")");
}

// Fills the global shape of an explicit redistribute recorded without its DTensor: the local
// shape times the number of shards of each dim (exact for even shards; a warning says so).
void InferGlobalShape(DumpRedistribute& r, const engine::Mesh& mesh, std::vector<DumpWarning>& warnings) {
  if (r.has_global_shape || !r.has_local_shape || r.src.empty()) return;
  std::vector<int64_t> shape = r.local_shape;
  for (size_t md = 0; md < r.src.size(); ++md) {
    const engine::Placement& p = r.src[md];
    if (!p.IsShardLike() || p.dim < 0 || p.dim >= static_cast<int>(shape.size())) continue;
    shape[static_cast<size_t>(p.dim)] *= mesh.size(static_cast<int>(md));
  }
  r.global_shape = shape;
  r.has_global_shape = true;
  if (shape == r.local_shape) return;  // nothing sharded: the local shape is the global one
  r.global_shape_inferred = true;
  warnings.push_back({r.line, "global shape " + engine::FormatShape(shape) +
                                  " inferred from the local shape " + engine::FormatShape(r.local_shape) +
                                  " assuming even shards"});
}

// What Judge reads of a record, as text: its placements and shard orders, global shape, dtype,
// whether the user called it, PyTorch's notation and its collectives' kinds. Not its line: a log
// repeats the same redistribute every layer and step, and each is judged alike.
std::string JudgeKey(const DumpRedistribute& r) {
  std::string key;
  auto placements = [&](const engine::Placements& ps, const std::optional<engine::ShardOrder>& order) {
    for (const engine::Placement& p : ps) key += p.ToString() + ",";
    key += '|';
    if (order) {
      for (const engine::ShardOrderEntry& e : *order) {
        key += std::to_string(e.tensor_dim) + ":";
        for (int md : e.mesh_dims) key += std::to_string(md) + ",";
        key += ';';
      }
    } else {
      key += '-';
    }
    key += '|';
  };
  placements(r.src, r.src_order);
  placements(r.dst, r.dst_order);
  key += r.has_global_shape ? "shape " : "no shape ";
  for (int64_t e : r.global_shape) key += std::to_string(e) + ",";
  key += "|" + r.dtype + "|" + (r.explicit_call ? "explicit" : "input") + "|";
  key += r.pytorch_trace ? "trace " + *r.pytorch_trace : std::string("no trace");
  key += '|';
  for (const DumpCollective& c : r.collectives) key += c.kind + ",";
  return key;
}

// Returns true when the outcome follows from JudgeKey(r) alone (it planned; no message names the
// record's line), so that an equal record may take it over.
bool Judge(const DumpRedistribute& r, const engine::Mesh& mesh, const engine::PlanOptions& options,
           ImportedRedistribute& out, std::optional<Replayable>& replay) {
  auto not_replayable = [&](const std::string& why) {
    out.verdict = trace::ImportVerdict::kNotReplayable;
    out.reason = why;
    return false;
  };
  if (r.src.empty() || r.dst.empty()) return not_replayable("the record has no source and target placements");
  if (!r.has_global_shape) return not_replayable("the record does not show the tensor's global shape");
  engine::DType dtype = engine::DType::kF32;
  try {
    dtype = engine::ParseDType(r.dtype, "dtype");
  } catch (const Error&) {
    return not_replayable("dtype '" + r.dtype +
                          "' is not one shardscope executes (f32 f64 f16 bf16 i32 i64)");
  }
  engine::Plan plan;
  try {
    Replayable rp;
    std::string where = At(r.line);
    rp.src = engine::MakeSpec(mesh, r.src, r.src_order, r.global_shape, dtype, engine::ChunkRule::kTorch, {},
                              where + "source");
    rp.dst = engine::MakeSpec(mesh, r.dst, r.dst_order, r.global_shape, dtype, engine::ChunkRule::kTorch, {},
                              where + "target");
    // An op's input is redistributed by redistribute_local_tensor directly, which may target a
    // Partial (e.g. RR -> RP(sum) for an add with a partial operand); a user's .redistribute() may not.
    rp.options = options;
    rp.options.internal_partial_target = !r.explicit_call;
    plan = engine::MakePlan(rp.src, rp.dst, 0, rp.options);
    rp.plan = plan;
    replay = std::move(rp);
  } catch (const Error& e) {
    return not_replayable(e.what());
  }
  out.shardscope_notation = plan.notation;
  for (const auto& t : plan.optimized) {
    if (engine::CountCollectives({t}, mesh) > 0)
      ++out.shardscope_collectives[std::string(engine::CommKindName(t.comm))];
  }
  std::string corrupt;
  std::string pytorch;
  try {
    corrupt = CorruptingMerge(r, mesh);
    if (r.pytorch_trace) pytorch = NormalizedNotation(*r.pytorch_trace);
  } catch (const Error& e) {
    out.verdict = trace::ImportVerdict::kDiffers;
    out.reason = "PyTorch's notation does not parse: " + std::string(e.what());
    return false;
  }
  if (!corrupt.empty()) {
    out.verdict = trace::ImportVerdict::kCorruptingMerge;
    out.reason = corrupt;
    return true;
  }
  std::map<std::string, int> recorded = RecordedCounts(r);
  bool same = r.pytorch_trace ? pytorch == plan.notation : recorded == out.shardscope_collectives;
  out.verdict = same ? trace::ImportVerdict::kSame : trace::ImportVerdict::kDiffers;
  if (!same) {
    out.reason = "PyTorch: " + (r.pytorch_trace ? pytorch + ", " : "") + CountsText(recorded) +
                 "; shardscope: " + plan.notation + ", " + CountsText(out.shardscope_collectives);
  }
  return true;
}

}  // namespace

ImportResult ImportDebugMode(std::string_view text, const ImportOptions& options) {
  ImportResult result;
  result.dump = ParseDebugModeDump(text);
  CheckMesh(result.dump, options.mesh);
  result.warnings = result.dump.warnings;
  std::vector<std::optional<Replayable>> replays(result.dump.redistributes.size());
  result.redistributes.resize(result.dump.redistributes.size());
  std::unordered_map<std::string, size_t> judged;  // JudgeKey -> the first record judged with it
  for (size_t i = 0; i < result.dump.redistributes.size(); ++i) {
    DumpRedistribute& r = result.dump.redistributes[i];
    InferGlobalShape(r, options.mesh, result.warnings);
    std::string key = JudgeKey(r);
    if (auto it = judged.find(key); it != judged.end()) {
      result.redistributes[i] = result.redistributes[it->second];
      if (!options.trace_dir.empty()) replays[i] = replays[it->second];  // only a replay reads them
      continue;
    }
    if (Judge(r, options.mesh, options.plan, result.redistributes[i], replays[i]))
      judged.emplace(std::move(key), i);
  }
  std::deque<ComputableOp> op_storage;
  std::vector<const ComputableOp*> op_runs =
      JudgeOps(result.dump, options.mesh, options.plan, result.ops, op_storage);
  if (!options.trace_dir.empty()) ReplayAndWriteTrace(result, replays, op_runs, options);
  std::stable_sort(result.warnings.begin(), result.warnings.end(),
                   [](const DumpWarning& a, const DumpWarning& b) { return a.line < b.line; });
  return result;
}

}  // namespace shardscope::program
