// GL-free Statistics view model (issue 18 item 8). Expected values are derived by hand from the
// events of tests/golden/trace/two_rank (listed below) and from a model the test builds: a
// collective's time is end_ns - start_ns, a redistribute's is its end t_ns - begin t_ns on one
// rank, bytes are the bytes_sent of every rank's event summed, the mean is total / timed samples,
// and the slowest rank is the one with the max (the lowest rank on a tie).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "shardscope/trace/reader.hpp"
#include "stats_view_model.hpp"

namespace {

namespace trace = shardscope::trace;
using namespace shardscope::app::gui;  // ComputeTraceStats, SortStatsRows, StatsRow, ...

const StatsRow& Row(const std::vector<StatsRow>& rows, const std::string& label) {
  for (const StatsRow& r : rows) {
    if (r.label == label) return r;
  }
  FAIL("no row " << label);
  return rows.front();
}

void Check(const StatsRow& r, int64_t count, int64_t bytes, int64_t total, double mean, int64_t max,
           int64_t slowest) {
  INFO(r.label);
  CHECK(r.count == count);
  CHECK(r.bytes == bytes);
  CHECK(r.total_ns == total);
  CHECK(r.mean_ns == Approx(mean));
  CHECK(r.max_ns == max);
  CHECK(r.slowest_rank == slowest);
}

std::vector<std::string> Labels(const std::vector<StatsRow>& rows) {
  std::vector<std::string> out;
  for (const StatsRow& r : rows) out.push_back(r.label);
  return out;
}

}  // namespace

TEST_CASE("statistics of the two_rank trace, by kind and by redistribute", "[gui][stats]") {
  trace::Model model = trace::ReadTraceDir(SHARDSCOPE_SOURCE_DIR "/tests/golden/trace/two_rank");
  TraceStats stats = ComputeTraceStats(model);
  // Collectives (rank: start..end, bytes_sent):
  //   all_gather      r0: 1200..14200 [0,36]   r1: 1250..13250 [24,0]
  //   shape_exchange  r0: 20200..21200 [0,16]  r1: 20200..21200 [16,0]
  //   all_to_all      r0: 21300..29300 [0,24]  r1: 21300..29300 [32,0]
  REQUIRE(Labels(stats.kinds) == std::vector<std::string>{"all_gather", "all_to_all", "shape_exchange"});
  Check(Row(stats.kinds, "all_gather"), 2, 36 + 24, 13000 + 12000, 12500.0, 13000, 0);
  Check(Row(stats.kinds, "shape_exchange"), 2, 16 + 16, 1000 + 1000, 1000.0, 1000, 0);  // tie: rank 0
  Check(Row(stats.kinds, "all_to_all"), 2, 24 + 32, 8000 + 8000, 8000.0, 8000, 0);
  // Redistributes (rank: begin..end): #0 x r0 1000..16000, r1 1050..14050;
  //                                   #1 y r0 20000..30000, r1 20000..32500.
  REQUIRE(Labels(stats.redistributes) == std::vector<std::string>{"#0 x", "#1 y"});
  Check(stats.redistributes[0], 2, 36 + 24, 15000 + 13000, 14000.0, 15000, 0);
  Check(stats.redistributes[1], 2, 16 + 16 + 24 + 32, 10000 + 12500, 11250.0, 12500, 1);
  CHECK(stats.redistributes[1].id == 1);
}

TEST_CASE("statistics count op collectives and leave an unfinished rank untimed", "[gui][stats]") {
  trace::Model model;
  model.world = 2;
  trace::RedistributeRecord done;
  done.rank = 0;
  done.begin.Mutable().id = 7;
  done.begin.Mutable().t_ns = 100;
  done.end = trace::RedistributeEnd{7, 600, true, ""};
  trace::RedistributeRecord unfinished = done;
  unfinished.rank = 1;
  unfinished.end.reset();
  trace::OpRecord op;
  op.rank = 1;
  trace::Collective halo;
  halo.redistribute_id = -1;
  halo.op_id = 0;
  halo.Mutable().kind = "halo";
  halo.Mutable().bytes_sent = std::vector<int64_t>{5, 6};
  halo.start_ns = 10;
  halo.end_ns = 40;
  op.collectives.push_back(halo);
  model.redistributes = {done, unfinished};
  model.ops = {op};
  model.Reindex();
  TraceStats stats = ComputeTraceStats(model);
  REQUIRE(stats.kinds.size() == 1);
  Check(stats.kinds[0], 1, 11, 30, 30.0, 30, 1);
  REQUIRE(stats.redistributes.size() == 1);
  // Two ranks ran #7; only rank 0 finished (500 ns): the mean is over the one timed rank.
  Check(stats.redistributes[0], 2, 0, 500, 500.0, 500, 0);
  CHECK(stats.redistributes[0].timed == 1);
  CHECK(stats.redistributes[0].label == "#7");
}

TEST_CASE("statistics rows sort on any column, both ways, ties in label order", "[gui][stats]") {
  std::vector<StatsRow> rows(3);
  rows[0].label = "a";
  rows[0].total_ns = 5;
  rows[0].bytes = 1;
  rows[1].label = "b";
  rows[1].total_ns = 9;
  rows[1].bytes = 1;
  rows[2].label = "c";
  rows[2].total_ns = 1;
  rows[2].bytes = 7;
  SortStatsRows(rows, StatsColumn::kTotal, false);
  CHECK(Labels(rows) == std::vector<std::string>{"b", "a", "c"});
  SortStatsRows(rows, StatsColumn::kTotal, true);
  CHECK(Labels(rows) == std::vector<std::string>{"c", "a", "b"});
  SortStatsRows(rows, StatsColumn::kBytes, true);  // a and b tie on 1 byte: label order
  CHECK(Labels(rows) == std::vector<std::string>{"a", "b", "c"});
  SortStatsRows(rows, StatsColumn::kBytes, false);
  CHECK(Labels(rows) == std::vector<std::string>{"c", "a", "b"});
  SortStatsRows(rows, StatsColumn::kLabel, false);
  CHECK(Labels(rows) == std::vector<std::string>{"c", "b", "a"});
}
