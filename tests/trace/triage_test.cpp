// Triage (docs/triage.md) on the fault-injection generator's cases: for every class the culprit set
// equals the injected one exactly (precision and recall 1.0), the class, verdict, process group and
// seq are the injected ones, and no culprit is listed as a victim. The expected answers are the
// generator's definition of each fault (tests/trace/make_fr_faults.py), never this code's output.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../common/fr_json.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/triage.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using namespace shardscope::trace;

namespace {

struct TempDir : testing::ScopedTempDir {
  explicit TempDir(const std::string& name) : ScopedTempDir("triage_" + name) {}
};

std::string Python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

// Generates a case and returns its expected answer.
nlohmann::json Generate(const std::string& scenario, const fs::path& dir, const std::string& extra = "") {
  const std::string cmd = Python() + " " + SHARDSCOPE_SOURCE_DIR + "/tests/trace/make_fr_faults.py " +
                          scenario + " " + dir.string() + " " + extra + " --jobs 1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(dir / "triage_expected.json");
  return nlohmann::json::parse(in);
}

void CheckCase(const std::string& scenario, const std::string& extra, const std::string& tag) {
  TempDir dir(scenario + tag);
  const nlohmann::json want = Generate(scenario, dir.path / "dumps", extra);
  TriageResult got = TriagePaths({dir.path / "dumps"}, {}, 2);
  INFO(scenario << " " << extra << "\n" << FormatTriageText(got));
  CHECK(got.culprits == want["culprits"].get<std::vector<int64_t>>());
  CHECK(got.verdict == want["verdict"].get<std::string>());
  if (want["class"].is_string()) CHECK(got.Class() == want["class"].get<std::string>());
  if (want["class"].is_null()) CHECK(got.roots.empty());
  // The first root's process group and seq (roots are compared as a set).
  for (const auto& root : want["roots"]) {
    bool found = false;
    for (const TriageRoot& r : got.roots) {
      if (r.cls != root["class"].get<std::string>() ||
          r.culprits != root["culprits"].get<std::vector<int64_t>>())
        continue;
      found = true;
      if (root["process_group"].is_string())
        CHECK(r.process_group == root["process_group"].get<std::string>());
      if (root["seq"].is_number()) {
        REQUIRE(r.seq.has_value());
        CHECK(*r.seq == root["seq"].get<int64_t>());
      }
    }
    CHECK(found);
  }
  for (int64_t v : got.victims)
    CHECK(std::find(got.culprits.begin(), got.culprits.end(), v) == got.culprits.end());
  // A hang blocks every rank that is not a culprit (the generator's cascades reach the whole job).
  if (want["verdict"] == "hang" && !want["dead"].empty())
    CHECK(got.dumps == want["world"].get<int64_t>() - 1);
}

}  // namespace

TEST_CASE("triage names exactly the injected culprits for every class at 64 ranks", "[trace][triage]") {
  for (const char* s : {"clean", "not_enqueued", "not_started", "deadlock", "size", "dtype", "kind",
                        "skipped", "extra", "p2p", "dead", "straggler", "network", "wrapped", "multi"}) {
    SECTION(s) { CheckCase(s, "--dp 8 --tp 8 --entries 200", "64"); }
  }
}

TEST_CASE("triage: other seeds, JSON dumps and other file prefixes", "[trace][triage]") {
  for (int seed = 2; seed <= 4; ++seed)
    for (const char* s : {"not_enqueued", "deadlock", "skipped", "p2p", "multi"})
      CheckCase(s, "--dp 8 --tp 8 --entries 120 --seed " + std::to_string(seed), "seed");
  for (const char* s : {"not_started", "size", "network", "wrapped"})
    CheckCase(s, "--dp 4 --tp 16 --entries 100 --format json --prefix host-a.fr_dump_", "json");
}

TEST_CASE("triage at 1024 ranks", "[trace][triage][large]") {
  for (const char* s : {"not_enqueued", "deadlock", "dead", "multi"})
    CheckCase(s, "--ranks 1024 --entries 60", "1024");
}

TEST_CASE("triage: --mesh names the dim a group spans", "[trace][triage]") {
  TempDir dir("mesh");
  Generate("not_enqueued", dir.path / "d", "--dp 4 --tp 8 --entries 60");
  TriageResult r = TriagePaths({dir.path / "d"}, ParseTriageMesh("dp=4,tp=8"), 1);
  REQUIRE(r.roots.size() == 1);
  CHECK(r.roots[0].mesh_dim == "tp");  // a tp group: ranks d*8 .. d*8+7 vary along tp only
  for (const WavefrontGroup& g : r.wavefront)
    CHECK((g.desc == "mesh_tp" ? g.mesh_dim == "tp" : g.mesh_dim == "dp"));
  CHECK_THROWS_AS(ParseTriageMesh("dp=0"), Error);
  CHECK_THROWS_AS(ParseTriageMesh("dp"), Error);
  CHECK_THROWS_AS(ParseTriageMesh("dp=x"), Error);
}

TEST_CASE("triage: rank ranges", "[trace][triage]") {
  CHECK(FormatRankRanges({}) == "");
  CHECK(FormatRankRanges({3}) == "3");
  CHECK(FormatRankRanges({0, 1, 2, 4, 6, 7}) == "0-2, 4, 6-7");
}

TEST_CASE("flight recorder: both base collective spellings", "[trace][fr][triage]") {
  // PyTorch writes nccl:_all_gather_base / nccl:_reduce_scatter_base; older notes had
  // nccl:_allgather_base. Both read as all_gather / reduce_scatter.
  TempDir dir("spelling");
  for (int r = 0; r < 2; ++r) {
    nlohmann::json entries = nlohmann::json::array();
    int id = 0;
    for (const char* name : {"nccl:_all_gather_base", "nccl:_allgather_base", "nccl:_reduce_scatter_base"}) {
      ++id;
      entries.push_back(testing::FrEntry(id - 1, id, name, {{2}}, {{4}}));
    }
    nlohmann::json dump = testing::FrDump(entries, "[0, 1]", "2.10");
    std::ofstream(dir.path / ("nccl_trace_rank_" + std::to_string(r))) << dump.dump();
  }
  Model m = ReadFlightRecorder({dir.path});
  const auto& c = m.ranks[0].events.Of<Collective>();
  REQUIRE(c.size() == 3);
  CHECK(c[0].kind().view() == "all_gather");
  CHECK(c[1].kind().view() == "all_gather");
  CHECK(c[2].kind().view() == "reduce_scatter");
}
