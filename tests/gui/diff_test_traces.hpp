#pragma once
// Two traces that differ in a known way, for the GUI diff tests. Both run on a 2x2 (dp, tp) mesh
// with the flattened (dp, tp) sub-mesh registered; plans come from the engine's planner.
//   id  baseline                                   candidate
//   0   a [8,6] S(0),S(1) -> R,S(1)                the same
//   1   w [8,8] S(0),S(0) -> R,R, optimizer on     the same call with the optimizer off
//   2   b [8,6] R,S(0) -> S(0),R                   the same
//   3   x [4,4] S(0),R -> R,R (baseline only)      y [4,4] R,R -> R,S(1) (candidate only)
// So `shardscope diff` must align 0-0, 1-1, 2-2, report 1 as changed (the optimizer merges w's two
// all_gathers into one flattened all_gather; without it they stay two), x as removed and y as added.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sample_data.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope_gui_test {

inline shardscope::engine::Mesh DiffMesh() {
  shardscope::engine::Mesh mesh({2, 2}, {"dp", "tp"});
  mesh.RegisterFlattened({0, 1});
  return mesh;
}

inline shardscope::engine::TensorSpec DiffSpec(const std::vector<int64_t>& shape, const char* placements) {
  namespace engine = shardscope::engine;
  return engine::MakeSpec(DiffMesh(), engine::ParsePlacements(placements, "t"), std::nullopt, shape,
                          engine::DType::kF32, engine::ChunkRule::kTorch, {}, "t");
}

/// The redistributes of one side, in id order.
inline std::vector<shardscope::app::gui::SampleRedistribute> DiffItems(bool candidate) {
  using shardscope::app::gui::SampleRedistribute;
  shardscope::engine::PlanOptions optimizer_off;
  optimizer_off.optimize = false;
  std::vector<SampleRedistribute> items = {
      {"a", DiffSpec({8, 6}, "S(0),S(1)"), DiffSpec({8, 6}, "R,S(1)"), {}},
      {"w", DiffSpec({8, 8}, "S(0),S(0)"), DiffSpec({8, 8}, "R,R"),
       candidate ? optimizer_off : shardscope::engine::PlanOptions{}},
      {"b", DiffSpec({8, 6}, "R,S(0)"), DiffSpec({8, 6}, "S(0),R"), {}},
  };
  if (candidate) {
    items.push_back({"y", DiffSpec({4, 4}, "R,R"), DiffSpec({4, 4}, "R,S(1)"), {}});
  } else {
    items.push_back({"x", DiffSpec({4, 4}, "S(0),R"), DiffSpec({4, 4}, "R,R"), {}});
  }
  return items;
}

/// Writes `model`'s rank files into `dir` through trace::Writer (what a traced run writes).
inline void WriteTraceDir(const shardscope::trace::Model& model, const std::filesystem::path& dir) {
  for (const auto& rank : model.ranks) {
    shardscope::trace::Writer w(dir, rank.header);
    for (const auto& e : rank.events) w.Emit(e);
    w.Close();
  }
}

/// Writes the sample run of `items` (app::gui::ModelFromPlans, run name `name`) into `dir`.
inline void WritePlansTrace(const std::vector<shardscope::app::gui::SampleRedistribute>& items,
                            const std::filesystem::path& dir, const std::string& name = "test") {
  WriteTraceDir(*shardscope::app::gui::ModelFromPlans(items, name), dir);
}

/// The baseline side written once as `dir`/trace: a small 2x2 trace for the navigation tests.
inline std::filesystem::path SmallTrace(const std::filesystem::path& dir) {
  std::filesystem::path t = dir / "trace";
  if (!std::filesystem::exists(t)) WritePlansTrace(DiffItems(false), t);
  return t;
}

/// Where WriteDiffTraces put the two sides.
struct DiffDirs {
  std::filesystem::path baseline, candidate;
};

/// Both sides written once: DiffItems(false) as `dir`/baseline and DiffItems(true) as `dir`/candidate.
inline DiffDirs WriteDiffTraces(const std::filesystem::path& dir) {
  DiffDirs d{dir / "baseline", dir / "candidate"};
  if (!std::filesystem::exists(d.baseline)) WritePlansTrace(DiffItems(false), d.baseline, "baseline");
  if (!std::filesystem::exists(d.candidate)) WritePlansTrace(DiffItems(true), d.candidate, "candidate");
  return d;
}

/// `dir`/`name`, written once: one tensor t [64, 64] S(0),S(1) -> R,S(1) on a (dp, tp) mesh of
/// `dp` x `tp` ranks, for the tests that need more ranks than fit on screen.
inline std::filesystem::path ManyRankTrace(const std::filesystem::path& dir, const std::string& name,
                                           int64_t dp, int64_t tp) {
  namespace engine = shardscope::engine;
  std::filesystem::path t = dir / name;
  if (std::filesystem::exists(t)) return t;
  engine::Mesh mesh({dp, tp}, {"dp", "tp"});
  auto spec = [&](const char* placements) {
    return engine::MakeSpec(mesh, engine::ParsePlacements(placements, "t"), std::nullopt, {64, 64},
                            engine::DType::kF32, engine::ChunkRule::kTorch, {}, "t");
  };
  WritePlansTrace({{"t", spec("S(0),S(1)"), spec("R,S(1)"), {}}}, t);
  return t;
}

}  // namespace shardscope_gui_test
