// The parallel reader with its simdjson fast path against the reference (nlohmann-only) path:
// every trace file in the repository, every corrupt fixture and fuzzed mutations must give the same
// model or the same error, for any number of threads; and a directory with one bad rank file loads
// the others and names the bad one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "shardscope/error.hpp"
#include "shardscope/trace/reader.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

const fs::path kSource = fs::path(SHARDSCOPE_SOURCE_DIR);

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The outcome of one read: the model's content, or the error's code and message.
struct Outcome {
  bool ok = false;
  int code = -1;
  std::string message;
  std::vector<RankTrace> ranks;
  std::vector<Diagnostic> diagnostics;
  std::vector<std::pair<int64_t, int64_t>> records;  // (rank, id) of redistribute records, in order
  std::vector<size_t> record_sizes;                  // steps + collectives of each
  std::vector<std::pair<int64_t, int64_t>> ops;
};

Outcome Read(const fs::path& path, ReadOptions options) {
  Outcome o;
  try {
    Model m = fs::is_directory(path) ? ReadTraceDir(path, options) : ReadTraceFile(path, options);
    o.ok = true;
    o.ranks = m.ranks;
    o.diagnostics = m.diagnostics;
    for (const RedistributeRecord& r : m.redistributes) {
      o.records.emplace_back(r.rank, r.begin->id);
      o.record_sizes.push_back(r.steps.size() * 1000 + r.collectives.size());
    }
    for (const OpRecord& r : m.ops) o.ops.emplace_back(r.rank, r.op->id);
  } catch (const shardscope::Error& e) {
    o.code = static_cast<int>(e.code());
    o.message = e.what();
  }
  return o;
}

void RequireSame(const Outcome& a, const Outcome& b) {
  REQUIRE(a.ok == b.ok);
  CHECK(a.code == b.code);
  CHECK(a.message == b.message);
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    CHECK(a.ranks[i].file == b.ranks[i].file);
    CHECK(a.ranks[i].header == b.ranks[i].header);
    CHECK(a.ranks[i].events == b.ranks[i].events);
  }
  CHECK(a.diagnostics == b.diagnostics);
  CHECK(a.records == b.records);
  CHECK(a.record_sizes == b.record_sizes);
  CHECK(a.ops == b.ops);
}

std::vector<fs::path> TracePaths() {
  std::vector<fs::path> out;
  for (const char* root : {"samples", "tests/golden"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kSource / root)) {
      if (entry.path().extension() != ".jsonl") continue;
      out.push_back(entry.path());
      out.push_back(entry.path().parent_path());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

fs::path TempDir(const std::string& tag) {
  fs::path dir =
      fs::temp_directory_path() / ("shardscope_fast_reader_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The definition by a scan of `records`: `ids()` = the distinct id_of values ascending, and
// `with_id(id)` = the records with that id in rank order.
template <typename Record, typename IdOf, typename Ids, typename WithId>
void CheckIndexAgainstScan(const std::vector<Record>& records, IdOf id_of, Ids ids, WithId with_id) {
  std::set<int64_t> distinct;
  for (const Record& r : records) distinct.insert(id_of(r));
  CHECK(ids() == std::vector<int64_t>(distinct.begin(), distinct.end()));
  for (int64_t id : distinct) {
    std::vector<const Record*> scan;
    for (const Record& r : records)
      if (id_of(r) == id) scan.push_back(&r);
    std::stable_sort(scan.begin(), scan.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
    CHECK(with_id(id) == scan);
  }
}

}  // namespace

TEST_CASE("fast path and reference path read every trace in the repository alike", "[trace][reader][fast]") {
  std::vector<fs::path> paths = TracePaths();
  REQUIRE(paths.size() > 60);
  for (const fs::path& path : paths) {
    CAPTURE(path.string());
    Outcome reference = Read(path, {.jobs = 1, .fast = false});
    RequireSame(Read(path, {.jobs = 1, .fast = true}), reference);
    RequireSame(Read(path, {.jobs = 3, .fast = true}), reference);
  }
}

TEST_CASE("the fast path decodes the common events itself", "[trace][reader][fast]") {
  // Results are equal by design, so this guards against a fast path that silently declines
  // everything: in a trace the writer wrote, only header lines take the reference path (ops,
  // collectives with flight records and repeat lines included).
  for (const char* name : {"program", "flight_recorder"}) {
    const fs::path dir = kSource / "tests/golden/trace" / name;
    CAPTURE(dir.string());
    int64_t lines = 0, reference = 0, ops_or_flights = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::stringstream text(ReadText(entry.path()));
      for (std::string line; std::getline(text, line);) {
        ++lines;
        if (line.find("\"type\":\"header\"") != std::string::npos) ++reference;
        if (line.find("\"type\":\"op\"") != std::string::npos ||
            line.find("\"flight\":") != std::string::npos)
          ++ops_or_flights;
      }
    }
    REQUIRE(ops_or_flights > 0);
    ReadProgress progress;
    Model model = ReadTraceDir(dir, {.jobs = 2, .progress = &progress});
    CHECK(progress.lines_reference == reference);
    CHECK(progress.lines_fast == lines - reference);
    ReadProgress slow;
    (void)ReadTraceDir(dir, {.jobs = 2, .fast = false, .progress = &slow});
    CHECK(slow.lines_reference == lines);
    CHECK(slow.lines_fast == 0);
  }
}

TEST_CASE("a directory with one corrupt rank file loads the rest and names the bad one",
          "[trace][reader][tolerant]") {
  const fs::path dir = TempDir("one_bad");
  for (const auto& entry : fs::directory_iterator(kSource / "tests/golden/check/clean"))
    fs::copy_file(entry.path(), dir / entry.path().filename());
  // Line 3 of rank 2 loses its closing brace; a fourth line follows, so it is not a torn last line.
  std::string text = ReadText(dir / "rank-2.jsonl");
  size_t line3 = text.find('\n', text.find('\n') + 1) + 1;
  size_t end3 = text.find('\n', line3);
  REQUIRE(text.find('\n', end3 + 1) != std::string::npos);
  text.erase(end3 - 1, 1);
  std::ofstream(dir / "rank-2.jsonl", std::ios::binary | std::ios::trunc) << text;

  auto jobs = GENERATE(1, 2, 4);
  Model model = ReadTraceDir(dir, {.jobs = jobs});
  REQUIRE(model.ranks.size() == 3);
  CHECK(model.ranks[0].header.rank == 0);
  CHECK(model.ranks[1].header.rank == 1);
  CHECK(model.ranks[2].header.rank == 3);
  for (const RedistributeRecord& r : model.redistributes) CHECK(r.rank != 2);
  REQUIRE(model.diagnostics.size() == 2);
  CHECK(model.diagnostics[0] ==
        Diagnostic{"", 0, "warning: 1 of 4 rank files could not be read and were skipped (rank-2.jsonl)"});
  CHECK(model.diagnostics[1].file == "rank-2.jsonl");
  CHECK(model.diagnostics[1].line == 3);
  // The message ReadTraceFile gives for the file, without its "rank-2.jsonl:3: " prefix.
  std::string alone;
  try {
    ReadTraceFile(dir / "rank-2.jsonl");
  } catch (const shardscope::Error& e) {
    alone = e.what();
  }
  CHECK(alone.rfind("rank-2.jsonl:3: expected one JSON object: ", 0) == 0);
  CHECK(model.diagnostics[1].message ==
        "skipped rank 2: " + alone.substr(std::string("rank-2.jsonl:3: ").size()));
  fs::remove_all(dir);
}

TEST_CASE("a directory whose every rank file is corrupt reports the first one's error",
          "[trace][reader][tolerant]") {
  const fs::path dir = TempDir("all_bad");
  fs::copy_file(kSource / "tests/golden/trace/corrupt/missing_field.jsonl", dir / "rank-0.jsonl");
  fs::copy_file(kSource / "tests/golden/trace/corrupt/wrong_type.jsonl", dir / "rank-1.jsonl");
  try {
    ReadTraceDir(dir);
    FAIL("expected an error");
  } catch (const shardscope::Error& e) {
    CHECK(e.code() == shardscope::ErrorCode::kInvalidInput);
    CHECK(std::string(e.what()) == "rank-0.jsonl:4: missing field 'group'");
  }
  fs::remove_all(dir);
}

TEST_CASE("progress counts every file and byte of a directory", "[trace][reader][progress]") {
  const fs::path dir = kSource / "samples/ci/golden";
  ReadProgress progress;
  Model model = ReadTraceDir(dir, {.jobs = 2, .progress = &progress});
  int64_t bytes = 0, files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".jsonl") continue;
    bytes += static_cast<int64_t>(fs::file_size(entry.path()));
    ++files;
  }
  CHECK(progress.files_total == files);
  CHECK(progress.files_done == files);
  CHECK(progress.bytes_total == bytes);
  CHECK(progress.bytes_done == bytes);
}

TEST_CASE("the id index answers like a scan of the records", "[trace][reader][index]") {
  // Definition: RedistributesWithId(id) = the records with begin.id == id in rank order;
  // RedistributeIds() = the distinct ids ascending; likewise for ops.
  for (const char* dir :
       {"samples/ci/golden", "tests/golden/trace/program", "tests/golden/check/missing_ranks"}) {
    CAPTURE(dir);
    Model model = ReadTraceDir(kSource / dir);
    REQUIRE(model.index.built);
    CheckIndexAgainstScan(
        model.redistributes, [](const RedistributeRecord& r) { return r.begin->id; },
        [&] { return model.RedistributeIds(); }, [&](int64_t id) { return model.RedistributesWithId(id); });
    CheckIndexAgainstScan(
        model.ops, [](const OpRecord& r) { return r.op->id; }, [&] { return model.OpIds(); },
        [&](int64_t id) { return model.OpsWithId(id); });
    CHECK(model.RedistributesWithId(-5).empty());
    // A record added by hand makes the index stale: lookups scan instead of answering wrongly.
    RedistributeRecord extra = model.redistributes.front();
    extra.rank = 99;
    extra.begin.Mutable().id = 12345;
    model.redistributes.push_back(extra);
    REQUIRE(model.RedistributesWithId(12345).size() == 1);
    CHECK(model.RedistributesWithId(12345)[0]->rank == 99);
    model.Reindex();
    CHECK(model.RedistributeIds().back() == 12345);
  }
}
