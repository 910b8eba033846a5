// Chrome export of the hand-written program trace: op slices with their args, implicit
// redistributes nested inside them on the same lane, halo exchanges with flow arrows.
#include <catch2/catch.hpp>

#include <filesystem>

#include "shardscope/trace/chrome_export.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope::trace;

namespace {

std::vector<nlohmann::ordered_json> Events(const nlohmann::ordered_json& out, const std::string& cat,
                                           int64_t pid) {
  std::vector<nlohmann::ordered_json> found;
  for (const auto& e : out["traceEvents"])
    if (e.value("cat", "") == cat && e["pid"] == pid) found.push_back(e);
  return found;
}

}  // namespace

TEST_CASE("chrome export: ops span t_ns..end_ns with their redistributes nested", "[trace][export]") {
  nlohmann::ordered_json out = ChromeTraceJson(
      ReadTraceDir(std::filesystem::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/program"));
  // The earliest event of the fixture is op #0's call at 1000 ns on every rank (clock offsets 0).
  std::vector<nlohmann::ordered_json> ops = Events(out, "op", 1);
  REQUIRE(ops.size() == 3);
  const auto& mm = ops[0];
  CHECK(mm["name"] == "op #0 mm");
  CHECK(mm["tid"] == kChromeRedistributeTid);
  CHECK(mm["ts"] == 0.0);
  CHECK(mm["dur"] == 2.0);  // 1000..3000 ns
  CHECK(mm["args"]["inputs"][1]["placements"] == "S(0),R");
  CHECK(mm["args"]["inputs"][1]["required"] == "R,S(1)");
  CHECK(mm["args"]["chosen"] == 0);
  CHECK(mm["args"]["chosen_inputs"] == nlohmann::ordered_json::array({"S(0),R", "R,S(1)"}));
  CHECK(mm["args"]["chosen_outputs"] == nlohmann::ordered_json::array({"S(0),S(1)"}));
  CHECK(mm["args"]["chosen_cost_us"] == 5.0);
  CHECK(mm["args"]["outputs"][0]["local_shape"] == nlohmann::ordered_json::array({4, 3}));
  CHECK(mm["args"]["redistributes"] == nlohmann::ordered_json::array({0}));
  // Redistribute #0 (1100..1900 ns) lies inside op #0 on the same lane.
  std::vector<nlohmann::ordered_json> reds = Events(out, "redistribute", 1);
  REQUIRE(reds.size() == 3);
  CHECK(reds[0]["tid"] == mm["tid"]);
  CHECK(reds[0]["ts"].get<double>() == Approx(0.1));
  CHECK(reds[0]["ts"].get<double>() + reds[0]["dur"].get<double>() <= 2.0);
  CHECK(ops[2]["args"]["outputs"][1]["requested"] == false);
  CHECK(ops[2]["args"]["chosen_outputs"][1] == "");
  // Halo exchanges: one slice per rank, and a flow from rank 0 to 2 and from 1 to 3.
  int halos = 0;
  for (const auto& e : out["traceEvents"])
    if (e.value("cat", "") == "collective" && e["name"] == "halo_exchange") {
      ++halos;
      CHECK(e["args"]["op_id"] == 1);
      CHECK(e["args"]["redistribute_id"] == -1);
    }
  CHECK(halos == 4);
  int flows = 0;
  for (const auto& e : out["traceEvents"])
    if (e.value("ph", "") == "f") ++flows;
  // Per dp group 3 calls (two all_gathers, one halo) and per tp group 1: 8 pairs, one arrow each.
  CHECK(flows == 8);
}
