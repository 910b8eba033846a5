// Plan cache: hits return the same plan; specs differing in any one plan-relevant field never
// share an entry (ShardTensor's cache hit collisions like that: physicsnemo PR 2210).

#include <catch2/catch.hpp>

#include <thread>

#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

using namespace shardscope::engine;

namespace {

struct Key {
  TensorSpec src, dst;
  int64_t rank = 0;
  PlanOptions options;
};

Key BaseKey() {
  Mesh mesh({2, 2});
  Key k;
  k.src = MakeSpec(mesh, ParsePlacements("S(0),S(0)", "t"), std::nullopt, {8, 8}, DType::kF32,
                   ChunkRule::kTorch, {}, "t");
  k.dst = MakeSpec(mesh, ParsePlacements("R,R", "t"), std::nullopt, {8, 8}, DType::kF32, ChunkRule::kTorch,
                   {}, "t");
  return k;
}

// Plan has no operator==; compare every field.
bool SamePlan(const Plan& a, const Plan& b) {
  return a.planner == b.planner && a.planner_reason == b.planner_reason && a.raw == b.raw &&
         a.optimized == b.optimized && a.skipped_merges == b.skipped_merges && a.notation == b.notation &&
         a.notation_unoptimized == b.notation_unoptimized && a.cost_us == b.cost_us;
}

TensorSpec WithMesh(const TensorSpec& spec, const Mesh& mesh) {
  TensorSpec out = spec;
  out.mesh = mesh;
  return out;
}

}  // namespace

TEST_CASE("plan cache hits return the same plan", "[engine][plan_cache]") {
  PlanCache cache;
  Key k = BaseKey();
  auto first = cache.Get(k.src, k.dst, k.rank, k.options);
  auto second = cache.Get(k.src, k.dst, k.rank, k.options);
  CHECK(first == second);
  CHECK(cache.size() == 1);
  CHECK(cache.misses() == 1);
  CHECK(cache.hits() == 1);
  CHECK(SamePlan(*first, MakePlan(k.src, k.dst, k.rank, k.options)));
  // Equal specs built separately hit as well.
  Key again = BaseKey();
  CHECK(cache.Get(again.src, again.dst, again.rank, again.options) == first);
  CHECK(PlanKeyHash(k.src, k.dst, 0, {}) == PlanKeyHash(again.src, again.dst, 0, {}));
}

TEST_CASE("plan cache keys differ in every plan-relevant field", "[engine][plan_cache]") {
  const Key base = BaseKey();
  std::vector<std::pair<std::string, Key>> variants;
  // Each variant is `base` with one field changed.
  auto vary = [&](std::string name, auto change) {
    Key k = base;
    change(k);
    variants.emplace_back(std::move(name), std::move(k));
  };
  vary("dtype", [](Key& k) { k.src.dtype = k.dst.dtype = DType::kBF16; });
  vary("chunking", [](Key& k) { k.src.chunking = ChunkRule::kPhysicsNemo; });
  vary("explicit sizes", [](Key& k) { k.src.explicit_sizes = {{1, {3, 1}}}; });
  vary("explicit sizes, other values", [](Key& k) { k.src.explicit_sizes = {{1, {1, 3}}}; });
  vary("src order", [](Key& k) { k.src.shard_order = ParseShardOrder("0:1,0", "t"); });
  vary("flattened set", [](Key& k) {
    Mesh flat({2, 2});
    flat.RegisterFlattened({0, 1});
    k.src = WithMesh(k.src, flat);
    k.dst = WithMesh(k.dst, flat);
  });
  vary("dim names", [](Key& k) {
    Mesh named({2, 2}, {"dp", "tp"});
    k.src = WithMesh(k.src, named);
    k.dst = WithMesh(k.dst, named);
  });
  vary("shape", [](Key& k) { k.src.shape = k.dst.shape = {8, 9}; });
  vary("src placements", [](Key& k) { k.src.placements = ParsePlacements("S(0),S(1)", "t"); });
  vary("dst placements", [](Key& k) { k.dst.placements = ParsePlacements("R,S(1)", "t"); });
  vary("rank", [](Key& k) { k.rank = 3; });
  vary("planner", [](Key& k) { k.options.planner = PlannerChoice::kGraph; });
  vary("optimize", [](Key& k) { k.options.optimize = false; });
  vary("devices per host", [](Key& k) { k.options.devices_per_host = 2; });
  vary("guard", [](Key& k) { k.options.guard_uneven_all_gather = false; });

  PlanCache cache;
  auto base_plan = cache.Get(base.src, base.dst, base.rank, base.options);
  const uint64_t base_hash = PlanKeyHash(base.src, base.dst, base.rank, base.options);
  size_t expected_size = 1;
  for (const auto& [name, k] : variants) {
    INFO("field: " << name);
    CHECK(PlanKeyHash(k.src, k.dst, k.rank, k.options) != base_hash);
    auto plan = cache.Get(k.src, k.dst, k.rank, k.options);
    ++expected_size;
    CHECK(cache.size() == expected_size);
    CHECK(plan != base_plan);
    CHECK(SamePlan(*plan, MakePlan(k.src, k.dst, k.rank, k.options)));
  }
  CHECK(cache.hits() == 0);
  CHECK(cache.misses() == expected_size);
}

TEST_CASE("a plan-relevant field changes the plan a cache would otherwise share", "[engine][plan_cache]") {
  // The ShardTensor failure mode: the flattened set decides whether the all_gathers merge.
  Key plain = BaseKey();
  Key flat = plain;
  Mesh mesh({2, 2});
  mesh.RegisterFlattened({0, 1});
  flat.src = WithMesh(flat.src, mesh);
  flat.dst = WithMesh(flat.dst, mesh);
  PlanCache cache;
  auto a = cache.Get(plain.src, plain.dst, 0, {});
  auto b = cache.Get(flat.src, flat.dst, 0, {});
  CHECK(a->optimized.size() == 2);
  CHECK(b->optimized.size() == 1);
}

TEST_CASE("plan cache Clear empties it and keeps handed-out plans alive", "[engine][plan_cache]") {
  PlanCache cache;
  Key k = BaseKey();
  auto plan = cache.Get(k.src, k.dst, k.rank, k.options);
  cache.Clear();
  CHECK(cache.size() == 0);
  CHECK(plan->notation == "S(0)[0]S(0)[1]->S(0)R->RR");
  auto again = cache.Get(k.src, k.dst, k.rank, k.options);
  CHECK(again != plan);
  CHECK(SamePlan(*again, *plan));
  CHECK(cache.size() == 1);
}

TEST_CASE("plan cache errors propagate and are not cached", "[engine][plan_cache]") {
  PlanCache cache;
  Key k = BaseKey();
  k.dst.placements = ParsePlacements("R,P(sum)", "t");
  CHECK_THROWS_AS(cache.Get(k.src, k.dst, 0, {}), shardscope::Error);
  CHECK(cache.size() == 0);
}

TEST_CASE("plan cache is safe under concurrent lookups", "[engine][plan_cache]") {
  PlanCache cache;
  Key k = BaseKey();
  std::vector<std::shared_ptr<const Plan>> got(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) got[t] = cache.Get(k.src, k.dst, static_cast<int64_t>(i % 4), k.options);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(cache.size() == 4);
  CHECK(cache.hits() + cache.misses() == 8 * 200);
  for (const auto& p : got) CHECK(SamePlan(*p, MakePlan(k.src, k.dst, 3, k.options)));
}
