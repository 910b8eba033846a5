// The GUI's progressive load of Flight Recorder dumps (TraceLoader + FlightLoadCollector): every
// snapshot taken while the dumps load is consistent (each read rank's place in each of its groups
// is what its own dump says, per the definition restated below; counts add up; nothing unread is
// shown as read), and the final model and analysis equal a full load's (trace::ReadAnyTrace,
// CheckTrace, TriageModel), with triage naming the generator's injected culprit.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "../common/temp_dir.hpp"
#include "flight_load.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/importers.hpp"
#include "trace_loader.hpp"

namespace fs = std::filesystem;
using shardscope::app::gui::FlightLoadSnapshot;
using shardscope::app::gui::FlightPlace;
using shardscope::app::gui::TraceLoader;
namespace trace = shardscope::trace;

namespace {

// Generates a dump directory with make_fr_faults.py (`scenario`, `ranks`, `entries`).
fs::path MakeFaultDumps(const std::string& name, const std::string& scenario, int ranks, int entries) {
  const fs::path dir = shardscope::testing::FreshTempDir(name);
  fs::create_directories(dir);
  const std::string cmd = "python3 " + std::string(SHARDSCOPE_SOURCE_DIR) +
                          "/tests/trace/make_fr_faults.py " + scenario + " " + (dir / "dumps").string() +
                          " --ranks " + std::to_string(ranks) + " --entries " + std::to_string(entries) +
                          " --seed 3 --no-wrap >" + (dir / "gen.txt").string() + " 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return dir / "dumps";
}

// The definition, restated from the full model: a rank's place in a process group is its first
// (lowest seq) collective of the group that it never completed, with that state; else the last
// (highest seq) one it completed. Send/recv entries do not count.
std::map<std::string, std::pair<int64_t, std::string>> PlacesByDefinition(const trace::RankTrace& rt) {
  std::map<std::string, std::pair<int64_t, std::string>> stuck, done;
  for (const trace::Collective& c : rt.events.Of<trace::Collective>()) {
    if (!c.HasFlight() || c.flight_shape().is_p2p) continue;
    const std::string pg = c.flight_shape().pg_name.str();
    const int64_t seq = c.flight.seq_id;
    if (c.flight_shape().state == "completed") {
      if (!done.count(pg) || seq > done[pg].first)
        done[pg] = {seq, "done through seq " + std::to_string(seq)};
    } else if (!stuck.count(pg) || seq < stuck[pg].first) {
      stuck[pg] = {
          seq, c.flight_shape().state.str() + " seq " + std::to_string(seq) + " (" + c.kind().str() + ")"};
    }
  }
  for (auto& [pg, place] : done)
    if (!stuck.count(pg)) stuck[pg] = place;
  return stuck;
}

void CheckSnapshot(const FlightLoadSnapshot& s, const trace::Model& full) {
  std::map<int64_t, const trace::RankTrace*> by_rank;
  for (const trace::RankTrace& rt : full.ranks) by_rank[rt.header.rank] = &rt;
  REQUIRE(s.world == full.world);
  REQUIRE(s.rank_status.size() == static_cast<size_t>(full.world));
  // Behind: the least advanced read ranks of a group whose read ranks are at several places.
  std::set<int64_t> behind_ranks;
  for (const auto& g : s.groups)
    if (g.states.size() > 1)
      behind_ranks.insert(g.states.front().ranks.begin(), g.states.front().ranks.end());
  int64_t read = 0, stuck = 0;
  for (int64_t r = 0; r < s.world; ++r) {
    const uint8_t st = s.rank_status[static_cast<size_t>(r)];
    if (st == 0) continue;
    ++read;
    bool never_completed = false;
    for (const trace::Collective& c : by_rank.at(r)->events.Of<trace::Collective>())
      never_completed = never_completed || (c.HasFlight() && c.flight_shape().state != "completed");
    CHECK(st == (behind_ranks.count(r) ? 3 : never_completed ? 2 : 1));
    stuck += never_completed ? 1 : 0;
  }
  CHECK(read == s.ranks_loaded);
  CHECK(stuck == s.stuck_ranks);
  CHECK(static_cast<int64_t>(behind_ranks.size()) == s.behind_ranks);
  // Every place of every read rank, as the snapshot lists them per group.
  std::map<std::pair<int64_t, std::string>, std::string> listed;
  int64_t behind = 0;
  for (const auto& g : s.groups) {
    int64_t in_states = 0;
    for (size_t i = 0; i < g.states.size(); ++i) {
      const auto& st = g.states[i];
      CHECK(st.text == st.place.Text());
      const std::string ranges = trace::FormatRankRanges(st.ranks);
      CHECK(st.ranks_text == (ranges.size() > 160 ? ranges.substr(0, 160) + " ..." : ranges));
      if (i > 0) CHECK(g.states[i - 1].place < st.place);  // least advanced first, each place once
      for (int64_t r : st.ranks) {
        CHECK(s.rank_status.at(static_cast<size_t>(r)) != 0);  // only read ranks
        CHECK(listed.emplace(std::make_pair(r, g.name), st.text).second);
      }
      in_states += static_cast<int64_t>(st.ranks.size());
    }
    CHECK(in_states == g.loaded);
    CHECK(g.loaded <= g.size);
    behind += g.Behind() ? 1 : 0;
  }
  CHECK(behind == s.behind_groups);
  // Groups with ranks behind come first, then those with a rank stuck in a collective.
  auto order = [](const auto& g) { return g.Behind() ? 0 : g.Stuck() ? 1 : 2; };
  for (size_t i = 1; i < s.groups.size(); ++i) CHECK(order(s.groups[i - 1]) <= order(s.groups[i]));
  // Each read rank's places are the definition's, no more, no fewer.
  size_t expected = 0;
  for (int64_t r = 0; r < s.world; ++r) {
    if (s.rank_status[static_cast<size_t>(r)] == 0) continue;
    for (const auto& [pg, place] : PlacesByDefinition(*by_rank.at(r))) {
      ++expected;
      auto it = listed.find({r, pg});
      INFO("rank " << r << " pg " << pg);
      REQUIRE(it != listed.end());
      CHECK(it->second == place.second);
    }
  }
  CHECK(listed.size() == expected);
}

}  // namespace

TEST_CASE("flight load: the ranks read so far, consistent at every snapshot; the end equals a full load",
          "[gui][loader][flight]") {
  const fs::path dumps = MakeFaultDumps("gui_flight_load", "not_enqueued", 64, 40);
  std::ifstream in(dumps / "triage_expected.json");
  const auto want = nlohmann::json::parse(in);
  const trace::Model full = trace::ReadAnyTrace(dumps);
  REQUIRE(full.world == 64);

  std::vector<std::shared_ptr<const FlightLoadSnapshot>> seen;
  TraceLoader::SetDumpDelayForTests(8);  // 64 dumps on every core: long enough to see it midway
  {
    TraceLoader loader(dumps.string());
    const auto start = std::chrono::steady_clock::now();
    while (!loader.done() && std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
      if (auto s = loader.snapshot(0); s && (seen.empty() || seen.back() != s)) seen.push_back(s);
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    REQUIRE(loader.done());
    REQUIRE(loader.error().empty());
    auto last = loader.snapshot(0);
    REQUIRE(last);
    if (seen.back() != last) seen.push_back(last);

    // Partial snapshots were seen, and each is consistent; ranks only accumulate.
    int64_t partial = 0, before = 0;
    for (const auto& s : seen) {
      CheckSnapshot(*s, full);
      CHECK(s->ranks_loaded >= before);
      before = s->ranks_loaded;
      CHECK(s->files_total == 64);
      partial += s->ranks_loaded < 64 ? 1 : 0;
    }
    CHECK(partial >= 2);
    // At the end: every rank, triage's verdict (the generator's culprit), and the group where the
    // culprit stopped lists it alone as least advanced.
    CHECK(last->ranks_loaded == 64);
    REQUIRE(last->triage);
    CHECK(last->triage->verdict == want["verdict"].get<std::string>());
    CHECK(last->triage->culprits == want["culprits"].get<std::vector<int64_t>>());
    const std::string pg = want["process_group"].get<std::string>();
    bool found = false;
    for (const auto& g : last->groups) {
      if (g.name != pg) continue;
      found = true;
      CHECK(g.Behind());
      CHECK(g.states.front().ranks == want["culprits"].get<std::vector<int64_t>>());
    }
    CHECK(found);

    // The final model and analysis are a full load's.
    const auto model = loader.model();
    REQUIRE(model);
    CHECK(model->world == full.world);
    CHECK(model->ranks.size() == full.ranks.size());
    for (size_t i = 0; i < full.ranks.size() && i < model->ranks.size(); ++i) {
      CHECK(model->ranks[i].header.rank == full.ranks[i].header.rank);
      CHECK(model->ranks[i].events.size() == full.ranks[i].events.size());
    }
    CHECK(trace::FlightJson(*model) == trace::FlightJson(full));
    REQUIRE(model->diagnostics.size() == full.diagnostics.size());
    for (size_t i = 0; i < full.diagnostics.size(); ++i)
      CHECK(model->diagnostics[i].message == full.diagnostics[i].message);
    const auto analysis = loader.analysis();
    REQUIRE(analysis);
    const trace::TriageResult triage = trace::TriageModel(full);
    CHECK(trace::TriageJson(analysis->triage) == trace::TriageJson(triage));
    const trace::CheckResult check = trace::CheckTrace(full);
    REQUIRE(analysis->check.mismatches.size() == check.mismatches.size());
    for (size_t i = 0; i < check.mismatches.size(); ++i)
      CHECK(analysis->check.mismatches[i].message == check.mismatches[i].message);
    size_t collectives = 0;
    for (const trace::RankTrace& rt : full.ranks) collectives += rt.events.Of<trace::Collective>().size();
    CHECK(analysis->data.spans.size() == collectives);
  }
  TraceLoader::SetDumpDelayForTests(0);
}

TEST_CASE("flight load: a place's order and text follow their definition", "[gui][loader][flight]") {
  // done through 141 < scheduled 142 < started 142 < done through 142
  const FlightPlace done141{141, 2, ""}, sched142{142, 0, "all_reduce"}, started142{142, 1, "all_reduce"},
      done142{142, 2, ""};
  CHECK(done141 < sched142);
  CHECK(sched142 < started142);
  CHECK(started142 < done142);
  CHECK(!(done142 < done141));
  CHECK(done141.Text() == "done through seq 141");
  CHECK(sched142.Text() == "scheduled seq 142 (all_reduce)");
  CHECK(started142.Text() == "started seq 142 (all_reduce)");
}

TEST_CASE("flight load: other traces load as before, with no snapshot", "[gui][loader]") {
  TraceLoader loader(std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/golden/check/clean");
  const auto start = std::chrono::steady_clock::now();
  while (!loader.done() && std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(loader.done());
  CHECK(loader.error().empty());
  CHECK(loader.model());
  CHECK(loader.snapshot(0) == nullptr);
}
