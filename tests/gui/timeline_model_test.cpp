// The timeline's levels of detail (issue 18 item 3), GL-free: group lanes per coordinate of the
// leading mesh dim, each the union of its members' spans naming the slowest and fastest rank, the
// rows with expanded groups, and the Tracy-style merge of spans narrower than a pixel. Expected
// values are worked out by hand from the definitions in timeline_model.hpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "sample_data.hpp"
#include "timeline_model.hpp"

namespace gui = shardscope::app::gui;
namespace engine = shardscope::engine;
using gui::GroupSpan;
using gui::TimelineSpan;

namespace {

std::pair<int64_t, TimelineSpan> At(int64_t rank, int64_t start, int64_t end, int64_t id = 0) {
  TimelineSpan s;
  s.start = start, s.end = end, s.redistribute_id = id;
  return {rank, s};
}

// Checks a group interval [start, end] of `members` ranks against the values worked out by hand:
// its slowest rank (latest end, and the span standing for the interval) and its fastest rank.
void CheckInterval(const GroupSpan& g, int64_t start, int64_t end, int64_t members, int64_t slowest_rank,
                   int64_t slowest_end, int64_t slowest_id, int64_t fastest_rank, int64_t fastest_end) {
  CHECK(g.start == start);
  CHECK(g.end == end);
  CHECK(g.members == members);
  CHECK(g.slowest_rank == slowest_rank);
  CHECK(g.slowest_end == slowest_end);
  CHECK(g.slowest.redistribute_id == slowest_id);
  CHECK(g.fastest_rank == fastest_rank);
  CHECK(g.fastest_end == fastest_end);
}

}  // namespace

TEST_CASE("a group lane is the union of its members' spans, naming the slowest and fastest rank",
          "[gui][timeline]") {
  // r0 [0,10], r1 [5,20] overlap; r2 [20,25] touches r1's end: one interval [0,25]. Latest ends
  // in it: r0 10, r1 20, r2 25, so the slowest is r2 and the fastest r0. Then r3 [30,40] and
  // r0 [35,38]: [30,40], slowest r3 (40), fastest r0 (38). r4 and r5 both end at 50 in [45,50]:
  // a tie goes to the lower rank both ways.
  auto u = gui::UnionSpans({At(3, 30, 40, 7), At(0, 0, 10), At(1, 5, 20), At(2, 20, 25, 9), At(0, 35, 38),
                            At(5, 46, 50), At(4, 45, 50)});
  REQUIRE(u.size() == 3);
  CheckInterval(u[0], 0, 25, 3, 2, 25, 9, 0, 10);  // the slowest member's span (id 9) stands for it
  CHECK(u[0].spans == 3);
  CheckInterval(u[1], 30, 40, 2, 3, 40, 7, 0, 38);
  CHECK(u[2].start == 45);
  CHECK(u[2].slowest_rank == 4);
  CHECK(u[2].fastest_rank == 4);
  // A member with two spans in one interval counts once, with its later end.
  auto two = gui::UnionSpans({At(1, 0, 30), At(1, 5, 8), At(2, 6, 12)});
  REQUIRE(two.size() == 1);
  CHECK(two[0].members == 2);
  CHECK(two[0].slowest_rank == 1);
  CHECK(two[0].slowest_end == 30);
  CHECK(two[0].fastest_rank == 2);
  CHECK(gui::UnionSpans({}).empty());
}

TEST_CASE("spans narrower than a pixel merge into one item, wider ones stay alone", "[gui][timeline]") {
  // A pixel of 10 ns. [0,3] [5,8] [12,14] are small with gaps 2 and 4: one item [0,14] of 3.
  // [14,40] is wide: alone. [41,43] small, and the next small one starts 17 ns after it: alone.
  struct S {
    int64_t start, end;
  };
  const std::vector<S> spans = {{0, 3}, {5, 8}, {12, 14}, {14, 40}, {41, 43}, {60, 62}};
  using Item = std::tuple<size_t, size_t, int64_t, int64_t>;
  auto items = [&](int64_t vs, int64_t ve) {
    std::vector<Item> out;
    gui::ForEachLodItem(spans, 0, vs, ve, 10, [&](size_t first, size_t count, int64_t a, int64_t b) {
      out.emplace_back(first, count, a, b);
    });
    return out;
  };
  CHECK(items(0, 100) == std::vector<Item>{{0, 3, 0, 14}, {3, 1, 14, 40}, {4, 1, 41, 43}, {5, 1, 60, 62}});
  // Only what overlaps [13, 50]: [12,14] alone now (its small neighbours end before 13).
  CHECK(items(13, 50) == std::vector<Item>{{2, 1, 12, 14}, {3, 1, 14, 40}, {4, 1, 41, 43}});
  // At 1 ns a pixel nothing is small: one item per span.
  std::vector<Item> fine;
  gui::ForEachLodItem(spans, 0, 0, 100, 1, [&](size_t first, size_t count, int64_t a, int64_t b) {
    fine.emplace_back(first, count, a, b);
  });
  CHECK(fine.size() == spans.size());
}

TEST_CASE("groups follow the leading mesh dim; rows list each expanded group's ranks", "[gui][timeline]") {
  auto g = gui::MeshGroups(4096, {64, 64}, {"dp", "tp"});
  REQUIRE(g.size() == 64);
  CHECK(g[8].first_rank == 512);  // dp coordinate of rank r is r / 64 (row-major)
  CHECK(g[8].size == 64);
  CHECK(g[8].label == "dp=8");
  auto unnamed = gui::MeshGroups(256, {4, 8, 8}, {});
  REQUIRE(unnamed.size() == 4);
  CHECK(unnamed[3].label == "d0=3");
  CHECK(unnamed[3].first_rank == 192);
  // A 1-D mesh (or a leading dim of 1 rank per group): blocks of ceil(sqrt(world)) ranks.
  auto flat = gui::MeshGroups(100, {100}, {"x"});
  REQUIRE(flat.size() == 10);
  CHECK(flat[9].label == "r90-99");
  auto ragged = gui::MeshGroups(95, {95, 1}, {});  // a leading dim with one rank per group
  REQUIRE(ragged.size() == 10);                    // ceil(sqrt(95)) = 10: nine blocks of 10, one of 5
  CHECK(ragged.back().first_rank == 90);
  CHECK(ragged.back().size == 5);
  CHECK(ragged.back().label == "r90-94");
  gui::TimelineData data;
  data.lane_rank = {0, 1, 2, 3, 4, 5};
  data.groups = gui::MeshGroups(6, {3, 2}, {});
  using R = gui::TimelineRow;
  CHECK(gui::BuildRows(data, {false, true}) == std::vector<R>{{0, -1}, {1, -1}, {1, 2}, {1, 3}, {2, -1}});
  data.groups.clear();
  CHECK(gui::BuildRows(data, {}).size() == 6);
}

TEST_CASE("above 64 ranks the timeline builds group lanes from its rank lanes", "[gui][timeline]") {
  // 128 ranks on an 8x16 (dp, tp) mesh: 8 groups of 16. ModelFromPlans starts rank r at r * 150 ns
  // with equal durations; each rank's clock is also shifted by ((rank * 37) % 101) * 100 us, which
  // differs between any two of 16 consecutive ranks by more than 127 * 150 ns, so within a group the
  // slowest rank (latest end) is the one with the largest shift.
  engine::Mesh mesh({8, 16}, {"dp", "tp"});
  auto spec = [&](const char* p) {
    return engine::MakeSpec(mesh, engine::ParsePlacements(p, "t"), std::nullopt, {64, 64},
                            engine::DType::kF32, engine::ChunkRule::kTorch, {}, "t");
  };
  auto model = gui::ModelFromPlans(
      {{"t", spec("S(0),S(1)"), spec("R,S(1)"), {}}, {"u", spec("S(0),R"), spec("R,R"), {}}}, "test");
  auto shift = [](int64_t rank) { return (rank * 37) % 101 * 100000; };
  for (auto& r : model->ranks) r.header.clock.offset_ns = shift(r.header.rank);
  const gui::TimelineData data = gui::BuildTimeline(*model);
  REQUIRE(data.groups.size() == 8);
  for (const gui::TimelineGroup& g : data.groups) {
    INFO(g.label);
    CHECK(g.size == 16);
    int64_t want = g.first_rank, fastest = g.first_rank;
    for (int64_t r = g.first_rank; r < g.first_rank + g.size; ++r) {
      if (shift(r) > shift(want)) want = r;
      if (shift(r) < shift(fastest)) fastest = r;
    }
    CHECK(g.slowest_rank == want);
    CHECK(g.fastest_rank == fastest);
    // Every member bar lies inside exactly one union interval, and the intervals are disjoint.
    for (size_t i = 1; i < g.bars.size(); ++i) CHECK(g.bars[i - 1].end < g.bars[i].start);
    size_t member_bars = 0;
    for (int64_t r = g.first_rank; r < g.first_rank + g.size; ++r) {
      for (const TimelineSpan& s : data.bars[static_cast<size_t>(r)]) {
        ++member_bars;
        CHECK(std::count_if(g.bars.begin(), g.bars.end(),
                            [&](const GroupSpan& u) { return u.start <= s.start && s.end <= u.end; }) == 1);
      }
    }
    int spans = 0;
    for (const GroupSpan& u : g.bars) spans += u.spans;
    CHECK(spans == static_cast<int>(member_bars));
  }
  // F zooms to the selection: redistribute 1's range is its earliest start and latest end anywhere.
  int64_t a = 0, b = 0;
  REQUIRE(gui::IdRange(data.bars, 1, a, b));
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const auto& lane : data.bars)
    for (const TimelineSpan& s : lane)
      if (s.redistribute_id == 1) lo = std::min(lo, s.start), hi = std::max(hi, s.end);
  CHECK(a == lo);
  CHECK(b == hi);
  CHECK_FALSE(gui::IdRange(data.bars, 99, a, b));
  // At 64 ranks or fewer every rank keeps its own lane.
  engine::Mesh small({8, 8});
  auto small_spec = engine::MakeSpec(small, engine::ParsePlacements("S(0),R", "t"), std::nullopt, {64, 64},
                                     engine::DType::kF32, engine::ChunkRule::kTorch, {}, "t");
  auto small_model = gui::ModelFromPlans({{"t", small_spec, small_spec, {}}}, "test");
  CHECK(gui::BuildTimeline(*small_model).groups.empty());
}
