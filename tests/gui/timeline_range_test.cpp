// What a measured range of the timeline holds (drag on the time axis), GL-free: the counts, bytes
// and per-rank breakdown of ComputeRangeStats against the definition in timeline_range.hpp worked
// out straight from the trace model's records (each rank's clock offset applied), over thousands
// of random ranges.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "program_test_traces.hpp"
#include "sample_data.hpp"
#include "shardscope/trace/reader.hpp"
#include "timeline_model.hpp"
#include "timeline_range.hpp"

namespace gui = shardscope::app::gui;
namespace trace = shardscope::trace;

namespace {

struct Want {
  std::set<int64_t> redistributes, ops;
  int64_t collectives = 0, bytes = 0;
  std::map<int64_t, gui::RangeRankStats> ranks;
};

// The definition: a record overlaps [a, b] when its start <= b and its end >= a (a redistribute
// from its begin to the last of its end, step ends and collective ends; an op from t_ns to end_ns);
// a collective's bytes count whole, its busy time clipped to the range.
Want Expected(const trace::Model& m, int64_t a, int64_t b) {
  std::map<int64_t, int64_t> off;
  for (const auto& r : m.ranks) off[r.header.rank] = r.header.clock.offset_ns;
  Want w;
  auto collective = [&](int64_t rank, const trace::Collective& c) {
    const int64_t s = c.start_ns + off[rank], e = c.end_ns + off[rank];
    if (s > b || e < a) return;
    auto& r = w.ranks[rank];
    r.rank = rank;
    ++r.collectives, ++w.collectives;
    for (int64_t x : c.bytes_sent()) r.bytes_sent += x, w.bytes += x;
    r.busy_ns += std::max<int64_t>(0, std::min(e, b) - std::max(s, a));
  };
  for (const auto& rec : m.redistributes) {
    const int64_t o = off[rec.rank];
    int64_t s = rec.begin->t_ns + o, e = rec.end ? rec.end->t_ns + o : s;
    for (const auto& st : rec.steps) e = std::max(e, (st.end ? st.end->t_ns : st.begin->t_ns) + o);
    for (const auto& c : rec.collectives) e = std::max(e, c.end_ns + o);
    if (s <= b && e >= a) {
      w.redistributes.insert(rec.begin->id);
      w.ranks[rec.rank].rank = rec.rank;
      ++w.ranks[rec.rank].redistributes;
    }
    for (const auto& c : rec.collectives) collective(rec.rank, c);
  }
  for (const auto& rec : m.ops) {
    const int64_t o = off[rec.rank];
    const int64_t s = rec.op->t_ns + o, e = std::max(rec.op->end_ns, rec.op->t_ns) + o;
    if (s <= b && e >= a) {
      w.ops.insert(rec.op->id);
      w.ranks[rec.rank].rank = rec.rank;
      ++w.ranks[rec.rank].ops;
    }
    for (const auto& c : rec.collectives) collective(rec.rank, c);
  }
  return w;
}

void Check(const trace::Model& m, const gui::TimelineData& data, int64_t a, int64_t b) {
  const gui::RangeStats got = gui::ComputeRangeStats(m, data, a, b);
  const Want want = Expected(m, a, b);
  INFO("range [" << a << ", " << b << "]");
  CHECK(got.start_ns == a);
  CHECK(got.end_ns == b);
  CHECK(got.redistributes == static_cast<int64_t>(want.redistributes.size()));
  CHECK(got.ops == static_cast<int64_t>(want.ops.size()));
  CHECK(got.collectives == want.collectives);
  CHECK(got.bytes_sent == want.bytes);
  REQUIRE(got.ranks.size() == want.ranks.size());
  size_t i = 0;
  for (const auto& [rank, w] : want.ranks) {
    const gui::RangeRankStats& g = got.ranks[i++];
    CHECK(g.rank == rank);
    CHECK(g.redistributes == w.redistributes);
    CHECK(g.ops == w.ops);
    CHECK(g.collectives == w.collectives);
    CHECK(g.bytes_sent == w.bytes_sent);
    CHECK(g.busy_ns == w.busy_ns);
  }
}

}  // namespace

TEST_CASE("a measured range counts what overlaps it, per rank (random ranges)", "[gui][timeline][range]") {
  // The gallery's sample (redistributes only) and a hand-made program (ops, their redistributes and
  // a halo exchange the op runs itself).
  const auto dir =
      std::filesystem::temp_directory_path() / ("shardscope_range_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  shardscope_gui_test::WriteHandMadeProgramTrace(dir);
  auto program = std::make_shared<trace::Model>(trace::ReadTraceDir(dir));
  std::filesystem::remove_all(dir);
  REQUIRE(!program->ops.empty());
  for (std::shared_ptr<const trace::Model> model :
       {std::shared_ptr<const trace::Model>(gui::MakeSampleModel()),
        std::shared_ptr<const trace::Model>(program)}) {
    const gui::TimelineData data = gui::BuildTimeline(*model);
    std::mt19937_64 rng(38);
    const int64_t lo = data.t0 - 100, hi = data.t1 + 100;
    std::uniform_int_distribution<int64_t> at(lo, hi);
    for (int i = 0; i < 2000; ++i) {
      int64_t a = at(rng), b = at(rng);
      if (a > b) std::swap(a, b);
      Check(*model, data, a, b);
    }
    Check(*model, data, data.t0, data.t1);  // the whole trace: every record
    const gui::RangeStats all = gui::ComputeRangeStats(*model, data, data.t0, data.t1);
    CHECK(all.redistributes == static_cast<int64_t>(model->RedistributeIds().size()));
    CHECK(all.ops == static_cast<int64_t>(model->OpIds().size()));
    // Before the first event: nothing.
    const gui::RangeStats none = gui::ComputeRangeStats(*model, data, data.t0 - 50, data.t0 - 1);
    CHECK(none.ranks.empty());
    CHECK(none.collectives == 0);
    // Reversed bounds are the same range.
    CHECK(gui::ComputeRangeStats(*model, data, data.t1, data.t0).collectives == all.collectives);
  }
}
