// Golden "diff test": a hand-written 2-rank trace in, show's text out. Regenerate the expected
// text (never the input) with SHARDSCOPE_UPDATE_GOLDEN=1 and review the diff.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../common/test_knobs.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/summary.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

const fs::path kGolden = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests" / "golden" / "trace";

bool UpdateGolden() { return shardscope::KnobChoice(shardscope::knobs::UpdateGolden()) == "1"; }

void CompareGolden(const fs::path& expected_path, const std::string& actual) {
  if (UpdateGolden()) {
    std::ofstream(expected_path, std::ios::binary) << actual;
    WARN("updated " << expected_path.string());
    return;
  }
  std::ifstream in(expected_path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream expected;
  expected << in.rdbuf();
  CHECK(actual == expected.str());
}

}  // namespace

TEST_CASE("show text of the hand-written two-rank trace matches the golden file",
          "[trace][summary][golden]") {
  Model model = ReadTraceDir(kGolden / "two_rank");
  CompareGolden(kGolden / "two_rank.show.txt", FormatShowText(model));
}

TEST_CASE("summary of the two-rank trace follows from its events", "[trace][summary]") {
  // Values computed from the fixture by hand: f32 (5,3) S(0)->R on 2 ranks moves rows 0-2 (36 B)
  // and rows 3-4 (24 B); the i64 S(0)->S(1) all_to_all moves 3 elements (24 B) and 4 (32 B).
  std::vector<RedistributeSummary> s = Summarize(ReadTraceDir(kGolden / "two_rank"));
  REQUIRE(s.size() == 2);
  CHECK(s[0].tensor == "x");
  REQUIRE(s[0].collectives.size() == 1);
  CHECK(s[0].collectives[0].kind == "all_gather");
  CHECK(s[0].collectives[0].calls == 2);
  CHECK(s[0].collectives[0].bytes_sent == 60);
  CHECK(s[0].collectives[0].bytes_recv == 60);
  CHECK(*s[0].max_ns == 15000);
  CHECK(s[0].max_rank == 0);
  CHECK(*s[0].min_ns == 13000);
  REQUIRE(s[1].collectives.size() == 2);
  CHECK(s[1].collectives[0].negotiated);
  CHECK(s[1].collectives[0].bytes_sent == 32);
  CHECK(s[1].collectives[1].bytes_sent == 56);
  REQUIRE(s[1].layouts.size() == 2);
  CHECK(*s[1].layouts[1].shape_before == std::vector<int64_t>{2, 3});
  CHECK(*s[1].layouts[1].offset_before == std::vector<int64_t>{3, 0});
  CHECK(*s[1].layouts[1].shape_after == std::vector<int64_t>{5, 1});
  CHECK(*s[1].layouts[1].offset_after == std::vector<int64_t>{0, 2});
}

TEST_CASE("show json carries the same summary", "[trace][summary]") {
  nlohmann::json j = ShowJson(ReadTraceDir(kGolden / "two_rank"));
  CHECK(j["world"] == 2);
  CHECK(j["ranks"].size() == 2);
  CHECK(j["diagnostics"].size() == 1);
  REQUIRE(j["redistributes"].size() == 2);
  const nlohmann::json& r = j["redistributes"][1];
  CHECK(r["notation"] == "S(0)->S(1)[dp]");
  CHECK(r["max_ns"] == 12500);
  CHECK(r["max_rank"] == 1);
  CHECK(r["collectives"][1]["kind"] == "all_to_all");
  CHECK(r["collectives"][1]["bytes_recv"] == 56);
  CHECK(r["layouts"][0]["local_shape_after"] == nlohmann::json::array({5, 2}));
  CHECK(r["ranks_ok"] == nlohmann::json::array({0, 1}));
}

TEST_CASE("show text of the hand-written program trace matches the golden file", "[trace][summary][golden]") {
  // Hand-derived: 4 ranks (2x2 dp,tp) run mm, conv2d with a one-row halo (12 B per rank) and
  // layer_norm_backward, then one explicit redistribute; each dp all_gather moves one shard per rank.
  Model model = ReadTraceDir(kGolden / "program");
  CHECK(model.diagnostics.empty());
  CompareGolden(kGolden / "program.show.txt", FormatShowText(model));
}

TEST_CASE("op summaries name the ranks that diverge, miss or fail an op", "[trace][summary]") {
  Model model = ReadTraceDir(kGolden / "program");
  REQUIRE(model.ops.size() == 12);
  // Rank 3 ran mm with the replicated strategy; rank 2 has no conv2d; rank 1's layer_norm_backward failed.
  for (OpRecord& rec : model.ops) {
    if (rec.rank == 3 && rec.op->id == 0) {
      rec.op.Mutable().chosen = 1;
      rec.op.Mutable().outputs.Mutable()[0].placements = {"S(0)", "R"};
    }
    if (rec.rank == 1 && rec.op->id == 2) {
      rec.op.Mutable().ok = false;
      rec.op.Mutable().error = "out of memory";
    }
  }
  model.ops.erase(std::remove_if(model.ops.begin(), model.ops.end(),
                                 [](const OpRecord& r) { return r.rank == 2 && r.op->id == 1; }),
                  model.ops.end());
  std::vector<OpSummary> s = SummarizeOps(model);
  REQUIRE(s.size() == 3);
  CHECK(s[0].reference->rank == 0);
  REQUIRE(s[0].ranks_differing.size() == 1);
  CHECK(s[0].ranks_differing[0] ==
        std::make_pair(int64_t{3}, std::string("chosen 1, outputs y: S(0)R [8, 6]")));
  CHECK(s[1].ranks == std::vector<int64_t>{0, 1, 3});
  CHECK(s[1].ranks_missing == std::vector<int64_t>{2});
  REQUIRE(s[1].collectives.size() == 1);
  CHECK(s[1].collectives[0].calls == 3);
  CHECK(s[1].collectives[0].bytes_sent == 36);
  CHECK(s[2].ranks_failed == std::vector<std::pair<int64_t, std::string>>{{1, "out of memory"}});
  CHECK(s[2].ranks_differing.empty());  // failing is reported once, as a failure
  std::string text = FormatShowText(model);
  CHECK(text.find("  differs on rank 3: chosen 1, outputs y: S(0)R [8, 6]\n") != std::string::npos);
  CHECK(text.find("  missing on rank(s) 2\n") != std::string::npos);
  CHECK(text.find("  FAILED on rank 1: out of memory\n") != std::string::npos);
}

TEST_CASE("show json carries the program", "[trace][summary]") {
  nlohmann::json j = ShowJson(ReadTraceDir(kGolden / "program"));
  REQUIRE(j["ops"].size() == 3);
  const nlohmann::json& mm = j["ops"][0];
  CHECK(mm["name"] == "mm");
  CHECK(mm["call"] == "mm(x: S(0)R, w: S(0)R->RS(1)) -> y: S(0)S(1)");
  CHECK(mm["candidates"] == 3);
  CHECK(mm["chosen"] == 0);
  CHECK(mm["chosen_cost_us"] == 5.0);
  CHECK(mm["redistributes"] == nlohmann::json::array({0}));
  CHECK(mm["inputs"][1]["required"] == nlohmann::json::array({"R", "S(1)"}));
  CHECK(j["ops"][1]["collectives"][0]["kind"] == "halo_exchange");
  CHECK(j["ops"][1]["collectives"][0]["calls"] == 4);
  CHECK(j["ops"][2]["outputs"][1]["requested"] == false);
  CHECK(j["redistributes"][1]["op_id"] == 2);
  CHECK(j["redistributes"][1]["op_input"] == 0);
  CHECK(j["redistributes"][2]["op_id"].is_null());
}
