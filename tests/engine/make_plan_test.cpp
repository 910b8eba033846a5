// MakePlan: validation and error paths, PyTorch's planner choice (semantics §2), optimizer and
// notation wiring. Expected traces come from §3/§4/§6/§9 of the reference document.

#include <catch2/catch.hpp>

#include <numeric>

#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

using namespace shardscope::engine;
using shardscope::ErrorCode;

namespace {

TensorSpec Spec(const Mesh& mesh, const char* placements, Shape shape, const char* order = nullptr,
                DType dtype = DType::kF32) {
  std::optional<ShardOrder> o;
  if (order) o = ParseShardOrder(order, "test");
  return MakeSpec(mesh, ParsePlacements(placements, "test"), o, std::move(shape), dtype, ChunkRule::kTorch,
                  {}, "test");
}

Mesh Flattened(Shape shape) {
  Mesh mesh(std::move(shape));
  mesh.RegisterAllFlattened();
  return mesh;
}

// Runs MakePlan expecting an Error; returns it for checks on code and message.
shardscope::Error PlanError(const TensorSpec& src, const TensorSpec& dst, int64_t rank = 0,
                            const PlanOptions& options = {}) {
  try {
    MakePlan(src, dst, rank, options);
  } catch (const shardscope::Error& e) {
    return e;
  }
  FAIL("MakePlan did not throw");
  return shardscope::InternalError("unreachable");
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

double SumCost(const std::vector<Transform>& ts) {
  return std::accumulate(ts.begin(), ts.end(), 0.0,
                         [](double a, const Transform& t) { return a + t.cost_us; });
}

}  // namespace

TEST_CASE("default specs use greedy and merge onto a flattened mesh", "[engine][make_plan]") {
  Mesh mesh = Flattened({2, 2});
  Plan plan = MakePlan(Spec(mesh, "S(0),S(0)", {8, 4}), Spec(mesh, "R,R", {8, 4}), 0, {});
  CHECK(plan.planner == PlannerKind::kGreedy);
  CHECK(plan.planner_reason == "default");
  // Greedy pass 1 unshards inner first: (1, S0->R, [4,4]), (0, S0->R, [8,4]).
  REQUIRE(plan.raw.size() == 2);
  CHECK(plan.raw[0].mesh_dims == std::vector<int>{1});
  CHECK(plan.raw[0].logical_shape == Shape{4, 4});
  CHECK(plan.raw[1].mesh_dims == std::vector<int>{0});
  CHECK(plan.raw[1].logical_shape == Shape{8, 4});
  REQUIRE(plan.optimized.size() == 1);
  CHECK(plan.optimized[0].flattened);
  CHECK(plan.skipped_merges.empty());
  CHECK(plan.notation == "S(0)[0]S(0)[1]-->RR");
  CHECK(plan.notation_unoptimized == "S(0)[0]S(0)[1]->S(0)R->RR");
  CHECK(plan.cost_us == plan.optimized[0].cost_us);
  CHECK(CountCollectives(plan.optimized, mesh) == 1);
}

TEST_CASE("without a flattened mesh the plan keeps both all_gathers and says why", "[engine][make_plan]") {
  Mesh mesh({2, 2});
  Plan plan = MakePlan(Spec(mesh, "S(0),S(0)", {8, 4}), Spec(mesh, "R,R", {8, 4}), 0, {});
  CHECK(plan.optimized == plan.raw);
  CHECK(plan.notation == "S(0)[0]S(0)[1]->S(0)R->RR");
  REQUIRE(plan.skipped_merges.size() == 1);
  CHECK(plan.skipped_merges[0].reason == "no_flattened_mesh");
  CHECK(plan.cost_us == Approx(SumCost(plan.raw)));
  CHECK(plan.cost_us > 0);

  PlanOptions off;
  off.optimize = false;
  Plan unopt =
      MakePlan(Spec(Flattened({2, 2}), "S(0),S(0)", {8, 4}), Spec(Flattened({2, 2}), "R,R", {8, 4}), 0, off);
  CHECK(unopt.optimized == unopt.raw);
  CHECK(unopt.skipped_merges.empty());
  CHECK(unopt.notation == unopt.notation_unoptimized);
}

TEST_CASE("the #194457 case is planned unmerged with the reason", "[engine][make_plan]") {
  Mesh mesh = Flattened({2, 2});
  Plan plan = MakePlan(Spec(mesh, "S(0),S(0)", {5, 3}), Spec(mesh, "R,R", {5, 3}), 0, {});
  // Semantics §6.3: the planner emits (1,S0->R,[3,3]),(0,S0->R,[5,3]).
  REQUIRE(plan.raw.size() == 2);
  CHECK(plan.raw[0].logical_shape == Shape{3, 3});
  CHECK(plan.raw[1].logical_shape == Shape{5, 3});
  CHECK(plan.optimized == plan.raw);
  REQUIRE(plan.skipped_merges.size() == 1);
  CHECK(plan.skipped_merges[0].reason == "uneven_tensor_shape");
  CHECK(plan.notation == "S(0)[0]S(0)[1]->S(0)R->RR");
  // Rank 2 is coordinate (1,0): its mesh-dim-0 chunk of 5 is 2 rows.
  Plan rank2 = MakePlan(Spec(mesh, "S(0),S(0)", {5, 3}), Spec(mesh, "R,R", {5, 3}), 2, {});
  CHECK(rank2.raw[0].logical_shape == Shape{2, 3});
}

TEST_CASE("partials: reduce_scatter merge, avg_scale, and no reordering", "[engine][make_plan]") {
  Mesh m2 = Flattened({2, 2});
  Plan rs = MakePlan(Spec(m2, "P(sum),P(sum)", {8, 4}), Spec(m2, "S(0),S(0)", {8, 4}), 0, {});
  CHECK(rs.notation_unoptimized == "P(sum)P(sum)->S(0)P(sum)->S(0)[0]S(0)[1]");
  CHECK(rs.notation == "P(sum)P(sum)-->S(0)[0]S(0)[1]");

  Mesh m3 = Flattened({2, 2, 2});
  Plan avg = MakePlan(Spec(m3, "P(avg),P(avg),P(sum)", {4, 4}), Spec(m3, "R,R,R", {4, 4}), 0, {});
  REQUIRE(avg.optimized.size() == 1);
  CHECK(avg.optimized[0].avg_scale == 4);
  CHECK(avg.optimized[0].src == Placement::Partial(ReduceOp::kSum));
  CHECK(avg.notation == "P(avg)P(avg)P(sum)-->RRR");

  // P,S0,P -> R,R,R: greedy pass 1 runs inner to outer: AR(2), AG(1), AR(0); nothing merges.
  Plan mixed = MakePlan(Spec(m3, "P(sum),S(0),P(sum)", {8, 4}), Spec(m3, "R,R,R", {8, 4}), 0, {});
  REQUIRE(mixed.optimized.size() == 3);
  CHECK(mixed.optimized[0].comm == CommKind::kAllReduce);
  CHECK(mixed.optimized[1].comm == CommKind::kAllGather);
  CHECK(mixed.optimized[2].comm == CommKind::kAllReduce);
  CHECK(mixed.skipped_merges.empty());
  CHECK(mixed.notation == "P(sum)S(0)P(sum)->P(sum)S(0)R->P(sum)RR->RRR");
}

TEST_CASE("planner choice follows PyTorch's rule", "[engine][make_plan]") {
  Mesh mesh({2, 2, 2});
  SECTION("non-default order -> graph (semantics §4 verified trace)") {
    Plan plan = MakePlan(Spec(mesh, "S(0),S(0),S(0)", {8, 8, 8}, "0:1,0,2"),
                         Spec(mesh, "R,S(0),S(0)", {8, 8, 8}), 0, {});
    CHECK(plan.planner == PlannerKind::kGraph);
    CHECK(plan.planner_reason == "non-default shard order");
    CHECK(plan.notation == "S(0)[1]S(0)[0]S(0)[2]->S(0)[1]S(0)[0]R->RS(0)R->RS(0)[0]S(0)[1]");
  }
  SECTION("strided shard -> graph") {
    Mesh m42({4, 2});
    // [_S(0,2), S(0)] == [S0,S0] with order (1,0): mesh dim 0 is newest and goes first.
    Plan plan = MakePlan(Spec(m42, "_S(0, 2),S(0)", {16, 4}), Spec(m42, "R,R", {16, 4}), 0, {});
    CHECK(plan.planner == PlannerKind::kGraph);
    CHECK(plan.planner_reason == "strided shard");
    CHECK(plan.notation == "S(0)[1]S(0)[0]->RS(0)->RR");
    // Ascending all_gathers cannot merge (and no flattened mesh is registered anyway).
    REQUIRE(plan.skipped_merges.size() == 1);
    CHECK(plan.skipped_merges[0].reason == "non_ascending_mesh_dims");
  }
  SECTION("undecodable strided shard: graph falls back to greedy (R-new)") {
    Mesh m42({4, 2});
    Plan plan = MakePlan(Spec(m42, "_S(0, 3),S(0)", {24, 4}), Spec(m42, "R,R", {24, 4}), 0, {});
    CHECK(plan.planner == PlannerKind::kGreedy);
    CHECK(plan.planner_reason == "graph fell back: strided shard not decodable");
    // Greedy pass 1, inner to outer.
    REQUIRE(plan.raw.size() == 2);
    CHECK(plan.raw[0].mesh_dims == std::vector<int>{1});
    CHECK(plan.raw[0].src == Placement::Shard(0));
    CHECK(plan.raw[1].mesh_dims == std::vector<int>{0});
    CHECK(plan.raw[1].src == Placement::StridedShard(0, 3));
    CHECK(plan.notation.rfind("_S(0, 3)", 0) == 0);

    PlanOptions graph;
    graph.planner = PlannerChoice::kGraph;
    Plan forced = MakePlan(Spec(m42, "_S(0, 3),S(0)", {24, 4}), Spec(m42, "R,R", {24, 4}), 0, graph);
    CHECK(forced.planner == PlannerKind::kGreedy);
    CHECK(forced.planner_reason ==
          "forced by --planner graph (PyTorch's rule picks graph: strided shard); graph fell back: strided "
          "shard "
          "not decodable");
  }
  SECTION("forced planners say so") {
    PlanOptions graph;
    graph.planner = PlannerChoice::kGraph;
    Plan g = MakePlan(Spec(mesh, "S(0),R,R", {8, 8}), Spec(mesh, "R,R,R", {8, 8}), 0, graph);
    CHECK(g.planner == PlannerKind::kGraph);
    CHECK(g.planner_reason == "forced by --planner graph (PyTorch's rule picks greedy: default)");
    CHECK(g.notation == "S(0)RR->RRR");

    PlanOptions greedy;
    greedy.planner = PlannerChoice::kGreedy;
    Plan gr = MakePlan(Spec(mesh, "S(0),R,R", {8, 8}), Spec(mesh, "R,R,R", {8, 8}), 0, greedy);
    CHECK(gr.planner == PlannerKind::kGreedy);
    CHECK(gr.planner_reason == "forced by --planner greedy (PyTorch's rule picks greedy: default)");
  }
  SECTION("forcing greedy on a non-default order is overridden by PyTorch's rule") {
    // R-new _gen_transform_infos_non_cached: has_non_default_order sets use_graph_based_transform
    // before the requested planner is read.
    PlanOptions greedy;
    greedy.planner = PlannerChoice::kGreedy;
    Plan src_order =
        MakePlan(Spec(mesh, "S(0),S(0),R", {8, 8}, "0:1,0"), Spec(mesh, "R,R,R", {8, 8}), 0, greedy);
    CHECK(src_order.planner == PlannerKind::kGraph);
    CHECK(src_order.planner_reason ==
          "--planner greedy overridden by PyTorch's rule: non-default shard order forces the graph planner "
          "(_gen_transform_infos_non_cached)");
    // The same plan as auto: S(0)[1]S(0)[0] pops mesh dim 0 (newest) first.
    CHECK(src_order.notation == "S(0)[1]S(0)[0]R->RS(0)R->RRR");
    Plan dst_order =
        MakePlan(Spec(mesh, "R,R,R", {8, 8}), Spec(mesh, "S(0),S(0),R", {8, 8}, "0:1,0"), 0, greedy);
    CHECK(dst_order.planner == PlannerKind::kGraph);
  }
}

TEST_CASE("no-op plans are empty; equal placements with different orders are not", "[engine][make_plan]") {
  Mesh mesh({2, 2});
  Plan same = MakePlan(Spec(mesh, "S(0),R", {8, 8}), Spec(mesh, "S(0),R", {8, 8}), 0, {});
  CHECK(same.raw.empty());
  CHECK(same.optimized.empty());
  CHECK(same.notation == "S(0)R");
  CHECK(same.notation_unoptimized == "S(0)R");
  CHECK(same.cost_us == 0.0);

  // R-new skips the no-op on a 1-d mesh.
  Mesh m1({4});
  CHECK(MakePlan(Spec(m1, "S(0)", {8}), Spec(m1, "S(0)", {8}), 3, {}).raw.empty());
  Plan one = MakePlan(Spec(m1, "S(0)", {8}), Spec(m1, "R", {8}), 3, {});
  REQUIRE(one.raw.size() == 1);
  CHECK(one.raw[0].logical_shape == Shape{8});
  CHECK(one.notation == "S(0)->R");

  // PR #172924: placements equal, orders differ -> a real plan.
  Plan reorder = MakePlan(Spec(mesh, "S(0),S(0)", {8, 8}, "0:1,0"), Spec(mesh, "S(0),S(0)", {8, 8}), 0, {});
  CHECK_FALSE(reorder.raw.empty());
  CHECK(reorder.notation.rfind("S(0)[1]S(0)[0]", 0) == 0);
  CHECK(reorder.notation.size() > std::string("S(0)[0]S(0)[1]").size());
  CHECK(reorder.notation.substr(reorder.notation.size() - 14) == "S(0)[0]S(0)[1]");
}

TEST_CASE("R -> P (internal path) and sum+avg mixes are allowed", "[engine][make_plan]") {
  Mesh mesh({2, 2});
  PlanOptions internal;
  internal.internal_partial_target = true;
  Plan rp = MakePlan(Spec(mesh, "R,R", {4, 4}), Spec(mesh, "P(sum),R", {4, 4}), 0, internal);
  REQUIRE(rp.raw.size() == 1);
  CHECK(rp.raw[0].comm == CommKind::kLocal);
  CHECK(CountCollectives(rp.optimized, mesh) == 0);
  Plan mix = MakePlan(Spec(mesh, "P(avg),P(sum)", {4, 4}), Spec(mesh, "R,R", {4, 4}), 0, {});
  CHECK(mix.raw.size() == 2);
}

TEST_CASE("MakePlan error paths name the bad token", "[engine][make_plan]") {
  Mesh mesh({2, 2});
  TensorSpec src = Spec(mesh, "S(0),R", {8, 8});

  SECTION("meshes differ in shape or names") {
    auto e = PlanError(src, Spec(Mesh({4}), "R", {8, 8}));
    CHECK(e.code() == ErrorCode::kInvalidInput);
    CHECK(Contains(e.what(), "src and dst meshes differ"));
    CHECK(Contains(e.what(), "2x2 vs 4"));
    auto e2 = PlanError(src, Spec(Mesh({2, 2}, {"dp", "tp"}), "R,R", {8, 8}));
    CHECK(e2.code() == ErrorCode::kInvalidInput);
    CHECK(Contains(e2.what(), "src and dst meshes differ"));
    CHECK(Contains(e2.what(), "2x2(dp,tp)"));
  }
  SECTION("a different flattened set is the same mesh") {
    CHECK_NOTHROW(MakePlan(src, Spec(Flattened({2, 2}), "R,R", {8, 8}), 0, {}));
  }
  SECTION("shapes differ") {
    auto e = PlanError(src, Spec(mesh, "R,R", {8, 4}));
    CHECK(e.code() == ErrorCode::kInvalidInput);
    CHECK(Contains(e.what(), "8x8 vs 8x4"));
  }
  SECTION("dtypes differ") {
    auto e = PlanError(src, Spec(mesh, "R,R", {8, 8}, nullptr, DType::kBF16));
    CHECK(e.code() == ErrorCode::kInvalidInput);
    CHECK(Contains(e.what(), "f32 vs bf16"));
  }
  SECTION("shard -> partial") {
    auto e = PlanError(Spec(mesh, "R,S(0)", {8, 8}), Spec(mesh, "R,P(sum)", {8, 8}));
    CHECK(e.code() == ErrorCode::kUnsupported);
    CHECK(std::string(e.what()) ==
          "mesh dim 1: S(0) -> P(sum) is not supported (PyTorch raises: redistribute from S(0) to P(sum) not "
          "supported yet)");
    auto e2 =
        PlanError(Spec(Mesh({4, 2}), "_S(0, 2),S(0)", {8, 8}), Spec(Mesh({4, 2}), "P(sum),S(0)", {8, 8}));
    CHECK(e2.code() == ErrorCode::kUnsupported);
    CHECK(Contains(e2.what(), "mesh dim 0: _S(0, 2) -> P(sum)"));
  }
  SECTION("partial -> partial of another op") {
    auto e = PlanError(Spec(mesh, "P(sum),R", {8, 8}), Spec(mesh, "P(avg),R", {8, 8}));
    CHECK(e.code() == ErrorCode::kUnsupported);
    CHECK(Contains(e.what(), "mesh dim 0: P(sum) -> P(avg)"));
    CHECK(Contains(e.what(), "one partial type (sum) to another (avg)"));
  }
  SECTION("replicate -> partial(product)") {
    auto e = PlanError(Spec(mesh, "R,R", {8, 8}), Spec(mesh, "R,P(product)", {8, 8}));
    CHECK(e.code() == ErrorCode::kUnsupported);
    CHECK(Contains(e.what(), "mesh dim 1: R -> P(product)"));
  }
  SECTION("mixed partial ops in a hand-built spec") {
    TensorSpec bad = src;
    bad.placements = {Placement::Partial(ReduceOp::kSum), Placement::Partial(ReduceOp::kMax)};
    auto e = PlanError(bad, Spec(mesh, "R,R", {8, 8}));
    CHECK(e.code() == ErrorCode::kUnsupported);
    CHECK(Contains(e.what(), "P(sum),P(max)"));
    auto e2 = PlanError(Spec(mesh, "R,R", {8, 8}), bad);
    CHECK(Contains(e2.what(), "dst: mixed Partial reduce ops"));
  }
  SECTION("hand-built specs with too few placements or an out-of-range dim") {
    TensorSpec few = src;
    few.placements = {Placement::Shard(0)};
    auto e = PlanError(few, Spec(mesh, "R,R", {8, 8}));
    CHECK(e.code() == ErrorCode::kInvalidInput);
    CHECK(Contains(e.what(), "1 placements 'S(0)' for a 2-d mesh"));
    TensorSpec far = src;
    far.placements = {Placement::Shard(2), Placement::Replicate()};
    auto e2 = PlanError(Spec(mesh, "R,R", {8, 8}), far);
    CHECK(e2.code() == ErrorCode::kInvalidInput);
    CHECK(Contains(e2.what(), "'S(2)'"));
  }
  SECTION("rank outside the mesh") {
    auto e = PlanError(src, Spec(mesh, "R,R", {8, 8}), 4);
    CHECK(e.code() == ErrorCode::kInvalidInput);
    CHECK(Contains(e.what(), "rank 4"));
    CHECK(PlanError(src, Spec(mesh, "R,R", {8, 8}), -1).code() == ErrorCode::kInvalidInput);
  }
}

// Issue 16 item 1, revised by issue 36. R-new _gen_transform_infos_non_cached tests
// has_strided_shard before the planner flag, so PyTorch plans any _StridedShard with the graph
// planner even when greedy is asked for; shardscope does the same and names the rule.
TEST_CASE("forcing greedy on a _StridedShard is overridden by PyTorch's rule", "[engine][make_plan]") {
  Mesh mesh({2, 2, 4});
  PlanOptions greedy;
  greedy.planner = PlannerChoice::kGreedy;
  // dst decodes (SPEC §8.3: right to left, sf 1 -> [2], sf 4 = size(2) -> [2,1], sf 8 -> [2,1,0]).
  TensorSpec src = Spec(mesh, "S(0),P(max),S(0)", {5}, nullptr, DType::kI32);
  TensorSpec dst = Spec(mesh, "_S(0, 8),_S(0, 4),S(0)", {5}, nullptr, DType::kI32);
  Plan forced = MakePlan(src, dst, 0, greedy);
  CHECK(forced.planner == PlannerKind::kGraph);
  CHECK(forced.planner_reason ==
        "--planner greedy overridden by PyTorch's rule: strided shard forces the graph planner "
        "(_gen_transform_infos_non_cached)");
  // auto follows the same rule and plans the same transforms.
  Plan plan = MakePlan(src, dst, 0, {});
  CHECK(plan.planner == PlannerKind::kGraph);
  CHECK(plan.notation == forced.notation);

  // Not decodable (_S(0, 3) on a (4,2) mesh, T1 test_strided_shard_redistribution[2d]): the
  // graph planner raises _StridedShardNotDecodableError and PyTorch falls back to greedy. The
  // notation prints _S(0, 3) without a position (format_shard_order_str indexes Shards only).
  Mesh m42({4, 2});
  Plan fallback = MakePlan(Spec(m42, "_S(0, 3),S(0)", {24, 4}), Spec(m42, "R,R", {24, 4}), 0, greedy);
  CHECK(fallback.planner == PlannerKind::kGreedy);
  CHECK(Contains(fallback.planner_reason, "--planner greedy overridden"));
  CHECK(Contains(fallback.planner_reason, "graph fell back: strided shard not decodable"));
  CHECK(fallback.notation == "_S(0, 3)S(0)[1]->_S(0, 3)R->RR");
}

// Issues 16 and 36: with an explicit shard order the _StridedShards are literal (R-new
// _try_normalize_spec with use_strided_shard_as_shard_order False). Hand derivation for mesh
// 2x2x2, 31x13x11 f32 (T = 17732 bytes), S(0),S(0),_S(0,3) order 0:0,1,2 -> R,S(0),S(0) order 0:1,2
// (docs/planning.md, "_StridedShard moves"):
// - mesh dim 0 must reach R, so it must be the newest of tensor dim 0: mesh dims 2 and 1 leave
//   first; mesh dim 1 must also return (it is position 1 now, position 0 in the target). Each of
//   the three mesh dims pays at least one collective (>= 6.6 + 0.6 us on a size-2 dim).
// - three collectives suffice only as all_gathers (_S->R case 8, S->R, S->R) followed by two free
//   chunks in the target's order; any all_to_all (case 7 for the _S, case 1 for mesh dim 1) leaves
//   a Shard on another tensor dim that costs a fourth collective.
// - the first step all_gathers T/8 bytes to T/4: 6.6 + 0.6 + (T/4 / 2) / 87.7e9 * 1e6 us.
// - notation (stringify_transform_infos): the _S(0, 3) source pops nothing from tensor dim 0's
//   list and prints without a position; each later plain Shard pops the newest entry, so the
//   states print S(0)[0]S(0)[1]R, S(0)[0]RR, RRR, RS(0)[1]R and RS(0)[1]S(0)[2].
// The issue quotes PyTorch's path through case 7 (_S(0, 3) -> S(1)) and two all_to_alls back;
// it takes four plain collectives between S(0)[0]S(0)[1]S(1) and RS(0)[1]S(1) where the path
// through two all_gathers and a chunk takes two, so no edge cost of the alpha-beta model makes it
// the cheapest (docs/planning.md lists this as a remaining difference).
TEST_CASE("literal _StridedShard with an explicit shard order plans like R-new", "[engine][make_plan]") {
  Mesh mesh({2, 2, 2});
  TensorSpec src = Spec(mesh, "S(0),S(0),_S(0,3)", {31, 13, 11}, "0:0,1,2");
  TensorSpec dst = Spec(mesh, "R,S(0),S(0)", {31, 13, 11}, "0:1,2");
  REQUIRE(src.shard_order);  // kept although it is the default order: it makes the _S literal
  Plan plan = MakePlan(src, dst, 0, {});
  CHECK(plan.planner == PlannerKind::kGraph);
  CHECK(plan.notation ==
        "S(0)[0]S(0)[1]_S(0, 3)->S(0)[0]S(0)[1]R->S(0)[0]RR->RRR->RS(0)[1]R->RS(0)[1]S(0)[2]");
  REQUIRE(plan.raw.size() == 5);
  CHECK(plan.raw[0].src == Placement::StridedShard(0, 3));
  CHECK(plan.raw[0].comm == CommKind::kAllGather);
  // get_logical_shape at rank 0: dims 0 and 1 of the order applied, 31 -> 16 -> 8.
  CHECK(plan.raw[0].logical_shape == Shape{8, 13, 11});
  const double t_gb = 17732.0 / (1024.0 * 1024.0 * 1024.0);
  CHECK(plan.raw[0].cost_us == Approx(6.6 + 0.6 + (t_gb / 4 / 2) / 87.7 * 1e6));
  CHECK(plan.cost_us == Approx(3 * 7.2 + (t_gb / 8 + t_gb / 4 + t_gb / 2) / 87.7 * 1e6));

  // Without the order the same placements are an encoding (not decodable here: sf 3 is no
  // product of mesh sizes), so PyTorch falls back to greedy.
  Plan encoded = MakePlan(Spec(mesh, "S(0),S(0),_S(0,3)", {31, 13, 11}), dst, 0, {});
  CHECK(encoded.planner == PlannerKind::kGreedy);
}

// Issue 16 item 3. API DTensor.redistribute: for a mesh dim whose target is Partial and differs
// from the source, "Can not redistribute from X to Y, redistributing to Partial is for internal
// use only!" (T0 test_redistribute_to_partial: R -> P refused, P(sum) -> P(sum) allowed).
TEST_CASE("a new Partial target is refused like PyTorch's public API unless internal",
          "[engine][make_plan]") {
  Mesh mesh({2, 2});
  auto e = PlanError(Spec(mesh, "R,S(0)", {4, 4}), Spec(mesh, "P(sum),S(0)", {4, 4}));
  CHECK(e.code() == ErrorCode::kUnsupported);
  CHECK(Contains(e.what(),
                 "mesh dim 0: Can not redistribute from R to P(sum), redistributing to Partial is for "
                 "internal use only!"));
  // Keeping a Partial is not redistributing to one.
  Plan keep = MakePlan(Spec(mesh, "P(sum),S(0)", {4, 4}), Spec(mesh, "P(sum),R", {4, 4}), 0, {});
  CHECK(keep.planner_reason == "default");
  // The internal path plans it and says so.
  PlanOptions internal;
  internal.internal_partial_target = true;
  Plan rp = MakePlan(Spec(mesh, "R,S(0)", {4, 4}), Spec(mesh, "P(sum),S(0)", {4, 4}), 0, internal);
  CHECK(rp.notation == "RS(0)->P(sum)S(0)");
  CHECK(Contains(rp.planner_reason, "internal redistribute to Partial"));
}

// Issue 16 item 1, the graph side: an uneven _StridedShard holds other elements than the shard
// order it decodes to (PyTorch #168134), so the graph plan, which ends on the decoded order, would
// leave ranks with the wrong rows. Mesh 4x2, 9 rows, R,R -> _S(0,2),S(0):
// - literal: _S(0,2) over 4 splits 9 into pieces 5,4, chunk 3 of each is {} and [8,9); S(0)
//   then gives rank (3,0) = rank 6 the row 8;
// - decoded (S0S0, order 0:1,0): mesh dim 1 first, 9 -> [0,5) for rank 6, then 4-way 2,2,1,0
//   leaves rank 6 empty.
TEST_CASE("a graph plan that would end on other rows than an uneven _StridedShard is refused",
          "[engine][make_plan]") {
  Mesh mesh({4, 2});
  auto e = PlanError(Spec(mesh, "R,R", {9}), Spec(mesh, "_S(0, 2),S(0)", {9}));
  CHECK(e.code() == ErrorCode::kUnsupported);
  CHECK(Contains(e.what(), "refused on purpose: PyTorch runs the graph plan RR->"));
  CHECK(Contains(
      e.what(),
      "cannot run exactly (silent data corruption): the plan ends with rank 6 holding other elements"));
  CHECK(Contains(e.what(), "safe: give the shard order explicitly, or make every split even"));
  CHECK(Contains(e.what(), "#168134"));
  // 8 rows split evenly: the same layout both ways, so the plan is made.
  CHECK(MakePlan(Spec(mesh, "R,R", {8}), Spec(mesh, "_S(0, 2),S(0)", {8}), 0, {}).planner ==
        PlannerKind::kGraph);
}

// Found by the traced property sweep: greedy's fallback (split factors not decodable) plans no
// transform for equal placements whose shard orders differ, and the executor then refused the
// run ("ends with rank 0 holding shape 2 but ... gives it 2") after `plan` had printed "source and
// destination are the same". Mesh 2x1x4, 8 elements, _S(0,2),R,_S(0,3): with order 0:2,0 (mesh
// dim 2 first) rank 0 holds rows {0, 6}; in the default order (dim 0 first) it holds {0, 4}.
TEST_CASE("an order-only change that greedy's fallback plans as nothing is refused, not run",
          "[engine][make_plan]") {
  Mesh mesh({2, 1, 4});
  auto e = PlanError(Spec(mesh, "_S(0, 2),R,_S(0, 3)", {8}, "0:2,0"), Spec(mesh, "_S(0, 2),R,_S(0, 3)", {8}));
  CHECK(e.code() == ErrorCode::kUnsupported);
  CHECK(Contains(
      e.what(),
      "cannot run exactly (silent data corruption): the plan ends with rank 0 holding other elements"));
  // The same order on both sides is nothing to do, and is planned as such.
  const TensorSpec same = Spec(mesh, "_S(0, 2),R,_S(0, 3)", {8}, "0:2,0");
  CHECK(MakePlan(same, same, 0, {}).raw.empty());
}

// Issue 36: each _StridedShard move of the graph planner where it is the cheapest path, derived
// by hand from get_next_state (docs/planning.md) and the cost model (an all_to_all with a _S side
// costs all_gather_cost of the local bytes; _S -> R all_gathers n times those bytes).
TEST_CASE("the graph planner takes cases 7, 9 and 10 where they are cheapest",
          "[engine][make_plan][strided]") {
  Mesh mesh({2, 2, 2});
  SECTION("case 9: S(0) -> _S(1, 5) by all_to_all (the issue's second case, PyTorch's string)") {
    // S(0)[0]S(0)[1]R -> R_S(1, 5)S(0) (orders 0:2 and 1:1). Mesh dim 0 must become R, so mesh
    // dim 1 (newer in tensor dim 0) leaves first: to _S(1, 5) by case 9 it is already final
    // (one all_to_all of T/4 local bytes); to R it needs a second all_gather. Then mesh dim 0
    // gathers and mesh dim 2 chunks.
    Plan plan = MakePlan(Spec(mesh, "S(0),S(0),R", {31, 13, 11}, "0:0,1"),
                         Spec(mesh, "R,_S(1, 5),S(0)", {31, 13, 11}, "0:2;1:1"), 0, {});
    CHECK(plan.notation == "S(0)[0]S(0)[1]R->S(0)_S(1, 5)R->R_S(1, 5)R->R_S(1, 5)S(0)");
    REQUIRE(plan.raw.size() == 3);
    CHECK(plan.raw[0].comm == CommKind::kAllToAll);
    const double t_gb = 17732.0 / (1024.0 * 1024.0 * 1024.0);
    CHECK(plan.raw[0].cost_us == Approx(7.2 + (t_gb / 4 / 2) / 87.7 * 1e6));
  }
  SECTION("case 7: _S(0, 2) -> S(1) by all_to_all") {
    // One all_to_all of the local bytes beats all_gather (n times the bytes) plus a free chunk.
    Plan plan = MakePlan(Spec(mesh, "_S(0, 2),R,S(2)", {9, 6, 5}, "0:0;2:2", DType::kF64),
                         Spec(mesh, "S(1),R,S(2)", {9, 6, 5}, nullptr, DType::kF64), 0, {});
    CHECK(plan.notation == "_S(0, 2)RS(2)->S(1)RS(2)");
    REQUIRE(plan.raw.size() == 1);
    CHECK(plan.raw[0].comm == CommKind::kAllToAll);
  }
  SECTION("case 10: P(sum) -> _S(1, 2) by reduce_scatter") {
    // One reduce_scatter beats all_reduce (twice the ring) plus a free strided chunk.
    Plan plan = MakePlan(Spec(mesh, "P(sum),R,S(0)", {12, 10}, nullptr, DType::kI32),
                         Spec(mesh, "_S(1, 2),R,S(0)", {12, 10}, "0:2;1:0", DType::kI32), 0, {});
    CHECK(plan.notation == "P(sum)RS(0)->_S(1, 2)RS(0)");
    REQUIRE(plan.raw.size() == 1);
    CHECK(plan.raw[0].comm == CommKind::kReduceScatter);
  }
}

TEST_CASE("make_plan: the greedy fallback follows the error's type, not its words", "[engine][make_plan]") {
  // R-new falls back to greedy on _StridedShardNotDecodableError, an exception type; its message
  // is for people and may be reworded without turning the fallback off.
  Mesh m42({4, 2});
  const TensorSpec src = Spec(m42, "_S(0, 3),S(0)", {24, 4});
  const TensorSpec dst = Spec(m42, "R,R", {24, 4});
  CHECK_THROWS_AS(PlanGraph(src, dst, 0, {}), StridedShardNotDecodable);
  CHECK(
      GraphFallsBackToGreedy(StridedShardNotDecodable("reworded: no shard order gives these split factors")));
  CHECK(GraphFallsBackToGreedy(StridedShardNotDecodable("")));
  // Another unsupported request is no fallback, even when its message says the old words.
  CHECK_FALSE(GraphFallsBackToGreedy(shardscope::Unsupported("graph planner: placements are not decodable")));
  CHECK_FALSE(GraphFallsBackToGreedy(shardscope::Unsupported("graph planner: no path")));
  try {
    (void)PlanGraph(src, dst, 0, {});
  } catch (const shardscope::Error& e) {
    CHECK(e.code() == ErrorCode::kUnsupported);  // callers catching Error see what they saw before
  }
}
