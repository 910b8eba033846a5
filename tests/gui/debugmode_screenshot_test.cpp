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
    if (rec->begin->tensor.rfind("dt$", 0) == 0 && rec->begin->op_id >= 0) {
      std::string op = model.OpsWithId(rec->begin->op_id).front()->op.name;
      if (op.rfind("aten::", 0) == 0) op = op.substr(6);
      CHECK(e.text.find(op + " arg " + std::to_string(rec->begin->op_input) + " (" + rec->begin->tensor +
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
