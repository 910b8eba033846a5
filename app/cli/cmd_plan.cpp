// `shardscope plan`: the redistribute plan one rank runs (planner choice, PyTorch notation,
// transforms with collectives and predicted costs, flattening decisions) plus every rank's
// source and destination layouts.

#include <array>
#include <cstdio>
#include <ostream>
#include <string_view>

#include "cli_json.hpp"
#include "cli_output.hpp"
#include "commands.hpp"
#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

namespace shardscope::app {
namespace {

constexpr std::array<engine::CommKind, 4> kCollectiveKinds = {
    engine::CommKind::kAllGather, engine::CommKind::kAllReduce, engine::CommKind::kReduceScatter,
    engine::CommKind::kAllToAll};

struct PlanRequest {
  engine::TensorSpec src;  ///< what is planned (the grad's source with --backward)
  engine::TensorSpec dst;
  engine::TensorSpec forward_src;  ///< the user's --from / --to specs
  engine::TensorSpec forward_dst;
  engine::PlanOptions options;
  int64_t rank = 0;
  bool backward = false;
  std::vector<int64_t> layout_ranks;  ///< --ranks, parsed: whose layouts are printed
  std::string ranks_text;             ///< --ranks as given
};

engine::PlannerChoice ParsePlannerChoice(const std::string& text) {
  if (text == "auto") return engine::PlannerChoice::kAuto;
  if (text == "greedy") return engine::PlannerChoice::kGreedy;
  if (text == "graph") return engine::PlannerChoice::kGraph;
  throw InvalidInput("--planner: unknown planner '" + text + "' (expected auto, greedy or graph)");
}

std::string FormatCost(double us) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", us);
  return buf;
}

std::string SpecNotation(const engine::TensorSpec& spec) {
  return engine::FormatShardOrderStr(spec.placements, spec.EffectiveOrder());
}

// A transform runs a collective unless it is local or its group has one rank (PyTorch skips
// num_chunks == 1, #163742); the engine's CountCollectives holds that rule.
bool Runs(const engine::Transform& t, const engine::Mesh& mesh) {
  return engine::CountCollectives({t}, mesh) > 0;
}

int CountKind(const std::vector<engine::Transform>& transforms, const engine::Mesh& mesh,
              engine::CommKind kind) {
  int n = 0;
  for (const auto& t : transforms) {
    if (t.comm == kind && Runs(t, mesh)) ++n;
  }
  return n;
}

// shardscope refuses to flatten an all_gather over uneven shards; PyTorch (R-new) has no such
// check and corrupts data there (pytorch/pytorch#194457).
bool DivergesFromPyTorch(const engine::SkippedMerge& s, const engine::PlanOptions& options) {
  return options.guard_uneven_all_gather && s.comm == engine::CommKind::kAllGather &&
         s.reason == "uneven_tensor_shape";
}

std::string CommCountsText(const std::vector<engine::Transform>& transforms, const engine::Mesh& mesh) {
  std::string parts;
  int total = 0;
  for (engine::CommKind kind : kCollectiveKinds) {
    int n = CountKind(transforms, mesh, kind);
    total += n;
    if (n == 0) continue;
    parts += (parts.empty() ? "" : ", ") + std::string(engine::CommKindName(kind)) + " " + std::to_string(n);
  }
  return std::to_string(total) + (total == 1 ? " collective" : " collectives") +
         (parts.empty() ? "" : " (" + parts + ")");
}

void PrintTransforms(const std::vector<engine::Transform>& transforms, const engine::Mesh& mesh,
                     std::ostream& out) {
  if (transforms.empty()) {
    out << "  (none: source and destination are the same)\n";
    return;
  }
  TextTable table({"step", "mesh dims", "src -> dst", "comm", "group", "logical shape", "cost (us)"});
  int step = 0;  // steps are numbered from 0 everywhere (trace, show, run, GUI, JSON)
  for (const auto& t : transforms) {
    std::string comm(engine::CommKindName(t.comm));
    if (t.flattened) comm += " (flattened)";
    if (t.avg_scale > 1) comm += " /" + std::to_string(t.avg_scale);
    if (t.comm != engine::CommKind::kLocal && !Runs(t, mesh)) comm += " (size-1 group: no collective)";
    table.AddRow({std::to_string(step++), FormatMeshDims(mesh, t.mesh_dims),
                  t.src.ToString() + " -> " + t.dst.ToString(), comm,
                  std::to_string(mesh.GroupSize(t.mesh_dims)), engine::FormatShape(t.logical_shape),
                  FormatCost(t.cost_us)});
  }
  table.Print(out, "  ");
}

void PrintText(const PlanRequest& req, const engine::Plan& plan, std::ostream& out) {
  const engine::Mesh& mesh = req.src.mesh;
  out << "plan: " << engine::FormatShape(req.src.shape) << " " << engine::DTypeName(req.src.dtype)
      << " on mesh " << mesh.ToString() << ", rank " << req.rank << " at "
      << FormatCoord(mesh.Coordinate(req.rank)) << " (logical shapes are this rank's)\n";
  if (req.backward) {
    out << "backward: the gradient redistribute of the forward " << SpecNotation(req.forward_src) << " -> "
        << SpecNotation(req.forward_dst)
        << " (grad starts at the forward destination; Partial sources become Replicate where the grad is "
           "shard-like or Replicate, as in PyTorch Redistribute.backward)\n";
  }
  out << "from: " << SpecNotation(req.src) << "\n";
  out << "to:   " << SpecNotation(req.dst) << "\n";
  out << "planner: " << engine::PlannerName(plan.planner) << " (" << plan.planner_reason << ")\n";
  out << "notation: " << plan.notation << "\n";
  if (req.options.optimize) {
    out << "notation before flattening: " << plan.notation_unoptimized << "\n";
  } else {
    out << "flattening optimizer: off (--no-optimize)\n";
  }
  out << "transforms:\n";
  PrintTransforms(plan.optimized, mesh, out);
  out << "total: " << CommCountsText(plan.optimized, mesh) << ", predicted cost " << FormatCost(plan.cost_us)
      << " us\n";

  out << "merges:\n";
  bool any = false;
  for (const auto& t : plan.optimized) {
    if (!t.flattened) continue;
    any = true;
    out << "  made: " << t.mesh_dims.size() << " " << engine::CommKindName(t.comm) << " on mesh dims "
        << FormatMeshDims(mesh, t.mesh_dims) << " -> one flattened " << engine::CommKindName(t.comm)
        << " over " << mesh.GroupSize(t.mesh_dims) << " ranks";
    if (t.avg_scale > 1) out << ", then divided by avg_scale " << t.avg_scale;
    out << "\n";
  }
  for (const auto& s : plan.skipped_merges) {
    any = true;
    out << "  not made: " << s.mesh_dims.size() << " " << engine::CommKindName(s.comm) << " on mesh dims "
        << FormatMeshDims(mesh, s.mesh_dims) << ": " << s.reason;
    if (!s.hint.empty()) out << " (hint: " << s.hint << ")";
    if (DivergesFromPyTorch(s, req.options)) {
      out << " [differs from PyTorch on purpose: pytorch/pytorch#194457]";
    }
    out << "\n";
  }
  if (!any) {
    out << (req.options.optimize ? "  none: no run of two or more mergeable collectives\n"
                                 : "  none: optimizer off\n");
  }

  out << "layouts ("
      << (req.layout_ranks.size() == static_cast<size_t>(mesh.size()) ? "every rank"
          : req.ranks_text == "auto" ? "ranks 0-" + std::to_string(kAutoRankHead - 1) + " and the last"
                                     : "ranks " + req.ranks_text)
      << "; indices are global [begin,end) ranges per tensor dim):\n";
  TextTable table({"rank", CoordHeader(mesh), "src local", "src offset", "src indices", "dst local",
                   "dst offset", "dst indices"});
  for (int64_t r : req.layout_ranks) {
    const engine::RankLayout s = engine::ComputeRankLayout(req.src, r);
    const engine::RankLayout d = engine::ComputeRankLayout(req.dst, r);
    table.AddRow({std::to_string(s.rank), FormatCoord(s.coord), engine::FormatShape(s.local_shape),
                  FormatTuple(s.global_offset), FormatIndices(s.indices), engine::FormatShape(d.local_shape),
                  FormatTuple(d.global_offset), FormatIndices(d.indices)});
  }
  table.Print(out, "  ");
}

nlohmann::json TransformJson(const engine::Transform& t, const engine::Mesh& mesh) {
  nlohmann::json j = {
      {"mesh_dims", t.mesh_dims},
      {"src", t.src.ToString()},
      {"dst", t.dst.ToString()},
      {"comm", engine::CommKindName(t.comm)},
      {"group_size", mesh.GroupSize(t.mesh_dims)},
      {"runs", Runs(t, mesh)},
      {"logical_shape", t.logical_shape},
      {"flattened", t.flattened},
      {"avg_scale", t.avg_scale},
      {"cost_us", t.cost_us},
  };
  if (mesh.has_dim_names()) {
    std::vector<std::string> names;
    for (int md : t.mesh_dims) names.push_back(mesh.dim_names()[static_cast<size_t>(md)]);
    j["mesh_dim_names"] = names;
  }
  return j;
}

nlohmann::json SpecJson(const engine::TensorSpec& spec) {
  return {{"placements", engine::FormatPlacements(spec.placements)},
          {"order", engine::FormatShardOrder(spec.EffectiveOrder())},
          {"notation", SpecNotation(spec)}};
}

nlohmann::json CommCountsJson(const std::vector<engine::Transform>& transforms, const engine::Mesh& mesh) {
  nlohmann::json j = nlohmann::json::object();
  int total = 0;
  for (engine::CommKind kind : kCollectiveKinds) {
    int n = CountKind(transforms, mesh, kind);
    j[std::string(engine::CommKindName(kind))] = n;
    total += n;
  }
  j["total"] = total;
  return j;
}

void PrintJson(const PlanRequest& req, const engine::Plan& plan, std::ostream& out) {
  const engine::Mesh& mesh = req.src.mesh;
  nlohmann::json transforms = nlohmann::json::array();
  for (const auto& t : plan.optimized) transforms.push_back(TransformJson(t, mesh));
  nlohmann::json raw = nlohmann::json::array();
  for (const auto& t : plan.raw) raw.push_back(TransformJson(t, mesh));
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& s : plan.skipped_merges) {
    skipped.push_back({{"mesh_dims", s.mesh_dims},
                       {"comm", engine::CommKindName(s.comm)},
                       {"reason", s.reason},
                       {"hint", s.hint},
                       {"differs_from_pytorch", DivergesFromPyTorch(s, req.options)}});
  }
  nlohmann::json ranks = nlohmann::json::array();
  for (int64_t r : req.layout_ranks) {
    const engine::RankLayout s = engine::ComputeRankLayout(req.src, r);
    ranks.push_back({{"rank", s.rank},
                     {"coord", s.coord},
                     {"src", LayoutJson(s)},
                     {"dst", LayoutJson(engine::ComputeRankLayout(req.dst, r))}});
  }
  nlohmann::json j = {
      {"mesh", MeshJson(mesh)},
      {"shape", req.src.shape},
      {"dtype", engine::DTypeName(req.src.dtype)},
      {"chunking", engine::ChunkRuleName(req.src.chunking)},
      {"rank", req.rank},
      {"coord", mesh.Coordinate(req.rank)},
      {"backward", req.backward},
      {"src", SpecJson(req.src)},
      {"dst", SpecJson(req.dst)},
      {"planner", engine::PlannerName(plan.planner)},
      {"planner_reason", plan.planner_reason},
      {"optimized", req.options.optimize},
      {"devices_per_host", req.options.devices_per_host},
      {"notation", plan.notation},
      {"notation_unoptimized", plan.notation_unoptimized},
      {"transforms", std::move(transforms)},
      {"transforms_unoptimized", std::move(raw)},
      {"skipped_merges", std::move(skipped)},
      {"comm_counts", CommCountsJson(plan.optimized, mesh)},
      {"comm_counts_unoptimized", CommCountsJson(plan.raw, mesh)},
      {"cost_us", plan.cost_us},
      {"ranks", std::move(ranks)},
  };
  if (req.backward) j["forward"] = {{"src", SpecJson(req.forward_src)}, {"dst", SpecJson(req.forward_dst)}};
  out << DumpJson(j) << '\n';
}

}  // namespace

int RunPlan(const PlanArgs& args, std::ostream& out) {
  PlanRequest req;
  engine::Mesh mesh = BuildMesh(args.mesh);
  req.forward_src = BuildSpec(mesh, args.tensor, args.from, "--from", args.src_order, "--src-order");
  req.forward_dst = BuildSpec(mesh, args.tensor, args.to, "--to", args.dst_order, "--dst-order");
  req.options.planner = ParsePlannerChoice(args.planner);
  req.options.optimize = !args.no_optimize;
  // Redistribute.backward runs PyTorch's internal redistribute, like --allow-partial-target.
  req.options.internal_partial_target = args.allow_partial_target || args.backward;
  if (args.devices_per_host < 1) {
    throw InvalidInput("--devices-per-host: '" + std::to_string(args.devices_per_host) + "' must be >= 1");
  }
  req.options.devices_per_host = args.devices_per_host;
  if (args.rank < 0 || args.rank >= mesh.size()) {
    throw InvalidInput("--rank: '" + std::to_string(args.rank) + "' is outside the mesh of " +
                       std::to_string(mesh.size()) + " ranks (0.." + std::to_string(mesh.size() - 1) + ")");
  }
  req.rank = args.rank;
  req.layout_ranks = ParseRankList(args.ranks, mesh.size(), "--ranks");
  req.ranks_text = args.ranks;
  req.backward = args.backward;
  if (args.backward) {
    req.src = req.forward_dst;
    req.dst = engine::BackwardTargetSpec(req.forward_src, req.forward_dst);
  } else {
    req.src = req.forward_src;
    req.dst = req.forward_dst;
  }
  engine::Plan plan = [&] {
    try {
      return engine::MakePlan(req.src, req.dst, req.rank, req.options);
    } catch (const Error& e) {
      // Transition errors name mesh dims and placements; say which flag asked for them.
      if (e.code() != ErrorCode::kUnsupported || std::string_view(e.what()).rfind("--", 0) == 0) throw;
      throw Error(e.code(), std::string(args.backward ? "--backward" : "--to") + ": " + e.what());
    }
  }();
  if (args.json) {
    PrintJson(req, plan, out);
  } else {
    PrintText(req, plan, out);
    out << AutoRanksNote(req.ranks_text, req.layout_ranks.size(), mesh.size());
  }
  return 0;
}

}  // namespace shardscope::app
