// Golden "diff test": a hand-written 2-rank trace in, show's text out. Regenerate the expected
// text (never the input) with SHARDSCOPE_UPDATE_GOLDEN=1 and review the diff.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/summary.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

const fs::path kGolden = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests" / "golden" / "trace";

bool UpdateGolden() {
  const char* v = std::getenv("SHARDSCOPE_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

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
