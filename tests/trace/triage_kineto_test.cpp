// Triage of profiler (Kineto) models (docs/triage.md, "Profiler traces") on models built by hand,
// where every start time is chosen, so each figure follows from the definitions: a collective is
// delayed when its last member started over kKinetoLateNs (100 us) after its first; a straggler is
// a member of at least 3 delayed collectives, last at at least half of them, waiting under 50 us
// itself on average. And AddKinetoOpRecords: one record per op event, as the trace reader makes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "shardscope/trace/kineto.hpp"
#include "shardscope/trace/triage.hpp"

using namespace shardscope::trace;

namespace {

constexpr int64_t kUs = 1000;

// A model of `world` ranks read from profiler traces (header backend "kineto").
Model KinetoModel(int64_t world) {
  Model m;
  m.world = world;
  for (int64_t r = 0; r < world; ++r) {
    RankTrace rt;
    rt.header.rank = r;
    rt.header.world = world;
    rt.header.backend = "kineto";
    m.ranks.push_back(std::move(rt));
  }
  return m;
}

// An all_reduce of `elems` Float on `pg` (ranks `group`), seq `seq`, whose kernel on `rank` starts
// at `start_ns` and lasts 100 us.
void AddNs(Model& m, int64_t rank, const std::string& pg, std::vector<int64_t> group, int64_t seq,
           int64_t start_ns, int64_t elems = 1024) {
  Collective c;
  c.redistribute_id = -1;
  c.op_id = -1;
  c.Mutable().kind = "all_reduce";
  c.Mutable().group = std::move(group);
  c.start_ns = start_ns;
  c.end_ns = start_ns + 100 * kUs;
  FlightRecord f;
  FlightShape& shape = c.Mutable().flight.Mutable();
  shape.pg_name = pg;
  f.seq_id = seq;
  shape.profiling_name = "nccl:all_reduce";
  shape.state = "completed";
  shape.input_sizes = {{elems}};
  shape.output_sizes = {{elems}};
  shape.input_dtypes = {"Float"};
  shape.output_dtypes = {"Float"};
  f.created_ns = c.start_ns - 5 * kUs;
  c.flight = f;
  m.ranks[static_cast<size_t>(rank)].events.emplace_back(std::move(c));
}

// The same, starting at `start_us` microseconds.
void Add(Model& m, int64_t rank, const std::string& pg, std::vector<int64_t> group, int64_t seq,
         int64_t start_us) {
  AddNs(m, rank, pg, std::move(group), seq, start_us * kUs);
}

}  // namespace

TEST_CASE("kineto triage: the straggler, not the rank it made late elsewhere", "[triage][kineto]") {
  // 4 ranks: tp pairs {0,1} (pg "1") and {2,3} (pg "2"), dp pairs {0,2} (pg "3") and {1,3} (pg
  // "4"). In each of 4 iterations rank 1 starts its tp all_reduce 500 us after rank 0; rank 0,
  // held up, then starts its dp all_reduce 500 us after rank 2, as rank 1 does after rank 3.
  Model m = KinetoModel(4);
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t t = i * 10'000, seq = i + 1;
    Add(m, 0, "1", {0, 1}, seq, t);
    Add(m, 1, "1", {0, 1}, seq, t + 500);
    Add(m, 2, "2", {2, 3}, seq, t);
    Add(m, 3, "2", {2, 3}, seq, t);
    Add(m, 0, "3", {0, 2}, seq, t + 600);
    Add(m, 2, "3", {0, 2}, seq, t + 100);
    Add(m, 1, "4", {1, 3}, seq, t + 600);
    Add(m, 3, "4", {1, 3}, seq, t + 100);
  }
  m.Reindex();
  const TriageResult r = TriageModel(m);
  INFO(FormatTriageText(r));
  // Rank 1: 8 collectives, all delayed, last at all 8, never waits: the straggler; it made its
  // peer wait 500 us in each, 8 x 500 = 4000 us. Rank 0 is last at 4 of its 8 delayed (half) but
  // waited 4 x 500 / 8 = 250 us on average: a victim, as ranks 2 and 3 (250 us each).
  CHECK(r.profiler);
  CHECK(r.verdict == "straggler");
  CHECK(r.Class() == "straggler");
  CHECK(r.culprits == std::vector<int64_t>{1});
  CHECK(r.victims == std::vector<int64_t>{0, 2, 3});
  CHECK(r.entries == 32);
  REQUIRE(r.roots.size() == 1);
  REQUIRE(r.roots[0].stragglers.size() == 1);
  const TriageStraggler& s = r.roots[0].stragglers[0];
  CHECK(s.rank == 1);
  CHECK(s.overall.collectives == 8);
  CHECK(s.overall.delayed == 8);
  CHECK(s.overall.last == 8);
  CHECK(s.overall.caused_wait_ns == 4000 * kUs);
  CHECK(s.overall.worst_wait_ns == 500 * kUs);
  CHECK(s.overall.own_wait_ns == 0);
  // The worst wait is first met in pg "1" (matched collectives run by group, then seq).
  CHECK(s.overall.worst_process_group == "1");
  CHECK(s.overall.worst_seq == 1);
  CHECK(s.overall.worst_kind == "all_reduce");
  REQUIRE(s.groups.size() == 2);
  CHECK(s.groups[0].process_group == "1");
  CHECK(s.groups[0].group_size == 2);
  CHECK(s.groups[0].last == 4);
  CHECK(s.groups[0].caused_wait_ns == 2000 * kUs);
  CHECK(s.groups[1].process_group == "4");
  CHECK(s.groups[1].caused_wait_ns == 2000 * kUs);
  const nlohmann::json j = TriageJson(r);
  CHECK(j["profiler_traces"] == true);
  CHECK(j["stragglers"][0]["caused_wait_us"] == 4000.0);
  CHECK(j["stragglers"][0]["mean_own_wait_us"] == 0.0);
}

TEST_CASE("kineto triage: a collective is delayed only over 100 us", "[triage][kineto]") {
  // Rank 2 of 3 starts each of 4 all_reduces `late` after the others.
  auto model = [](int64_t late_ns) {
    Model m = KinetoModel(3);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t rank = 0; rank < 3; ++rank)
        AddNs(m, rank, "0", {0, 1, 2}, i + 1, i * 10'000 * kUs + (rank == 2 ? late_ns : 0));
    m.Reindex();
    return m;
  };
  const TriageResult at = TriageModel(model(kKinetoLateNs));
  CHECK(at.verdict == "clean");
  CHECK(at.roots.empty());
  CHECK(at.notes.empty());
  const TriageResult over = TriageModel(model(kKinetoLateNs + 1));
  CHECK(over.verdict == "straggler");
  CHECK(over.culprits == std::vector<int64_t>{2});
  // 4 collectives x 2 ranks waiting (100 us + 1 ns) each.
  REQUIRE(over.roots.size() == 1);
  CHECK(over.roots[0].stragglers.at(0).overall.caused_wait_ns == 8 * (kKinetoLateNs + 1));
  CHECK(over.victims == std::vector<int64_t>{0, 1});
}

TEST_CASE("kineto triage: jitter that makes each rank of a pair last in turn blames nobody",
          "[triage][kineto]") {
  // Ranks 0 and 1, 6 all_reduces; the later one alternates (1, 0, 1, ...), 200 us apart. Each is
  // last at 3 of 6 delayed (half) but waits 3 x 200 / 6 = 100 us on average: no straggler.
  Model m = KinetoModel(2);
  for (int64_t i = 0; i < 6; ++i) {
    const int64_t t = i * 10'000;
    Add(m, 0, "0", {0, 1}, i + 1, t + (i % 2 == 1 ? 200 : 0));
    Add(m, 1, "0", {0, 1}, i + 1, t + (i % 2 == 0 ? 200 : 0));
  }
  m.Reindex();
  const TriageResult r = TriageModel(m);
  CHECK(r.verdict == "clean");
  CHECK(r.culprits.empty());
  // The note names who made the others wait the most: both 600 us; the lower rank is named.
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("6 matched collective(s)") == 0);
  CHECK(r.notes[0].find("rank 0 made the others wait the most (600 us over 3 last arrival(s))") !=
        std::string::npos);
}

TEST_CASE("kineto triage: a size mismatch is found by Flight Recorder's rules", "[triage][kineto]") {
  Model m = KinetoModel(4);
  // The i-th all_reduce has 1024 (i + 1) elements (each seq its own signature, so a shifted
  // sequence cannot be mistaken for it); rank 2's second has 4096 where the others have 2048.
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t rank = 0; rank < 4; ++rank)
      AddNs(m, rank, "0", {0, 1, 2, 3}, i + 1, i * 10'000 * kUs, rank == 2 && i == 1 ? 4096 : 1024 * (i + 1));
  m.Reindex();
  const TriageResult r = TriageModel(m);
  CHECK(r.verdict == "mismatch");
  CHECK(r.Class() == "size_mismatch");
  CHECK(r.culprits == std::vector<int64_t>{2});
  REQUIRE(r.roots.size() == 1);
  CHECK(r.roots[0].process_group == "0");
  CHECK(r.roots[0].seq == 2);
  CHECK(r.roots[0].stragglers.empty());
}

TEST_CASE("AddKinetoOpRecords: one record per op event, sorted by rank and id", "[kineto]") {
  Model m = KinetoModel(2);
  for (int64_t rank = 1; rank >= 0; --rank) {
    for (int64_t id = 0; id < 3; ++id) {
      Op& op = m.ranks[static_cast<size_t>(rank)].events.EmplaceOf<Op>();
      op.id = id;
      op.Mutable().name = id == 0 ? "ProfilerStep#0" : "aten::mm";
      op.t_ns = id * 100, op.end_ns = id * 100 + 50;
    }
  }
  m.Reindex();
  REQUIRE(m.ops.empty());
  AddKinetoOpRecords(m);
  REQUIRE(m.ops.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(m.ops[i].rank == static_cast<int64_t>(i / 3));
    CHECK(m.ops[i].op->id == static_cast<int64_t>(i % 3));
    // The record refers to the stored event.
    CHECK(&*m.ops[i].op == &m.ranks[i / 3].events.Of<Op>()[i % 3]);
  }
  CHECK(m.OpIds() == std::vector<int64_t>{0, 1, 2});
  CHECK(m.OpsWithId(1).size() == 2);
  AddKinetoOpRecords(m);  // records already there: nothing added
  CHECK(m.ops.size() == 6);
}
