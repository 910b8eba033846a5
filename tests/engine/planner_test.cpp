// Greedy and graph planners and the cost model against PyTorch's rules and the worked examples
// of docs/pytorch-semantics.md (§3 greedy table, §4 verified Dijkstra traces, §5 formulas).
// Transform lists are read off the reference notation strings by hand: each "->" changes one
// mesh dim, and its logical shape is derived from torch.chunk with the rank's coordinate.

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>

#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

using namespace shardscope::engine;

namespace {

TensorSpec Spec(Shape mesh, const char* placements, Shape shape, const char* order = nullptr,
                DType dtype = DType::kF32, ChunkRule rule = ChunkRule::kTorch,
                std::map<int, std::vector<int64_t>> explicit_sizes = {}) {
  std::optional<ShardOrder> o;
  if (order) o = ParseShardOrder(order, "test order");
  return MakeSpec(Mesh(std::move(mesh)), ParsePlacements(placements, "test"), std::move(o), std::move(shape),
                  dtype, rule, std::move(explicit_sizes), "test");
}

struct Step {
  int mesh_dim;
  std::string src;
  std::string dst;
  Shape logical_shape;
};

// The costs of the plan's first want.size() transforms, in order.
void CheckCosts(const std::vector<Transform>& got, const std::vector<double>& want) {
  REQUIRE(got.size() >= want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("transform " << i);
    CHECK(got[i].cost_us == Approx(want[i]));
  }
}

void CheckSteps(const std::vector<Transform>& got, const std::vector<Step>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("transform " << i);
    CHECK(got[i].mesh_dims == std::vector<int>{want[i].mesh_dim});
    CHECK(got[i].src.ToString() == want[i].src);
    CHECK(got[i].dst.ToString() == want[i].dst);
    CHECK(got[i].logical_shape == want[i].logical_shape);
    CHECK(got[i].comm == CommKindOf(got[i].src, got[i].dst));
    CHECK_FALSE(got[i].flattened);
  }
}

// §5 ring model written out: 6.6 + hops*lat + (GB*hops/n)/bw*1e6 with GB = bytes/2^30;
// all_gather and reduce_scatter use n-1 hops, all_reduce 2(n-1).
double RingUs(double bytes, double n, double hops, double bw, double lat) {
  return 6.6 + hops * lat + (bytes / 1073741824.0 * hops / n) / bw * 1e6;
}
double IntraAllGatherUs(double bytes, double n) { return RingUs(bytes, n, n - 1, 87.7, 0.6); }

double Sum(const std::vector<Transform>& ts) {
  double s = 0;
  for (const auto& t : ts) s += t.cost_us;
  return s;
}

const PlanOptions kDefault{};

}  // namespace

// ---- cost model ----

TEST_CASE("mesh topology: dims past devices_per_host get 0.22x bandwidth and 2.7 us",
          "[engine][planner][cost]") {
  // (2,2,2) with 8 per host: running products 2,4,8 never exceed 8, so every dim is intra-host.
  MeshTopo t = BuildMeshTopo(Mesh({2, 2, 2}), 8);
  CHECK(t.devices == std::vector<int64_t>{2, 2, 2});
  CHECK(t.bandwidth_gbps == std::vector<double>{87.7, 87.7, 87.7});
  CHECK(t.latency_us == std::vector<double>{0.6, 0.6, 0.6});
  // 4 per host: products 2,4,8 -> only mesh dim 0 (product 8 > 4) crosses hosts.
  t = BuildMeshTopo(Mesh({2, 2, 2}), 4);
  CHECK(t.bandwidth_gbps[0] == Approx(19.294));
  CHECK(t.latency_us[0] == 2.7);
  CHECK(t.bandwidth_gbps[1] == 87.7);
  CHECK(t.latency_us[2] == 0.6);
  // (4,4): products 4 then 16 > 8.
  t = BuildMeshTopo(Mesh({4, 4}), 8);
  CHECK(t.devices == std::vector<int64_t>{4, 4});
  CHECK(t.latency_us == std::vector<double>{2.7, 0.6});
  // A 16-way 1-d mesh spans two hosts.
  t = BuildMeshTopo(Mesh({16}), 8);
  CHECK(t.latency_us == std::vector<double>{2.7});
}

TEST_CASE("collective cost formulas", "[engine][planner][cost]") {
  MeshTopo t = BuildMeshTopo(Mesh({4, 2}), 4);  // dim 1 intra (2), dim 0 inter (8 > 4)
  // all_gather of 1 GB over 2 intra: 6.6 + 0.6 + (0.5/87.7)*1e6 (calculator: 5708.454275940707).
  CHECK(AllGatherCostUs(1.0, t, 1) == Approx(5708.454275940707).epsilon(1e-12));
  CHECK(ReduceScatterCostUs(1.0, t, 1) == Approx(5708.454275940707).epsilon(1e-12));
  // all_reduce of 0.5 GB over 4 inter: 6.6 + 6*2.7 + (0.5*6/4)/19.294*1e6 = 38894.98824505028.
  CHECK(AllReduceCostUs(0.5, t, 0) == Approx(38894.98824505028).epsilon(1e-12));
  // A size-1 dim still pays the 6.6 us base in PyTorch's model.
  MeshTopo one = BuildMeshTopo(Mesh({1, 2}), 8);
  CHECK(AllGatherCostUs(1.0, one, 0) == Approx(6.6));
  CHECK_THROWS_AS(AllGatherCostUs(1.0, t, 2), shardscope::Error);
}

TEST_CASE("transition costs follow _compute_placement_transition_cost", "[engine][planner][cost]") {
  MeshTopo t = BuildMeshTopo(Mesh({2, 4}), 8);
  const double b0 = 1.0 / 1024;  // GB
  auto cost = [&](const char* a, const char* b, double& gb) {
    return TransitionCostUs(ParsePlacement(a, "a"), ParsePlacement(b, "b"), t, 1, gb);
  };
  double gb = b0;
  // S->R: bytes *= n first, then all_gather.
  CHECK(cost("S(0)", "R", gb) == Approx(RingUs(4 * b0 * 1073741824.0, 4, 3, 87.7, 0.6)));
  CHECK(gb == 4 * b0);
  gb = b0;
  CHECK(cost("S(0)", "S(1)", gb) == Approx(RingUs(b0 * 1073741824.0, 4, 3, 87.7, 0.6) + 1.0));
  CHECK(gb == b0);
  CHECK(cost("P(sum)", "R", gb) == Approx(RingUs(b0 * 1073741824.0, 4, 6, 87.7, 0.6)));
  CHECK(gb == b0);
  // P->S: reduce_scatter of the current bytes, then bytes /= n.
  CHECK(cost("P(sum)", "S(0)", gb) == Approx(RingUs(b0 * 1073741824.0, 4, 3, 87.7, 0.6)));
  CHECK(gb == b0 / 4);
  gb = b0;
  CHECK(cost("R", "S(1)", gb) == 0.0);
  CHECK(gb == b0 / 4);
  gb = b0;
  CHECK(std::isinf(cost("S(0)", "P(sum)", gb)));
  CHECK(std::isinf(cost("P(sum)", "P(avg)", gb)));
  CHECK(cost("P(sum)", "P(sum)", gb) == 0.0);
  CHECK(cost("R", "P(avg)", gb) == 0.0);
  // A _StridedShard is costed as the shard it is (docs/planning.md): _S->R gathers like S->R,
  // R->_S chunks, and an all_to_all with a _S side has no +1 us penalty (S->S only).
  gb = b0;
  CHECK(cost("_S(0, 2)", "R", gb) == Approx(RingUs(4 * b0 * 1073741824.0, 4, 3, 87.7, 0.6)));
  CHECK(gb == 4 * b0);
  gb = b0;
  CHECK(cost("R", "_S(0, 2)", gb) == 0.0);
  CHECK(gb == b0 / 4);
  gb = b0;
  CHECK(cost("_S(0, 2)", "S(1)", gb) == Approx(RingUs(b0 * 1073741824.0, 4, 3, 87.7, 0.6)));
  CHECK(cost("S(1)", "_S(0, 2)", gb) == Approx(RingUs(b0 * 1073741824.0, 4, 3, 87.7, 0.6)));
  CHECK(gb == b0);
  CHECK(cost("P(sum)", "_S(0, 2)", gb) == Approx(RingUs(b0 * 1073741824.0, 4, 3, 87.7, 0.6)));
  CHECK(gb == b0 / 4);
  CHECK(std::isinf(cost("_S(0, 2)", "P(sum)", gb)));
}

TEST_CASE("comm bytes: itemsize * numel / num_shards / 2^30", "[engine][planner][cost]") {
  Mesh m({2, 4});
  CHECK(CommGigabytes(m, ParsePlacements("S(0),S(1)", "t"), {8, 8, 8}, DType::kF32) ==
        4.0 * 512 / 8 / 1073741824.0);
  CHECK(CommGigabytes(m, ParsePlacements("R,S(1)", "t"), {8, 8}, DType::kBF16) ==
        2.0 * 64 / 4 / 1073741824.0);
  CHECK(CommGigabytes(m, ParsePlacements("_S(0, 2),P(sum)", "t"), {8}, DType::kI64) ==
        8.0 * 8 / 2 / 1073741824.0);
}

// ---- greedy: §3 ----

TEST_CASE("greedy: 1-d mesh is one direct step or nothing", "[engine][planner][greedy]") {
  CheckSteps(PlanGreedy(Spec({4}, "S(0)", {10, 3}), Spec({4}, "S(0)", {10, 3}), 0, kDefault), {});
  CheckSteps(PlanGreedy(Spec({4}, "S(0)", {10, 3}), Spec({4}, "S(1)", {10, 3}), 3, kDefault),
             {{0, "S(0)", "S(1)", {10, 3}}});
  auto ts = PlanGreedy(Spec({4}, "P(avg)", {10, 3}), Spec({4}, "R", {10, 3}), 0, kDefault);
  CheckSteps(ts, {{0, "P(avg)", "R", {10, 3}}});
  // all_reduce of 10*3*4 bytes (unsharded) over 4 intra-host ranks.
  CHECK(ts[0].cost_us == Approx(RingUs(120, 4, 6, 87.7, 0.6)));
  CHECK(ts[0].comm == CommKind::kAllReduce);
}

TEST_CASE("greedy: the derived trace table of §3", "[engine][planner][greedy]") {
  // S(0)S(1)->S(0)[0]S(0)[1]: one a2a on mesh dim 1.
  CheckSteps(PlanGreedy(Spec({2, 2}, "S(0),S(1)", {8, 8}), Spec({2, 2}, "S(0),S(0)", {8, 8}), 0, kDefault),
             {{1, "S(1)", "S(0)", {4, 8}}});
  // S(0)[0]S(0)[1]->S(0)R->S(1)R->S(1)[0]S(1)[1].
  CheckSteps(PlanGreedy(Spec({2, 2}, "S(0),S(0)", {8, 8}), Spec({2, 2}, "S(1),S(1)", {8, 8}), 0, kDefault),
             {{1, "S(0)", "R", {4, 8}}, {0, "S(0)", "S(1)", {8, 8}}, {1, "R", "S(1)", {4, 8}}});
  // S(0)[0]S(1)S(0)[1]->S(0)S(1)R->S(0)RR->S(1)RR->S(1)S(0)R->S(1)S(0)[0]S(0)[1]; logical shapes
  // from the source: L1 = [4,8,8] (S0 on md0), L2 = [4,4,8] (then S1 on md1).
  CheckSteps(PlanGreedy(Spec({2, 2, 2}, "S(0),S(1),S(0)", {8, 8, 8}),
                        Spec({2, 2, 2}, "S(1),S(0),S(0)", {8, 8, 8}), 0, kDefault),
             {{2, "S(0)", "R", {4, 4, 8}},
              {1, "S(1)", "R", {4, 8, 8}},
              {0, "S(0)", "S(1)", {8, 8, 8}},
              {1, "R", "S(0)", {4, 8, 8}},
              {2, "R", "S(0)", {4, 4, 8}}});
  // S(1)RS(0)->S(1)RR->S(1)S(0)R->RS(0)R->RS(0)[0]S(0)[1]: R->S(0) on md1 happens in pass 1.
  CheckSteps(PlanGreedy(Spec({2, 2, 2}, "S(1),R,S(0)", {8, 8, 8}), Spec({2, 2, 2}, "R,S(0),S(0)", {8, 8, 8}),
                        0, kDefault),
             {{2, "S(0)", "R", {8, 4, 8}},
              {1, "R", "S(0)", {8, 4, 8}},
              {0, "S(1)", "R", {8, 8, 8}},
              {2, "R", "S(0)", {8, 4, 8}}});
  // S(0)[0]S(0)[1]S(1)->S(0)[0]S(0)[1]S(2)->S(0)S(1)S(2): two a2a.
  CheckSteps(PlanGreedy(Spec({2, 2, 2}, "S(0),S(0),S(1)", {8, 8, 8}),
                        Spec({2, 2, 2}, "S(0),S(1),S(2)", {8, 8, 8}), 0, kDefault),
             {{2, "S(1)", "S(2)", {2, 8, 8}}, {1, "S(0)", "S(1)", {4, 8, 8}}});
}

TEST_CASE("greedy: nested, misaligned and partial examples of §3", "[engine][planner][greedy]") {
  // Docstring: (S(0),S(0)) -> (R,S(0)) is S(0)[0]S(0)[1]->S(0)R->RR->RS(0).
  CheckSteps(PlanGreedy(Spec({2, 2}, "S(0),S(0)", {8, 8}), Spec({2, 2}, "R,S(0)", {8, 8}), 0, kDefault),
             {{1, "S(0)", "R", {4, 8}}, {0, "S(0)", "R", {8, 8}}, {1, "R", "S(0)", {4, 8}}});
  // T0: "1: S1 -> R, 0: S0 -> S1, 1: R -> S0".
  CheckSteps(PlanGreedy(Spec({2, 2}, "S(0),S(1)", {8, 8}), Spec({2, 2}, "S(1),S(0)", {8, 8}), 0, kDefault),
             {{1, "S(1)", "R", {4, 8}}, {0, "S(0)", "S(1)", {8, 8}}, {1, "R", "S(0)", {4, 8}}});
  // P(sum)P(sum)S(0)->P(sum)P(sum)R->P(sum)RR->S(0)RR->S(0)[0]S(0)[1]R->S(0)[0]S(0)[1]S(0)[2].
  CheckSteps(PlanGreedy(Spec({2, 2, 2}, "P,P,S(0)", {8, 8, 8}), Spec({2, 2, 2}, "S(0),S(0),S(0)", {8, 8, 8}),
                        0, kDefault),
             {{2, "S(0)", "R", {8, 8, 8}},
              {1, "P(sum)", "R", {8, 8, 8}},
              {0, "P(sum)", "S(0)", {8, 8, 8}},
              {1, "R", "S(0)", {8, 8, 8}},
              {2, "R", "S(0)", {8, 8, 8}}});
  // No source shards: everything in pass 2, ascending: (0,P->S0),(1,P->S0).
  CheckSteps(PlanGreedy(Spec({2, 2}, "P,P", {8, 8}), Spec({2, 2}, "S(0),S(0)", {8, 8}), 0, kDefault),
             {{0, "P(sum)", "S(0)", {8, 8}}, {1, "P(sum)", "S(0)", {8, 8}}});
  // §6.3: [S0,P,P]->[S0,S0,S0] is (2,P->R),(1,P->S0),(2,R->S0).
  CheckSteps(PlanGreedy(Spec({2, 2, 2}, "S(0),P,P", {8, 8, 8}), Spec({2, 2, 2}, "S(0),S(0),S(0)", {8, 8, 8}),
                        0, kDefault),
             {{2, "P(sum)", "R", {4, 8, 8}}, {1, "P(sum)", "S(0)", {4, 8, 8}}, {2, "R", "S(0)", {4, 8, 8}}});
}

TEST_CASE("greedy: per-rank logical shapes for uneven nested sharding", "[engine][planner][greedy]") {
  // #194457 repro: 2x2, (5,3), S0S0->RR emits (1,S0->R,[3,3]),(0,S0->R,[5,3]) on rank 0;
  // torch.chunk(5, 2) = 3,2 so mesh-row 1 sees [2,3].
  auto src = Spec({2, 2}, "S(0),S(0)", {5, 3});
  auto dst = Spec({2, 2}, "R,R", {5, 3});
  for (int64_t rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    Shape row = {rank < 2 ? 3 : 2, 3};
    CheckSteps(PlanGreedy(src, dst, rank, kDefault), {{1, "S(0)", "R", row}, {0, "S(0)", "R", {5, 3}}});
  }
  // (7,5,3) on 2x2x2 with [S0,S0,S1]: chunk(7,2) = 4,3; then chunk(4,2) = 2,2 and chunk(3,2) = 2,1.
  src = Spec({2, 2, 2}, "S(0),S(0),S(1)", {7, 5, 3});
  dst = Spec({2, 2, 2}, "R,R,R", {7, 5, 3});
  for (int64_t rank = 0; rank < 8; ++rank) {
    int64_t c0 = rank / 4, c1 = (rank / 2) % 2;
    int64_t l1 = c0 == 0 ? 4 : 3;
    int64_t l2 = c0 == 0 ? 2 : (c1 == 0 ? 2 : 1);
    INFO("rank " << rank);
    CheckSteps(PlanGreedy(src, dst, rank, kDefault),
               {{2, "S(1)", "R", {l2, 5, 3}}, {1, "S(0)", "R", {l1, 5, 3}}, {0, "S(0)", "R", {7, 5, 3}}});
  }
  // Zero-size shards: chunk(1, 2) = 1,0.
  src = Spec({2, 2}, "S(0),S(0)", {1, 4});
  dst = Spec({2, 2}, "R,R", {1, 4});
  CheckSteps(PlanGreedy(src, dst, 3, kDefault), {{1, "S(0)", "R", {0, 4}}, {0, "S(0)", "R", {1, 4}}});
  CheckSteps(PlanGreedy(src, dst, 1, kDefault), {{1, "S(0)", "R", {1, 4}}, {0, "S(0)", "R", {1, 4}}});
}

TEST_CASE("greedy: logical shapes follow the spec's chunk rule and explicit sizes",
          "[engine][planner][greedy]") {
  // compute_split_shapes(5, 4) = 1,1,1,2.
  auto src = Spec({4, 2}, "S(0),S(0)", {5, 3}, nullptr, DType::kF32, ChunkRule::kPhysicsNemo);
  auto dst = Spec({4, 2}, "R,R", {5, 3}, nullptr, DType::kF32, ChunkRule::kPhysicsNemo);
  const int64_t want[4] = {1, 1, 1, 2};
  for (int64_t rank = 0; rank < 8; ++rank) {
    INFO("rank " << rank);
    CheckSteps(PlanGreedy(src, dst, rank, kDefault),
               {{1, "S(0)", "R", {want[rank / 2], 3}}, {0, "S(0)", "R", {5, 3}}});
  }
  // Explicit sizes [1,4] on mesh dim 0 replace torch.chunk's 3,2.
  src = Spec({2, 2}, "S(0),S(0)", {5, 3}, nullptr, DType::kF32, ChunkRule::kTorch, {{0, {1, 4}}});
  dst = Spec({2, 2}, "R,R", {5, 3});
  CheckSteps(PlanGreedy(src, dst, 0, kDefault), {{1, "S(0)", "R", {1, 3}}, {0, "S(0)", "R", {5, 3}}});
  CheckSteps(PlanGreedy(src, dst, 3, kDefault), {{1, "S(0)", "R", {4, 3}}, {0, "S(0)", "R", {5, 3}}});
}

TEST_CASE("greedy: size-1 mesh dims", "[engine][planner][greedy]") {
  // num_shards counts mesh sizes, so shards only on size-1 dims skip pass 1 and pass 2 runs
  // outer -> inner, exactly as PyTorch does.
  auto ts = PlanGreedy(Spec({1, 1, 2}, "S(0),S(0),R", {4, 4}), Spec({1, 1, 2}, "R,R,R", {4, 4}), 0, kDefault);
  CheckSteps(ts, {{0, "S(0)", "R", {4, 4}}, {1, "S(0)", "R", {4, 4}}});
  CHECK(CountCollectives(ts, Mesh({1, 1, 2})) == 0);
  // With a real shard present pass 1 runs inner -> outer.
  ts = PlanGreedy(Spec({1, 2}, "S(0),S(1)", {4, 4}), Spec({1, 2}, "R,R", {4, 4}), 1, kDefault);
  CheckSteps(ts, {{1, "S(1)", "R", {4, 4}}, {0, "S(0)", "R", {4, 4}}});
  CHECK(CountCollectives(ts, Mesh({1, 2})) == 1);
}

TEST_CASE("greedy: costs thread comm bytes like redistribute_cost", "[engine][planner][greedy][cost]") {
  // (2,2,2) (8,8,8) f32 S0S0S0 -> S1S1S1: S0->R on md2 (256 B local -> 512), S0->R on md1
  // (-> 1024), S0->S1 on md0 (a2a of 1024 B: all_gather + 1), then three local R->S.
  auto ts = PlanGreedy(Spec({2, 2, 2}, "S(0),S(0),S(0)", {8, 8, 8}),
                       Spec({2, 2, 2}, "S(1),S(1),S(1)", {8, 8, 8}), 0, kDefault);
  CheckSteps(ts, {{2, "S(0)", "R", {2, 8, 8}},
                  {1, "S(0)", "R", {4, 8, 8}},
                  {0, "S(0)", "S(1)", {8, 8, 8}},
                  {1, "R", "S(1)", {4, 8, 8}},
                  {2, "R", "S(1)", {2, 8, 8}}});
  CheckCosts(
      ts, {IntraAllGatherUs(512, 2), IntraAllGatherUs(1024, 2), IntraAllGatherUs(1024, 2) + 1.0, 0.0, 0.0});
  CHECK(ts[2].comm == CommKind::kAllToAll);
  // devices_per_host = 4 makes mesh dim 0 inter-host.
  PlanOptions opts;
  opts.devices_per_host = 4;
  ts = PlanGreedy(Spec({2, 2, 2}, "S(0),S(0),S(0)", {8, 8, 8}), Spec({2, 2, 2}, "S(1),S(1),S(1)", {8, 8, 8}),
                  0, opts);
  CHECK(ts[2].cost_us == Approx(RingUs(1024, 2, 1, 19.294, 2.7) + 1.0));
}

// ---- graph: §4 ----

TEST_CASE("graph: S0[0,1,2] -> S1[0,1,2] gathers three times (about 21.62 us)", "[engine][planner][graph]") {
  // S(0)[0]S(0)[1]S(0)[2]->S(0)[0]S(0)[1]R->S(0)RR->RRR->S(1)RR->S(1)[0]S(1)[1]R->S(1)[0]S(1)[1]S(1)[2]
  auto src = Spec({2, 2, 2}, "S(0),S(0),S(0)", {8, 8, 8});
  auto dst = Spec({2, 2, 2}, "S(1),S(1),S(1)", {8, 8, 8});
  auto ts = PlanGraph(src, dst, 0, kDefault);
  CheckSteps(ts, {{2, "S(0)", "R", {2, 8, 8}},
                  {1, "S(0)", "R", {4, 8, 8}},
                  {0, "S(0)", "R", {8, 8, 8}},
                  {0, "R", "S(1)", {8, 8, 8}},
                  {1, "R", "S(1)", {8, 4, 8}},
                  {2, "R", "S(1)", {8, 2, 8}}});
  CheckCosts(ts, {IntraAllGatherUs(512, 2), IntraAllGatherUs(1024, 2), IntraAllGatherUs(2048, 2)});
  CHECK(Sum(ts) == Approx(21.62).margin(0.005));
  CHECK(CountCollectives(ts, src.mesh) == 3);
  // The last rank (coordinate 1,1,1) sees the same extents here: 8 splits evenly.
  CHECK(PlanGraph(src, dst, 7, kDefault)[5].logical_shape == Shape{8, 2, 8});
}

TEST_CASE("graph: non-default source order pops its newest mesh dim", "[engine][planner][graph]") {
  // S(0)[1]S(0)[0]S(0)[2]->S(0)[1]S(0)[0]R->RS(0)R->RS(0)[0]S(0)[1]
  auto ts = PlanGraph(Spec({2, 2, 2}, "S(0),S(0),S(0)", {8, 8, 8}, "0:1,0,2"),
                      Spec({2, 2, 2}, "R,S(0),S(0)", {8, 8, 8}), 0, kDefault);
  CheckSteps(ts, {{2, "S(0)", "R", {2, 8, 8}}, {0, "S(0)", "R", {4, 8, 8}}, {2, "R", "S(0)", {4, 8, 8}}});
  CheckCosts(ts, {IntraAllGatherUs(512, 2), IntraAllGatherUs(1024, 2), 0.0});
}

TEST_CASE("graph: a free chunk before a gather makes the gather cheaper", "[engine][planner][graph]") {
  // S(0)[0]S(0)[1]R->S(0)RR->S(0)S(1)R->RS(1)R->RS(1)S(0): the all_gather on md0 runs on 4
  // shards (512 B -> 1024 B) instead of 2 (1024 B -> 2048 B).
  auto ts = PlanGraph(Spec({2, 2, 2}, "S(0),S(0),R", {8, 8, 8}), Spec({2, 2, 2}, "R,S(1),S(0)", {8, 8, 8}), 0,
                      kDefault);
  CheckSteps(ts, {{1, "S(0)", "R", {4, 8, 8}},
                  {1, "R", "S(1)", {4, 8, 8}},
                  {0, "S(0)", "R", {8, 4, 8}},
                  {2, "R", "S(0)", {8, 4, 8}}});
  CHECK(ts[0].cost_us == Approx(IntraAllGatherUs(1024, 2)));
  CHECK(ts[2].cost_us == Approx(IntraAllGatherUs(1024, 2)));
}

TEST_CASE("graph: trivial and size-1 cases", "[engine][planner][graph]") {
  auto s = Spec({2, 2}, "S(0),S(0)", {8, 8}, "0:1,0");
  CHECK(PlanGraph(s, s, 0, kDefault).empty());
  auto one = Spec({4}, "S(0)", {6});
  CheckSteps(PlanGraph(one, Spec({4}, "R", {6}), 0, kDefault), {{0, "S(0)", "R", {6}}});
  // A size-1 mesh dim: P->R there is an all_reduce that never runs.
  auto ts = PlanGraph(Spec({1, 2}, "P,S(0)", {4}), Spec({1, 2}, "R,S(0)", {4}), 0, kDefault);
  CheckSteps(ts, {{0, "P(sum)", "R", {2}}});
  CHECK(CountCollectives(ts, Mesh({1, 2})) == 0);
}

TEST_CASE("graph: uneven logical shapes follow the state's order and the rank", "[engine][planner][graph]") {
  // (4,2) mesh, (7,2), order 0:[1,0]: md0 is newest so it gathers first, seeing md1's split of 7
  // over 2 (torch.chunk 4,3); then md1 gathers the full 7.
  auto src = Spec({4, 2}, "S(0),S(0)", {7, 2}, "0:1,0");
  auto dst = Spec({4, 2}, "R,R", {7, 2});
  for (int64_t rank = 0; rank < 8; ++rank) {
    INFO("rank " << rank);
    Shape first = {rank % 2 == 0 ? 4 : 3, 2};
    CheckSteps(PlanGraph(src, dst, rank, kDefault), {{0, "S(0)", "R", first}, {1, "S(0)", "R", {7, 2}}});
  }
}

TEST_CASE("graph: StridedShard specs are normalized or reported as not decodable",
          "[engine][planner][graph]") {
  // T0: on (4,2), [_S(0,2), S(0)] is [S0,S0] with order 0:[1,0], so gathering it is md0 then md1.
  auto src = Spec({4, 2}, "_S(0, 2),S(0)", {16, 2});
  auto dst = Spec({4, 2}, "R,R", {16, 2});
  CheckSteps(PlanGraph(src, dst, 0, kDefault), {{0, "S(0)", "R", {8, 2}}, {1, "S(0)", "R", {16, 2}}});
  // _S(0,3) on (4,2) is not decodable (T1 test_strided_shard_redistribution[2d]).
  auto bad = Spec({4, 2}, "_S(0, 3),S(0)", {24, 2});
  try {
    PlanGraph(bad, Spec({4, 2}, "R,R", {24, 2}), 0, kDefault);
    FAIL("expected an error");
  } catch (const shardscope::Error& e) {
    CHECK(e.code() == shardscope::ErrorCode::kUnsupported);
    CHECK(std::string(e.what()).find("not decodable") != std::string::npos);
    CHECK(std::string(e.what()).find("_S(0, 3)") != std::string::npos);
  }
}

TEST_CASE("graph: partial reduce ops come from the redistribute", "[engine][planner][graph]") {
  // R -> P(avg) is a free local step; the search may only use ops present in src or dst.
  auto ts = PlanGraph(Spec({2, 2}, "R,R", {4}), Spec({2, 2}, "P(avg),R", {4}), 0, kDefault);
  CheckSteps(ts, {{0, "R", "P(avg)", {4}}});
  // P(sum) -> P(max) is unsupported as a single step (inf); the planner routes through R.
  ts = PlanGraph(Spec({2}, "P(sum)", {4}), Spec({2}, "P(max)", {4}), 0, kDefault);
  CheckSteps(ts, {{0, "P(sum)", "R", {4}}, {0, "R", "P(max)", {4}}});
}

TEST_CASE("plans print the reference traces of §3 and §4", "[engine][planner][notation]") {
  struct Row {
    Shape mesh;
    const char* src;
    const char* src_order;
    const char* dst;
    const char* dst_order;
    bool graph;
    const char* trace;
  };
  const Row rows[] = {
      {{2, 2}, "S(0),S(1)", nullptr, "S(0),S(0)", nullptr, false, "S(0)S(1)->S(0)[0]S(0)[1]"},
      {{2, 2},
       "S(0),S(0)",
       nullptr,
       "S(1),S(1)",
       nullptr,
       false,
       "S(0)[0]S(0)[1]->S(0)R->S(1)R->S(1)[0]S(1)[1]"},
      {{2, 2, 2},
       "S(0),S(1),S(0)",
       nullptr,
       "S(1),S(0),S(0)",
       nullptr,
       false,
       "S(0)[0]S(1)S(0)[1]->S(0)S(1)R->S(0)RR->S(1)RR->S(1)S(0)R->S(1)S(0)[0]S(0)[1]"},
      {{2, 2, 2},
       "S(1),R,S(0)",
       nullptr,
       "R,S(0),S(0)",
       nullptr,
       false,
       "S(1)RS(0)->S(1)RR->S(1)S(0)R->RS(0)R->RS(0)[0]S(0)[1]"},
      {{2, 2, 2},
       "S(0),S(0),S(1)",
       nullptr,
       "S(0),S(1),S(2)",
       nullptr,
       false,
       "S(0)[0]S(0)[1]S(1)->S(0)[0]S(0)[1]S(2)->S(0)S(1)S(2)"},
      {{2, 2}, "S(0),S(0)", nullptr, "R,S(0)", nullptr, false, "S(0)[0]S(0)[1]->S(0)R->RR->RS(0)"},
      {{2, 2}, "S(0),S(1)", nullptr, "S(1),S(0)", nullptr, false, "S(0)S(1)->S(0)R->S(1)R->S(1)S(0)"},
      {{2, 2, 2},
       "P,P,S(0)",
       nullptr,
       "S(0),S(0),S(0)",
       nullptr,
       false,
       "P(sum)P(sum)S(0)->P(sum)P(sum)R->P(sum)RR->S(0)RR->S(0)[0]S(0)[1]R->S(0)[0]S(0)[1]S(0)[2]"},
      {{2, 2, 2},
       "S(0),S(0),S(0)",
       nullptr,
       "S(1),S(1),S(1)",
       nullptr,
       true,
       "S(0)[0]S(0)[1]S(0)[2]->S(0)[0]S(0)[1]R->S(0)RR->RRR->S(1)RR->S(1)[0]S(1)[1]R->S(1)[0]S(1)[1]S(1)[2]"},
      {{2, 2, 2},
       "S(0),S(0),S(0)",
       nullptr,
       "S(1),S(1),S(1)",
       nullptr,
       false,
       "S(0)[0]S(0)[1]S(0)[2]->S(0)[0]S(0)[1]R->S(0)RR->S(1)RR->S(1)[0]S(1)[1]R->S(1)[0]S(1)[1]S(1)[2]"},
      {{2, 2, 2},
       "S(0),S(0),S(0)",
       "0:1,0,2",
       "R,S(0),S(0)",
       nullptr,
       true,
       "S(0)[1]S(0)[0]S(0)[2]->S(0)[1]S(0)[0]R->RS(0)R->RS(0)[0]S(0)[1]"},
      {{2, 2, 2},
       "S(0),S(0),R",
       nullptr,
       "R,S(1),S(0)",
       nullptr,
       true,
       "S(0)[0]S(0)[1]R->S(0)RR->S(0)S(1)R->RS(1)R->RS(1)S(0)"},
  };
  for (const Row& row : rows) {
    INFO(row.trace);
    auto src = Spec(row.mesh, row.src, {8, 8, 8}, row.src_order);
    auto dst = Spec(row.mesh, row.dst, {8, 8, 8}, row.dst_order);
    auto ts = row.graph ? PlanGraph(src, dst, 0, kDefault) : PlanGreedy(src, dst, 0, kDefault);
    CHECK(Notation(ts, src) == row.trace);
  }
}

TEST_CASE("planners reject mismatched meshes and shapes", "[engine][planner]") {
  auto a = Spec({2, 2}, "S(0),R", {4, 4});
  CHECK_THROWS_AS(PlanGreedy(a, Spec({4}, "R", {4, 4}), 0, kDefault), shardscope::Error);
  CHECK_THROWS_AS(PlanGraph(a, Spec({2, 2}, "R,R", {4, 5}), 0, kDefault), shardscope::Error);
  CHECK_THROWS_AS(PlanGraph(a, Spec({2, 2}, "R,R", {4, 4}), 9, kDefault), shardscope::Error);
}
