// Backward (gradient) redistribute: PyTorch R-new Redistribute.backward (semantics §10).
// The grad's source is the forward dst; its target is BackwardTargetSpec(forward src, dst).

#include <catch2/catch.hpp>

#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

using namespace shardscope::engine;

namespace {

TensorSpec Spec(const Mesh& mesh, const char* placements, Shape shape, const char* order = nullptr) {
  std::optional<ShardOrder> o;
  if (order) o = ParseShardOrder(order, "test");
  return MakeSpec(mesh, ParsePlacements(placements, "test"), o, std::move(shape), DType::kF32,
                  ChunkRule::kTorch, {}, "test");
}

// Collectives the backward of forward `src` -> `dst` runs on rank 0.
int BackwardComms(const TensorSpec& src, const TensorSpec& dst) {
  Plan grad = MakePlan(dst, BackwardTargetSpec(src, dst), 0, {});
  return CountCollectives(grad.optimized, dst.mesh);
}

}  // namespace

TEST_CASE("backward target: Partial becomes Replicate under a shard or replicate grad",
          "[engine][backward]") {
  Mesh mesh({2, 2});
  // normalized[i] = R if grad[i] is shard-like or R and forward src[i] is Partial, else src[i].
  // {forward src, grad, target}
  const char* cases[][3] = {
      {"P(sum),P(sum)", "S(0),R", "R,R"},
      {"P(avg),R", "S(1),R", "R,R"},
      // Partial grad over a Partial src: stays (#170147/#170355 fix).
      {"P(sum),R", "P(sum),R", "P(sum),R"},
      // Non-partial src placements are kept whatever the grad is.
      {"S(0),R", "R,S(1)", "S(0),R"},
      {"R,S(1)", "P(sum),R", "R,S(1)"},
      // Mixed per mesh dim.
      {"P(sum),S(0)", "S(1),R", "R,S(0)"},
  };
  for (const auto& [src, grad, want] : cases) {
    INFO(src << " with grad " << grad);
    CHECK(BackwardTargetSpec(Spec(mesh, src, {8, 8}), Spec(mesh, grad, {8, 8})).placements ==
          ParsePlacements(want, "want"));
  }
}

TEST_CASE("backward target: a strided grad counts as shard-like", "[engine][backward]") {
  Mesh mesh({4, 2});
  // R-new tests is_shard() here (False for _S); we use shard-like so _S -> P never arises.
  TensorSpec src = Spec(mesh, "P(sum),R", {8, 8});
  TensorSpec dst = Spec(mesh, "_S(0, 2),S(0)", {8, 8});
  CHECK(BackwardTargetSpec(src, dst).placements == ParsePlacements("R,R", "want"));
}

TEST_CASE("backward target keeps mesh, shape and dtype but takes the default order", "[engine][backward]") {
  Mesh mesh({2, 2}, {"dp", "tp"});
  mesh.RegisterFlattened({0, 1});
  TensorSpec src = MakeSpec(mesh, ParsePlacements("S(0),S(0)", "t"), ParseShardOrder("0:1,0", "t"), {8, 8},
                            DType::kBF16, ChunkRule::kPhysicsNemo, {}, "t");
  TensorSpec dst = Spec(mesh, "R,R", {8, 8});
  TensorSpec target = BackwardTargetSpec(src, dst);
  CHECK(target.mesh == mesh);
  CHECK(target.shape == Shape{8, 8});
  CHECK(target.dtype == DType::kBF16);
  CHECK(target.chunking == ChunkRule::kPhysicsNemo);
  CHECK(target.placements == src.placements);
  // R-new builds the target DTensorSpec without shard_order -> default order.
  CHECK_FALSE(target.shard_order.has_value());
}

TEST_CASE("backward target rejects mismatched placement counts", "[engine][backward]") {
  TensorSpec a = Spec(Mesh({2, 2}), "R,R", {8});
  TensorSpec b = Spec(Mesh({4}), "R", {8});
  CHECK_THROWS_AS(BackwardTargetSpec(a, b), shardscope::Error);
}

TEST_CASE("backward collective counts of the T0/T1 cases", "[engine][backward]") {
  Mesh m1({4});
  // S->R forward: backward R->S, a local chunk: 0 comms, grad lands as S.
  TensorSpec s = Spec(m1, "S(0)", {8});
  TensorSpec r = Spec(m1, "R", {8});
  TensorSpec p = Spec(m1, "P(sum)", {8});
  CHECK(BackwardComms(s, r) == 0);
  CHECK(BackwardTargetSpec(s, r).placements == ParsePlacements("S(0)", "want"));
  // R->S forward: backward S->R, one all_gather.
  CHECK(BackwardComms(r, s) == 1);
  Plan ag = MakePlan(s, BackwardTargetSpec(r, s), 0, {});
  REQUIRE(ag.optimized.size() == 1);
  CHECK(ag.optimized[0].comm == CommKind::kAllGather);
  // P->R forward: backward R->P normalized to R->R: 0 comms.
  CHECK(BackwardComms(p, r) == 0);
  CHECK(MakePlan(r, BackwardTargetSpec(p, r), 0, {}).raw.empty());
  // P->P forward with a Partial grad: stays P->P, 0 comms.
  CHECK(BackwardComms(p, p) == 0);
  CHECK(BackwardTargetSpec(p, p).placements == ParsePlacements("P(sum)", "want"));
  // P->S forward: backward S->P normalized to S->R: one all_gather.
  CHECK(BackwardComms(p, s) == 1);
}
