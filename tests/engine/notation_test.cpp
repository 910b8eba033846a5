// Notation against PyTorch's stringify_transform_infos (semantics §9): every trace string of
// §3, §4 and §9, replayed from the transform lists those sections derive them from.

#include <catch2/catch.hpp>

#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

using namespace shardscope::engine;

namespace {

Transform T(int mesh_dim, const char* src, const char* dst) {
  Transform t;
  t.mesh_dims = {mesh_dim};
  t.src = ParsePlacement(src, "test");
  t.dst = ParsePlacement(dst, "test");
  t.comm = CommKindOf(t.src, t.dst);
  return t;
}

Transform Flat(std::vector<int> mesh_dims, const char* src, const char* dst) {
  Transform t = T(mesh_dims[0], src, dst);
  t.mesh_dims = std::move(mesh_dims);
  t.flattened = true;
  return t;
}

TensorSpec Spec(Shape mesh, const char* placements, Shape shape, const char* order = nullptr) {
  std::optional<ShardOrder> o;
  if (order) o = ParseShardOrder(order, "test");
  return MakeSpec(Mesh(std::move(mesh)), ParsePlacements(placements, "test"), o, std::move(shape),
                  DType::kF32, ChunkRule::kTorch, {}, "test");
}

}  // namespace

TEST_CASE("notation of an empty plan is the source state", "[engine][notation]") {
  CHECK(Notation({}, Spec({2, 2}, "S(0),S(1)", {8, 8})) == "S(0)S(1)");
  CHECK(Notation({}, Spec({2, 2}, "S(0),S(0)", {8, 8})) == "S(0)[0]S(0)[1]");
  CHECK(Notation({}, Spec({2, 2}, "P(sum),R", {8, 8})) == "P(sum)R");
  // §9: S(0)[1]S(0)[0]S(0)[2] is tensor dim 0 sharded on mesh dims 1, 0, 2 in that order.
  CHECK(Notation({}, Spec({2, 2, 2}, "S(0),S(0),S(0)", {8, 8}, "0:1,0,2")) == "S(0)[1]S(0)[0]S(0)[2]");
}

TEST_CASE("notation of the greedy traces of section 3", "[engine][notation]") {
  // (S0,S0) -> (R,S0), the docstring's nested example.
  CHECK(Notation({T(1, "S(0)", "R"), T(0, "S(0)", "R"), T(1, "R", "S(0)")},
                 Spec({2, 2}, "S(0),S(0)", {8, 8})) == "S(0)[0]S(0)[1]->S(0)R->RR->RS(0)");
  // [S0,S1] -> [S1,S0]: "1: S1 -> R, 0: S0 -> S1, 1: R -> S0".
  CHECK(Notation({T(1, "S(1)", "R"), T(0, "S(0)", "S(1)"), T(1, "R", "S(0)")},
                 Spec({2, 2}, "S(0),S(1)", {8, 8})) == "S(0)S(1)->S(0)R->S(1)R->S(1)S(0)");
  CHECK(Notation({T(1, "S(1)", "S(0)")}, Spec({2, 2}, "S(0),S(1)", {8, 8})) == "S(0)S(1)->S(0)[0]S(0)[1]");
  CHECK(Notation({T(1, "S(0)", "R"), T(0, "S(0)", "S(1)"), T(1, "R", "S(1)")},
                 Spec({2, 2}, "S(0),S(0)", {8, 8})) == "S(0)[0]S(0)[1]->S(0)R->S(1)R->S(1)[0]S(1)[1]");
  CHECK(Notation({T(2, "S(0)", "R"), T(1, "S(1)", "R"), T(0, "S(0)", "S(1)"), T(1, "R", "S(0)"),
                  T(2, "R", "S(0)")},
                 Spec({2, 2, 2}, "S(0),S(1),S(0)", {8, 8})) ==
        "S(0)[0]S(1)S(0)[1]->S(0)S(1)R->S(0)RR->S(1)RR->S(1)S(0)R->S(1)S(0)[0]S(0)[1]");
  CHECK(Notation({T(2, "S(0)", "R"), T(1, "R", "S(0)"), T(0, "S(1)", "R"), T(2, "R", "S(0)")},
                 Spec({2, 2, 2}, "S(1),R,S(0)", {8, 8})) ==
        "S(1)RS(0)->S(1)RR->S(1)S(0)R->RS(0)R->RS(0)[0]S(0)[1]");
  CHECK(
      Notation({T(2, "S(1)", "S(2)"), T(1, "S(0)", "S(1)")}, Spec({2, 2, 2}, "S(0),S(0),S(1)", {8, 8, 8})) ==
      "S(0)[0]S(0)[1]S(1)->S(0)[0]S(0)[1]S(2)->S(0)S(1)S(2)");
  // (P,P,S0) -> (S0,S0,S0) on (2,2,2).
  CHECK(Notation({T(2, "S(0)", "R"), T(1, "P(sum)", "R"), T(0, "P(sum)", "S(0)"), T(1, "R", "S(0)"),
                  T(2, "R", "S(0)")},
                 Spec({2, 2, 2}, "P(sum),P(sum),S(0)", {8, 8})) ==
        "P(sum)P(sum)S(0)->P(sum)P(sum)R->P(sum)RR->S(0)RR->S(0)[0]S(0)[1]R->S(0)[0]S(0)[1]S(0)[2]");
}

TEST_CASE("notation of the graph traces of section 4", "[engine][notation]") {
  CHECK(
      Notation({T(2, "S(0)", "R"), T(1, "S(0)", "R"), T(0, "S(0)", "R"), T(0, "R", "S(1)"), T(1, "R", "S(1)"),
                T(2, "R", "S(1)")},
               Spec({2, 2, 2}, "S(0),S(0),S(0)", {8, 8, 8})) ==
      "S(0)[0]S(0)[1]S(0)[2]->S(0)[0]S(0)[1]R->S(0)RR->RRR->S(1)RR->S(1)[0]S(1)[1]R->S(1)[0]S(1)[1]S(1)[2]");
  // Greedy for comparison: ...->S(0)RR->S(1)RR->...
  CHECK(Notation({T(2, "S(0)", "R"), T(1, "S(0)", "R"), T(0, "S(0)", "S(1)"), T(1, "R", "S(1)"),
                  T(2, "R", "S(1)")},
                 Spec({2, 2, 2}, "S(0),S(0),S(0)", {8, 8, 8})) ==
        "S(0)[0]S(0)[1]S(0)[2]->S(0)[0]S(0)[1]R->S(0)RR->S(1)RR->S(1)[0]S(1)[1]R->S(1)[0]S(1)[1]S(1)[2]");
  // S0[1,0,2] -> R S0[1,2]: the order (1,0,2) lets mesh dim 0 be popped directly.
  CHECK(Notation({T(2, "S(0)", "R"), T(0, "S(0)", "R"), T(2, "R", "S(0)")},
                 Spec({2, 2, 2}, "S(0),S(0),S(0)", {8, 8, 8}, "0:1,0,2")) ==
        "S(0)[1]S(0)[0]S(0)[2]->S(0)[1]S(0)[0]R->RS(0)R->RS(0)[0]S(0)[1]");
  // S0[0,1]R -> R S1[1] S0[2].
  CHECK(Notation({T(1, "S(0)", "R"), T(1, "R", "S(1)"), T(0, "S(0)", "R"), T(2, "R", "S(0)")},
                 Spec({2, 2, 2}, "S(0),S(0),R", {8, 8, 8})) ==
        "S(0)[0]S(0)[1]R->S(0)RR->S(0)S(1)R->RS(1)R->RS(1)S(0)");
}

TEST_CASE("a flattened step is written -->", "[engine][notation]") {
  // T1 test_debug_mode_shows_optimized_trace.
  CHECK(Notation({Flat({0, 1}, "S(0)", "R")}, Spec({2, 2}, "S(0),S(0)", {8, 8})) == "S(0)[0]S(0)[1]-->RR");
  CHECK(Notation({Flat({0, 1}, "P(sum)", "S(0)")}, Spec({2, 2}, "P(sum),P(sum)", {8, 8})) ==
        "P(sum)P(sum)-->S(0)[0]S(0)[1]");
  // Mixed: a flattened all_reduce between ordinary steps.
  CHECK(Notation({T(2, "S(0)", "R"), Flat({0, 1}, "P(sum)", "R"), T(2, "R", "S(1)")},
                 Spec({2, 2, 2}, "P(sum),P(sum),S(0)", {8, 8})) ==
        "P(sum)P(sum)S(0)->P(sum)P(sum)R-->RRR->RRS(1)");
}

TEST_CASE("strided sources print decoded into a shard order", "[engine][notation]") {
  // T0 test_shard_order_same_data_as_strided_shard: on (4,2), [_S(0,2), S(0)] == [S0,S0] with
  // order ((0,(1,0)),); R-new normalizes before stringifying.
  TensorSpec strided = Spec({4, 2}, "_S(0, 2),S(0)", {16, 4});
  CHECK(Notation({}, strided) == "S(0)[1]S(0)[0]");
  // Mesh dim 0 is the newest in that order, so it is unsharded first.
  CHECK(Notation({T(0, "S(0)", "R")}, strided) == "S(0)[1]S(0)[0]->RS(0)");
  // _S(0,3) on (4,2) is not decodable (no prefix product of 3) and prints literally.
  std::string undecodable = Notation({}, Spec({4, 2}, "_S(0, 3),S(0)", {24, 4}));
  CHECK(undecodable.find("_S(0, 3)") == 0);
}

TEST_CASE("notation rejects a transform that pops a mesh dim that is not the newest", "[engine][notation]") {
  // [S0,S0] default order (0,1): mesh dim 0 cannot be unsharded before mesh dim 1.
  try {
    Notation({T(0, "S(0)", "R")}, Spec({2, 2}, "S(0),S(0)", {8, 8}));
    FAIL("expected an error");
  } catch (const shardscope::Error& e) {
    CHECK(e.code() == shardscope::ErrorCode::kInternal);
  }
}
