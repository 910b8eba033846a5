// The diff view as a comparison (issue 38, item 3), under Xvfb: a redistribute whose target
// placement changed is one "changed" row (both ids), and the selected pair's side-by-side table
// marks the placements and what follows from them; Down moves to an unchanged pair, which differs
// nowhere. The run totals name every collective kind of both runs.
#include <catch2/catch.hpp>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "sample_data.hpp"

using namespace shardscope_gui_test;

namespace {

const nlohmann::json* CompareRow(const nlohmann::json& geo, const std::string& what) {
  for (const auto& r : geo["diff"]["compare"])
    if (r["what"] == what) return &r;
  return nullptr;
}

}  // namespace

TEST_CASE("diff: a changed target placement is one pair, compared side by side", "[gui][diff][input]") {
  fs::path dir = TempDir("diff_pair");
  fs::path base = dir / "base", cand = dir / "cand";
  auto items = DiffItems(false);
  WritePlansTrace(items, base);
  items[0].dst = DiffSpec({8, 6}, "R,R");  // only a's target placement changes
  WritePlansTrace(items, cand);

  auto geo = Shoot(dir, "--diff " + base.string() + " " + cand.string());
  const auto& rows = geo["diff"]["rows"];
  REQUIRE(rows.size() == 4);  // a, w, b, x: every redistribute paired, none removed or added
  CHECK(rows[0]["kind"] == "changed");
  CHECK(rows[0]["baseline_id"] == 0);
  CHECK(rows[0]["candidate_id"] == 0);
  for (const auto& r : rows) CHECK(r["kind"] != "removed");
  CHECK(geo["diff"]["selected_row"] == 0);
  const nlohmann::json* placements = CompareRow(geo, "placements");
  REQUIRE(placements);
  CHECK((*placements)["baseline"] == "S(0),S(1) -> R,S(1)");
  CHECK((*placements)["candidate"] == "S(0),S(1) -> R,R");
  CHECK((*placements)["differs"] == true);
  const nlohmann::json* bytes = CompareRow(geo, "bytes sent, largest rank");
  REQUIRE(bytes);
  CHECK((*bytes)["differs"] == true);
  REQUIRE(!geo["diff"]["kind_totals"].empty());
  CHECK(geo["diff"]["kind_totals"].back()["kind"] == "all");

  auto next = Shoot(dir, "--diff " + base.string() + " " + cand.string() + " --keys Down");
  CHECK(next["diff"]["selected_row"] == 1);
  for (const auto& r : next["diff"]["compare"]) {
    INFO(r.dump());
    if (r["what"] != "measured time (slowest rank)") CHECK(r["differs"] == false);
  }
}
