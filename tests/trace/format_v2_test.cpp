// Trace format version 2 (docs/trace-format.md, "Version 2"): every trace in the repository read
// as v1, written as v2 and read again gives the same model through both readers; the v2 writer's
// abbreviations are what the format defines; malformed abbreviations get a message at file:line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../common/collective.hpp"
#include "../common/read_error.hpp"
#include "../common/trace_rewrite.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/codec.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/summary.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;
using shardscope::testing::WriteTraceAs;

namespace {

const fs::path kSource = SHARDSCOPE_SOURCE_DIR;

fs::path Temp(const std::string& name) {
  return fs::temp_directory_path() / ("shardscope_v2_" + name + "_" + std::to_string(std::random_device{}()));
}

// Every directory of rank files in the repository that loads (corrupt fixtures are refused and
// skipped here; their messages are the reader tests' business).
std::vector<fs::path> LoadableTraces() {
  std::vector<fs::path> dirs = {kSource / "samples/ci/golden"};
  for (const char* root : {"tests/golden/trace", "tests/golden/check"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kSource / root)) {
      if (!entry.is_directory() || RankFilesIn(entry.path()).empty()) continue;
      dirs.push_back(entry.path());
    }
  }
  std::vector<fs::path> loadable;
  for (const fs::path& dir : dirs) {
    try {
      (void)ReadTraceDir(dir);
      loadable.push_back(dir);
    } catch (const shardscope::Error&) {
    }
  }
  return loadable;
}

// Diagnostics about lines the model does not hold (a torn last line, events of an unknown type):
// a rewritten trace has no such lines.
bool LostInRewrite(const Diagnostic& d) {
  return d.message.find("of unknown type") != std::string::npos ||
         d.message.find("torn last line") != std::string::npos;
}

// What a model says, line for line: headers (version aside), events and diagnostics.
std::string Describe(const Model& m) {
  std::string out;
  for (const RankTrace& r : m.ranks) {
    Header h = r.header;
    h.version = 0;
    out += r.file + " " + ToLine(ToJson(h)) + "\n";
    for (const Event& e : r.events) out += ToLine(ToJson(e)) + "\n";
  }
  for (const Diagnostic& d : m.diagnostics)
    if (!LostInRewrite(d)) out += d.file + ":" + std::to_string(d.line) + " " + d.message + "\n";
  return out;
}

// "" when equal, else both texts from the line where they first differ (a readable failure).
std::string Difference(const std::string& a, const std::string& b) {
  if (a == b) return "";
  size_t at = 0;
  while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
  at = a.rfind('\n', at) == std::string::npos ? 0 : a.rfind('\n', at) + 1;
  return "got:\n" + a.substr(at, 600) + "\nexpected:\n" + b.substr(at, 600);
}

int64_t Bytes(const fs::path& dir) {
  int64_t n = 0;
  for (const fs::path& f : RankFilesIn(dir)) n += static_cast<int64_t>(fs::file_size(f));
  return n;
}

Header OneRank(int version) { return shardscope::testing::MeshRankHeader(version, 1, {4}, {"dp"}); }

// The message reading `lines` (after a v2 header of rank 1 of 4) gives, through one reader path.
std::string ErrorOf(const std::vector<std::string>& lines, bool fast) {
  return shardscope::testing::ReadErrorOf(ToLine(ToJson(OneRank(2))), lines, fast);
}

const std::string kBegin =
    R"j({"type":"redistribute_begin","id":0,"tensor":"x","global_shape":[8,4],"dtype":"f32",)j"
    R"j("src_placements":["S(0)"],"dst_placements":["R"],"planner":"greedy","planner_reason":"default",)j"
    R"j("notation":"S(0)->R","raw_plan":[{"mesh_dims":[0],"src":"S(0)","dst":"R","comm":"all_gather",)j"
    R"j("logical_shape":[8,4],"cost_us":1.5}],"cost_us":1.5,"t_ns":10})j";

}  // namespace

TEST_CASE("v1 -> model -> v2 -> model: every trace in the repository reads back the same",
          "[trace][v2][roundtrip]") {
  const std::vector<fs::path> dirs = LoadableTraces();
  CHECK(dirs.size() >= 20);
  int64_t v1_bytes = 0, v2_bytes = 0;
  for (const fs::path& dir : dirs) {
    CAPTURE(dir);
    const Model v1 = ReadTraceDir(dir);
    const fs::path out = WriteTraceAs(v1, Temp("roundtrip"), 2);
    for (bool fast : {true, false}) {
      const Model v2 = ReadTraceDir(out, {.jobs = 1, .fast = fast});
      for (const RankTrace& r : v2.ranks) CHECK(r.header.version == 2);
      CHECK(Difference(Describe(v2), Describe(v1)) == "");
      if (std::any_of(v1.diagnostics.begin(), v1.diagnostics.end(), LostInRewrite)) continue;
      std::string show = FormatShowText(v2);
      const size_t at = show.find("format v2");
      REQUIRE(at != std::string::npos);
      // The show text of what was read (v1, or v2 for a trace written with repeat lines).
      const std::string read_as = "format v" + std::to_string(v1.ranks.front().header.version);
      CHECK(Difference(show.replace(at, 9, read_as), FormatShowText(v1)) == "");
    }
    // And back: v2 -> model -> v1 is the model again.
    const fs::path back = WriteTraceAs(ReadTraceDir(out), Temp("back"), 1);
    CHECK(Difference(Describe(ReadTraceDir(back)), Describe(v1)) == "");
    v1_bytes += Bytes(back);
    v2_bytes += Bytes(out);
    fs::remove_all(out);
    fs::remove_all(back);
  }
  CHECK(v2_bytes < v1_bytes);
}

namespace {

// Redistributes 0, 1 and 2 of rank 1 of a 4-rank run, alike but for their ids.
std::vector<Event> ThreeRedistributes() {
  const PlanStep step{{0}, "S(0)", "R", "all_gather", {8, 4}, false, 1.0, 1.5};
  RedistributeBegin b{.shape = Shared<RedistributeShape>(RedistributeShape{.tensor = "x",
                                                                           .dtype = "f32",
                                                                           .global_shape = {8, 4},
                                                                           .src_placements = {"S(0)"},
                                                                           .dst_placements = {"R"},
                                                                           .planner = "greedy",
                                                                           .planner_reason = "default",
                                                                           .notation = "S(0)->R",
                                                                           .notation_unoptimized = "S(0)->R",
                                                                           .raw_plan = {step},
                                                                           .optimized_plan = {step},
                                                                           .cost_us = 1.5}),
                      .t_ns = 10};
  StepBegin sb{0, 0, "S(0)", "R", "all_gather", {0}, {8, 4}, {2, 4}, {2, 0}, 20};
  // rank 1 of group [0,1,2,3]: 32 bytes to every peer, none to itself; receives unevenly.
  Collective c = shardscope::testing::MakeCollective(0, 0, "all_gather", "f32", false, {0}, {0, 1, 2, 3},
                                                     {32, 0, 32, 32}, {32, 0, 32, 16}, 30, 40, -1);
  StepEnd se{0, 0, {8, 4}, {0, 0}, 50};
  RedistributeEnd e{0, 60, true, ""};
  std::vector<Event> events;
  for (int64_t id = 0; id < 3; ++id) {
    for (Event ev : std::vector<Event>{b, sb, c, se, e}) {
      std::visit(
          [&](auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, RedistributeBegin> || std::is_same_v<T, RedistributeEnd>)
              x.id = id;
            else if constexpr (requires { x.redistribute_id; })
              x.redistribute_id = id;
          },
          ev);
      events.push_back(ev);
    }
  }
  return events;
}

}  // namespace

TEST_CASE("the v2 writer abbreviates what the format lets it, nothing else", "[trace][v2][writer]") {
  const fs::path dir = Temp("abbrev");
  std::vector<Event> events = ThreeRedistributes();
  std::get<RedistributeBegin>(events[10]).Mutable().tensor = "y";  // id 2: another tensor, else like id 0
  const std::string text = shardscope::testing::WriteRankText(dir, OneRank(2), events);
  const std::vector<std::string> lines = shardscope::testing::SplitLines(text);
  REQUIRE(lines.size() == 16);
  CAPTURE(text);
  // Redistribute 0 in full, without defaults (src_order, optimized_plan = raw_plan, ...).
  CHECK(lines[1].find("\"raw_plan\"") != std::string::npos);
  for (const char* absent : {"optimized_plan", "notation_unoptimized", "src_order", "skipped_merges",
                             "flattened", "avg_scale", "like"})
    CHECK(lines[1].find(absent) == std::string::npos);
  // Redistribute 1 has redistribute 0's plan: only id, like and time.
  CHECK(lines[6] == R"j({"type":"redistribute_begin","id":1,"like":0,"t_ns":10})j");
  // Redistribute 2 differs only in its tensor: that and `like`.
  CHECK(lines[11] == R"j({"type":"redistribute_begin","id":2,"tensor":"y","like":0,"t_ns":10})j");
  // Steps and collectives take their plan step's fields, the group is the mesh's group over the
  // mesh dims ([0, 1, 2, 3] on a 4-rank mesh), uniform bytes are one number.
  CHECK(
      lines[2] ==
      R"j({"type":"step_begin","redistribute_id":0,"step":0,"local_shape_before":[2,4],"global_offset_before":[2,0],"t_ns":20})j");
  CHECK(
      lines[3] ==
      R"j({"type":"collective","redistribute_id":0,"step":0,"bytes_sent":32,"bytes_recv":[32,0,32,16],"start_ns":30,"end_ns":40})j");
  CHECK(lines[5] == R"j({"type":"redistribute_end","id":0,"t_ns":60})j");
  // And it reads back as written, through both readers.
  for (bool fast : {true, false}) {
    Model m = ReadTraceFile(dir / "rank-1.jsonl", {.jobs = 1, .fast = fast});
    std::vector<Event> got(m.ranks[0].events.begin(), m.ranks[0].events.end());
    CHECK(got == events);
  }
  // header.version 1 writes the v1 format.
  const std::string v1 = shardscope::testing::WriteRankText(dir, OneRank(1), events);
  CHECK(v1.find("\"like\"") == std::string::npos);
  CHECK(v1.find("\"version\":1") != std::string::npos);
  CHECK(v1.size() > text.size());
  fs::remove_all(dir);
}

TEST_CASE("malformed v2 abbreviations are refused at file:line by both readers", "[trace][v2][reader]") {
  const std::string coll_head = R"j({"type":"collective","redistribute_id":0,"step":0,"group":[0,1],)j";
  const std::string coll_tail = R"j(,"start_ns":1,"end_ns":2})j";
  const std::vector<shardscope::testing::ReadErrorCase> cases = {
      {{kBegin, coll_head + R"j("bytes_sent":"8","bytes_recv":8)j" + coll_tail},
       "rank-1.jsonl:3: field 'bytes_sent' must be an array of integers (one per rank of 'group') or one "
       "integer (the amount for every other rank of 'group', 0 for this rank)"},
      {{kBegin, coll_head + R"j("bytes_sent":-8,"bytes_recv":8)j" + coll_tail},
       "rank-1.jsonl:3: field 'bytes_sent' is -8, outside [0, 4398046511104]"},
      {{kBegin, coll_head + R"j("bytes_sent":8,"bytes_recv":[1,2,3])j" + coll_tail},
       "rank-1.jsonl:3: fields 'bytes_sent' and 'bytes_recv' must have one entry per rank of 'group' (2)"},
      {{coll_head + R"j("bytes_sent":8,"bytes_recv":8)j" + coll_tail},
       "rank-1.jsonl:2: collective leaves out 'kind' but no redistribute_begin with id 0 comes before it in "
       "this file"},
      {{kBegin, R"j({"type":"collective","redistribute_id":0,"step":3,"group":[0,1],"bytes_sent":8,)j"
                R"j("bytes_recv":8,"start_ns":1,"end_ns":2})j"},
       "rank-1.jsonl:3: collective leaves out 'kind' but step 3 is not in redistribute 0's optimized_plan (1 "
       "steps)"},
      {{kBegin,
        R"j({"type":"step_begin","redistribute_id":0,"step":0,"comm":"x","local_shape_before":[4,4],)j"
        R"j("global_offset_before":[0,0],"t_ns":3})j"},
       "(no error)"},
      {{R"j({"type":"step_begin","redistribute_id":4,"step":0,"local_shape_before":[4,4],)j"
        R"j("global_offset_before":[0,0],"t_ns":3})j"},
       "rank-1.jsonl:2: step_begin leaves out 'mesh_dims' but no redistribute_begin with id 4 comes before "
       "it "
       "in this file"},
      {{kBegin, R"j({"type":"collective","redistribute_id":0,"step":0,"mesh_dims":[7],"bytes_sent":8,)j"
                R"j("bytes_recv":8,"start_ns":1,"end_ns":2})j"},
       "rank-1.jsonl:3: collective leaves out 'group' but its mesh dims are not all in the header's mesh"},
      {{kBegin, R"j({"type":"redistribute_begin","id":1,"like":5,"t_ns":3})j"},
       "rank-1.jsonl:3: field 'like' is 5 but no redistribute_begin with that id comes before this line in "
       "this file"},
      {{kBegin, R"j({"type":"redistribute_begin","id":1,"like":"0","t_ns":3})j"},
       "rank-1.jsonl:3: field 'like' must be an integer"},
      {{R"j({"type":"redistribute_begin","id":0,"tensor":"x","t_ns":3})j"},
       "rank-1.jsonl:2: missing field 'global_shape'"},
      {{R"j({"type":"collective","redistribute_id":-1,"op_id":0,"step":0,"group":[1],"bytes_sent":0,)j"
        R"j("bytes_recv":0,"start_ns":1,"end_ns":2})j"},
       "rank-1.jsonl:2: missing field 'kind'"},
  };
  shardscope::testing::CheckBothReaders(cases, ErrorOf);
}

TEST_CASE("a v1 file keeps v1's rules: no field may be left out", "[trace][v2][reader]") {
  const fs::path dir = Temp("v1rules");
  fs::create_directories(dir);
  std::ofstream(dir / "rank-1.jsonl", std::ios::binary) << ToLine(ToJson(OneRank(1))) << "\n"
                                                        << kBegin << "\n";
  for (bool fast : {true, false}) {
    CHECK_THROWS_WITH(ReadTraceFile(dir / "rank-1.jsonl", {.jobs = 1, .fast = fast}),
                      "rank-1.jsonl:2: missing field 'src_order'");
  }
  fs::remove_all(dir);
}

TEST_CASE("a v2 op line refers to an earlier op with the same fields", "[trace][v2][writer]") {
  // Rank 0 of the program golden three times over, each round under new redistribute and op ids
  // (so an op's inputs name other implicit redistributes each round).
  const Model program = ReadTraceDir(kSource / "tests/golden/trace/program");
  std::vector<Event> events;
  size_t op_count = 0;
  for (int64_t round = 0; round < 3; ++round) {
    const int64_t shift = round * 100;
    auto moved = [&](int64_t id) { return id >= 0 ? id + shift : id; };
    for (Event e : program.ranks[0].events) {
      std::visit(
          [&](auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, RedistributeBegin>) {
              x.id = moved(x.id), x.op_id = moved(x.op_id);
            } else if constexpr (std::is_same_v<T, RedistributeEnd>) {
              x.id = moved(x.id);
            } else if constexpr (std::is_same_v<T, Collective>) {
              x.redistribute_id = moved(x.redistribute_id), x.op_id = moved(x.op_id);
            } else if constexpr (std::is_same_v<T, Op>) {
              x.id = moved(x.id);
              if (!x.inputs().empty())
                for (OpInput& in : x.Mutable().inputs.Mutable())
                  in.redistribute_id = moved(in.redistribute_id);
              op_count += round == 0;
            } else {
              x.redistribute_id = moved(x.redistribute_id);
            }
          },
          e);
      events.push_back(e);
    }
  }
  REQUIRE(op_count >= 2);
  const fs::path dir = Temp("ops");
  Header h = program.ranks[0].header;
  h.version = 2;
  const std::string text = shardscope::testing::WriteRankText(dir, h, events);
  auto count = [&](const std::string& what) { return shardscope::testing::CountOf(text, what); };
  // Round 0's ops in full; rounds 1 and 2 by `like`, with redistribute_ids where inputs moved (or
  // `linked` where they are the ids of the begins that name the op).
  CHECK(count("{\"type\":\"op\",") == 3 * op_count);
  CHECK(count("{\"type\":\"op\",\"id\":") == 3 * op_count);
  CHECK(count("\"like\":") >= 2 * op_count);
  CHECK(count("\"redistribute_ids\":") + count("\"linked\":true") >= 1);
  for (bool fast : {true, false}) {
    Model m = ReadTraceFile(dir / RankFileName(h.rank), {.jobs = 1, .fast = fast});
    std::vector<Event> got(m.ranks[0].events.begin(), m.ranks[0].events.end());
    CHECK(got == events);
  }
  fs::remove_all(dir);
  CHECK(ErrorOf({R"j({"type":"op","id":1,"like":0,"step":0,"t_ns":1,"end_ns":2})j"}, false) ==
        "rank-1.jsonl:2: field 'like' is 0 but no op with that id comes before this line in this file");
}

namespace {

// One whole redistribute (id 0 of kBegin) on rank 1: its begin, step, collective and end lines.
const std::vector<std::string> kWholeRedistribute = {
    kBegin,
    R"j({"type":"step_begin","redistribute_id":0,"step":0,"local_shape_before":[2,4],)j"
    R"j("global_offset_before":[2,0],"t_ns":12})j",
    R"j({"type":"collective","redistribute_id":0,"step":0,"group":[0,1],"bytes_sent":8,"bytes_recv":8,)j"
    R"j("start_ns":13,"end_ns":14})j",
    R"j({"type":"step_end","redistribute_id":0,"step":0,"local_shape_after":[8,4],"global_offset_after":[0,0],)j"
    R"j("t_ns":15})j",
    R"j({"type":"redistribute_end","id":0,"t_ns":16})j"};

std::vector<std::string> With(std::vector<std::string> lines, const std::vector<std::string>& more) {
  lines.insert(lines.end(), more.begin(), more.end());
  return lines;
}

}  // namespace

TEST_CASE("a v2 redistribute_repeat line is an earlier redistribute again with its own id and times",
          "[trace][v2][reader]") {
  const fs::path dir = Temp("repeat");
  fs::create_directories(dir);
  std::string text = ToLine(ToJson(OneRank(2))) + "\n";
  for (const std::string& l : kWholeRedistribute) text += l + "\n";
  text += R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":100,"dt":[2,3,5,-4,6]})j"
          "\n";
  text += R"j({"type":"redistribute_repeat","id":2,"like":1,"t_ns":200,"dt":[1,1,1,1,1],"tensor":"y"})j"
          "\n";
  std::ofstream(dir / "rank-1.jsonl", std::ios::binary) << text;
  for (bool fast : {true, false}) {
    ReadProgress progress;
    const Model m = ReadTraceFile(dir / "rank-1.jsonl", {.jobs = 1, .fast = fast, .progress = &progress});
    // The fast path decodes repeat lines itself: only the header takes the reference path.
    CHECK(progress.lines_reference == (fast ? 1 : 8));
    const std::vector<Event> events = m.ranks.at(0).events.ToVector();
    REQUIRE(events.size() == 15);
    CHECK(m.diagnostics.empty());
    // Redistribute 1 is redistribute 0 with id 1, begin at 100 and the later times at 100 + dt.
    const auto& b0 = std::get<RedistributeBegin>(events[0]);
    const auto& b1 = std::get<RedistributeBegin>(events[5]);
    CHECK(b1.id == 1);
    CHECK(b1.t_ns == 100);
    CHECK(b1.tensor() == "x");
    CHECK(b1.op_id == -1);
    CHECK(b1.global_shape().get() == b0.global_shape().get());
    CHECK(b1.optimized_plan().get() == b0.optimized_plan().get());
    const auto& s1 = std::get<StepBegin>(events[6]);
    CHECK(s1.redistribute_id == 1);
    CHECK(s1.t_ns == 102);
    CHECK(s1.local_shape_before.get() == std::vector<int64_t>{2, 4});
    const auto& c1 = std::get<Collective>(events[7]);
    CHECK(c1.redistribute_id == 1);
    CHECK(c1.start_ns == 103);
    CHECK(c1.end_ns == 105);
    CHECK(c1.bytes_sent().get() == std::vector<int64_t>{8, 0});
    CHECK(std::get<StepEnd>(events[8]).t_ns == 96);
    CHECK(std::get<StepEnd>(events[8]).redistribute_id == 1);
    CHECK(std::get<RedistributeEnd>(events[9]).id == 1);
    CHECK(std::get<RedistributeEnd>(events[9]).t_ns == 106);
    // A repeat of a repeat; the tensor given.
    const auto& b2 = std::get<RedistributeBegin>(events[10]);
    CHECK(b2.id == 2);
    CHECK(b2.tensor() == "y");
    CHECK(std::get<Collective>(events[12]).end_ns == 201);
    CHECK(std::get<RedistributeEnd>(events[14]).t_ns == 201);
  }
  fs::remove_all(dir);
}

TEST_CASE("malformed v2 redistribute_repeat lines are refused at file:line by both readers",
          "[trace][v2][reader]") {
  const std::string end1 = R"j({"type":"redistribute_end","id":1,"t_ns":3})j";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {With(kWholeRedistribute,
            {R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":100,"dt":[1,2,3,4]})j"}),
       "rank-1.jsonl:7: field 'dt' has 4 entries but redistribute 0 has 5 times after its begin"},
      {With(kWholeRedistribute, {R"j({"type":"redistribute_repeat","id":1,"like":3,"t_ns":100,"dt":[]})j"}),
       "rank-1.jsonl:7: field 'like' is 3 but no redistribute with that id was read as one run of lines (its "
       "redistribute_begin, steps, collectives and redistribute_end, nothing between) before this line in "
       "this file"},
      // Redistribute 1 begins inside redistribute 0: neither is one run of lines.
      {{kBegin, R"j({"type":"redistribute_begin","id":1,"like":0,"t_ns":2})j",
        R"j({"type":"redistribute_end","id":0,"t_ns":3})j", end1,
        R"j({"type":"redistribute_repeat","id":2,"like":0,"t_ns":100,"dt":[1]})j"},
       "rank-1.jsonl:6: field 'like' is 0 but no redistribute with that id was read as one run of lines (its "
       "redistribute_begin, steps, collectives and redistribute_end, nothing between) before this line in "
       "this file"},
      {{kBegin, R"j({"type":"redistribute_end","id":0,"t_ns":3})j",
        R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":2305843009213693952,"dt":[1]})j"},
       "rank-1.jsonl:4: field 'dt[0]' puts a time outside [-2^61, 2^61] ns"},
      {{kBegin, R"j({"type":"redistribute_end","id":0,"t_ns":3})j",
        R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":2,"dt":[1.5]})j"},
       "rank-1.jsonl:4: field 'dt' must be an array of integers"},
      {{kBegin, R"j({"type":"redistribute_end","id":0,"t_ns":3})j",
        R"j({"type":"redistribute_repeat","id":1,"like":0,"dt":[1]})j"},
       "rank-1.jsonl:4: missing field 't_ns'"},
      {{kBegin, R"j({"type":"redistribute_end","id":0,"t_ns":3})j",
        R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5,"dt":[1],"op_id":2})j"},
       "rank-1.jsonl:4: fields 'op_id' and 'op_input' must appear together"},
      // The id is the assembler's to check, as for any begin: it may begin only once.
      {{kBegin, R"j({"type":"redistribute_end","id":0,"t_ns":3})j",
        R"j({"type":"redistribute_repeat","id":0,"like":0,"t_ns":5,"dt":[1]})j"},
       ""},
  };
  for (const auto& [lines, expected] : cases) {
    CAPTURE(lines.back());
    const std::string fast = ErrorOf(lines, true), reference = ErrorOf(lines, false);
    CHECK(fast == reference);
    if (expected.empty()) {
      CHECK(fast.starts_with("rank-1.jsonl:4: "));
    } else {
      CHECK(fast == expected);
    }
  }
}

TEST_CASE("a v1 file skips redistribute_repeat lines as an unknown type", "[trace][v2][reader]") {
  const fs::path dir = Temp("repeat_v1");
  fs::create_directories(dir);
  std::ofstream(dir / "rank-1.jsonl", std::ios::binary)
      << ToLine(ToJson(OneRank(1))) << "\n"
      << R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":100,"dt":[]})j"
      << "\n";
  const Model m = ReadTraceFile(dir / "rank-1.jsonl", {.jobs = 1, .fast = true});
  CHECK(m.ranks.at(0).events.size() == 0);
  REQUIRE(m.diagnostics.size() == 1);
  CHECK(m.diagnostics[0].message.find("unknown type 'redistribute_repeat'") != std::string::npos);
  fs::remove_all(dir);
}
