// Chrome export of the hand-written program trace: op slices with their args, implicit
// redistributes nested inside them on the same lane, halo exchanges with flow arrows. And the
// streamed export (WriteChromeTrace): the document's dump, byte for byte, in chunks of about 1 MiB.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/trace/chrome_export.hpp"
#include "shardscope/trace/kineto.hpp"
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

namespace {

// What `shardscope export` wrote before it streamed: the whole document, dumped compact and ASCII.
std::string Whole(const Model& model) {
  return ChromeTraceJson(model).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

struct Streamed {
  std::string text;
  std::vector<size_t> chunks;
  size_t events = 0;
};

Streamed Stream(const Model& model) {
  Streamed out;
  out.events = WriteChromeTrace(model, [&](std::string_view piece) {
    out.text += piece;
    out.chunks.push_back(piece.size());
  });
  return out;
}

}  // namespace

TEST_CASE("chrome export streamed: the document's bytes, event count, chunks of about 1 MiB",
          "[trace][export]") {
  // The program fixture: ops, redistributes, steps, collectives and flows, in one chunk.
  const Model program =
      ReadTraceDir(std::filesystem::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/program");
  const Streamed p = Stream(program);
  CHECK(p.text == Whole(program));
  CHECK(p.events == ChromeTraceJson(program)["traceEvents"].size());
  CHECK(p.chunks.size() == 1);
  // No ranks: no events, the metadata still.
  const Streamed empty = Stream(Model{});
  CHECK(empty.text == Whole(Model{}));
  CHECK(empty.text.rfind("{\"traceEvents\":[],\"metadata\":{", 0) == 0);
  CHECK(empty.events == 0);
  // 2 ranks x 20000 profiler ops (names with bytes that are not ASCII, which leave as '?'): each
  // op's slice is over 200 bytes, so more than 8 MB in several chunks, none past 1 MiB and one event.
  Model big;
  big.world = 2;
  for (int64_t r = 0; r < 2; ++r) {
    RankTrace rt;
    rt.header.rank = r;
    rt.header.world = 2;
    rt.header.backend = "kineto";
    for (int64_t k = 0; k < 20000; ++k) {
      Op& op = rt.events.EmplaceOf<Op>();
      op.id = k;
      op.Mutable().name = "aten::op_\xc3\xa9_" + std::to_string(k % 97);
      op.t_ns = 1000 * k, op.end_ns = 1000 * k + 500;
    }
    big.ranks.push_back(std::move(rt));
  }
  AddKinetoOpRecords(big);
  REQUIRE(big.ops.size() == 40000);
  const Streamed b = Stream(big);
  const std::string whole = Whole(big);
  CHECK(b.text.size() > size_t{8} << 20);
  CHECK(b.text == whole);
  CHECK(b.events == 2 * 4 + 40000);  // per rank a process_name and three thread_name, then the ops
  CHECK(b.chunks.size() >= 8);
  for (size_t n : b.chunks) CHECK(n <= (size_t{1} << 20) + 4096);
}
