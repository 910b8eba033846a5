// `shardscope layout`: every rank's local shard of one distribution (local shape, global offset
// and the global index ranges along each tensor dim), computed by the engine's layout math.

#include <ostream>

#include "cli_json.hpp"
#include "cli_output.hpp"
#include "commands.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/core/shard_order.hpp"

namespace shardscope::app {
namespace {

void PrintText(const engine::TensorSpec& spec, const std::vector<engine::RankLayout>& layouts,
               std::ostream& out) {
  out << "layout: " << engine::FormatShape(spec.shape) << " " << engine::DTypeName(spec.dtype) << " on mesh "
      << spec.mesh.ToString() << " as " << engine::FormatShardOrderStr(spec.placements, spec.EffectiveOrder())
      << " (chunking " << engine::ChunkRuleName(spec.chunking) << ")\n";
  TextTable table({"rank", CoordHeader(spec.mesh), "local shape", "global offset", "indices"});
  for (const auto& l : layouts) {
    table.AddRow({std::to_string(l.rank), FormatCoord(l.coord), engine::FormatShape(l.local_shape),
                  FormatTuple(l.global_offset), FormatIndices(l.indices)});
  }
  table.Print(out, "");
}

void PrintJson(const engine::TensorSpec& spec, const std::vector<engine::RankLayout>& layouts,
               std::ostream& out) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& l : layouts) {
    nlohmann::json r = {{"rank", l.rank}, {"coord", l.coord}};
    r.update(LayoutJson(l));
    ranks.push_back(std::move(r));
  }
  nlohmann::json j = {
      {"mesh", MeshJson(spec.mesh)},
      {"shape", spec.shape},
      {"dtype", engine::DTypeName(spec.dtype)},
      {"chunking", engine::ChunkRuleName(spec.chunking)},
      {"placements", engine::FormatPlacements(spec.placements)},
      {"order", engine::FormatShardOrder(spec.EffectiveOrder())},
      {"notation", engine::FormatShardOrderStr(spec.placements, spec.EffectiveOrder())},
      {"ranks", std::move(ranks)},
  };
  out << DumpJson(j) << '\n';
}

}  // namespace

int RunLayout(const LayoutArgs& args, std::ostream& out) {
  engine::Mesh mesh = BuildMesh(args.mesh);
  engine::TensorSpec spec =
      BuildSpec(mesh, args.tensor, args.placements, "--placements", args.order, "--order");
  // Only the ranks asked for are laid out: one rank costs O(mesh dims x tensor dims).
  std::vector<engine::RankLayout> layouts;
  for (int64_t r : ParseRankList(args.ranks, mesh.size(), "--ranks"))
    layouts.push_back(engine::ComputeRankLayout(spec, r));
  if (args.json) {
    PrintJson(spec, layouts, out);
  } else {
    PrintText(spec, layouts, out);
    out << AutoRanksNote(args.ranks, layouts.size(), mesh.size());
  }
  return 0;
}

}  // namespace shardscope::app
