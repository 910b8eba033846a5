// Writer and TraceSession: round trip through files, flush points, environment capture.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>
#include <variant>

#include "../../trace/src/fast_encode.hpp"  // the writer's private fast path, tested against codec
#include "../common/collective.hpp"
#include "../common/temp_dir.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/codec.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

fs::path TempDir(const std::string& name) { return shardscope::testing::FreshTempDir("trace_" + name); }

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Header TwoRankHeader(int64_t rank) {
  Header h;
  h.rank = rank;
  h.world = 2;
  h.mesh_shape = {2};
  h.mesh_dim_names = {"dp"};
  h.backend = "local";
  h.host = "testhost";
  h.pid = 77;
  h.clock = {"steady", -5};
  return h;
}

PlanStep Step(std::string src, std::string dst, std::string comm) {
  return PlanStep{{0}, std::move(src), std::move(dst), std::move(comm), {6, 4}, false, 1.0, 2.5};
}

// A complete redistribute on `rank` of a 2-rank run with every field set to a non-default value.
std::vector<Event> Redistribute(int64_t rank, int64_t id) {
  RedistributeBegin b;
  b.id = id;
  b.Mutable().tensor = "w\"eird\\name\n";
  b.Mutable().global_shape = {6, 4};
  b.Mutable().dtype = "bf16";
  b.Mutable().src_placements = {"_S(0, 2)"};
  b.Mutable().dst_placements = {"P(sum)"};
  b.Mutable().src_order = "S(0)[0]";
  b.Mutable().dst_order = "";
  b.Mutable().planner = "graph";
  b.Mutable().planner_reason = "strided shard";
  b.Mutable().notation = "_S(0, 2)->R->P(sum)";
  b.Mutable().notation_unoptimized = "_S(0, 2)->R, R->P(sum)";
  b.Mutable().raw_plan = {Step("_S(0, 2)", "R", "all_gather"), Step("R", "P(sum)", "local")};
  b.Mutable().optimized_plan = b.raw_plan();
  b.Mutable().optimized_plan.Mutable()[0].flattened = true;
  b.Mutable().optimized_plan.Mutable()[0].avg_scale = 0.25;
  b.Mutable().skipped_merges = {SkippedMerge{{0}, "all_gather", "only one mesh dim", ""}};
  b.Mutable().cost_us = 12.75;
  b.t_ns = 100 + id;
  StepBegin sb{id, 0, "_S(0, 2)", "R", "all_gather", {0}, {6, 4}, {3, 4}, {3 * rank, 0}, 110};
  Collective c = shardscope::testing::MakeCollective(id, 0, "all_gather", "bf16", rank == 1, {0}, {0, 1},
                                                     {0, 24}, {0, 24}, 120, 130, -1);
  StepEnd se{id, 0, {6, 4}, {0, 0}, 140};
  RedistributeEnd e{id, 150, id % 2 == 0, id % 2 == 0 ? "" : "rank 1 failed: timeout",
                    RedistributeEnd::Checksums{0xFFFFFFFFFFFFFFFFull, std::nullopt}};
  return {b, sb, c, se, e};
}

// Writes `events(rank)` for both ranks of a two-rank run into `dir`, each event through the
// Writer overload of its type.
template <typename Events>
void WriteTwoRanks(const fs::path& dir, Events events) {
  TraceSession session(dir);
  for (int64_t rank = 0; rank < 2; ++rank) {
    Writer* w = session.WriterFor(rank, TwoRankHeader(rank));
    REQUIRE(w != nullptr);
    for (const Event& e : events(rank)) std::visit([&](const auto& x) { w->Emit(x); }, e);
  }
}

}  // namespace

TEST_CASE("written events read back equal", "[trace][writer]") {
  fs::path dir = TempDir("roundtrip");
  auto events = [](int64_t rank) {
    std::vector<Event> out;
    for (int64_t id = 0; id < 3; ++id) {
      for (const Event& e : Redistribute(rank, id)) out.push_back(e);
    }
    return out;
  };
  WriteTwoRanks(dir, events);
  Model model = ReadTraceDir(dir);
  CHECK(model.diagnostics.empty());
  CHECK(model.world == 2);
  REQUIRE(model.ranks.size() == 2);
  for (int64_t rank = 0; rank < 2; ++rank) {
    CHECK(model.ranks[rank].header == TwoRankHeader(rank));
    CHECK(model.ranks[rank].file == "rank-" + std::to_string(rank) + ".jsonl");
    CHECK(model.ranks[rank].events == events(rank));
  }
  REQUIRE(model.redistributes.size() == 6);
  const RedistributeRecord& rec = model.redistributes[4];  // rank 1, id 1
  CHECK(rec.rank == 1);
  CHECK(rec.begin->id == 1);
  REQUIRE(rec.end.has_value());
  CHECK_FALSE(rec.end->ok);
  CHECK(rec.end->checksum_before() == 0xFFFFFFFFFFFFFFFFull);
  CHECK_FALSE(rec.end->checksum_after().has_value());
  REQUIRE(rec.steps.size() == 1);
  CHECK(rec.steps[0].end.has_value());
  REQUIRE(rec.collectives.size() == 1);
  CHECK(rec.collectives[0].negotiated());
  CHECK(model.RedistributeIds() == std::vector<int64_t>{0, 1, 2});
  CHECK(model.RedistributesWithId(2).size() == 2);
  fs::remove_all(dir);
}

TEST_CASE("writer flushes at every redistribute end and nowhere before", "[trace][writer]") {
  fs::path dir = TempDir("flush");
  Writer w(dir, TwoRankHeader(0));
  fs::path path = dir / "rank-0.jsonl";
  CHECK(w.path() == path);
  std::string header_only = Slurp(path);
  CHECK(std::count(header_only.begin(), header_only.end(), '\n') == 1);  // header flushed at open

  std::vector<Event> events = Redistribute(0, 0);
  for (size_t i = 0; i + 1 < events.size(); ++i) w.Emit(events[i]);
  CHECK(Slurp(path) == header_only);  // still buffered: a kill here loses only the open redistribute
  w.Emit(events.back());
  std::string after_end = Slurp(path);
  CHECK(std::count(after_end.begin(), after_end.end(), '\n') == 6);

  // What a killed process leaves behind (the begin of redistribute 1 never reached the file) reads
  // back with redistribute 0 intact.
  w.Emit(Redistribute(0, 1).front());
  Model model = ReadTraceFile(path);
  REQUIRE(model.redistributes.size() == 1);
  CHECK(model.redistributes[0].end.has_value());
  w.Close();
  w.Close();               // idempotent
  w.Emit(events.front());  // ignored after close
  CHECK(ReadTraceFile(path).redistributes.size() == 2);
  fs::remove_all(dir);
}

TEST_CASE("writer sets format and version and reports an unwritable directory", "[trace][writer]") {
  fs::path dir = TempDir("version");
  Header h = TwoRankHeader(1);
  h.format = "something-else";
  h.version = 99;
  {
    Writer w(dir, h);
    CHECK(w.header().format == kFormatName);
    CHECK(w.header().version == kCurrentVersion);
  }
  CHECK(ReadTraceFile(dir / "rank-1.jsonl").ranks[0].header.version == kCurrentVersion);

  fs::path blocker = dir / "a_file";
  std::ofstream(blocker) << "x";
  try {
    Writer bad(blocker / "sub", TwoRankHeader(0));
    FAIL("expected an error");
  } catch (const shardscope::Error& e) {
    CHECK(e.code() == shardscope::ErrorCode::kInvalidInput);
    CHECK_THAT(e.what(), Catch::Contains("a_file"));
  }
  fs::remove_all(dir);
}

TEST_CASE("trace session follows SHARDSCOPE_TRACE", "[trace][session]") {
  ::unsetenv(kTraceEnvVar);
  TraceSession off = TraceSession::FromEnv();
  CHECK_FALSE(off.enabled());
  CHECK(off.WriterFor(0, TwoRankHeader(0)) == nullptr);

  ::setenv(kTraceEnvVar, "", 1);
  CHECK_FALSE(TraceSession::FromEnv().enabled());

  fs::path dir = TempDir("env");
  ::setenv(kTraceEnvVar, dir.c_str(), 1);
  {
    TraceSession on = TraceSession::FromEnv();
    CHECK(on.enabled());
    CHECK(on.dir() == dir);
    Header h = MakeHeader(7, 2, {2}, {}, "local");  // rank is overridden by WriterFor
    Writer* w0 = on.WriterFor(0, h);
    REQUIRE(w0 != nullptr);
    CHECK(w0->header().rank == 0);
    CHECK(on.WriterFor(0, TwoRankHeader(0)) == w0);  // same writer on later calls
    CHECK(on.WriterFor(1, h) != w0);
    TraceSession moved = std::move(on);
    CHECK(moved.WriterFor(0, h) == w0);
  }
  ::unsetenv(kTraceEnvVar);
  Model model = ReadTraceDir(dir);
  REQUIRE(model.ranks.size() == 2);
  CHECK(model.ranks[1].header.rank == 1);
  CHECK(model.ranks[0].header.mesh_dim_names == std::vector<std::string>{""});
  CHECK(model.ranks[0].header.pid > 0);
  fs::remove_all(dir);
}

TEST_CASE("NowNs is monotonic", "[trace][writer]") {
  int64_t a = NowNs();
  int64_t b = NowNs();
  CHECK(b >= a);
  CHECK(RankFileName(12) == "rank-12.jsonl");
}

namespace {

// Op 0 (mm) on `rank` of the 2-rank run: input 1 was redistributed by redistribute 5 (S(0) -> R),
// the op ran one halo exchange, and its second candidate has an infinite cost.
std::vector<Event> OpWithLinks(int64_t rank) {
  std::vector<Event> events = Redistribute(rank, 5);
  auto& begin = std::get<RedistributeBegin>(events.front());
  begin.op_id = 0;
  begin.op_input = 1;
  Collective halo = shardscope::testing::MakeCollective(-1, 0, "halo_exchange", "f32", false, {0}, {0, 1},
                                                        {0, 16}, {0, 16}, 200, 210, 0);
  Op op;
  op.id = 0;
  op.step = 3;
  op.Mutable().name = "mm";
  op.Mutable().args = "";
  op.Mutable().inputs = {OpInput{"x", {"S(0)"}, {"S(0)"}, -1}, OpInput{"w", {"S(0)"}, {"R"}, 5}};
  op.Mutable().outputs = {OpOutput{"y", true, {"S(0)"}, {6, 4}, {3, 4}}, OpOutput{"", false, {}, {}, {}}};
  op.Mutable().candidates = {
      OpStrategy{{{"S(0)"}, {"R"}}, {{"S(0)"}, {}}, 2.5},
      OpStrategy{{{"R"}, {"R"}}, {{"R"}, {}}, std::numeric_limits<double>::infinity()}};
  op.Mutable().chosen = 0;
  op.Mutable().rule = "least redistribute cost";
  op.Mutable().note = "";
  op.t_ns = 90;
  op.end_ns = 300;
  events.push_back(halo);
  events.push_back(op);
  return events;
}

}  // namespace

TEST_CASE("op events, op links and halo exchanges read back equal", "[trace][writer]") {
  fs::path dir = TempDir("ops");
  auto events = [](int64_t rank) {
    std::vector<Event> out = Redistribute(rank, 4);  // an explicit redistribute first
    for (const Event& e : OpWithLinks(rank)) out.push_back(e);
    return out;
  };
  WriteTwoRanks(dir, events);
  fs::path rank0 = dir / "rank-0.jsonl";
  std::string text = Slurp(rank0);
  // Explicit redistributes and redistribute collectives carry no op fields; infinity is -1.
  CHECK(text.find("\"op_id\":0,\"op_input\":1") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1 + 5 + 5 + 2);
  CHECK(text.find("\"cost_us\":-1") != std::string::npos);
  CHECK(text.find("{\"type\":\"op\",\"id\":0,\"step\":3,\"name\":\"mm\",\"args\":\"\",\"inputs\":[") !=
        std::string::npos);

  Model model = ReadTraceDir(dir);
  CHECK(model.diagnostics.empty());
  for (int64_t rank = 0; rank < 2; ++rank) CHECK(model.ranks[rank].events == events(rank));
  REQUIRE(model.ops.size() == 2);
  CHECK(model.OpIds() == std::vector<int64_t>{0});
  CHECK(model.OpsWithId(0).size() == 2);
  const OpRecord* op = model.FindOp(1, 0);
  REQUIRE(op != nullptr);
  CHECK(op->rank == 1);
  CHECK(op->redistribute_ids.ToVector() == std::vector<int64_t>{5});
  REQUIRE(op->collectives.size() == 1);
  CHECK(op->collectives[0].kind() == "halo_exchange");
  CHECK(op->op->candidates()[1].cost_us == std::numeric_limits<double>::infinity());
  CHECK(model.FindOp(2, 0) == nullptr);
  const RedistributeRecord* rec = model.FindRedistribute(1, 5);
  REQUIRE(rec != nullptr);
  CHECK(rec->begin->op_id == 0);
  CHECK(rec->begin->op_input == 1);
  CHECK(model.FindRedistribute(1, 4)->begin->op_id == -1);
  fs::remove_all(dir);
}

TEST_CASE("an op event flushes like a redistribute end", "[trace][writer]") {
  fs::path dir = TempDir("opflush");
  Writer w(dir, TwoRankHeader(0));
  std::vector<Event> events = OpWithLinks(0);
  for (const Event& e : events) w.Emit(e);
  std::string text = Slurp(dir / "rank-0.jsonl");
  CHECK(std::count(text.begin(), text.end(), '\n') == 1 + 5 + 2);
  fs::remove_all(dir);
}

namespace {

// Runs `body` with stderr redirected to a file and returns what it printed there.
template <typename F>
std::string CaptureStderr(F&& body) {
  const fs::path file = fs::temp_directory_path() / ("shardscope_stderr_" + std::to_string(::getpid()));
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, 2);
  ::close(fd);
  body();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(file);
  return text;
}

size_t Lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("capture never takes the job down: a regular file as SHARDSCOPE_TRACE",
          "[trace][session][capture]") {
  fs::path dir = TempDir("capture_file");
  fs::create_directories(dir);
  const fs::path file = dir / "not_a_dir";
  std::ofstream(file) << "x";
  ::setenv(kTraceEnvVar, file.c_str(), 1);
  std::string err = CaptureStderr([&] {
    TraceSession session = TraceSession::FromEnv();
    CHECK(session.enabled());
    // Two ranks ask; neither throws, both get nullptr (tracing off), one warning line in all.
    CHECK(session.WriterFor(0, TwoRankHeader(0)) == nullptr);
    CHECK(session.WriterFor(1, TwoRankHeader(1)) == nullptr);
    CHECK_NOTHROW(session.Close());
  });
  ::unsetenv(kTraceEnvVar);
  CHECK(Lines(err) == 1);
  CHECK_THAT(err, Catch::StartsWith("shardscope: warning: trace: cannot create directory '" + file.string()));
  CHECK_THAT(err, Catch::Contains("tracing is off, the job goes on"));
  // An explicit session (shardscope run --trace) still reports the error to its caller.
  TraceSession strict(file);
  CHECK_THROWS_AS(strict.WriterFor(0, TwoRankHeader(0)), shardscope::Error);
  fs::remove_all(dir);
}

TEST_CASE("capture never takes the job down: an unwritable directory", "[trace][session][capture]") {
  if (::geteuid() == 0) {
    WARN("skipped: root can write into a mode-0500 directory");
    return;
  }
  fs::path dir = TempDir("capture_ro");
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  ::setenv(kTraceEnvVar, dir.c_str(), 1);
  std::string err = CaptureStderr([&] {
    TraceSession session = TraceSession::FromEnv();
    CHECK(session.WriterFor(0, TwoRankHeader(0)) == nullptr);
  });
  ::unsetenv(kTraceEnvVar);
  CHECK(Lines(err) == 1);
  CHECK_THAT(err, Catch::Contains("cannot open"));
  fs::permissions(dir, fs::perms::owner_all);
  fs::remove_all(dir);
}

TEST_CASE("capture never takes the job down: a full disk keeps what was written",
          "[trace][session][capture]") {
  // rank-1.jsonl is a link to /dev/full: opening works, every write fails with ENOSPC.
  fs::path dir = TempDir("capture_full");
  fs::create_directories(dir);
  fs::create_symlink("/dev/full", dir / RankFileName(1));
  ::setenv(kTraceEnvVar, dir.c_str(), 1);
  std::string err = CaptureStderr([&] {
    TraceSession session = TraceSession::FromEnv();
    Writer* w0 = session.WriterFor(0, TwoRankHeader(0));
    Writer* w1 = session.WriterFor(1, TwoRankHeader(1));
    REQUIRE(w0 != nullptr);
    REQUIRE(w1 != nullptr);
    CHECK_FALSE(w1->ok());  // the header line already failed
    for (int64_t rank : {0, 1}) {
      for (const Event& e : Redistribute(rank, 0)) CHECK_NOTHROW((rank == 0 ? w0 : w1)->Emit(e));
    }
    CHECK(w0->ok());
    CHECK_NOTHROW(session.Close());
  });
  ::unsetenv(kTraceEnvVar);
  CHECK(Lines(err) == 1);
  CHECK_THAT(err, Catch::Contains("No space left on device"));
  // Rank 0's file, which could be written, is complete.
  Model rank0 = ReadTraceFile(dir / RankFileName(0));
  CHECK(rank0.ranks.size() == 1);
  CHECK(rank0.redistributes.size() == 1);
  fs::remove_all(dir);
}

TEST_CASE("the writer's fast path writes what the JSON encoder writes", "[trace][writer][fast]") {
  // Every event of every trace in the repository, plus escapes and non-finite numbers that the
  // fast path must decline: each line it writes must parse to the same JSON as ToJson's.
  namespace fs = std::filesystem;
  std::vector<Event> events;
  for (const char* dir : {"samples/ci/golden", "tests/golden/trace/program", "tests/golden/check/checksum",
                          "tests/golden/trace/two_rank"}) {
    Model m = ReadTraceDir(fs::path(SHARDSCOPE_SOURCE_DIR) / dir);
    for (const RankTrace& r : m.ranks) events.insert(events.end(), r.events.begin(), r.events.end());
  }
  RedistributeBegin quoted = std::get<RedistributeBegin>(events.front());
  quoted.Mutable().tensor = "a \"quoted\" name\n";
  events.push_back(quoted);
  RedistributeBegin infinite = std::get<RedistributeBegin>(events.front());
  infinite.Mutable().cost_us = std::numeric_limits<double>::infinity();
  events.push_back(infinite);
  RedistributeEnd failed;
  failed.ok = false;
  failed.error = "caf\xc3\xa9";  // UTF-8: declined (the encoder checks and keeps it)
  failed.set_checksum_before(18446744073709551615ull);
  events.push_back(failed);
  // An op whose candidate cost is +inf (an impossible strategy) is written with cost -1 by both
  // paths, not declined; an op with a quoted name is declined.
  auto op_at = std::find_if(events.begin(), events.end(),
                            [](const Event& e) { return std::holds_alternative<Op>(e); });
  REQUIRE(op_at != events.end());
  Op impossible = std::get<Op>(*op_at);
  REQUIRE_FALSE(impossible.candidates().empty());
  impossible.Mutable().candidates.Mutable()[0].cost_us = std::numeric_limits<double>::infinity();
  impossible.Mutable().ok = false;
  impossible.Mutable().error = "no strategy";
  events.push_back(impossible);
  Op quoted_op = std::get<Op>(*op_at);
  quoted_op.Mutable().args = "dim=\"x\"";
  events.push_back(quoted_op);
  int64_t fast = 0, declined = 0, fast_ops = 0;
  for (const Event& e : events) {
    std::string line;
    bool ok = std::visit([&](const auto& x) { return detail::FastEncode(x, line); }, e);
    if (!ok) {
      CHECK(line.empty());
      ++declined;
      continue;
    }
    ++fast;
    if (std::holds_alternative<Op>(e)) ++fast_ops;
    CAPTURE(line);
    CHECK(nlohmann::json::parse(line) == nlohmann::json::parse(ToLine(ToJson(e))));
    CHECK(line == ToLine(ToJson(e)));  // same text too, for every double these traces hold
  }
  CHECK(fast > 100);
  CHECK(fast_ops > 2);
  CHECK(declined >= 4);
}

TEST_CASE("floats are written in shortest round-trip form in nlohmann's layout", "[trace][writer][fast]") {
  // Layout rules of nlohmann's dump (fixed for decimal exponents -4..15 with ".0" on whole
  // numbers, else d.ddde+XX); digits: the shortest that read back to the same double.
  auto text = [](double v) {
    std::string s;
    detail::AppendDouble(v, s);
    return s;
  };
  CHECK(text(1.0) == "1.0");
  CHECK(text(100.0) == "100.0");
  CHECK(text(12.5) == "12.5");
  CHECK(text(0.001) == "0.001");
  CHECK(text(0.0001) == "0.0001");
  CHECK(text(1e-05) == "1e-05");
  CHECK(text(1.5e-05) == "1.5e-05");
  CHECK(text(1e20) == "1e+20");
  CHECK(text(1e15) == "1e+15");
  CHECK(text(123456789012345.0) == "123456789012345.0");
  CHECK(text(1234567890123456.0) == "1.234567890123456e+15");
  CHECK(text(-0.0) == "-0.0");
  CHECK(text(-2.5) == "-2.5");
  CHECK(text(0.1) == "0.1");
  CHECK(text(5e-324) == "5e-324");
  CHECK(text(1.7976931348623157e308) == "1.7976931348623157e+308");
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    if (!std::isfinite(v)) continue;
    std::string s = text(v);
    CAPTURE(s);
    double back = std::strtod(s.c_str(), nullptr);
    REQUIRE(std::memcmp(&back, &v, sizeof v) == 0);
    REQUIRE(s.size() <= 24);
  }
}
