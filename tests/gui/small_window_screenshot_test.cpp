// The README's smallest size, 1280x720 (issue 38): every panel of every view lays its content out
// within the panel's width (ImGui's ideal content width, reported by --geometry as content_w, is no
// wider than the room it had, room_w: nothing cut at the right edge or left to a horizontal
// scrollbar), on a small trace, a program import, a 64x64 mesh and the diff view; and the
// timeline's go-to field and range box lie inside the timeline panel.
#include <catch2/catch.hpp>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "program_test_traces.hpp"
#include "sample_data.hpp"

using namespace shardscope_gui_test;

namespace {

void CheckPanelsFit(const nlohmann::json& geo) {
  REQUIRE(!geo["panels"].empty());
  for (const auto& p : geo["panels"]) {
    INFO(p.dump());
    CHECK(p["content_w"].get<float>() <= p["room_w"].get<float>() + 1);
    // Every panel lies inside the window.
    CHECK(p["rect"][0].get<float>() >= 0);
    CHECK(p["rect"][2].get<float>() <= geo["width"].get<float>());
    CHECK(p["rect"][3].get<float>() <= geo["height"].get<float>());
  }
}

fs::path Mesh8x16(const fs::path& dir) {
  fs::path t = dir / "m128";
  if (fs::exists(t)) return t;
  engine::Mesh mesh({8, 16}, {"dp", "tp"});
  std::vector<shardscope::app::gui::SampleRedistribute> items = {
      {"t", Spec(mesh, "S(0),S(1)", {512, 1024}), Spec(mesh, "S(0),R", {512, 1024}), {}},
      {"g", Spec(mesh, "P(avg),S(1)", {512, 256}), Spec(mesh, "S(0),S(1)", {512, 256}), {}}};
  WritePlansTrace(items, t);
  return t;
}

}  // namespace

TEST_CASE("at 1280x720 every panel of every view fits its content", "[gui][small]") {
  fs::path dir = TempDir("small");
  fs::path small = dir / "small", program = dir / "program";
  if (!fs::exists(small)) WritePlansTrace(DiffItems(false), small);
  if (!fs::exists(program)) WriteHandMadeProgramTrace(program);
  const fs::path wide = Mesh8x16(dir);
  for (const fs::path& t : {small, program, wide}) {
    for (const char* view :
         {"main", "timeline", "inspector", "layout", "mesh", "merge", "program", "stats"}) {
      DYNAMIC_SECTION(t.filename().string() << " " << view) {
        CheckPanelsFit(Shoot(dir, t.string() + " --size 1280x720 --view " + view + " --keys Down,Right"));
      }
    }
  }
}

TEST_CASE("at 1280x720 the timeline's go-to field and range box stay inside the timeline",
          "[gui][small][input]") {
  fs::path dir = TempDir("small_timeline");
  fs::path t = dir / "small";
  if (!fs::exists(t)) WritePlansTrace(DiffItems(false), t);
  const auto first = Shoot(dir, t.string() + " --size 1280x720");
  const nlohmann::json* timeline = nullptr;
  for (const auto& p : first["panels"])
    if (p["panel"] == "timeline") timeline = &p;
  REQUIRE(timeline != nullptr);
  const float x0 = first["timeline"]["plot"][0], y0 = first["timeline"]["plot"][1],
              x1 = first["timeline"]["plot"][2];
  const int y = static_cast<int>(y0) - 10;
  const std::string drag = "drag:" + std::to_string(static_cast<int>(x0 + 0.1f * (x1 - x0))) + ":" +
                           std::to_string(y) + ":" + std::to_string(static_cast<int>(x0 + 0.9f * (x1 - x0))) +
                           ":" + std::to_string(y);
  const auto geo = Shoot(dir, t.string() + " --size 1280x720 --keys " + drag);
  CheckPanelsFit(geo);
  const auto& rect = (*timeline)["rect"];
  REQUIRE(geo["timeline"]["range"].is_object());
  const auto& box = geo["timeline"]["range"]["box"];
  CHECK(box[0].get<float>() >= rect[0].get<float>());
  CHECK(box[2].get<float>() <= rect[2].get<float>());
  CHECK(box[3].get<float>() <= rect[3].get<float>());
}

TEST_CASE("at 1280x720 the diff view fits every panel", "[gui][small][diff]") {
  fs::path dir = TempDir("small_diff");
  const auto [base, cand] = WriteDiffTraces(dir);
  const auto geo = Shoot(dir, "--diff " + base.string() + " " + cand.string() + " --size 1280x720");
  const auto& o = geo["diff"]["overlay"];
  REQUIRE(o.is_object());
  CHECK(o["plot"][2].get<float>() <= 1280);
  CHECK(o["plot"][3].get<float>() > o["plot"][1].get<float>());
  // The layouts keep some room under the tables (they scroll below it): each canvas starts on
  // screen, inside the window's width.
  REQUIRE(!geo["canvases"].empty());
  for (const auto& c : geo["canvases"]) {
    CHECK(c["rect"][1].get<float>() < 720);
    CHECK(c["rect"][2].get<float>() <= 1280);
  }
}
