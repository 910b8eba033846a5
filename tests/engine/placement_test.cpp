#include <catch2/catch.hpp>

#include "shardscope/engine/core/placement.hpp"
#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/engine/core/spec.hpp"
#include "shardscope/error.hpp"

using namespace shardscope::engine;
using shardscope::Error;

TEST_CASE("placements parse and print PyTorch's text forms", "[engine][placement]") {
  CHECK(ParsePlacement("S(0)", "t") == Placement::Shard(0));
  CHECK(ParsePlacement("_S(0, 2)", "t") == Placement::StridedShard(0, 2));
  CHECK(ParsePlacement("_S(0,2)", "t") == Placement::StridedShard(0, 2));
  CHECK(ParsePlacement("R", "t") == Placement::Replicate());
  CHECK(ParsePlacement("P", "t") == Placement::Partial(ReduceOp::kSum));
  CHECK(ParsePlacement("P(avg)", "t") == Placement::Partial(ReduceOp::kAvg));
  CHECK(ParsePlacement("Shard(dim=1)", "t") == Placement::Shard(1));
  CHECK(Placement::StridedShard(1, 3).ToString() == "_S(1, 3)");
  CHECK(Placement::Partial().ToString() == "P(sum)");
  CHECK(Placement::Partial(ReduceOp::kProduct).ToString() == "P(product)");
  CHECK(Placement::Shard(2).ToString() == "S(2)");
  CHECK(Placement::Replicate().ToString() == "R");
}

TEST_CASE("placement lists split on top-level commas only", "[engine][placement]") {
  auto ps = ParsePlacements("_S(0, 2),S(0), R ,P(max)", "t");
  REQUIRE(ps.size() == 4);
  CHECK(ps[0] == Placement::StridedShard(0, 2));
  CHECK(ps[3] == Placement::Partial(ReduceOp::kMax));
  CHECK(FormatPlacements(ps) == "_S(0, 2),S(0),R,P(max)");
}

TEST_CASE("bad placements name the token", "[engine][placement]") {
  auto message = [](const char* text) {
    try {
      ParsePlacements(text, "--from");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message("S(x)"), Catch::Contains("--from: 'S(x)'"));
  CHECK_THAT(message("Q"), Catch::Contains("'Q' is not a placement"));
  CHECK_THAT(message("P(mean)"), Catch::Contains("unknown reduce op 'mean'"));
  CHECK_THAT(message("_S(0)"), Catch::Contains("_S(dim, split_factor)"));
  CHECK_THAT(message("S(0"), Catch::Contains("unmatched '('"));
  CHECK_THAT(message("R,,R"), Catch::Contains("empty placement"));
}

TEST_CASE("negative dims normalize against the tensor rank", "[engine][placement]") {
  Placements ps = ParsePlacements("S(-1),_S(-2, 2)", "t");
  NormalizePlacements(ps, 3, "t");
  CHECK(ps[0] == Placement::Shard(2));
  CHECK(ps[1] == Placement::StridedShard(1, 2));
  Placements bad = ParsePlacements("R,S(3)", "--from");
  try {
    NormalizePlacements(bad, 2, "--from");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "--from: 'S(3)' shards dim 3 but the tensor has 2 dims");
  }
}

TEST_CASE("default shard order and its test", "[engine][order]") {
  // SPEC: [S0,S1,S0] gives ((0,(0,2)),(1,(1,))).
  ShardOrder order = DefaultShardOrder(ParsePlacements("S(0),S(1),S(0)", "t"));
  REQUIRE(order.size() == 2);
  CHECK(order[0] == ShardOrderEntry{0, {0, 2}});
  CHECK(order[1] == ShardOrderEntry{1, {1}});
  CHECK(IsDefaultOrder(order));
  CHECK_FALSE(IsDefaultOrder(ParseShardOrder("0:1,0", "t")));
  CHECK(FormatShardOrder(ParseShardOrder("0:1,0;1:2", "t")) == "0:1,0;1:2");
}

TEST_CASE("shard order notation prints positions in the order", "[engine][order]") {
  // §9: S(0)[1]S(0)[0]S(0)[2] means tensor dim 0 is sharded on mesh dims 1, 0, 2 in that order.
  Placements ps = ParsePlacements("S(0),S(0),S(0)", "t");
  CHECK(FormatShardOrderStr(ps, ParseShardOrder("0:1,0,2", "t")) == "S(0)[1]S(0)[0]S(0)[2]");
  CHECK(FormatShardOrderStr(ParsePlacements("S(0),S(1)", "t"),
                            DefaultShardOrder(ParsePlacements("S(0),S(1)", "t"))) == "S(0)S(1)");
  CHECK(FormatShardOrderStr(ParsePlacements("P(sum),R", "t"), {}) == "P(sum)R");
}

TEST_CASE("shard order <-> strided shard conversion", "[engine][order]") {
  // §8.3: mesh (4,3,2), order (0,(2,0,1)) gives (_S(0,2), _S(0,2), S(0)).
  Mesh mesh({4, 3, 2});
  Placements ps = ParsePlacements("S(0),S(0),S(0)", "t");
  Placements strided = ShardOrderToStridedPlacements(ps, ParseShardOrder("0:2,0,1", "t"), mesh);
  CHECK(FormatPlacements(strided) == "_S(0, 2),_S(0, 2),S(0)");
  auto back = StridedPlacementsToShardOrder(strided, mesh);
  REQUIRE(back);
  CHECK(FormatPlacements(back->first) == "S(0),S(0),S(0)");
  CHECK(FormatShardOrder(back->second) == "0:2,0,1");
  // T0: on (4,2), [_S(0,2), S(0)] == [S0,S0] with order ((0,(1,0)),).
  auto t0 = StridedPlacementsToShardOrder(ParsePlacements("_S(0, 2),S(0)", "t"), Mesh({4, 2}));
  REQUIRE(t0);
  CHECK(FormatShardOrder(t0->second) == "0:1,0");
  // §2: _S(0,3) on a (4,2) mesh is not decodable.
  CHECK_FALSE(StridedPlacementsToShardOrder(ParsePlacements("_S(0, 3),S(0)", "t"), Mesh({4, 2})));
}

TEST_CASE("bad shard orders and specs are rejected with the token", "[engine][order][spec]") {
  CHECK_THROWS_WITH(ParseShardOrder("0-1", "--src-order"), Catch::Contains("--src-order: '0-1'"));
  CHECK_THROWS_WITH(ParseShardOrder("0:a", "--src-order"), Catch::Contains("bad mesh dim 'a'"));
  Mesh mesh({2, 2});
  CHECK_THROWS_WITH(MakeSpec(mesh, ParsePlacements("S(0),R", "t"), ParseShardOrder("0:0,1", "--src-order"),
                             {4, 4}, DType::kF32, ChunkRule::kTorch, {}, "--src-order"),
                    Catch::Contains("placement is R"));
  CHECK_THROWS_WITH(MakeSpec(mesh, ParsePlacements("S(0)", "--from"), std::nullopt, {4}, DType::kF32,
                             ChunkRule::kTorch, {}, "--from"),
                    Catch::Contains("1 placements 'S(0)' for a 2-d mesh"));
  CHECK_THROWS_WITH(MakeSpec(mesh, ParsePlacements("P(sum),P(max)", "--from"), std::nullopt, {4}, DType::kF32,
                             ChunkRule::kTorch, {}, "--from"),
                    Catch::Contains("mixed Partial reduce ops"));
  CHECK_NOTHROW(MakeSpec(mesh, ParsePlacements("P(sum),P(avg)", "--from"), std::nullopt, {4}, DType::kF32,
                         ChunkRule::kTorch, {}, "--from"));
  CHECK_THROWS_WITH(Mesh({2, 0}), Catch::Contains("dim 1 has size 0"));
  CHECK_THROWS_WITH(ParseShape("8x-1", "--shape"), Catch::Contains("--shape"));
  CHECK_THROWS_WITH(ParseShape("8xx1", "--shape"), Catch::Contains("bad extent ''"));
  CHECK(ParseShape("0x8", "--shape") == Shape{0, 8});
  CHECK_THROWS_WITH(NumElements({1LL << 40, 1LL << 40}), Catch::Contains("2^63"));
  CHECK_THROWS_WITH(ParseDType("f8", "--dtype"), Catch::Contains("unknown dtype 'f8'"));
}

TEST_CASE("mesh coordinates and groups are row-major", "[engine][mesh]") {
  Mesh mesh({2, 3, 2});
  CHECK(mesh.size() == 12);
  CHECK(mesh.Coordinate(7) == std::vector<int64_t>{1, 0, 1});
  CHECK(mesh.RankOf({1, 2, 1}) == 11);
  CHECK(mesh.Group(7, {1}) == std::vector<int64_t>{7, 9, 11});
  CHECK(mesh.Group(7, {0}) == std::vector<int64_t>{1, 7});
  CHECK(mesh.Group(7, {0, 2}) == std::vector<int64_t>{0, 1, 6, 7});
  CHECK(mesh.GroupIndex(7, {0, 2}) == 3);
  mesh.RegisterFlattened({2, 0});
  CHECK(mesh.HasFlattened({0, 2}));
  CHECK_FALSE(mesh.HasFlattened({0, 1}));
  Mesh named({2, 2}, {"dp", "tp"});
  CHECK(named.DimIndex("tp") == 1);
  CHECK_THROWS_AS(named.DimIndex("pp"), Error);
  CHECK_THROWS_AS(Mesh({2, 2}, {"dp", "dp"}), Error);
}

TEST_CASE("placements as PyTorch prints them, order included", "[engine][placement]") {
  // DTensorSpec.format_shard_order_str: "[k]" is the mesh dim's position in its tensor dim's order.
  PlacementsWithOrder a = ParsePlacementsWithOrder("S(0)[1]S(0)[0]R", "--from");
  CHECK(a.placements == Placements{Placement::Shard(0), Placement::Shard(0), Placement::Replicate()});
  REQUIRE(a.order);
  CHECK(*a.order == ShardOrder{{0, {1, 0}}});
  // Concatenated without separators; "P" is Partial(sum); longest head first ("Shard", not "S").
  CHECK(ParsePlacements("RS(1)", "t") == Placements{Placement::Replicate(), Placement::Shard(1)});
  CHECK(ParsePlacements("P(sum)R", "t") == Placements{Placement::Partial(), Placement::Replicate()});
  CHECK(ParsePlacements("PR", "t") == Placements{Placement::Partial(), Placement::Replicate()});
  CHECK(ParsePlacements("(Shard(dim=0), Replicate())", "t") ==
        Placements{Placement::Shard(0), Placement::Replicate()});
  CHECK(ParsePlacements("(_StridedShard(dim=0, sf=2), Shard(dim=0))", "t") ==
        Placements{Placement::StridedShard(0, 2), Placement::Shard(0)});
  CHECK(ParsePlacements("[S(0), R]", "t") == Placements{Placement::Shard(0), Placement::Replicate()});
  CHECK(ParsePlacements("('R', 'R')", "t") == Placements{Placement::Replicate(), Placement::Replicate()});
  // The default order spelled out is accepted where no order can be given; any other is refused.
  CHECK(ParsePlacements("S(0)[0]S(0)[1]", "t") == Placements{Placement::Shard(0), Placement::Shard(0)});
  CHECK_THROWS_WITH(ParsePlacements("S(0)[1]S(0)[0]", "t"), Catch::Contains("non-default shard order"));
  CHECK_FALSE(ParsePlacementsWithOrder("S(0),R", "t").order);
  CHECK_THROWS_WITH(ParsePlacementsWithOrder("S(0)[2]S(0)[0]", "--from"), Catch::Contains("[0]..[1]"));
  CHECK_THROWS_WITH(ParsePlacementsWithOrder("R[0]S(0)", "--from"), Catch::Contains("only a shard"));
  CHECK_THROWS_WITH(ParsePlacementsWithOrder("S(0)Q", "--from"), Catch::Contains("'Q' is not a placement"));
}

// Newer PyTorch prints a _StridedShard without "[k]" (PR #167887: no longer a Shard subclass), and
// the states of a plan through literal _StridedShards with positions that count the mesh dims a
// _StridedShard source left in the list (stringify_transform_infos; docs/planning.md).
TEST_CASE("placements as newer PyTorch prints literal _StridedShards", "[engine][placement]") {
  // The issue's first case: source order 0:0,1,2 prints "S(0)[0]S(0)[1]_S(0, 3)"; the _S takes
  // the one free position, 2.
  PlacementsWithOrder a = ParsePlacementsWithOrder("S(0)[0]S(0)[1]_S(0, 3)", "--from");
  CHECK(a.placements == Placements{Placement::Shard(0), Placement::Shard(0), Placement::StridedShard(0, 3)});
  REQUIRE(a.order);
  CHECK(*a.order == ShardOrder{{0, {0, 1, 2}}});
  // Positions 0 and 2 are taken, so the _S on mesh dim 0 is position 1: order 0:1,0,2... read
  // by position: [0] = mesh dim 1, [1] = mesh dim 0, [2] = mesh dim 2.
  PlacementsWithOrder b = ParsePlacementsWithOrder("_S(0, 2)S(0)[0]S(0)[2]", "--from");
  REQUIRE(b.order);
  CHECK(*b.order == ShardOrder{{0, {1, 0, 2}}});
  // Two unpositioned _S fill the free positions in mesh dim order.
  PlacementsWithOrder c = ParsePlacementsWithOrder("_S(0, 2)S(0)[0]_S(0, 4)", "--from");
  REQUIRE(c.order);
  CHECK(*c.order == ShardOrder{{0, {1, 0, 2}}});
  // A plain Shard still needs its position when several mesh dims shard its tensor dim.
  CHECK_THROWS_WITH(ParsePlacementsWithOrder("S(0)S(0)[0]", "--from"), Catch::Contains("[0]..[1]"));
  CHECK_THROWS_WITH(ParsePlacementsWithOrder("S(0)[0]S(0)[0]_S(0, 3)", "--from"),
                    Catch::Contains("[0]..[2]"));
  // Stale positions: "RS(0)[1]S(0)[2]" (the last state of that plan) is order 0:1,2 read as
  // PyTorch's plan string; as a user's --to it is refused (positions must be [0]..[1]).
  PlacementsWithOrder d = ParsePlacementsWithOrder("RS(0)[1]S(0)[2]", "trace", OrderPositions::kRelative);
  REQUIRE(d.order);
  CHECK(*d.order == ShardOrder{{0, {1, 2}}});
  PlacementsWithOrder e = ParsePlacementsWithOrder("RS(0)[1]R", "trace", OrderPositions::kRelative);
  REQUIRE(e.order);
  CHECK(*e.order == ShardOrder{{0, {1}}});
  CHECK_THROWS_WITH(ParsePlacementsWithOrder("RS(0)[1]S(0)[2]", "--to"), Catch::Contains("[0]..[1]"));
  CHECK_THROWS_WITH(ParsePlacementsWithOrder("RS(0)[1]R", "--to"), Catch::Contains("[0]..[0]"));
  CHECK_THROWS_WITH(ParsePlacementsWithOrder("S(0)[1]S(0)[1]", "trace", OrderPositions::kRelative),
                    Catch::Contains("[0]..[1]"));
}

TEST_CASE("the default shard order groups shard dims by sorting, whatever the dims say",
          "[engine][placement]") {
  // PyTorch compute_default_shard_order: per tensor dim, its mesh dims in mesh-dim order; entries
  // sorted by tensor dim. [S(1), R, S(0), S(1)] -> 0:[2], 1:[0,3].
  ShardOrder order = DefaultShardOrder(
      {Placement::Shard(1), Placement::Replicate(), Placement::Shard(0), Placement::Shard(1)});
  REQUIRE(order.size() == 2);
  CHECK(order[0] == ShardOrderEntry{0, {2}});
  CHECK(order[1] == ShardOrderEntry{1, {0, 3}});
  // Not yet normalized (an imported dump's S(-1)): no allocation sized by the dim, no throw.
  ShardOrder raw = DefaultShardOrder({Placement::Shard(-1), Placement::Shard(-1)});
  REQUIRE(raw.size() == 1);
  CHECK(raw[0] == ShardOrderEntry{-1, {0, 1}});
}
