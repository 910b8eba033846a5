// Trace format version 2 on imported records (docs/trace-format.md, "Version 2"): collectives with
// Flight Recorder fields written as collective_repeat lines, imported redistributes by `like` with
// their own tensor, ops by `like` with only the fields that differ. Property: random events of
// every kind, written as v2 and read back through both readers, are the events written.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../common/read_error.hpp"
#include "../common/test_knobs.hpp"
#include "../common/trace_rewrite.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/codec.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

fs::path Temp(const std::string& name) {
  return fs::temp_directory_path() /
         ("shardscope_v2i_" + name + "_" + std::to_string(std::random_device{}()));
}

std::string Slurp(const fs::path& path) { return shardscope::testing::ReadFile(path); }

// Rank 1 of a 2x4 mesh.
Header Rank1(int version) { return shardscope::testing::MeshRankHeader(version, 1, {2, 4}, {"dp", "tp"}); }

// Random events of every kind for rank 1 of 8, valid as a trace: redistributes (some imported, some
// differing only in their tensor), collectives with flight records drawn from a few process groups
// and kinds (so that many repeat an earlier one but for times, ids, state and duration), and ops
// whose candidates, inputs and outputs come from a few shapes (so that they share lists), some
// with an input placed by an implicit redistribute.
class RandomEvents {
 public:
  explicit RandomEvents(uint64_t seed) : rng_(seed) {}

  std::vector<Event> Make(int n) {
    std::vector<Event> out;
    while (static_cast<int>(out.size()) < n) {
      switch (Pick(4)) {
        case 0:
          Redistribute(out, -1, -1);
          break;
        case 1:
        case 2:
          out.push_back(FlightCollective());
          break;
        default:
          AnOp(out);
      }
    }
    return out;
  }

 private:
  int64_t Pick(int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng_); }
  int64_t Time() {
    t_ += Pick(3) == 0 ? Pick(int64_t{1} << 40) : Pick(5000);
    return t_;
  }

  void Redistribute(std::vector<Event>& out, int64_t op_id, int64_t op_input) {
    const PlanStep step{{Pick(2)}, "S(0)", "R", Pick(2) ? "all_gather" : "local",
                        {8, 4},    false,  1.0, Pick(2) ? 1.5 : 0.25};
    RedistributeBegin b;
    b.id = next_redistribute_++;
    b.tensor = Pick(3) == 0 ? std::string("w") : "t" + std::to_string(Pick(50));
    b.global_shape = std::vector<int64_t>{8, 4};
    b.dtype = "f32";
    b.src_placements = std::vector<std::string>{"S(0)", "R"};
    b.dst_placements = std::vector<std::string>{"R", "R"};
    b.planner = "greedy";
    b.planner_reason = "default";
    b.notation = "S(0)R->RR";
    b.notation_unoptimized = "S(0)R->RR";
    b.raw_plan = std::vector<PlanStep>{step};
    b.optimized_plan = std::vector<PlanStep>{step};
    b.cost_us = step.cost_us;
    b.t_ns = Time();
    b.op_id = op_id;
    b.op_input = op_input;
    if (Pick(2)) {
      ImportedPlan p;
      p.source = "debugmode";
      p.line = Pick(100000) + 1;
      p.notation = Pick(2) ? "S(0)R->RR" : "";
      if (Pick(2)) p.collectives.push_back({"all_gather", Pick(3) - 1, std::to_string(Pick(4))});
      p.verdict = Pick(2) ? "same" : "differs";
      p.reason = p.verdict == "same" ? "" : "PyTorch gathered over dims 0,1";
      b.imported = std::move(p);
    }
    out.push_back(b);
    RedistributeEnd e;
    e.id = b.id;
    e.t_ns = Time();
    out.push_back(e);
  }

  Collective FlightCollective() {
    static const std::vector<std::vector<int64_t>> kGroups = {{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}, {1, 5}};
    static const std::vector<std::string> kKinds = {"all_reduce", "all_gather", "reduce_scatter", "send"};
    static const std::vector<std::string> kStates = {"completed", "completed", "started", "scheduled"};
    const auto g = static_cast<size_t>(Pick(3));
    const auto k = static_cast<size_t>(Pick(4));
    Collective c;
    c.redistribute_id = -1;
    c.step = 0;
    c.kind = kKinds[k];
    c.group = kGroups[g];
    // Mostly what this group and kind always move; now and then something else.
    c.dtype = Pick(16) ? "f32" : "bf16";
    const int64_t bytes = Pick(16) ? 128 << k : 4096;
    std::vector<int64_t> sent, recv;
    for (int64_t r : kGroups[g]) {
      sent.push_back(r == 1 ? 0 : bytes);
      recv.push_back(r == 1 ? 0 : Pick(32) ? bytes : bytes / 2);
    }
    c.bytes_sent = sent;
    c.bytes_recv = recv;
    c.start_ns = Time();
    c.end_ns = Pick(4) ? c.start_ns + Pick(1000000) : c.start_ns;
    FlightRecord f;
    f.pg_name = std::to_string(g);
    f.pg_desc = g == 0 ? "default_pg" : "tp";
    f.is_p2p = k == 3;
    int64_t& seq = f.is_p2p ? p2p_seq_[g] : seq_[g];
    seq += Pick(8) ? 1 : Pick(3);  // now and then one missing (or the same again)
    f.seq_id = f.is_p2p ? seq_[g] : seq;
    f.p2p_seq_id = f.is_p2p ? seq : p2p_seq_[g];
    f.record_id = record_id_++;
    f.op_id = Pick(10) ? f.record_id + 1 : Pick(int64_t{1} << 62);
    f.profiling_name = "nccl:" + kKinds[k];
    f.state = kStates[static_cast<size_t>(Pick(4))];
    const std::vector<int64_t> shape = {Pick(16) ? 8 << k : 3, 4};
    f.input_sizes = std::vector<std::vector<int64_t>>{shape};
    f.output_sizes = std::vector<std::vector<int64_t>>{shape};
    f.input_dtypes = std::vector<std::string>{Pick(16) ? "Float" : "BFloat16"};
    f.output_dtypes = std::vector<std::string>{"Float"};
    f.created_ns = c.start_ns - Pick(100000);
    if (Pick(3)) f.duration_ms = Pick(2) ? 0.5 : static_cast<double>(Pick(1000)) / 8.0;
    f.timeout_ms = 600000;
    c.flight = std::move(f);
    return c;
  }

  void AnOp(std::vector<Event>& out) {
    static const std::vector<std::string> kNames = {"aten::mm", "aten::add.Tensor", "aten::embedding"};
    Op op;
    op.id = next_op_++;
    op.step = op.id;
    const auto n = static_cast<size_t>(Pick(3));
    op.name = kNames[n];
    op.args = n == 1 ? "alpha=1" : "";
    const size_t inputs = n == 2 ? 1 : 2;
    // An implicit redistribute of input 0 comes before the op that it places.
    const bool linked = Pick(3) == 0;
    if (linked) Redistribute(out, op.id, 0);
    const int64_t linked_id = linked ? next_redistribute_ - 1 : -1;
    std::vector<OpInput> ins;
    for (size_t i = 0; i < inputs; ++i) {
      OpInput in;
      in.tensor = Pick(2) ? "x" : "dt$" + std::to_string(Pick(20));
      in.placements = {Pick(2) ? "S(0)" : "R", "R"};
      in.required = {"R", "R"};
      in.redistribute_id = i == 0 ? linked_id : -1;
      ins.push_back(in);
    }
    op.inputs = ins;
    OpOutput o;
    o.tensor = "y";
    o.placements = {"S(0)", "R"};
    o.global_shape = {8, 4};
    o.local_shape = {4, 4};
    std::vector<OpOutput> outs = {o};
    if (Pick(4) == 0) {
      OpOutput unrequested;
      unrequested.tensor = "";
      unrequested.requested = false;
      outs.push_back(unrequested);
    }
    op.outputs = outs;
    std::vector<OpStrategy> candidates;
    for (int64_t c = 0, count = 1 + Pick(3); c < count; ++c) {
      OpStrategy s;
      s.inputs.assign(inputs, std::vector<std::string>{"R", "R"});
      for (size_t i = 0; i < outs.size(); ++i)
        s.outputs.push_back(outs[i].requested ? std::vector<std::string>{"S(0)", "R"}
                                              : std::vector<std::string>{});
      s.cost_us = c == 2 ? std::numeric_limits<double>::infinity() : static_cast<double>(c) * 1.5;
      candidates.push_back(s);
    }
    op.candidates = candidates;
    op.ok = Pick(10) != 0;
    op.chosen = op.ok ? 0 : -1;
    if (!op.ok) op.error = "no strategy";
    op.rule = "recorded by PyTorch DebugMode (line " + std::to_string(Pick(3) * 17) + "); opaque";
    op.note = Pick(5) == 0 ? "differs" : "";
    op.t_ns = Time();
    op.end_ns = op.t_ns + Pick(100);
    out.push_back(op);
  }

  std::mt19937_64 rng_;
  int64_t t_ = 1'764'000'000'000'000'000;
  int64_t next_redistribute_ = 0, next_op_ = 0, record_id_ = 0;
  int64_t seq_[3] = {0, 0, 0}, p2p_seq_[3] = {0, 0, 0};
};

std::vector<Event> Read(const fs::path& file, bool fast) {
  Model m = ReadTraceFile(file, {.jobs = 1, .fast = fast});
  REQUIRE(m.ranks.size() == 1);
  return std::vector<Event>(m.ranks[0].events.begin(), m.ranks[0].events.end());
}

// The message reading `lines` after a v2 header of rank 1 gives, through one reader path.
std::string ErrorOf(const std::vector<std::string>& lines, bool fast) {
  return shardscope::testing::ReadErrorOf(ToLine(ToJson(Rank1(2))), lines, fast);
}

// A Flight Recorder collective of rank 1 over group [0, 1], as a v1 line would hold it.
const std::string kFlightLine =
    R"j({"type":"collective","redistribute_id":-1,"step":0,"kind":"all_reduce","mesh_dims":[],)j"
    R"j("group":[0,1],"dtype":"f32","bytes_sent":[128,0],"bytes_recv":[128,0],"negotiated":false,)j"
    R"j("start_ns":1000,"end_ns":2000,"flight":{"pg_name":"0","pg_desc":"default_pg","seq_id":1,)j"
    R"j("p2p_seq_id":0,"record_id":0,"op_id":1,"profiling_name":"nccl:all_reduce","state":"completed",)j"
    R"j("input_sizes":[[8,4]],"output_sizes":[[8,4]],"input_dtypes":["Float"],"output_dtypes":["Float"],)j"
    R"j("created_ns":900,"duration_ms":0.5,"timeout_ms":600000,"is_p2p":false}})j";

}  // namespace

TEST_CASE("v2 round trip of random imported events of every kind, through both readers",
          "[trace][v2][roundtrip][property]") {
  // 100 files of 60 events by default (SHARDSCOPE_PROPERTY_CASES / 20).
  const int64_t cases =
      std::max<int64_t>(1, shardscope::KnobInteger(shardscope::knobs::PropertyCases()).value_or(2000) / 20);
  const fs::path dir = Temp("property");
  int64_t flights = 0, repeats = 0, op_likes = 0, begin_likes = 0;
  for (int64_t i = 0; i < cases; ++i) {
    CAPTURE(i);
    const std::vector<Event> events = RandomEvents(static_cast<uint64_t>(i) * 7919 + 1).Make(60);
    const std::string text = shardscope::testing::WriteRankText(dir, Rank1(2), events);
    repeats += static_cast<int64_t>(shardscope::testing::CountOf(text, "\"type\":\"collective_repeat\""));
    std::stringstream lines(text);
    for (std::string l; std::getline(lines, l);) {
      const bool like = l.find("\"like\":") != std::string::npos;
      op_likes += like && l.starts_with("{\"type\":\"op\"");
      begin_likes += like && l.starts_with("{\"type\":\"redistribute_begin\"") &&
                     l.find("\"tensor\":") != std::string::npos;
    }
    for (bool fast : {true, false}) {
      INFO((fast ? "fast reader" : "reference reader"));
      const std::vector<Event> got = Read(dir / "rank-1.jsonl", fast);
      REQUIRE(got.size() == events.size());
      for (size_t k = 0; k < got.size(); ++k) {
        INFO("event " << k << ": " << ToLine(ToJson(events[k])));
        CHECK(ToLine(ToJson(got[k])) == ToLine(ToJson(events[k])));
        CHECK(got[k] == events[k]);
      }
    }
    for (const Event& e : events) flights += std::holds_alternative<Collective>(e);
  }
  fs::remove_all(dir);
  // The forms were used: a fair share of the flight collectives were repeats (the rest differ from
  // the last 16 in a list or a string), ops and begins shared fields with earlier ones.
  CHECK(repeats * 5 > flights);
  CHECK(op_likes > 0);
  CHECK(begin_likes > 0);
}

TEST_CASE("a v2 collective_repeat line is an earlier flight collective with new times and ids",
          "[trace][v2][reader]") {
  // Collective 0 in full, then the same one collective back with new times and ids.
  const std::string repeat =
      R"j({"type":"collective_repeat","back":1,"dt":[10,20,30],"did":[1,0,1,1],"state":"started"})j";
  for (bool fast : {true, false}) {
    const fs::path dir = Temp("crepeat");
    fs::create_directories(dir);
    std::ofstream(dir / "rank-1.jsonl", std::ios::binary) << ToLine(ToJson(Rank1(2))) << "\n"
                                                          << kFlightLine << "\n"
                                                          << repeat << "\n";
    const std::vector<Event> got = Read(dir / "rank-1.jsonl", fast);
    fs::remove_all(dir);
    REQUIRE(got.size() == 2);
    Collective want = std::get<Collective>(got[0]);
    // The definition: times moved by dt, ids by did, the state replaced, all else the same.
    want.start_ns += 10, want.end_ns += 20;
    want.flight->created_ns += 30;
    want.flight->seq_id += 1, want.flight->record_id += 1, want.flight->op_id += 1;
    want.flight->state = "started";
    CHECK(std::get<Collective>(got[1]) == want);
    CHECK(std::get<Collective>(got[1]).flight->duration_ms == 0.5);
  }
}

TEST_CASE("malformed v2 collective_repeat lines are refused at file:line by both readers",
          "[trace][v2][reader]") {
  const std::vector<shardscope::testing::ReadErrorCase> cases = {
      {{R"j({"type":"collective_repeat","back":1,"dt":[1,2,3],"did":[1,0,1,1]})j"},
       "rank-1.jsonl:2: field 'back' is 1 but only 0 collectives with a flight record come before this line "
       "in "
       "this file"},
      {{kFlightLine, R"j({"type":"collective_repeat","back":2,"dt":[1,2,3],"did":[1,0,1,1]})j"},
       "rank-1.jsonl:3: field 'back' is 2 but only 1 collectives with a flight record come before this line "
       "in "
       "this file"},
      {{kFlightLine, R"j({"type":"collective_repeat","back":65,"dt":[1,2,3],"did":[1,0,1,1]})j"},
       "rank-1.jsonl:3: field 'back' is 65, outside [1, 64]"},
      {{kFlightLine, R"j({"type":"collective_repeat","back":1,"dt":[1,2],"did":[1,0,1,1]})j"},
       "rank-1.jsonl:3: field 'dt' must have 3 entries (start_ns, end_ns, flight.created_ns)"},
      {{kFlightLine, R"j({"type":"collective_repeat","back":1,"dt":[1,2,3],"did":[1,0,1]})j"},
       "rank-1.jsonl:3: field 'did' must have 4 entries (flight.seq_id, p2p_seq_id, record_id, op_id)"},
      {{kFlightLine, R"j({"type":"collective_repeat","back":1,"dt":[1,2,3],"did":[-2,0,1,1]})j"},
       "rank-1.jsonl:3: field 'did[0]' puts an id below 0 or above 2^63-1"},
      {{kFlightLine,
        R"j({"type":"collective_repeat","back":1,"dt":[1,2,3],"did":[9223372036854775807,0,1,1]})j"},
       "rank-1.jsonl:3: field 'did[0]' puts an id below 0 or above 2^63-1"},
      {{kFlightLine,
        R"j({"type":"collective_repeat","back":1,"dt":[4611686018427387904,2,3],"did":[1,0,1,1]})j"},
       "rank-1.jsonl:3: field 'dt[0]' puts a time outside [-2^61, 2^61] ns"},
      {{kFlightLine, R"j({"type":"collective_repeat","back":1,"did":[1,0,1,1]})j"},
       "rank-1.jsonl:3: missing field 'dt'"},
      {{kFlightLine, R"j({"type":"collective_repeat","back":1,"dt":[1,2,3],"did":[1,0,1,1],"state":3})j"},
       "rank-1.jsonl:3: field 'state' must be a string"},
      {{kFlightLine, R"j({"type":"collective_repeat","back":1,"dt":[1,2,3],"did":[1,0,1,1]})j"},
       "(no error)"},
  };
  shardscope::testing::CheckBothReaders(cases, ErrorOf);
}

TEST_CASE("a v1 file skips collective_repeat lines as an unknown type", "[trace][v2][reader]") {
  const fs::path dir = Temp("v1crepeat");
  fs::create_directories(dir);
  std::ofstream(dir / "rank-1.jsonl", std::ios::binary)
      << ToLine(ToJson(Rank1(1))) << "\n"
      << kFlightLine << "\n"
      << R"j({"type":"collective_repeat","back":1,"dt":[1,2,3],"did":[1,0,1,1]})j"
      << "\n";
  for (bool fast : {true, false}) {
    Model m = ReadTraceFile(dir / "rank-1.jsonl", {.jobs = 1, .fast = fast});
    CHECK(m.ranks[0].events.size() == 1);
    REQUIRE(m.diagnostics.size() == 1);
    CHECK(m.diagnostics[0].message.find("unknown type 'collective_repeat'") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("the v2 writer writes a flight collective that repeats an earlier one as a collective_repeat line",
          "[trace][v2][writer]") {
  // Four collectives of process group 0: all_reduce, all_gather, all_reduce, all_reduce, the
  // all_reduces alike but for their times and ids (and the last one's state).
  const std::vector<Event> read = [] {
    const fs::path dir = Temp("one");
    fs::create_directories(dir);
    std::ofstream(dir / "rank-1.jsonl", std::ios::binary) << ToLine(ToJson(Rank1(1))) << "\n"
                                                          << kFlightLine << "\n";
    std::vector<Event> e = Read(dir / "rank-1.jsonl", false);
    fs::remove_all(dir);
    return e;
  }();
  const Collective base = std::get<Collective>(read.at(0));
  Collective gather = base;
  gather.kind = "all_gather";
  gather.flight->profiling_name = "nccl:all_gather";
  gather.flight->seq_id = 2, gather.flight->record_id = 1, gather.flight->op_id = 2;
  gather.start_ns += 1'000'000, gather.end_ns += 1'000'000, gather.flight->created_ns += 1'000'000;
  Collective second = base;
  second.flight->seq_id = 3, second.flight->record_id = 2, second.flight->op_id = 3;
  second.start_ns += 2'000'000, second.end_ns += 2'000'000, second.flight->created_ns += 2'000'000;
  Collective third = second;
  third.flight->seq_id = 4, third.flight->record_id = 3, third.flight->op_id = 4;
  third.start_ns += 1'000'000, third.end_ns = third.start_ns, third.flight->created_ns += 1'000'000;
  third.flight->state = "started";
  const std::vector<Event> events = {base, gather, second, third};
  const fs::path dir = Temp("cwriter");
  const std::string text = shardscope::testing::WriteRankText(dir, Rank1(2), events);
  const std::vector<std::string> lines = shardscope::testing::SplitLines(text);
  REQUIRE(lines.size() == 5);
  CAPTURE(text);
  // The first two in full (the per-peer bytes in the uniform form), then repeats of the all_reduce
  // two and one flight collectives back.
  CHECK(lines[1].find("\"flight\":{") != std::string::npos);
  CHECK(lines[1].find("\"bytes_sent\":128,") != std::string::npos);
  CHECK(lines[2].find("\"kind\":\"all_gather\"") != std::string::npos);
  CHECK(lines[3] ==
        R"j({"type":"collective_repeat","back":2,"dt":[2000000,2000000,2000000],"did":[2,0,2,2]})j");
  CHECK(
      lines[4] ==
      R"j({"type":"collective_repeat","back":1,"dt":[1000000,999000,1000000],"did":[1,0,1,1],"state":"started"})j");
  for (bool fast : {true, false}) CHECK(Read(dir / "rank-1.jsonl", fast) == events);
  fs::remove_all(dir);
}
