// Imported DebugMode programs at a glance (issue 38, item 4): the sample dump
// (samples/pytorch/debugmode_tp.txt, a 4x2 dp x tp job) imported through the importer's API, then
// searched and listed. Expected hits come from the importer's own verdicts (ImportResult), the
// dump's line numbers and the ranks of the mesh; the list marks every verdict other than same and
// names a DebugMode id by the op and argument that caused the redistribute.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "gui_test_support.hpp"
#include "search_model.hpp"
#include "shardscope/program/debugmode_import.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope_gui_test;

namespace {

namespace trace = shardscope::trace;
using shardscope::app::gui::BuildSearchIndex;
using shardscope::app::gui::Search;
using shardscope::app::gui::SearchEntry;

struct Imported {
  fs::path dir;
  shardscope::program::ImportResult result;
};

Imported ImportSample(const fs::path& dir) {
  std::ifstream in(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/pytorch/debugmode_tp.txt");
  std::stringstream text;
  text << in.rdbuf();
  shardscope::program::ImportOptions options;
  options.mesh = engine::Mesh({4, 2}, {"dp", "tp"});
  options.mesh.RegisterFlattened({0, 1});
  options.trace_dir = dir / "dm";
  fs::remove_all(options.trace_dir);
  Imported out{options.trace_dir, shardscope::program::ImportDebugMode(text.str(), options)};
  return out;
}

// Trace ids of the imported redistributes with the verdict named `verdict` (as typed in the search).
std::set<int64_t> WithVerdict(const Imported& imp, const std::string& verdict) {
  std::set<int64_t> ids;
  for (const auto& r : imp.result.redistributes)
    if (shardscope::trace::ImportVerdictName(r.verdict) == verdict && r.trace_id >= 0) ids.insert(r.trace_id);
  return ids;
}

std::set<int64_t> RedistributeHits(const std::vector<SearchEntry>& entries, const std::string& query) {
  std::set<int64_t> ids;
  for (size_t i : Search(entries, query))
    if (entries[i].kind == SearchEntry::Kind::kRedistribute) ids.insert(entries[i].id);
  return ids;
}

}  // namespace

TEST_CASE("debugmode: search reaches verdicts, ranks and dump lines; the list marks verdicts",
          "[gui][search][debugmode]") {
  fs::path dir = TempDir("debugmode_search");
  const Imported imp = ImportSample(dir);
  const trace::Model model = trace::ReadTraceDir(imp.dir);
  const auto entries = BuildSearchIndex(model);
  const auto corrupting = WithVerdict(imp, "corrupting_merge"), differs = WithVerdict(imp, "differs");
  REQUIRE(!corrupting.empty());
  CHECK(RedistributeHits(entries, "corrupting_merge") == corrupting);
  CHECK(RedistributeHits(entries, "differs") == differs);
  // Every rank of the 4x2 mesh ran every redistribute.
  const auto all = model.RedistributeIds();
  CHECK(RedistributeHits(entries, "r7") == std::set<int64_t>(all.begin(), all.end()));
  // A dump line finds the redistribute recorded there.
  for (size_t i = 0; i < imp.result.redistributes.size(); ++i) {
    const int64_t id = imp.result.redistributes[i].trace_id;
    if (id < 0) continue;
    const int64_t line = imp.result.dump.redistributes[i].line;
    INFO("dump line " << line);
    CHECK(RedistributeHits(entries, "line " + std::to_string(line) + " ").count(id) == 1);
  }
  for (const SearchEntry& e : entries) {
    if (e.kind != SearchEntry::Kind::kRedistribute) continue;
    INFO(e.text);
    if (corrupting.count(e.id)) CHECK(e.text.find("!! corrupting_merge") != std::string::npos);
    if (differs.count(e.id)) CHECK(e.text.find("!= differs") != std::string::npos);
    // A DebugMode id (dt$N) is named by its op and argument.
    const auto* rec = model.RedistributesWithId(e.id).front();
    if (rec->begin->tensor().rfind("dt$", 0) == 0 && rec->begin->op_id >= 0) {
      std::string op = model.OpsWithId(rec->begin->op_id).front()->op->name();
      if (op.rfind("aten::", 0) == 0) op = op.substr(6);
      CHECK(e.text.find(op + " arg " + std::to_string(rec->begin->op_input) + " (" + rec->begin->tensor() +
                        ")") != std::string::npos);
    }
  }
}

TEST_CASE("debugmode: Ctrl+F and typing a verdict lists exactly those redistributes",
          "[gui][input][debugmode]") {
  fs::path dir = TempDir("debugmode_keys");
  const Imported imp = ImportSample(dir);
  const auto corrupting = WithVerdict(imp, "corrupting_merge");
  auto geo = Shoot(dir, imp.dir.string() + " --keys CtrlF,wait,wait,type:corrupting_merge,wait,wait");
  std::set<int64_t> listed;
  for (const auto& r : geo["list_rows"])
    if (r["kind"] == "redistribute") listed.insert(r["id"].get<int64_t>());
  CHECK(listed == corrupting);
  CHECK(geo["search"]["query"] == "corrupting_merge");
}

namespace {

// A DebugMode dump of 15 ops on one [1, 96, 8] activation of a 2x2 mesh: a chain of pointwise ops,
// every fourth a layer_norm whose input DebugMode redistributed from S(1),R to R,R.
std::string FifteenOpDump() {
  std::ostringstream out;
  out << "  [nn.Mod] Model\n";
  out << "    aten::view(dt$0: f32[1, 96, 8]| S(1)R, [1, 96, 8])  ->  dt$1: f32[1, 96, 8]| S(1)R\n";
  const char* ops[] = {"aten::gelu", "aten::relu", "aten::layer_norm", "aten::tanh"};
  int prev = 1, t = 100;
  for (int i = 0; i < 14; ++i) {
    const std::string op = ops[i % 4];
    const int next = prev + 1;
    if (op == "aten::layer_norm") {
      out << "    " << op << "(dt$" << prev << ": f32[1, 96, 8]| S(1)R, [8])  ->  dt$" << next
          << ": f32[1, 96, 8]| S(1)R\n";
      out << "      redistribute_input [implicit] (0, S(1)R -> RR)\n";
      out << "        redistribute_input(t$" << t << ": f32[1, 48, 8], trace: S(1)R->RR)\n";
      out << "          _c10d_functional::all_gather_into_tensor(t$" << t << ": f32[1, 48, 8], 2, 1)  ->  t$"
          << t + 1 << ": f32[2, 48, 8]\n";
      out << "          _c10d_functional::wait_tensor(t$" << t + 1 << ": f32[2, 48, 8])  ->  t$" << t + 1
          << ": f32[2, 48, 8]\n";
      t += 2;
    } else {
      out << "    " << op << "(dt$" << prev << ": f32[1, 96, 8]| S(1)R)  ->  dt$" << next
          << ": f32[1, 96, 8]| S(1)R\n";
    }
    prev = next;
  }
  return out.str();
}

}  // namespace

TEST_CASE(
    "debugmode: a 15-op program opens with its op boxes in the panel, a 96x8 layout and costs explained",
    "[gui][program][debugmode]") {
  fs::path dir = TempDir("debugmode_fit");
  shardscope::program::ImportOptions options;
  options.mesh = engine::Mesh({2, 2}, {"dp", "tp"});
  options.trace_dir = dir / "dm15";
  fs::remove_all(options.trace_dir);
  const auto result = shardscope::program::ImportDebugMode(FifteenOpDump(), options);
  const trace::Model model = trace::ReadTraceDir(options.trace_dir);
  REQUIRE(model.OpIds().size() == 15);
  REQUIRE(!model.RedistributeIds().empty());
  for (const char* size : {"1280x720", "1600x1000"}) {
    DYNAMIC_SECTION(size) {
      auto geo = Shoot(dir, options.trace_dir.string() + " --size " + size);
      const nlohmann::json* graph = nullptr;
      for (const auto& item : geo["program"])
        if (item["kind"] == "graph") graph = &item;
      REQUIRE(graph != nullptr);
      const float gx0 = (*graph)["rect"][0], gx1 = (*graph)["rect"][2];
      // Op boxes and badges on screen lie inside the graph's width: nothing to scroll to the right.
      int ops = 0, markers = 0;
      for (const auto& item : geo["program"]) {
        if (item["kind"] != "op" && item["kind"] != "marker") continue;
        INFO(item.dump());
        ops += item["kind"] == "op" ? 1 : 0;
        markers += item["kind"] == "marker" ? 1 : 0;
        CHECK(item["rect"][0].get<float>() >= gx0);
        CHECK(item["rect"][2].get<float>() <= gx1);
      }
      CHECK(ops >= 2);
      if (std::string(size) == "1600x1000") CHECK(markers >= 1);  // op 3's badge is on screen there
      // The layout of the [1, 96, 8] activation shows dims 1 and 2 (96 x 8), not a 1-row strip.
      REQUIRE(!geo["canvases"].empty());
      for (const auto& c : geo["canvases"]) {
        CHECK(c["row_dim"] == 1);
        CHECK(c["col_dim"] == 2);
        CHECK(c["rows"] == 96);
        CHECK(c["cols"] == 8);
      }
    }
  }
  // The selected op's candidate table says what its costs count, inside the details panel.
  REQUIRE(!model.OpsWithId(3).front()->op->candidates().empty());  // layer_norm's strategies
  {
    auto geo = Shoot(dir, options.trace_dir.string() + " --view program --select-op 3 --size 1280x720");
    bool note = false;
    for (const auto& item : geo["program"]) {
      if (item["kind"] != "cost_note") continue;
      note = true;
      CHECK(item["op_id"] == 3);
      CHECK(item["rect"][2].get<float>() <= geo["width"].get<float>());
      CHECK(item["rect"][3].get<float>() > item["rect"][1].get<float>());
    }
    CHECK(note);
  }
  (void)result;
}
