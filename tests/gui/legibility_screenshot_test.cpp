// Legibility (issue 38, item 5): at 1280x720 (the README's smallest size) the mesh draws its bytes
// arrows on a 1-D ring (an all_to_all of 4 ranks: every rank sends to the 3 others) and on a 2x2x2
// mesh, and no arrow passes through a rank or group label: every sampled point of every arrow
// lies outside every label's box.
#include <catch2/catch.hpp>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "sample_data.hpp"

using namespace shardscope_gui_test;

namespace {

// Arrows drawn, each checked against every label box.
size_t CheckArrowsClearLabels(const nlohmann::json& mesh) {
  for (const auto& a : mesh["arrows"]) {
    for (const auto& p : a["points"]) {
      const float x = p[0], y = p[1];
      for (const auto& l : mesh["labels"]) {
        const auto& r = l["rect"];
        INFO("arrow r" << a["from"] << "->r" << a["to"] << " at " << x << "," << y << " label "
                       << l["text"].get<std::string>());
        CHECK_FALSE((x > r[0].get<float>() && x < r[2].get<float>() && y > r[1].get<float>() &&
                     y < r[3].get<float>()));
      }
    }
  }
  return mesh["arrows"].size();
}

}  // namespace

TEST_CASE("mesh arrows: drawn on a 1-D ring and a 2x2x2 mesh, clear of the labels at 1280x720",
          "[gui][legibility]") {
  fs::path dir = TempDir("legibility");
  SECTION("1-D ring, all_to_all over 4 ranks") {
    engine::Mesh ring({4}, {"domain"});
    std::vector<shardscope::app::gui::SampleRedistribute> items = {
        {"act", Spec(ring, "S(1)", {16, 64, 32}), Spec(ring, "S(2)", {16, 64, 32}), {}}};
    fs::path t = dir / "ring";
    WritePlansTrace(items, t);
    auto geo = Shoot(dir, t.string() + " --size 1280x720");
    REQUIRE(geo["mesh"]["labels"].size() >= 4);
    CHECK(CheckArrowsClearLabels(geo["mesh"]) == 12);  // 4 ranks x 3 peers
  }
  SECTION("2x2x2 mesh, all_gather on the last dim") {
    engine::Mesh cube({2, 2, 2}, {"pp", "dp", "tp"});
    std::vector<shardscope::app::gui::SampleRedistribute> items = {
        {"w", Spec(cube, "R,R,S(0)", {8, 8}), Spec(cube, "R,R,R", {8, 8}), {}}};
    fs::path t = dir / "cube";
    WritePlansTrace(items, t);
    auto geo = Shoot(dir, t.string() + " --size 1280x720");
    REQUIRE(geo["mesh"]["labels"].size() >= 8);
    CHECK(CheckArrowsClearLabels(geo["mesh"]) == 8);  // each rank sends its half to its tp peer
  }
}
