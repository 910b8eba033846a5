// Golden "diff test": a hand-written 2-rank trace in, show's text out. Regenerate the expected
// text (never the input) with SHARDSCOPE_UPDATE_GOLDEN=1 and review the diff.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

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
      rec.op.Mutable().Mutable().chosen = 1;
      rec.op.Mutable().Mutable().outputs.Mutable()[0].placements = {"S(0)", "R"};
    }
    if (rec.rank == 1 && rec.op->id == 2) {
      rec.op.Mutable().Mutable().ok = false;
      rec.op.Mutable().Mutable().error = "out of memory";
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

TEST_CASE("an op differs on a rank only when its printed signature does", "[trace][summary]") {
  // Rank 2's mm output placements split differently ("S(0)S(1)" as one entry instead of S(0), S(1)):
  // the fields differ but the concatenated text ("S(0)S(1)") is the same, so no rank differs.
  Model model = ReadTraceDir(kGolden / "program");
  for (OpRecord& rec : model.ops) {
    if (rec.rank == 2 && rec.op->id == 0)
      rec.op.Mutable().Mutable().outputs.Mutable()[0].placements = {"S(0)S(1)"};
  }
  std::vector<OpSummary> s = SummarizeOps(model);
  REQUIRE(!s.empty());
  CHECK(s[0].ranks_differing.empty());
}

namespace {

std::string ShowTextWith(const Model& model, unsigned threads) {
  std::string out;
  WriteShowText(
      model, [&out](std::string_view piece) { out += piece; }, threads);
  return out;
}

std::string ShowJsonWith(const Model& model, unsigned threads) {
  std::string out;
  WriteShowJson(
      model, [&out](std::string_view piece) { out += piece; }, threads);
  return out;
}

// What --json prints of ShowJson (app/cli/cli_output.hpp DumpJson).
std::string DumpShowJson(const Model& model) {
  return ShowJson(model).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

constexpr int64_t kManyIds = 3000;

// kManyIds copies of the two-rank trace's redistributes under ids 0, 1, ...: several pieces of
// output. The first one's tensor name is not UTF-8 and holds a C1 control.
Model ManyRedistributes() {
  Model model = ReadTraceDir(kGolden / "two_rank");
  // The copies refer to this model's events, as the originals do.
  const std::vector<RedistributeRecord> originals = std::move(model.redistributes);
  model.redistributes.clear();
  for (const RedistributeRecord& rec : originals) {
    for (int64_t id = 0; id < kManyIds; ++id) {
      RedistributeRecord copy = rec;
      copy.begin.Mutable().id = id;
      if (id == 0) copy.begin.Mutable().Mutable().tensor = "bad\xff\xc2\x85";
      model.redistributes.push_back(std::move(copy));
    }
  }
  std::sort(model.redistributes.begin(), model.redistributes.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.rank, a.begin->id) < std::make_pair(b.rank, b.begin->id);
  });
  model.Reindex();
  return model;
}

}  // namespace

TEST_CASE("show text written in pieces on several threads keeps the ids in order", "[trace][summary]") {
  const Model model = ManyRedistributes();
  const std::string serial = ShowTextWith(model, 1);
  CHECK(ShowTextWith(model, 2) == serial);
  CHECK(ShowTextWith(model, 3) == serial);
  CHECK(FormatShowText(model) == serial);
  CHECK(serial.find("\nredistribute 0: bad\xff\\u0085 ") != std::string::npos);  // Printable
  // One block per id, ascending (summary.hpp).
  size_t at = 0;
  for (int64_t id = 0; id < kManyIds; ++id) {
    const size_t next = serial.find("\nredistribute " + std::to_string(id) + ": ", at);
    REQUIRE(next != std::string::npos);
    at = next + 1;
  }
  CHECK(serial.find("\nredistribute ", at) == std::string::npos);
}

TEST_CASE("show json written in pieces is ShowJson's dump", "[trace][summary]") {
  // WriteShowJson's contract: the bytes of ShowJson(model).dump(2) with invalid UTF-8 replaced.
  for (const char* name :
       {"two_rank", "program", "flight_recorder", "repeat", "torn", "unfinished_op", "unknown"}) {
    INFO(name);
    const Model model = ReadTraceDir(kGolden / name);
    CHECK(ShowJsonWith(model, 2) == DumpShowJson(model));
  }
  const Model many = ManyRedistributes();
  const std::string dumped = DumpShowJson(many);
  CHECK(ShowJsonWith(many, 1) == dumped);
  CHECK(ShowJsonWith(many, 2) == dumped);
  CHECK(dumped.find("\"tensor\": \"bad\xef\xbf\xbd\xc2\x85\"") != std::string::npos);  // U+FFFD for 0xff
}
