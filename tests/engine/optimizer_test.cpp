// Flattening optimizer against PyTorch R-new _optimize_transform_infos (semantics §6.1) and the
// #194457 guard (§6.3). Transform lists are hand-built, as PyTorch's own optimizer tests do.

#include <catch2/catch.hpp>

#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

using namespace shardscope::engine;

namespace {

Transform T(int mesh_dim, const char* src, const char* dst, Shape logical_shape) {
  Transform t;
  t.mesh_dims = {mesh_dim};
  t.src = ParsePlacement(src, "test");
  t.dst = ParsePlacement(dst, "test");
  t.logical_shape = std::move(logical_shape);
  t.comm = CommKindOf(t.src, t.dst);
  return t;
}

Mesh FlatMesh(Shape shape, std::vector<std::vector<int>> flattened) {
  Mesh mesh(std::move(shape));
  for (auto& dims : flattened) mesh.RegisterFlattened(dims);
  return mesh;
}

// A mesh with every flattened sub-mesh registered.
Mesh AllFlattened(Shape shape) {
  Mesh mesh(std::move(shape));
  mesh.RegisterAllFlattened();
  return mesh;
}

TensorSpec Spec(Mesh mesh, const char* placements, Shape shape,
                std::map<int, std::vector<int64_t>> explicit_sizes = {}) {
  return MakeSpec(std::move(mesh), ParsePlacements(placements, "test"), std::nullopt, std::move(shape),
                  DType::kF32, ChunkRule::kTorch, std::move(explicit_sizes), "test");
}

// Optimizes `in` (default options) and checks that nothing was merged: the transforms come back as
// they went in. Returns the result for its skipped-merge records.
OptimizeResult Unmerged(const std::vector<Transform>& in, const TensorSpec& spec) {
  OptimizeResult r = OptimizeTransforms(in, spec, {});
  CHECK(r.transforms == in);
  return r;
}

// Unmerged, with exactly one skipped merge: that record.
SkippedMerge OnlySkipped(const std::vector<Transform>& in, const TensorSpec& spec) {
  OptimizeResult r = Unmerged(in, spec);
  REQUIRE(r.skipped.size() == 1);
  return r.skipped[0];
}

// The one merge skipped on `in` has these mesh dims, collective, reason and hint.
void CheckOnlySkipped(const std::vector<Transform>& in, const TensorSpec& spec,
                      const std::vector<int>& mesh_dims, CommKind comm, const std::string& reason,
                      const std::string& hint) {
  const SkippedMerge skipped = OnlySkipped(in, spec);
  CHECK(skipped.mesh_dims == mesh_dims);
  CHECK(skipped.comm == comm);
  CHECK(skipped.reason == reason);
  CHECK(skipped.hint == hint);
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TEST_CASE("optimizer leaves fewer than two transforms, or a disabled pass, unchanged",
          "[engine][optimizer]") {
  TensorSpec spec = Spec(FlatMesh({2, 2}, {{0, 1}}), "S(0),S(0)", {8, 4});
  PlanOptions options;
  std::vector<Transform> one = {T(1, "S(0)", "R", {4, 4})};
  auto r1 = OptimizeTransforms(one, spec, options);
  CHECK(r1.transforms == one);
  CHECK(r1.skipped.empty());
  CHECK(OptimizeTransforms({}, spec, options).transforms.empty());

  // Mergeable pair with a flattened mesh, but _DISABLE_REDISTRIBUTE_TRANSFORM_OPTIMIZATION.
  std::vector<Transform> two = {T(1, "S(0)", "R", {4, 4}), T(0, "S(0)", "R", {8, 4})};
  options.optimize = false;
  auto r2 = OptimizeTransforms(two, spec, options);
  CHECK(r2.transforms == two);
  CHECK(r2.skipped.empty());
}

TEST_CASE("all_gathers in descending mesh-dim order merge onto the flattened mesh", "[engine][optimizer]") {
  // [S0,S0] -> [R,R] on 2x2 over (8,4): the planners unshard inner dim first: 1 then 0.
  TensorSpec spec = Spec(FlatMesh({2, 2}, {{0, 1}}), "S(0),S(0)", {8, 4});
  auto r = OptimizeTransforms({T(1, "S(0)", "R", {4, 4}), T(0, "S(0)", "R", {8, 4})}, spec, PlanOptions{});
  REQUIRE(r.transforms.size() == 1);
  CHECK(r.skipped.empty());
  const Transform& m = r.transforms[0];
  CHECK(m.mesh_dims == std::vector<int>{0, 1});
  CHECK(m.flattened);
  CHECK(m.src == Placement::Shard(0));
  CHECK(m.dst == Placement::Replicate());
  CHECK(m.comm == CommKind::kAllGather);
  CHECK(m.avg_scale == 1);
  // The outermost info has the largest extent on the gathered dim: (8,4), not (4,4).
  CHECK(m.logical_shape == Shape{8, 4});
  // Cost: PyTorch allgather_cost with n = 4 (one host: 4 <= 8 devices, bw 87.7 GB/s, latency
  // 0.6 us); bytes start as the [S0,S0] local shard, 4 B * 32 / 4, then S->R multiplies by n.
  double gb = 4.0 * 32 / 4 / kGiB * 4;
  double expected = 6.6 + 3 * 0.6 + (gb * 3 / 4) / 87.7 * 1e6;
  CHECK(m.cost_us == Approx(expected).epsilon(1e-12));
}

TEST_CASE("all_gathers in ascending order are not merged: non_ascending_mesh_dims", "[engine][optimizer]") {
  TensorSpec spec = Spec(FlatMesh({2, 2}, {{0, 1}}), "S(0),S(0)", {8, 4});
  std::vector<Transform> in = {T(0, "S(0)", "R", {8, 4}), T(1, "S(0)", "R", {4, 4})};
  CheckOnlySkipped(in, spec, {0, 1}, CommKind::kAllGather, "non_ascending_mesh_dims",
                   "the planner emits these dims in ascending order; merging needs descending");
}

TEST_CASE("reduce_scatters in ascending order merge; descending ones do not", "[engine][optimizer]") {
  TensorSpec spec = Spec(FlatMesh({2, 2}, {{0, 1}}), "P(sum),P(sum)", {8, 4});
  auto ok = OptimizeTransforms({T(0, "P(sum)", "S(0)", {8, 4}), T(1, "P(sum)", "S(0)", {8, 4})}, spec, {});
  REQUIRE(ok.transforms.size() == 1);
  CHECK(ok.skipped.empty());
  CHECK(ok.transforms[0].mesh_dims == std::vector<int>{0, 1});
  CHECK(ok.transforms[0].comm == CommKind::kReduceScatter);
  CHECK(ok.transforms[0].src == Placement::Partial(ReduceOp::kSum));
  CHECK(ok.transforms[0].dst == Placement::Shard(0));
  CHECK(ok.transforms[0].logical_shape == Shape{8, 4});

  std::vector<Transform> desc = {T(1, "P(sum)", "S(0)", {8, 4}), T(0, "P(sum)", "S(0)", {8, 4})};
  CheckOnlySkipped(desc, spec, {1, 0}, CommKind::kReduceScatter, "non_ascending_mesh_dims",
                   "the planner emits these dims in descending order; merging needs ascending");
}

TEST_CASE("mixed emission order is named in the hint", "[engine][optimizer]") {
  Mesh mesh = AllFlattened({2, 2, 2});
  TensorSpec spec = Spec(mesh, "S(0),S(0),S(0)", {8, 4});
  std::vector<Transform> in = {T(0, "S(0)", "R", {8, 4}), T(2, "S(0)", "R", {2, 4}),
                               T(1, "S(0)", "R", {4, 4})};
  const SkippedMerge skipped = OnlySkipped(in, spec);
  CHECK(skipped.reason == "non_ascending_mesh_dims");
  CHECK(skipped.hint == "the planner emits these dims in order 0,2,1; merging needs descending");
}

TEST_CASE("all_reduces merge in any order", "[engine][optimizer]") {
  TensorSpec spec = Spec(FlatMesh({2, 2}, {{0, 1}}), "P(sum),P(sum)", {8, 4});
  auto r = OptimizeTransforms({T(1, "P(sum)", "R", {8, 4}), T(0, "P(sum)", "R", {8, 4})}, spec, {});
  REQUIRE(r.transforms.size() == 1);
  CHECK(r.transforms[0].mesh_dims == std::vector<int>{0, 1});
  CHECK(r.transforms[0].comm == CommKind::kAllReduce);
  CHECK(r.transforms[0].flattened);
  CHECK(r.skipped.empty());
  // allreduce_cost with n = 4, one host; no shards, so bytes = 4 B * 32.
  double gb = 4.0 * 32 / kGiB;
  CHECK(r.transforms[0].cost_us == Approx(6.6 + 2 * 3 * 0.6 + (gb * 2 * 3 / 4) / 87.7 * 1e6).epsilon(1e-12));
}

TEST_CASE("a flattened group spanning hosts is priced with its slowest link", "[engine][optimizer]") {
  // 2x2x2 with 2 devices per host: dim 2 stays on a host; dims 1 and 0 cross hosts
  // (MeshTopoInfo: running product 2, 4, 8 against 2) -> 87.7 * 0.22 GB/s and 2.7 us.
  Mesh mesh({2, 2, 2});
  mesh.RegisterFlattened({1, 2});
  TensorSpec spec = Spec(mesh, "R,P(sum),P(sum)", {4, 4});
  PlanOptions options;
  options.devices_per_host = 2;
  auto r = OptimizeTransforms({T(1, "P(sum)", "R", {4, 4}), T(2, "P(sum)", "R", {4, 4})}, spec, options);
  REQUIRE(r.transforms.size() == 1);
  double gb = 4.0 * 16 / kGiB;
  double expected = 6.6 + 2 * 3 * 2.7 + (gb * 2 * 3 / 4) / (87.7 * 0.22) * 1e6;
  CHECK(r.transforms[0].cost_us == Approx(expected).epsilon(1e-12));
}

TEST_CASE("no registered flattened mesh: no_flattened_mesh with the flag that fixes it",
          "[engine][optimizer]") {
  TensorSpec spec = Spec(Mesh({2, 2}), "S(0),S(0)", {8, 4});
  std::vector<Transform> in = {T(1, "S(0)", "R", {4, 4}), T(0, "S(0)", "R", {8, 4})};
  const SkippedMerge skipped = OnlySkipped(in, spec);
  CHECK(skipped.mesh_dims == std::vector<int>{1, 0});
  CHECK(skipped.reason == "no_flattened_mesh");
  CHECK(skipped.hint == "register a flattened mesh over dims 0,1 (--flatten 0,1)");

  // A flattened mesh over other dims does not count.
  TensorSpec other = Spec(FlatMesh({2, 2, 2}, {{0, 1}}), "R,S(0),S(0)", {8, 4});
  auto r2 = OptimizeTransforms({T(2, "S(0)", "R", {4, 4}), T(1, "S(0)", "R", {8, 4})}, other, {});
  REQUIRE(r2.skipped.size() == 1);
  CHECK(r2.skipped[0].reason == "no_flattened_mesh");
  CHECK(r2.skipped[0].hint == "register a flattened mesh over dims 1,2 (--flatten 1,2)");
}

TEST_CASE("a named mesh merges the same as an unnamed one once flattened", "[engine][optimizer]") {
  Mesh mesh({2, 2}, {"dp", "tp"});
  mesh.RegisterFlattened({0, 1});
  TensorSpec spec = Spec(mesh, "P(sum),P(sum)", {8, 4});
  auto r = OptimizeTransforms({T(0, "P(sum)", "R", {8, 4}), T(1, "P(sum)", "R", {8, 4})}, spec, {});
  CHECK(r.transforms.size() == 1);
}

TEST_CASE("reduce_scatter over an extent not divisible by the group: uneven_tensor_shape",
          "[engine][optimizer]") {
  TensorSpec spec = Spec(FlatMesh({2, 2}, {{0, 1}}), "P(sum),P(sum)", {6, 4});
  std::vector<Transform> in = {T(0, "P(sum)", "S(0)", {6, 4}), T(1, "P(sum)", "S(0)", {6, 4})};
  const SkippedMerge skipped = OnlySkipped(in, spec);
  CHECK(skipped.reason == "uneven_tensor_shape");
  CHECK(skipped.comm == CommKind::kReduceScatter);
  CHECK(skipped.hint == "make dim 0's size 6 divisible by 4");
}

TEST_CASE("reduce_scatter divisibility counts only the group's own mesh dims", "[engine][optimizer]") {
  // T1 test_reduce_scatter_with_prior_shard_flattened shape: [S0,P,P] -> [S0,S0,S0] on 2x2x2
  // with a flattened (1,2). The logical shape already reflects mesh dim 0's shard.
  Mesh mesh({2, 2, 2});
  mesh.RegisterFlattened({1, 2});
  TensorSpec even = Spec(mesh, "S(0),P(sum),P(sum)", {8, 4});
  auto ok = OptimizeTransforms({T(1, "P(sum)", "S(0)", {4, 4}), T(2, "P(sum)", "S(0)", {4, 4})}, even, {});
  REQUIRE(ok.transforms.size() == 1);
  CHECK(ok.transforms[0].mesh_dims == std::vector<int>{1, 2});
  CHECK(ok.transforms[0].logical_shape == Shape{4, 4});

  // (12,4): dim 0 holds 6 per mesh-dim-0 shard; 6 % (2*2) != 0.
  TensorSpec uneven = Spec(mesh, "S(0),P(sum),P(sum)", {12, 4});
  auto bad = OptimizeTransforms({T(1, "P(sum)", "S(0)", {6, 4}), T(2, "P(sum)", "S(0)", {6, 4})}, uneven, {});
  REQUIRE(bad.skipped.size() == 1);
  CHECK(bad.skipped[0].reason == "uneven_tensor_shape");
  CHECK(bad.skipped[0].hint == "make dim 0's size 6 divisible by 4");
}

TEST_CASE("#194457 guard: an uneven nested all_gather is not flattened", "[engine][optimizer]") {
  // PyTorch #194457 repro: 2x2 with a flattened mesh, (5,3), [S0,S0] -> [R,R]. The planner
  // emits (1, S0->R, [3,3]) then (0, S0->R, [5,3]); nested local extents are 2,1,1,1 but a
  // flat all_gather assumes torch.chunk(5, 4) = 2,2,1,0.
  TensorSpec spec = Spec(FlatMesh({2, 2}, {{0, 1}}), "S(0),S(0)", {5, 3});
  std::vector<Transform> in = {T(1, "S(0)", "R", {3, 3}), T(0, "S(0)", "R", {5, 3})};
  auto guarded = OptimizeTransforms(in, spec, PlanOptions{});
  CHECK(guarded.transforms == in);
  REQUIRE(guarded.skipped.size() == 1);
  CHECK(guarded.skipped[0].mesh_dims == std::vector<int>{1, 0});
  CHECK(guarded.skipped[0].comm == CommKind::kAllGather);
  CHECK(guarded.skipped[0].reason == "uneven_tensor_shape");
  CHECK(guarded.skipped[0].hint ==
        "make dim 0's size 5 divisible by 4 (PyTorch merges it anyway and corrupts data: #194457)");

  // With the guard off we do what PyTorch R-new does: merge, using the outermost shape (5,3).
  PlanOptions pytorch;
  pytorch.guard_uneven_all_gather = false;
  auto merged = OptimizeTransforms(in, spec, pytorch);
  REQUIRE(merged.transforms.size() == 1);
  CHECK(merged.skipped.empty());
  CHECK(merged.transforms[0].logical_shape == Shape{5, 3});
  CHECK(merged.transforms[0].mesh_dims == std::vector<int>{0, 1});

  // An evenly divisible extent (8 over 4) merges with the guard on.
  TensorSpec even = Spec(FlatMesh({2, 2}, {{0, 1}}), "S(0),S(0)", {8, 3});
  CHECK(OptimizeTransforms({T(1, "S(0)", "R", {4, 3}), T(0, "S(0)", "R", {8, 3})}, even, {})
            .transforms.size() == 1);
}

TEST_CASE("#194457 guard also refuses uneven explicit per-rank sizes", "[engine][optimizer]") {
  // (8,4) divides by 4, but mesh dim 1 splits each 4-row half as 3,1 (ShardTensor sizes).
  TensorSpec spec = Spec(FlatMesh({2, 2}, {{0, 1}}), "S(0),S(0)", {8, 4}, {{1, {3, 1}}});
  std::vector<Transform> in = {T(1, "S(0)", "R", {4, 4}), T(0, "S(0)", "R", {8, 4})};
  const SkippedMerge skipped = OnlySkipped(in, spec);
  CHECK(skipped.reason == "uneven_tensor_shape");
  CHECK(skipped.hint == "mesh dim 1 has uneven explicit sizes; a flattened all_gather needs equal shards");
}

TEST_CASE("sum and avg partials merge into one sum with avg_scale", "[engine][optimizer]") {
  // T1: (P(avg),P(avg),P(sum)) -> RRR on 2x2x2 sums over 8 ranks and divides by 2*2 = 4.
  Mesh mesh = AllFlattened({2, 2, 2});
  TensorSpec spec = Spec(mesh, "P(avg),P(avg),P(sum)", {4, 4});
  auto r = OptimizeTransforms(
      {T(0, "P(avg)", "R", {4, 4}), T(1, "P(avg)", "R", {4, 4}), T(2, "P(sum)", "R", {4, 4})}, spec, {});
  REQUIRE(r.transforms.size() == 1);
  const Transform& m = r.transforms[0];
  CHECK(m.mesh_dims == std::vector<int>{0, 1, 2});
  CHECK(mesh.GroupSize(m.mesh_dims) == 8);
  CHECK(m.src == Placement::Partial(ReduceOp::kSum));
  CHECK(m.dst == Placement::Replicate());
  CHECK(m.avg_scale == 4);

  // Only the avg dims count: P(sum),P(avg) on a 2x4 mesh divides by 4.
  TensorSpec spec24 = Spec(FlatMesh({2, 4}, {{0, 1}}), "P(sum),P(avg)", {8, 4});
  auto r2 = OptimizeTransforms({T(0, "P(sum)", "S(0)", {8, 4}), T(1, "P(avg)", "S(0)", {8, 4})}, spec24, {});
  REQUIRE(r2.transforms.size() == 1);
  CHECK(r2.transforms[0].avg_scale == 4);
  CHECK(r2.transforms[0].src == Placement::Partial(ReduceOp::kSum));
  CHECK(r2.transforms[0].comm == CommKind::kReduceScatter);

  // All sum: no scale, src stays P(sum).
  TensorSpec sums = Spec(mesh, "P(sum),P(sum),R", {4, 4});
  auto r3 = OptimizeTransforms({T(0, "P(sum)", "R", {4, 4}), T(1, "P(sum)", "R", {4, 4})}, sums, {});
  REQUIRE(r3.transforms.size() == 1);
  CHECK(r3.transforms[0].avg_scale == 1);
  CHECK(r3.transforms[0].src == Placement::Partial(ReduceOp::kSum));

  // All avg over 2x2: a sum divided by 4.
  TensorSpec avgs = Spec(mesh, "P(avg),P(avg),R", {4, 4});
  auto r4 = OptimizeTransforms({T(0, "P(avg)", "R", {4, 4}), T(1, "P(avg)", "R", {4, 4})}, avgs, {});
  REQUIRE(r4.transforms.size() == 1);
  CHECK(r4.transforms[0].avg_scale == 4);
  CHECK(r4.transforms[0].src == Placement::Partial(ReduceOp::kSum));
}

TEST_CASE("identical non-linear partial pairs merge without a scale", "[engine][optimizer]") {
  // are_placements_mergeable: identical pairs always qualify, whatever the op.
  TensorSpec spec = Spec(FlatMesh({2, 2}, {{0, 1}}), "P(max),P(max)", {4, 4});
  auto r = OptimizeTransforms({T(0, "P(max)", "R", {4, 4}), T(1, "P(max)", "R", {4, 4})}, spec, {});
  REQUIRE(r.transforms.size() == 1);
  CHECK(r.transforms[0].src == Placement::Partial(ReduceOp::kMax));
  CHECK(r.transforms[0].avg_scale == 1);
}

TEST_CASE("groups are consecutive only: P,S0,P -> R,R,R stays AR, AG, AR", "[engine][optimizer]") {
  Mesh mesh = AllFlattened({2, 2, 2});
  TensorSpec spec = Spec(mesh, "P(sum),S(0),P(sum)", {8, 4});
  std::vector<Transform> in = {T(0, "P(sum)", "R", {8, 4}), T(1, "S(0)", "R", {8, 4}),
                               T(2, "P(sum)", "R", {4, 4})};
  auto r = OptimizeTransforms(in, spec, {});
  REQUIRE(r.transforms == in);
  CHECK(r.transforms[0].comm == CommKind::kAllReduce);
  CHECK(r.transforms[1].comm == CommKind::kAllGather);
  CHECK(r.transforms[2].comm == CommKind::kAllReduce);
  // Single-transform groups are not missed opportunities (R-new: too_few_transforms, no warning).
  CHECK(r.skipped.empty());
}

TEST_CASE("different destinations or non-partial sources break a group", "[engine][optimizer]") {
  Mesh mesh = AllFlattened({2, 2, 2});
  CHECK(Unmerged({T(0, "P(sum)", "S(0)", {8, 8}), T(1, "P(sum)", "S(1)", {8, 8})},
                 Spec(mesh, "P(sum),P(sum),R", {8, 8}))
            .skipped.empty());

  // S(0)->R then S(1)->R: same comm kind, different pairs, not mergeable.
  Unmerged({T(1, "S(0)", "R", {8, 8}), T(0, "S(1)", "R", {8, 8})}, Spec(mesh, "S(1),S(0),R", {8, 8}));
}

TEST_CASE("a group stops at the first non-matching transform and the rest is scanned anew",
          "[engine][optimizer]") {
  // [S1,S0,S0] -> [R,R,R]: (2,S0->R),(1,S0->R) merge; (0,S1->R) stays alone.
  Mesh mesh = AllFlattened({2, 2, 2});
  TensorSpec spec = Spec(mesh, "S(1),S(0),S(0)", {8, 8});
  std::vector<Transform> in = {T(2, "S(0)", "R", {4, 4}), T(1, "S(0)", "R", {8, 4}),
                               T(0, "S(1)", "R", {8, 8})};
  auto r = OptimizeTransforms(in, spec, {});
  REQUIRE(r.transforms.size() == 2);
  CHECK(r.transforms[0].mesh_dims == std::vector<int>{1, 2});
  CHECK(r.transforms[0].flattened);
  CHECK(r.transforms[0].logical_shape == Shape{8, 4});
  CHECK(r.transforms[1] == in[2]);
  CHECK(r.skipped.empty());
}

TEST_CASE("all_to_all and local transforms are never merged", "[engine][optimizer]") {
  Mesh mesh = AllFlattened({2, 2});
  CHECK(
      Unmerged({T(1, "S(0)", "S(1)", {4, 8}), T(0, "S(0)", "S(1)", {8, 8})}, Spec(mesh, "S(0),S(0)", {8, 8}))
          .skipped.empty());
  Unmerged({T(0, "R", "S(0)", {8, 8}), T(1, "R", "S(0)", {8, 8})}, Spec(mesh, "R,R", {8, 8}));
}

TEST_CASE("strided shard transforms are never merged (R-new keys use is_shard())", "[engine][optimizer]") {
  Mesh mesh = AllFlattened({2, 2});
  TensorSpec spec = Spec(mesh, "_S(0, 2),S(0)", {8, 8});
  std::vector<Transform> in = {T(1, "S(0)", "R", {8, 8}), T(0, "_S(0, 2)", "R", {8, 8})};
  CHECK(Unmerged(in, spec).skipped.empty());
  // Even identical strided pairs form no group.
  std::vector<Transform> same = {T(1, "_S(0, 2)", "R", {8, 8}), T(0, "_S(0, 2)", "R", {8, 8})};
  CHECK(Unmerged(same, spec).skipped.empty());
}
