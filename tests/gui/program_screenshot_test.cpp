// Program view under Xvfb (issue 7): `shardscope-gui TRACE --view program --screenshot` on a sample
// program run on the local backend and on a hand-made program trace. The implicit-redistribute
// badges drawn are exactly the op inputs whose OpInput.redistribute_id >= 0 (for every op on
// screen), each badge shows the badge colour, no op box does; the halo badge of a conv shows the
// halo colour; --select-op and a selected implicit redistribute select the op; the main window opens
// a program trace on the Program tab with the layout of the selected redistribute below.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "gui_test_support.hpp"
#include "program_test_traces.hpp"
#include "program_view_model.hpp"
#include "shardscope/program/debugmode_import.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope_gui_test;
using shardscope::app::gui::kDiffColor;
using shardscope::app::gui::kHaloColor;
using shardscope::app::gui::kImplicitRedistributeColor;

namespace {

namespace trace = shardscope::trace;

int ColourCount(const Image& img, const nlohmann::json& rect, Rgb want) {
  int x0 = static_cast<int>(rect[0].get<float>()), y0 = static_cast<int>(rect[1].get<float>());
  int x1 = static_cast<int>(rect[2].get<float>()), y1 = static_cast<int>(rect[3].get<float>());
  int n = 0;
  for (int y = std::max(0, y0); y < std::min(img.h, y1); ++y)
    for (int x = std::max(0, x0); x < std::min(img.w, x1); ++x) n += Near(img.At(x, y), want) ? 1 : 0;
  return n;
}

int Area(const nlohmann::json& rect) {
  return static_cast<int>((rect[2].get<float>() - rect[0].get<float>()) *
                          (rect[3].get<float>() - rect[1].get<float>()));
}

bool FullyVisible(const nlohmann::json& rect, const nlohmann::json& geo) {
  return rect[0].get<float>() >= 0 && rect[1].get<float>() >= 0 &&
         rect[2].get<float>() <= geo["width"].get<float>() &&
         rect[3].get<float>() <= geo["height"].get<float>();
}

}  // namespace

TEST_CASE("program view: badges at exactly the implicit redistributes of the trace", "[gui][program]") {
  fs::path dir = TempDir("program_tp_mlp");
  RunSampleProgram("tp_mlp", dir / "trace");
  trace::Model model = trace::ReadTraceDir(dir / "trace");
  REQUIRE_FALSE(model.ops.empty());
  auto geo = Shoot(dir, (dir / "trace").string() + " --view program --size 1600x1000");
  Image img = LoadPng(dir / "shot.png");
  REQUIRE(geo["view"] == "program");

  // Expected badges, from the lowest rank's op events.
  const int64_t rank = model.ops.front().rank;
  using Badge = std::tuple<int64_t, int64_t, int64_t>;  // op, input, redistribute id
  std::map<int64_t, std::set<Badge>> expected;          // per op
  size_t expected_total = 0;
  for (const trace::OpRecord& op : model.ops) {
    if (op.rank != rank) continue;
    expected[op.op->id];
    for (size_t i = 0; i < op.op->inputs().size(); ++i) {
      if (op.op->inputs()[i].redistribute_id < 0) continue;
      expected[op.op->id].insert({op.op->id, static_cast<int64_t>(i), op.op->inputs()[i].redistribute_id});
      ++expected_total;
    }
  }
  REQUIRE(expected_total > 0);  // the sample's all_reduce of the partial sum, at least

  std::map<int64_t, std::set<Badge>> drawn;
  std::set<int64_t> ops_on_screen;
  for (const auto& item : geo["program"]) {
    if (item["kind"] == "op") {
      CHECK(ColourCount(img, item["rect"], kImplicitRedistributeColor) == 0);
      if (FullyVisible(item["rect"], geo)) ops_on_screen.insert(item["op_id"].get<int64_t>());
    }
    if (item["kind"] != "marker") continue;
    Badge b{item["op_id"].get<int64_t>(), item["input"].get<int64_t>(),
            item["redistribute_id"].get<int64_t>()};
    drawn[std::get<0>(b)].insert(b);
    if (!FullyVisible(item["rect"], geo)) continue;
    INFO("badge of op " << std::get<0>(b) << " input " << std::get<1>(b));
    // The badge's fill shows (its text covers part of it).
    CHECK(ColourCount(img, item["rect"], kImplicitRedistributeColor) * 10 >= Area(item["rect"]) * 4);
  }
  REQUIRE(ops_on_screen.size() >= 4);
  for (const auto& [op, badges] : drawn) {
    INFO("op " << op);
    REQUIRE(expected.count(op) == 1);
    for (const Badge& b : badges) CHECK(expected[op].count(b) == 1);
  }
  for (int64_t op : ops_on_screen) {
    INFO("op " << op << " is on screen: all its implicit redistributes are marked");
    CHECK(drawn[op] == expected[op]);
  }
}

TEST_CASE("program view: halo badge, --select-op and the main window's Program tab", "[gui][program]") {
  fs::path dir = TempDir("program_handmade");
  WriteHandMadeProgramTrace(dir / "trace");
  auto geo = Shoot(dir, (dir / "trace").string() + " --view program --select-op 1");
  Image img = LoadPng(dir / "shot.png");
  CHECK(geo["selected_op"] == 1);
  int halos = 0, ops = 0, markers = 0;
  for (const auto& item : geo["program"]) {
    ops += item["kind"] == "op" ? 1 : 0;
    markers += item["kind"] == "marker" ? 1 : 0;
    if (item["kind"] != "halo") continue;
    ++halos;
    CHECK(item["op_id"] == 1);  // the conv, the only op with a halo_exchange collective
    CHECK(ColourCount(img, item["rect"], kHaloColor) * 10 >= Area(item["rect"]) * 4);
  }
  CHECK(ops == 4);
  CHECK(halos == 1);
  CHECK(markers == 2);  // w into mm, y into add

  // Main window, implicit redistribute 2 selected (add's input y): the op follows, the layout shows it.
  auto m = RunGui((dir / "trace").string() + " --select 2 --screenshot " + (dir / "main.png").string() +
                      " --geometry " + (dir / "main.json").string(),
                  dir / "log2.txt");
  INFO(m.output);
  REQUIRE(m.exit_code == 0);
  auto main_geo = ReadJson(dir / "main.json");
  CHECK(main_geo["selected_op"] == 2);
  CHECK(main_geo["selected_redistribute"] == 2);
  CHECK_FALSE(main_geo["program"].empty());  // the Program tab is open
  REQUIRE_FALSE(main_geo["canvases"].empty());
  for (const auto& c : main_geo["canvases"]) CHECK(c["redistribute_id"] == 2);
}

TEST_CASE("program view: an imported redistribute whose plan differs has a diff-coloured badge",
          "[gui][program][import]") {
  fs::path dir = TempDir("program_imported");
  WriteImportedProgramTrace(dir / "trace");
  auto geo = Shoot(dir, (dir / "trace").string() + " --view program --size 1600x900");
  Image img = LoadPng(dir / "shot.png");
  std::set<int64_t> seen;
  for (const auto& item : geo["program"]) {
    if (item["kind"] != "marker") continue;
    int64_t id = item["redistribute_id"].get<int64_t>();
    seen.insert(id);
    // Redistribute 0: PyTorch's plan is shardscope's (badge colour); 1: it differs (diff colour).
    Rgb want = id == 0 ? kImplicitRedistributeColor : kDiffColor;
    Rgb other = id == 0 ? kDiffColor : kImplicitRedistributeColor;
    INFO("redistribute " << id);
    CHECK(ColourCount(img, item["rect"], want) * 10 >= Area(item["rect"]) * 4);
    CHECK(ColourCount(img, item["rect"], other) == 0);
  }
  CHECK(seen == std::set<int64_t>{0, 1});
}

namespace {

// The 34-line sample dump (samples/pytorch/debugmode_tp.txt, a 4x2 job) repeated `times` times and
// imported into `dir`: a program of `times` x 7 ops whose every window looks like its first.
fs::path ImportRepeatedSample(const fs::path& dir, int times) {
  std::ifstream in(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/pytorch/debugmode_tp.txt");
  std::stringstream sample, text;
  sample << in.rdbuf();
  for (int i = 0; i < times; ++i) text << sample.str();
  shardscope::program::ImportOptions options;
  options.mesh = engine::Mesh({4, 2}, {"dp", "tp"});
  options.mesh.RegisterFlattened({0, 1});
  options.trace_dir = dir;
  fs::remove_all(dir);
  shardscope::program::ImportDebugMode(text.str(), options);
  return dir;
}

// `shardscope-gui ARGS`: the ImGui vertices of the frame shot, and the geometry.
std::pair<size_t, nlohmann::json> VerticesPerFrame(const fs::path& dir, const std::string& args) {
  nlohmann::json geo = Shoot(dir, args);
  return {geo["draw_vertices"].get<size_t>(), geo};
}

}  // namespace

// A frame draws what is in view, not the program: the first screen of a 100-times program and of a
// 1000-times one show the same ops, and draw the same vertices within the lanes' and scrollbar's
// few (before, every edge was drawn every frame: a 235k-op import took 15 s a frame under Xvfb and
// gigabytes of draw lists). A redistribute selected deep in the program scrolls the graph to its op.
TEST_CASE("program view: a long imported program draws only what is in view", "[gui][program][scale]") {
  fs::path dir = TempDir("program_long");
  const fs::path medium = ImportRepeatedSample(dir / "x100", 100);
  const fs::path large = ImportRepeatedSample(dir / "x1000", 1000);
  const std::string view = " --view program --keys wait";
  const auto [medium_vertices, medium_geo] = VerticesPerFrame(dir, medium.string() + view);
  const auto [large_vertices, large_geo] = VerticesPerFrame(dir, large.string() + view);
  INFO("vertices per frame: 100 times " << medium_vertices << ", 1000 times " << large_vertices);
  CHECK(medium_vertices > 1000);  // a screen of op boxes and their text
  CHECK(large_vertices * 10 <= medium_vertices * 11);
  CHECK(medium_geo["program"].size() == large_geo["program"].size());  // the same boxes on screen

  // Deep in the program, the selected op's box is on screen, and a frame draws no more: a
  // redistribute 10 from the end selected with the next one taken by a key (list and keys select
  // the op it belongs to), and an op 10 from the end given on the command line.
  const trace::Model model = trace::ReadTraceDir(large);
  const std::vector<int64_t> ids = model.RedistributeIds(), ops = model.OpIds();
  REQUIRE(ids.size() > 1000);
  REQUIRE(ops.size() > 1000);
  const int64_t deep = ids[ids.size() - 10];
  for (const std::string& select : {"--select " + std::to_string(deep) + " --keys Down,wait",
                                    "--select-op " + std::to_string(ops[ops.size() - 10])}) {
    INFO(select);
    const auto [deep_vertices, deep_geo] =
        VerticesPerFrame(dir, large.string() + " --view program " + select);
    CHECK(deep_vertices * 10 <= medium_vertices * 15);
    const int64_t op = deep_geo["selected_op"].get<int64_t>();
    const int64_t redistribute = deep_geo["selected_redistribute"].get<int64_t>();
    if (select.rfind("--select ", 0) == 0) {
      CHECK(redistribute == ids[ids.size() - 9]);
    } else {
      CHECK(op == ops[ops.size() - 10]);
    }
    // The step the selection names: the op, or for an explicit redistribute (no op) its own box.
    const trace::RedistributeRecord* r = model.FindRedistribute(0, redistribute);
    REQUIRE(r != nullptr);
    const bool explicit_step = select.rfind("--select ", 0) == 0 && r->begin->op_id < 0;
    bool on_screen = false;
    for (const auto& item : deep_geo["program"]) {
      const bool is_it = explicit_step
                             ? item["kind"] == "redistribute" && item["redistribute_id"] == redistribute
                             : item["kind"] == "op" && item["op_id"] == op;
      on_screen = on_screen || (is_it && item["rect"][1].get<float>() >= 0 &&
                                item["rect"][3].get<float>() <= deep_geo["height"].get<float>());
    }
    CHECK(on_screen);
  }
}
