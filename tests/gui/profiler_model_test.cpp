// The profiler view's data (app/gui/profiler_model.hpp), GL-free: when a model reads as profiler
// traces, how CPU ops nest into rows, how kernels join the matcher's collectives with the straggler
// and its waits, and the level of detail that keeps a row's drawing bounded by pixels. Expected
// values are worked out by hand from the definitions in profiler_model.hpp and docs/kineto.md
// ("Across ranks": the last rank to arrive has the latest kernel start; a wait is that start minus
// the rank's own); the two pure helpers are swept over thousands of random rows.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "profiler_model.hpp"
#include "program_view_model.hpp"
#include "sample_data.hpp"
#include "search_model.hpp"
#include "shardscope/engine/core/mesh.hpp"
#include "shardscope/program/debugmode_import.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/writer.hpp"
#include "timeline_model.hpp"

namespace gui = shardscope::app::gui;
namespace trace = shardscope::trace;

namespace {

struct Span {
  int64_t start = 0, end = 0;
};

void AddOp(trace::RankTrace& rt, const std::string& name, int64_t t, int64_t end, int64_t step = 0) {
  trace::Op& op = rt.events.EmplaceOf<trace::Op>();
  op.id = static_cast<int64_t>(rt.events.Of<trace::Op>().size());
  op.Mutable().name = name;
  op.t_ns = t, op.end_ns = end, op.step = step;
}

void AddCollective(trace::RankTrace& rt, int64_t seq, int64_t start, int64_t end,
                   const char* kind = "all_reduce") {
  trace::Collective c;
  c.redistribute_id = -1;
  c.Mutable().kind = kind;
  c.Mutable().group = {0, 1, 2};
  trace::FlightRecord f;
  trace::FlightShape& shape = c.Mutable().flight.Mutable();
  shape.pg_name = "0";
  f.seq_id = seq;
  shape.input_sizes = {{1024}};
  shape.output_sizes = {{1024}};
  shape.input_dtypes = {"Float"};
  shape.output_dtypes = {"Float"};
  f.created_ns = start - 5;
  shape.state = "completed";
  c.flight = f;
  c.start_ns = start, c.end_ns = end;
  rt.events.emplace_back(std::move(c));
}

// Three ranks: ops nested two deep, two steps, and two all_reduces on group {0, 1, 2}. The first
// starts at 1000, 1100 and 1400 ns on r0, r1, r2 (r2 arrives last; r0 waits 400, r1 300); the
// second starts at 3000 on every rank (nobody waits, so nobody is a straggler).
trace::Model ThreeRanks() {
  trace::Model m;
  m.world = 3;
  for (int64_t r = 0; r < 3; ++r) {
    trace::RankTrace rt;
    rt.header.rank = r;
    rt.header.world = 3;
    AddOp(rt, "ProfilerStep#0", 0, 2000, 0);
    AddOp(rt, "ProfilerStep#1", 2000, 4000, 1);
    AddOp(rt, "aten::linear", 10, 100);
    AddOp(rt, "aten::mm", 20, 50);
    AddOp(rt, "aten::add", 60, 90);
    AddOp(rt, "aten::linear", 200, 300);
    const int64_t first[3] = {1000, 1100, 1400};
    AddCollective(rt, 1, first[r], 1600);
    AddCollective(rt, 2, 3000, 3100);
    m.ranks.push_back(std::move(rt));
  }
  m.Reindex();
  return m;
}

}  // namespace

TEST_CASE("profiler lanes: decided by the data", "[gui][profiler]") {
  trace::Model m = ThreeRanks();
  CHECK(gui::HasProfilerLanes(m));
  // Flight Recorder dumps: collectives with flight records, no op events.
  trace::Model fr = m;
  for (trace::RankTrace& rt : fr.ranks) {
    trace::EventList kept;
    for (const trace::Collective& c : rt.events.Of<trace::Collective>()) kept.emplace_back(c);
    rt.events = std::move(kept);
  }
  CHECK_FALSE(gui::HasProfilerLanes(fr));
  // Ops but no timed collective (every kernel of zero length): not a profiler trace's matched view.
  trace::Model untimed = ThreeRanks();
  for (trace::RankTrace& rt : untimed.ranks) {
    trace::EventList kept;
    for (const trace::Op& op : rt.events.Of<trace::Op>()) kept.emplace_back(op);
    rt.events = std::move(kept);
  }
  CHECK_FALSE(gui::HasProfilerLanes(untimed));
  CHECK_FALSE(gui::HasProfilerLanes(trace::Model{}));
  // One op that carries a sharding decision (a candidate strategy, as the engine's and DebugMode's
  // ops do), or one redistribute: a program's trace, not a profiler's.
  trace::Model decided = ThreeRanks();
  trace::Op& op = decided.ranks[1].events.EmplaceOf<trace::Op>();
  op.Mutable().name = "aten::mm";
  op.t_ns = 100, op.end_ns = 150;
  op.Mutable().candidates = {trace::OpStrategy{}};
  CHECK_FALSE(gui::HasProfilerLanes(decided));
  trace::Model moved = ThreeRanks();
  moved.redistributes.emplace_back();
  CHECK_FALSE(gui::HasProfilerLanes(moved));
  // Op records (Model::ops), as every reader gives, change nothing.
  trace::Model recorded = ThreeRanks();
  trace::AddKinetoOpRecords(recorded);
  REQUIRE(recorded.ops.size() == 18);  // 6 op events per rank
  CHECK(gui::HasProfilerLanes(recorded));
}

// A profiler directory (make_kineto_traces.py) and the trace `import kineto DIR -o T` writes of it
// (its events through trace::Writer, as that command does) are one model: both open on the
// profiler view, with one op record per op event, and neither gives the program view or the search
// list an op (a profiler's ops carry no sharding decision). A DebugMode import and the GUI's
// synthetic sample trace do not open on it.
TEST_CASE("profiler lanes: a profiler directory and its imported trace alike; DebugMode, synthetic not",
          "[gui][profiler]") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("shardscope_profiler_model_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string gen = "python3 '" + std::string(SHARDSCOPE_SOURCE_DIR) +
                          "/tests/trace/make_kineto_traces.py' '" + (dir / "kineto").string() +
                          "' --ranks 2 --steps 2 --pad-ops 3 > '" + (dir / "gen.txt").string() + "' 2>&1";
  REQUIRE(std::system(gen.c_str()) == 0);
  const trace::Model direct = trace::ReadAnyTrace(dir / "kineto");
  for (const trace::RankTrace& rt : direct.ranks) {
    trace::Writer writer(dir / "imported", rt.header);
    for (const trace::Event& e : rt.events) writer.Emit(e);
    writer.Close();
  }
  const trace::Model imported = trace::ReadAnyTrace(dir / "imported");
  // Per rank and step: ProfilerStep#s, 2 aten::linear + 2 aten::mm (--ops 2), 3 pad ops, and the
  // record_param_comms / nccl:* ops of the collectives; the records are one per op event either way.
  size_t events = 0;
  for (const trace::RankTrace& rt : direct.ranks) events += rt.events.Of<trace::Op>().size();
  CHECK(events >= 2 * 2 * (1 + 4 + 3));
  CHECK(direct.ops.size() == events);
  CHECK(imported.ops.size() == events);
  for (size_t i = 0; i < std::min(direct.ops.size(), imported.ops.size()); ++i) {
    CHECK(direct.ops[i].rank == imported.ops[i].rank);
    CHECK(direct.ops[i].op->id == imported.ops[i].op->id);
    CHECK(direct.ops[i].op->name() == imported.ops[i].op->name());
  }
  CHECK(gui::HasProfilerLanes(direct));
  CHECK(gui::HasProfilerLanes(imported));
  for (const trace::Model* m : {&direct, &imported}) {
    CHECK(gui::BuildProgramView(*m, gui::ProgramMetrics{}).nodes.empty());
    const std::vector<gui::SearchEntry> entries = gui::BuildSearchIndex(*m);
    CHECK(std::none_of(entries.begin(), entries.end(),
                       [](const gui::SearchEntry& e) { return e.kind == gui::SearchEntry::Kind::kOp; }));
  }
  // DebugMode import (samples/pytorch/debugmode_tp.txt on its 4x2 mesh): ops with their recorded
  // strategy, and redistributes.
  std::ifstream in(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/pytorch/debugmode_tp.txt");
  std::stringstream text;
  text << in.rdbuf();
  shardscope::program::ImportOptions options;
  options.mesh = shardscope::engine::Mesh({4, 2}, {"dp", "tp"});
  options.mesh.RegisterFlattened({0, 1});
  options.trace_dir = dir / "dm";
  (void)shardscope::program::ImportDebugMode(text.str(), options);
  const trace::Model dm = trace::ReadAnyTrace(dir / "dm");
  REQUIRE_FALSE(dm.ops.empty());
  CHECK_FALSE(gui::HasProfilerLanes(dm));
  CHECK_FALSE(gui::BuildProgramView(dm, gui::ProgramMetrics{}).nodes.empty());
  CHECK_FALSE(gui::HasProfilerLanes(*gui::MakeSampleModel()));
  fs::remove_all(dir);
}

TEST_CASE("profiler lanes: ops nest into rows, kernels join the matcher's collectives", "[gui][profiler]") {
  const trace::Model m = ThreeRanks();
  const gui::ProfilerData d = gui::BuildProfilerData(m);
  REQUIRE(d.lanes.size() == 3);
  CHECK(d.depth == 2);
  CHECK(d.ops == 12);  // 4 ops per rank, ProfilerStep#N apart
  CHECK(d.kernels == 6);
  CHECK(d.kinds == std::vector<std::string>{"all_reduce"});
  CHECK(d.t0 == 0);
  CHECK(d.t1 == 4000);
  for (const gui::ProfilerLane& lane : d.lanes) {
    REQUIRE(lane.rows.size() == 2);
    // Row 0: the two aten::linear; row 1: mm and add, both inside the first linear.
    REQUIRE(lane.rows[0].size() == 2);
    CHECK(lane.rows[0][0].start == 10);
    CHECK(lane.rows[0][1].start == 200);
    REQUIRE(lane.rows[1].size() == 2);
    CHECK(lane.rows[1][0].start == 20);
    CHECK(lane.rows[1][1].start == 60);
    REQUIRE(lane.steps.size() == 2);
    CHECK(lane.steps[1].step == 1);
    CHECK(lane.steps[1].start == 2000);
    REQUIRE(lane.kernels.size() == 2);
  }
  REQUIRE(d.analysis.collectives.size() == 2);
  REQUIRE(d.members.size() == 2);
  for (size_t c = 0; c < 2; ++c) {
    REQUIRE(d.members[c].size() == 3);
    const trace::KinetoCollective& kc = d.analysis.collectives[c];
    for (const gui::ProfilerMember& mem : d.members[c]) {
      const gui::ProfilerKernelSpan& s =
          d.lanes[static_cast<size_t>(mem.lane)].kernels[static_cast<size_t>(mem.kernel)];
      CHECK(s.collective == static_cast<int32_t>(c));
      // The matcher's event index names this very kernel.
      CHECK(kc.start_ns.at(d.lanes[static_cast<size_t>(mem.lane)].rank) == s.start);
    }
  }
  // Collective seq 1: r2 started last at 1400; everybody's wait ends there; only r2 is marked.
  const size_t c1 = d.analysis.collectives[0].seq == 1 ? 0 : 1;
  CHECK(d.analysis.collectives[c1].last_rank == 2);
  for (const gui::ProfilerMember& mem : d.members[c1]) {
    const gui::ProfilerKernelSpan& s =
        d.lanes[static_cast<size_t>(mem.lane)].kernels[static_cast<size_t>(mem.kernel)];
    CHECK(s.wait_end == 1400);
    CHECK(s.last == (d.lanes[static_cast<size_t>(mem.lane)].rank == 2));
  }
  CHECK(d.analysis.collectives[c1].wait_ns.at(0) == 400);
  CHECK(d.analysis.collectives[c1].wait_ns.at(1) == 300);
  // Seq 2 started together: no straggler mark, no wait.
  for (const gui::ProfilerMember& mem : d.members[1 - c1]) {
    const gui::ProfilerKernelSpan& s =
        d.lanes[static_cast<size_t>(mem.lane)].kernels[static_cast<size_t>(mem.kernel)];
    CHECK_FALSE(s.last);
    CHECK(s.wait_end == s.start);
  }
  REQUIRE(d.stragglers.size() == 1);
  CHECK(d.stragglers[0] == std::pair<int64_t, int64_t>{2, 1});
  CHECK(d.LaneOf(2) == 2);
  CHECK(d.LaneOf(7) == -1);
}

TEST_CASE("profiler lanes: nesting depths never put overlapping spans on one row",
          "[gui][profiler][property]") {
  std::mt19937_64 rng(35);
  for (int round = 0; round < 3000; ++round) {
    std::vector<Span> spans(static_cast<size_t>(rng() % 40));
    for (Span& s : spans) {
      s.start = static_cast<int64_t>(rng() % 1000);
      s.end = s.start + static_cast<int64_t>(rng() % 200);
    }
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    const std::vector<int32_t> depth = gui::NestingDepths(spans);
    for (size_t i = 0; i < spans.size(); ++i) {
      int32_t containing = 0;  // earlier spans still open at this one's start
      for (size_t j = 0; j < i; ++j) {
        if (depth[j] == depth[i]) CHECK(spans[j].end <= spans[i].start);
        containing += spans[j].start <= spans[i].start && spans[j].end > spans[i].start ? 1 : 0;
      }
      CHECK(depth[i] <= containing);
    }
    // Properly nested spans (each inside or after the previous ones): depth is exactly that count.
    std::vector<Span> nested;
    int64_t t = 0;
    std::vector<int64_t> open;
    for (int k = 0; k < 30; ++k) {
      if (!open.empty() && rng() % 3 == 0) {
        t = open.back() + static_cast<int64_t>(rng() % 3);
        open.pop_back();
        continue;
      }
      const int64_t limit = open.empty() ? t + 1000 : open.back();
      if (limit - t < 2) continue;
      const Span s{t, t + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(limit - t - 1))};
      nested.push_back(s);
      open.push_back(s.end);
      t = s.start + static_cast<int64_t>(rng() % 2);
    }
    std::sort(nested.begin(), nested.end(), [](const Span& a, const Span& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    const std::vector<int32_t> nd = gui::NestingDepths(nested);
    for (size_t i = 0; i < nested.size(); ++i) {
      int32_t containing = 0;
      for (size_t j = 0; j < i; ++j)
        containing += nested[j].start <= nested[i].start && nested[j].end > nested[i].start ? 1 : 0;
      CHECK(nd[i] == containing);
    }
  }
}

TEST_CASE("profiler lanes: a row's level of detail covers every visible span once, bounded by pixels",
          "[gui][profiler][property]") {
  std::mt19937_64 rng(350);
  for (int round = 0; round < 4000; ++round) {
    // A row of non-overlapping spans: narrow ones in dense bursts, some wide ones.
    std::vector<Span> row;
    int64_t t = static_cast<int64_t>(rng() % 100);
    const size_t n = static_cast<size_t>(rng() % 300);
    for (size_t i = 0; i < n; ++i) {
      const int64_t len =
          rng() % 10 == 0 ? static_cast<int64_t>(rng() % 5000) : static_cast<int64_t>(rng() % 20);
      row.push_back({t, t + len});
      t += len + (rng() % 8 == 0 ? static_cast<int64_t>(rng() % 3000) : static_cast<int64_t>(rng() % 15));
    }
    const int64_t vs = static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(1, t)));
    const int64_t ve = vs + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(1, t)));
    const double ns_per_px = 1.0 + static_cast<double>(rng() % 400);
    const double min_px = 1.0 + static_cast<double>(rng() % 4);
    const int64_t px = static_cast<int64_t>(ns_per_px);
    std::vector<size_t> covered;
    size_t items = 0;
    gui::ForEachRowItem(row, vs, ve, ns_per_px, min_px,
                        [&](size_t first, size_t count, int64_t a, int64_t b) {
                          ++items;
                          REQUIRE(count >= 1);
                          REQUIRE(first + count <= row.size());
                          CHECK(a == row[first].start);
                          CHECK(b == row[first + count - 1].end);
                          if (count > 1) {
                            for (size_t k = first; k < first + count; ++k) {
                              CHECK(static_cast<double>(row[k].end - row[k].start) <
                                    min_px * ns_per_px);  // only narrow spans merge
                              if (k > first) CHECK(row[k].start - row[k - 1].end < px);  // gaps under a pixel
                            }
                          }
                          for (size_t k = first; k < first + count; ++k) covered.push_back(k);
                        });
    // Every span overlapping [vs, ve] exactly once, in order; nothing before the view.
    std::vector<size_t> want;
    for (size_t k = 0; k < row.size(); ++k)
      if (row[k].end >= vs && row[k].start <= ve) want.push_back(k);
    REQUIRE(covered.size() >= want.size());
    CHECK(std::is_sorted(covered.begin(), covered.end()));
    CHECK(std::adjacent_find(covered.begin(), covered.end()) == covered.end());
    for (size_t k : want) CHECK(std::binary_search(covered.begin(), covered.end(), k));
    for (size_t k : covered) CHECK(row[k].end >= vs);
    // Items: wide spans, plus runs separated by a gap of a pixel or more or by a wide span.
    const double pixels = static_cast<double>(ve - vs) / ns_per_px;
    CHECK(static_cast<double>(items) <=
          pixels * (1.0 + 2.0 / min_px) + 4.0 + (covered.size() - want.size()) * 2.0);
  }
}

// Hidden (run by name): what the views other than the profiler view cost on a profiler directory
// (SHARDSCOPE_PROFILER_BENCH_DIR, e.g. make_kineto_traces.py DIR --ranks 8 --steps 20 --pad-ops
// 2500: 400K op records), beside reading it, in seconds.
TEST_CASE("profiler lanes: cost of the other views on a profiler directory", "[.][bench]") {
  const char* path = std::getenv("SHARDSCOPE_PROFILER_BENCH_DIR");
  if (path == nullptr) {
    WARN("SHARDSCOPE_PROFILER_BENCH_DIR is not set");
    return;
  }
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); };
  auto t = Clock::now();
  const trace::Model m = trace::ReadAnyTrace(path);
  const double read = seconds(t);
  t = Clock::now();
  const bool lanes = gui::HasProfilerLanes(m);
  const double has = seconds(t);
  t = Clock::now();
  const size_t nodes = gui::BuildProgramView(m, gui::ProgramMetrics{}).nodes.size();
  const double program = seconds(t);
  t = Clock::now();
  const size_t entries = gui::BuildSearchIndex(m).size();
  const double search = seconds(t);
  t = Clock::now();
  const size_t timeline = gui::BuildTimeline(m).events;
  const double timeline_s = seconds(t);
  std::printf(
      "%zu op records: read %.3f s; HasProfilerLanes %d %.4f s; program view %zu nodes %.4f s; "
      "search %zu entries %.4f s; timeline %zu events %.4f s\n",
      m.ops.size(), read, lanes ? 1 : 0, has, nodes, program, entries, search, timeline, timeline_s);
  CHECK(lanes);
}
