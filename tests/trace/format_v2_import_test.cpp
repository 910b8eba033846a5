// Trace format versions 2 and 3 on imported records (docs/trace-format.md, "Version 2" and
// "Version 3"): collectives with Flight Recorder fields written as collective_repeat lines,
// imported redistributes by `like` with their own tensor, ops by `like` with only the fields that
// differ; version 3 adds repeats of imported redistributes (no `dt`, `imported` in part), op lines
// without step/end_ns, `rule_number` and `linked`, which a version-2 file must not use. Property:
// random events of every kind, written as v2 or v3 and read back through both readers, are the
// events written, and only the v3 file uses version 3's forms.
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
          Pick(2) ? Redistribute(out, -1, -1) : Replay(out, -1, -1);
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
    b.Mutable().tensor = Pick(3) == 0 ? std::string("w") : "t" + std::to_string(Pick(50));
    b.Mutable().global_shape = std::vector<int64_t>{8, 4};
    b.Mutable().dtype = "f32";
    b.Mutable().src_placements = std::vector<std::string>{"S(0)", "R"};
    b.Mutable().dst_placements = std::vector<std::string>{"R", "R"};
    b.Mutable().planner = "greedy";
    b.Mutable().planner_reason = "default";
    b.Mutable().notation = "S(0)R->RR";
    b.Mutable().notation_unoptimized = "S(0)R->RR";
    b.Mutable().raw_plan = std::vector<PlanStep>{step};
    b.Mutable().optimized_plan = std::vector<PlanStep>{step};
    b.Mutable().cost_us = step.cost_us;
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

  // A replayed redistribute, as `import debugmode` writes one: its steps and collective, and later
  // the same events again on a shifted clock (now and then one time moved) with a new id, tensor,
  // op link and imported plan.
  void Replay(std::vector<Event>& out, int64_t op_id, int64_t op_input) {
    if (replayed_.empty() || Pick(4) == 0) {
      const size_t from = out.size();
      Redistribute(out, op_id, op_input);
      auto& b = std::get<RedistributeBegin>(out[from]);
      StepBegin s;
      s.redistribute_id = b.id;
      s.mesh_dims = b.optimized_plan()[0].mesh_dims;
      s.src = b.optimized_plan()[0].src, s.dst = b.optimized_plan()[0].dst,
      s.comm = b.optimized_plan()[0].comm;
      s.logical_shape = b.optimized_plan()[0].logical_shape;
      s.local_shape_before = std::vector<int64_t>{4, 4};
      s.global_offset_before = std::vector<int64_t>{4, 0};
      s.t_ns = b.t_ns + 10;
      Collective c;
      c.redistribute_id = b.id;
      c.Mutable().kind = "all_gather";
      c.Mutable().mesh_dims = s.mesh_dims;
      c.Mutable().group = s.mesh_dims.get() == std::vector<int64_t>{0} ? std::vector<int64_t>{1, 5}
                                                                       : std::vector<int64_t>{0, 1, 2, 3};
      c.Mutable().dtype = "f32";
      std::vector<int64_t> bytes;
      for (int64_t r : c.group()) bytes.push_back(r == 1 ? 0 : 64);
      c.Mutable().bytes_sent = bytes;
      c.Mutable().bytes_recv = bytes;
      c.start_ns = b.t_ns + 20, c.end_ns = b.t_ns + 20 + Pick(1000);
      StepEnd e;
      e.redistribute_id = b.id;
      e.local_shape_after = std::vector<int64_t>{8, 4};
      e.global_offset_after = std::vector<int64_t>{0, 0};
      e.t_ns = c.end_ns + 5;
      const int64_t end_ns = e.t_ns + 5;
      std::get<RedistributeEnd>(out[from + 1]).t_ns = end_ns;
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(from) + 1, {s, c, e});  // moves `out`
      replayed_.assign(out.begin() + static_cast<std::ptrdiff_t>(from), out.end());
      t_ = std::max(t_, end_ns);
      return;
    }
    const int64_t id = next_redistribute_++;
    const int64_t shift = t_ + 1000 - std::get<RedistributeBegin>(replayed_[0]).t_ns;
    for (Event e : replayed_) {
      std::visit(
          [&](auto& x) {
            using E = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<E, RedistributeBegin> || std::is_same_v<E, RedistributeEnd>) {
              x.id = id, x.t_ns += shift;
            } else if constexpr (std::is_same_v<E, Collective>) {
              x.redistribute_id = id, x.start_ns += shift, x.end_ns += shift + (Pick(4) == 0 ? 7 : 0);
            } else if constexpr (std::is_same_v<E, StepBegin> || std::is_same_v<E, StepEnd>) {
              x.redistribute_id = id, x.t_ns += shift;
            }
            if constexpr (std::is_same_v<E, RedistributeBegin>) {
              x.Mutable().tensor = Pick(2) ? x.tensor() : IStr("line " + std::to_string(Pick(1000)));
              x.op_id = op_id, x.op_input = op_input;
              if (Pick(6) == 0) {
                x.imported.reset();
              } else if (x.imported) {
                x.imported->line = Pick(100000) + 1;
                if (Pick(3) == 0) x.imported->verdict = "corrupting_merge";
              }
            }
          },
          e);
      out.push_back(std::move(e));
    }
    t_ = std::get<RedistributeEnd>(out.back()).t_ns;
  }

  Collective FlightCollective() {
    static const std::vector<std::vector<int64_t>> kGroups = {{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}, {1, 5}};
    static const std::vector<std::string> kKinds = {"all_reduce", "all_gather", "reduce_scatter", "send"};
    static const std::vector<std::string> kStates = {"completed", "completed", "started", "scheduled"};
    const auto g = static_cast<size_t>(Pick(3));
    const auto k = static_cast<size_t>(Pick(4));
    Collective c;
    c.redistribute_id = -1;
    c.Mutable().step = 0;
    c.Mutable().kind = kKinds[k];
    c.Mutable().group = kGroups[g];
    // Mostly what this group and kind always move; now and then something else.
    c.Mutable().dtype = Pick(16) ? "f32" : "bf16";
    const int64_t bytes = Pick(16) ? 128 << k : 4096;
    std::vector<int64_t> sent, recv;
    for (int64_t r : kGroups[g]) {
      sent.push_back(r == 1 ? 0 : bytes);
      recv.push_back(r == 1 ? 0 : Pick(32) ? bytes : bytes / 2);
    }
    c.Mutable().bytes_sent = sent;
    c.Mutable().bytes_recv = recv;
    c.start_ns = Time();
    c.end_ns = Pick(4) ? c.start_ns + Pick(1000000) : c.start_ns;
    FlightRecord f;
    FlightShape& shape = c.Mutable().flight.Mutable();
    shape.pg_name = std::to_string(g);
    shape.pg_desc = g == 0 ? "default_pg" : "tp";
    shape.is_p2p = k == 3;
    int64_t& seq = shape.is_p2p ? p2p_seq_[g] : seq_[g];
    seq += Pick(8) ? 1 : Pick(3);  // now and then one missing (or the same again)
    f.seq_id = shape.is_p2p ? seq_[g] : seq;
    f.p2p_seq_id = shape.is_p2p ? seq : p2p_seq_[g];
    f.record_id = record_id_++;
    f.op_id = Pick(10) ? f.record_id + 1 : Pick(int64_t{1} << 62);
    shape.profiling_name = "nccl:" + kKinds[k];
    shape.state = kStates[static_cast<size_t>(Pick(4))];
    const std::vector<int64_t> sizes = {Pick(16) ? 8 << k : 3, 4};
    shape.input_sizes = std::vector<std::vector<int64_t>>{sizes};
    shape.output_sizes = std::vector<std::vector<int64_t>>{sizes};
    shape.input_dtypes = std::vector<std::string>{Pick(16) ? "Float" : "BFloat16"};
    shape.output_dtypes = std::vector<std::string>{"Float"};
    f.created_ns = c.start_ns - Pick(100000);
    if (Pick(3)) f.duration_ms = Pick(2) ? 0.5 : static_cast<double>(Pick(1000)) / 8.0;
    shape.timeout_ms = 600000;
    c.flight = std::move(f);
    return c;
  }

  void AnOp(std::vector<Event>& out) {
    static const std::vector<std::string> kNames = {"aten::mm", "aten::add.Tensor", "aten::embedding"};
    Op op;
    op.id = next_op_++;
    op.step = Pick(4) ? op.id : op.id + 3;
    const auto n = static_cast<size_t>(Pick(3));
    op.Mutable().name = kNames[n];
    op.Mutable().args = n == 1 ? "alpha=1" : "";
    const size_t inputs = n == 2 ? 1 : 2;
    // An implicit redistribute of input 0 comes before the op that it places.
    const bool linked = Pick(3) == 0;
    if (linked) Pick(2) ? Redistribute(out, op.id, 0) : Replay(out, op.id, 0);
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
    op.Mutable().inputs = ins;
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
    op.Mutable().outputs = outs;
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
    op.Mutable().candidates = candidates;
    op.Mutable().ok = Pick(10) != 0;
    op.Mutable().chosen = op.ok() ? 0 : -1;
    if (!op.ok()) op.Mutable().error = "no strategy";
    // The line number varies (a rule_number line), now and then with a leading zero (a full rule).
    op.Mutable().rule = "recorded by PyTorch DebugMode (line " + std::string(Pick(8) ? "" : "0") +
                        std::to_string(Pick(3) * 17) + (Pick(4) ? "); opaque" : "); computed 2 ways");

    op.Mutable().note = Pick(5) == 0 ? "differs" : "";
    op.t_ns = Time();
    op.end_ns = Pick(3) == 0 ? op.t_ns : op.t_ns + Pick(100);
    out.push_back(op);
  }

  std::mt19937_64 rng_;
  std::vector<Event> replayed_;  // the redistribute Replay repeats
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
// The same after a v3 header.
std::string ErrorOfV3(const std::vector<std::string>& lines, bool fast) {
  return shardscope::testing::ReadErrorOf(ToLine(ToJson(Rank1(3))), lines, fast);
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

TEST_CASE("v2 and v3 round trips of random imported events of every kind, through both readers",
          "[trace][v2][roundtrip][property]") {
  // 100 files of 60 events by default (SHARDSCOPE_PROPERTY_CASES / 20), in each version.
  const int64_t cases =
      std::max<int64_t>(1, shardscope::KnobInteger(shardscope::knobs::PropertyCases()).value_or(2000) / 20);
  const fs::path dir = Temp("property");
  for (int version : {2, 3}) {
    CAPTURE(version);
    int64_t flights = 0, repeats = 0, op_likes = 0, begin_likes = 0, numbered = 0, shifted = 0, parts = 0,
            linked = 0, redistribute_repeats = 0, no_step = 0, no_end = 0;
    for (int64_t i = 0; i < cases; ++i) {
      CAPTURE(i);
      const std::vector<Event> events = RandomEvents(static_cast<uint64_t>(i) * 7919 + 1).Make(60);
      const std::string text = shardscope::testing::WriteRankText(dir, Rank1(version), events);
      CHECK(text.starts_with(R"({"type":"header","format":"shardscope-trace","version":)" +
                             std::to_string(version) + ","));
      repeats += static_cast<int64_t>(shardscope::testing::CountOf(text, "\"type\":\"collective_repeat\""));
      std::stringstream lines(text);
      for (std::string l; std::getline(lines, l);) {
        const bool like = l.find("\"like\":") != std::string::npos;
        const bool op = l.starts_with("{\"type\":\"op\"");
        op_likes += like && op;
        no_step += op && l.find("\"step\":") == std::string::npos;
        no_end += op && l.find("\"end_ns\":") == std::string::npos;
        begin_likes += like && l.starts_with("{\"type\":\"redistribute_begin\"") &&
                       l.find("\"tensor\":") != std::string::npos;
        numbered += l.find("\"rule_number\":") != std::string::npos;
        linked += l.find("\"linked\":true") != std::string::npos;
        const bool repeat = l.starts_with("{\"type\":\"redistribute_repeat\"");
        redistribute_repeats += repeat;
        shifted += repeat && l.find("\"dt\":") == std::string::npos;
        parts += repeat && l.find("\"imported\":{\"line\":") != std::string::npos;
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
      for (const Event& e : events) {
        const auto* c = std::get_if<Collective>(&e);
        flights += c != nullptr && c->HasFlight();
      }
    }
    // The forms were used: a fair share of the flight collectives were repeats (the rest differ
    // from the last 16 in a list or a string), ops and begins shared fields with earlier ones.
    CHECK(repeats * 5 > flights);
    CHECK(op_likes > 0);
    CHECK(begin_likes > 0);
    if (version == 3) {
      // Replayed redistributes were repeat lines without `dt` and with their imported plan in
      // part, ops left out step and end_ns, gave their rule's number alone and took their
      // inputs' redistributes from the begins that name them.
      CHECK(shifted > 0);
      CHECK(parts > 0);
      CHECK(numbered > 0);
      CHECK(linked > 0);
      CHECK(no_step > 0);
      CHECK(no_end > 0);
    } else {
      // None of version 3's forms: the writer never repeats whole events in v2 (the random events
      // are whole events, not template captures), and every op line has step and end_ns.
      CHECK(redistribute_repeats == 0);
      CHECK(numbered == 0);
      CHECK(linked == 0);
      CHECK(no_step == 0);
      CHECK(no_end == 0);
    }
  }
  fs::remove_all(dir);
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
    want.flight.created_ns += 30;
    want.flight.seq_id += 1, want.flight.record_id += 1, want.flight.op_id += 1;
    want.Mutable().flight.Mutable().state = "started";
    CHECK(std::get<Collective>(got[1]) == want);
    CHECK(std::get<Collective>(got[1]).flight.duration_ms == 0.5);
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
  gather.Mutable().kind = "all_gather";
  gather.Mutable().flight.Mutable().profiling_name = "nccl:all_gather";
  gather.flight.seq_id = 2, gather.flight.record_id = 1, gather.flight.op_id = 2;
  gather.start_ns += 1'000'000, gather.end_ns += 1'000'000, gather.flight.created_ns += 1'000'000;
  Collective second = base;
  second.flight.seq_id = 3, second.flight.record_id = 2, second.flight.op_id = 3;
  second.start_ns += 2'000'000, second.end_ns += 2'000'000, second.flight.created_ns += 2'000'000;
  Collective third = second;
  third.flight.seq_id = 4, third.flight.record_id = 3, third.flight.op_id = 4;
  third.start_ns += 1'000'000, third.end_ns = third.start_ns, third.flight.created_ns += 1'000'000;
  third.Mutable().flight.Mutable().state = "started";
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

namespace {

// An imported redistribute of rank 1 (mesh 2x4) replayed in one all_gather over mesh dim 0 (group
// [1, 5]), as `import debugmode` writes it: five lines, times 1000 to 1500.
const std::vector<std::string> kImportedRun = {
    R"j({"type":"redistribute_begin","id":0,"tensor":"w","global_shape":[8,4],"dtype":"f32",)j"
    R"j("src_placements":["S(0)","R"],"dst_placements":["R","R"],"planner":"greedy","planner_reason":"default",)j"
    R"j("notation":"S(0)R->RR","raw_plan":[{"mesh_dims":[0],"src":"S(0)","dst":"R","comm":"all_gather",)j"
    R"j("logical_shape":[8,4],"cost_us":1.5}],"cost_us":1.5,"t_ns":1000,"imported":{"source":"debugmode",)j"
    R"j("line":4,"notation":"S(0)R->RR","collectives":[{"kind":"all_gather","group_size":2,"group_name":"1"}],)j"
    R"j("verdict":"same","reason":""}})j",
    R"j({"type":"step_begin","redistribute_id":0,"step":0,"local_shape_before":[4,4],)j"
    R"j("global_offset_before":[4,0],"t_ns":1100})j",
    R"j({"type":"collective","redistribute_id":0,"step":0,"bytes_sent":64,"bytes_recv":64,)j"
    R"j("start_ns":1200,"end_ns":1300})j",
    R"j({"type":"step_end","redistribute_id":0,"step":0,"local_shape_after":[8,4],"global_offset_after":[0,0],)j"
    R"j("t_ns":1400})j",
    R"j({"type":"redistribute_end","id":0,"t_ns":1500})j"};

// The same run without an imported plan (the begin's line cut before it).
std::vector<std::string> PlainRun() {
  std::vector<std::string> lines = kImportedRun;
  lines[0] = lines[0].substr(0, lines[0].find(",\"imported\"")) + "}";
  return lines;
}

std::vector<std::string> Plus(std::vector<std::string> lines, const std::vector<std::string>& more) {
  lines.insert(lines.end(), more.begin(), more.end());
  return lines;
}

// `lines` read after a header of format `version` through one reader path.
std::vector<Event> ReadLines(const std::vector<std::string>& lines, bool fast, int version) {
  const fs::path dir = Temp("lines");
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "rank-1.jsonl", std::ios::binary);
    out << ToLine(ToJson(Rank1(version))) << "\n";
    for (const std::string& l : lines) out << l << "\n";
  }
  std::vector<Event> events = Read(dir / "rank-1.jsonl", fast);
  fs::remove_all(dir);
  return events;
}

// An op of rank 1 (mesh 2x4) in full, recorded at line 13 of a log.
const std::string kOpLine =
    R"j({"type":"op","id":0,"step":0,"name":"aten::view","args":"","inputs":[{"tensor":"a","placements":["S(0)","R"],)j"
    R"j("required":["S(0)","R"],"redistribute_id":-1}],"outputs":[{"tensor":"b","requested":true,)j"
    R"j("placements":["S(0)","R"],"global_shape":[8,4],"local_shape":[4,4]}],"candidates":[{"inputs":[["S(0)","R"]],)j"
    R"j("outputs":[["S(0)","R"]],"cost_us":0.0}],"chosen":0,"rule":"recorded by PyTorch DebugMode (line 13, module m); )j"
    R"j(opaque: nothing computed","note":"","t_ns":2000,"end_ns":2000})j";

}  // namespace

TEST_CASE("a v3 redistribute_repeat line without dt keeps the earlier run's time offsets; imported in part",
          "[trace][v2][reader]") {
  const std::vector<std::string> lines = Plus(
      kImportedRun,
      {R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5000,"imported":{"line":40,"verdict":"differs","reason":"r"}})j",
       R"j({"type":"redistribute_repeat","id":2,"like":0,"t_ns":9000,"dt":[1,2,3,4,5],"tensor":"line 7"})j"});
  for (bool fast : {true, false}) {
    INFO((fast ? "fast reader" : "reference reader"));
    const std::vector<Event> got = ReadLines(lines, fast, 3);
    REQUIRE(got.size() == 15);
    // Redistribute 1: redistribute 0 four microseconds later (every time + 4000), its id 1, its
    // imported plan the earlier one's with line, verdict and reason replaced.
    for (size_t k = 0; k < 5; ++k) {
      Event want = got[k];
      std::visit(
          [](auto& e) {
            using E = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<E, RedistributeBegin> || std::is_same_v<E, RedistributeEnd>) {
              e.id = 1, e.t_ns += 4000;
            } else if constexpr (std::is_same_v<E, Collective>) {
              e.redistribute_id = 1, e.start_ns += 4000, e.end_ns += 4000;
            } else if constexpr (std::is_same_v<E, StepBegin> || std::is_same_v<E, StepEnd>) {
              e.redistribute_id = 1, e.t_ns += 4000;
            }
          },
          want);
      if (auto* b = std::get_if<RedistributeBegin>(&want)) {
        b->imported->line = 40, b->imported->verdict = "differs", b->imported->reason = "r";
      }
      CHECK(got[5 + k] == want);
    }
    const auto& b1 = std::get<RedistributeBegin>(got[5]);
    CHECK(b1.imported->notation == "S(0)R->RR");
    CHECK(b1.imported->collectives.size() == 1);
    // Redistribute 2: with dt, the plan copied whole.
    const auto& b2 = std::get<RedistributeBegin>(got[10]);
    CHECK(b2.tensor() == "line 7");
    CHECK(*b2.imported == *std::get<RedistributeBegin>(got[0]).imported);
    CHECK(std::get<StepBegin>(got[11]).t_ns == 9001);
    CHECK(std::get<RedistributeEnd>(got[14]).t_ns == 9005);
  }
}

TEST_CASE("a v3 op line may leave out step (its id) and end_ns (its t_ns) and give its rule's number alone",
          "[trace][v2][reader]") {
  const std::vector<std::string> lines = {
      kOpLine, R"j({"type":"op","id":5,"like":0,"rule_number":47,"t_ns":3000})j",
      R"j({"type":"op","id":6,"step":2,"like":5,"t_ns":4000,"end_ns":4100})j"};
  for (bool fast : {true, false}) {
    INFO((fast ? "fast reader" : "reference reader"));
    const std::vector<Event> got = ReadLines(lines, fast, 3);
    REQUIRE(got.size() == 3);
    const auto& op = std::get<Op>(got[1]);
    CHECK(op.step == 5);
    CHECK(op.end_ns == 3000);
    CHECK(std::string(op.rule()) ==
          "recorded by PyTorch DebugMode (line 47, module m); opaque: nothing computed");
    CHECK(op.name() == "aten::view");
    const auto& next = std::get<Op>(got[2]);
    CHECK(next.step == 2);
    CHECK(next.end_ns == 4100);
    CHECK(next.rule() == op.rule());  // taken whole by `like`
  }
  // The fast path takes these lines itself (the reference reader gives the same, checked above).
  const fs::path dir = Temp("opfast");
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "rank-1.jsonl", std::ios::binary);
    out << ToLine(ToJson(Rank1(3))) << "\n";
    for (const std::string& l : lines) out << l << "\n";
  }
  ReadProgress progress;
  (void)ReadTraceFile(dir / "rank-1.jsonl", {.jobs = 1, .fast = true, .progress = &progress});
  CHECK(progress.lines_fast == 3);
  fs::remove_all(dir);
}

TEST_CASE("malformed imported parts of v3 repeat and op lines are refused at file:line by both readers",
          "[trace][v2][reader]") {
  const std::vector<shardscope::testing::ReadErrorCase> cases = {
      {Plus(PlainRun(),
            {R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5000,"imported":{"line":40}})j"}),
       "rank-1.jsonl:7: field 'imported' leaves out 'source' but redistribute 0 has no imported plan to take "
       "it "
       "from"},
      {Plus(kImportedRun,
            {R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5000,"imported":{"line":"x"}})j"}),
       "rank-1.jsonl:7: field 'imported.line' must be an integer"},
      {Plus(kImportedRun, {R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5000,"imported":3})j"}),
       "rank-1.jsonl:7: 'imported' must be a JSON object"},
      {Plus(kImportedRun, {R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":2305843009213693852})j"}),
       "rank-1.jsonl:7: field 't_ns' puts a time of redistribute 0's run outside [-2^61, 2^61] ns"},
      {Plus(kImportedRun,
            {R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5000,"imported":{"line":9}})j"}),
       "(no error)"},
      {{kOpLine, R"j({"type":"op","id":1,"rule_number":4,"t_ns":3000,"end_ns":3000})j"},
       "rank-1.jsonl:3: missing field 'name'"},
      {{kOpLine.substr(0, kOpLine.size() - 1) + R"j(,"rule_number":4})j"},
       "rank-1.jsonl:2: field 'rule_number' needs 'like' (it renumbers the rule of the op 'like' names)"},
      {{kOpLine, R"j({"type":"op","id":1,"like":0,"rule_number":4,"rule":"x","t_ns":3000})j"},
       "rank-1.jsonl:3: fields 'rule' and 'rule_number' must not appear together"},
      {{kOpLine, R"j({"type":"op","id":1,"like":0,"rule_number":-4,"t_ns":3000})j"},
       "rank-1.jsonl:3: field 'rule_number' is -4, outside [0, 999999999999999999]"},
      {{kOpLine, R"j({"type":"op","id":1,"like":0,"rule":"no number","t_ns":3000})j",
        R"j({"type":"op","id":2,"like":1,"rule_number":4,"t_ns":3000})j"},
       "rank-1.jsonl:4: field 'rule_number' is 4 but the rule of op 1 ('like') has no number to replace"},
      {{kOpLine, R"j({"type":"op","id":1,"like":0,"rule_number":4,"t_ns":3000})j"}, "(no error)"},
  };
  shardscope::testing::CheckBothReaders(cases, ErrorOfV3);
}

TEST_CASE("the v3 writer writes a replayed imported redistribute again as one repeat line",
          "[trace][v2][writer]") {
  // Redistribute 0 as read from its lines, then the same events 4000 ns later with id 1, another
  // tensor, an op link and line 40, then again with one time moved (a `dt` then).
  std::vector<Event> events = ReadLines(kImportedRun, false, 2);
  REQUIRE(events.size() == 5);
  auto again = [&](int64_t id, int64_t shift, int64_t moved) {
    for (size_t k = 0; k < 5; ++k) {
      Event e = events[k];
      std::visit(
          [&](auto& x) {
            using E = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<E, RedistributeBegin>) {
              x.id = id, x.t_ns += shift, x.Mutable().tensor = "v", x.op_id = 3, x.op_input = 0;
              x.imported->line = 40;
            } else if constexpr (std::is_same_v<E, RedistributeEnd>) {
              x.id = id, x.t_ns += shift + moved;
            } else if constexpr (std::is_same_v<E, Collective>) {
              x.redistribute_id = id, x.start_ns += shift, x.end_ns += shift;
            } else if constexpr (std::is_same_v<E, StepBegin> || std::is_same_v<E, StepEnd>) {
              x.redistribute_id = id, x.t_ns += shift;
            }
          },
          e);
      events.push_back(std::move(e));
    }
  };
  again(1, 4000, 0);
  again(2, 8000, 1);
  const fs::path dir = Temp("rwriter");
  {
    Writer w(dir, Rank1(3));
    for (const Event& e : events) w.Emit(e);
  }
  const std::string text = Slurp(dir / "rank-1.jsonl");
  std::vector<std::string> lines;
  for (std::stringstream ss(text); std::getline(ss, lines.emplace_back());) {
  }
  lines.pop_back();
  CAPTURE(text);
  REQUIRE(lines.size() == 8);
  CHECK(
      lines[6] ==
      R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5000,"tensor":"v","op_id":3,"op_input":0,"imported":{"line":40}})j");
  CHECK(
      lines[7] ==
      R"j({"type":"redistribute_repeat","id":2,"like":0,"t_ns":9000,"dt":[100,200,300,400,501],"tensor":"v","op_id":3,"op_input":0,"imported":{"line":40}})j");
  for (bool fast : {true, false}) CHECK(Read(dir / "rank-1.jsonl", fast) == events);
  // The fast path decodes the repeat lines itself: only the header takes the reference path.
  ReadProgress progress;
  (void)ReadTraceFile(dir / "rank-1.jsonl", {.jobs = 1, .fast = true, .progress = &progress});
  CHECK(progress.lines_reference == 1);
  CHECK(progress.lines_fast == 7);
  fs::remove_all(dir);
}

TEST_CASE("a v3 op line with linked takes its inputs' redistribute ids from the begins that name it",
          "[trace][v2][reader]") {
  // Op 0 (one input, not placed by a redistribute); redistribute 0 again as 1 and 2, both naming op
  // 7's input 0 (the later one counts), and as 3 naming op 8's input 0; op 7 like op 0 with
  // `linked`: its input 0 is redistribute 2's. Op 9 has no begin naming it: -1.
  const std::vector<std::string> lines =
      Plus(Plus({kOpLine}, kImportedRun),
           {R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5000,"op_id":7,"op_input":0})j",
            R"j({"type":"redistribute_repeat","id":2,"like":0,"t_ns":6000,"op_id":7,"op_input":0})j",
            R"j({"type":"redistribute_repeat","id":3,"like":0,"t_ns":7000,"op_id":8,"op_input":0})j",
            R"j({"type":"op","id":7,"like":0,"linked":true,"t_ns":8000})j",
            R"j({"type":"op","id":9,"like":7,"linked":true,"t_ns":9000})j"});
  for (bool fast : {true, false}) {
    INFO((fast ? "fast reader" : "reference reader"));
    const std::vector<Event> got = ReadLines(lines, fast, 3);
    REQUIRE(got.size() == 23);
    CHECK(std::get<Op>(got[21]).inputs()[0].redistribute_id == 2);
    CHECK(std::get<Op>(got[22]).inputs()[0].redistribute_id == -1);
  }
  const std::vector<shardscope::testing::ReadErrorCase> cases = {
      {{kOpLine, R"j({"type":"op","id":1,"like":0,"linked":false,"t_ns":3000})j"},
       "rank-1.jsonl:3: field 'linked' must be true when present"},
      {{kOpLine, R"j({"type":"op","id":1,"like":0,"linked":true,"redistribute_ids":[-1],"t_ns":3000})j"},
       "rank-1.jsonl:3: fields 'linked' and 'redistribute_ids' must not appear together"},
      {{kOpLine, R"j({"type":"op","id":1,"like":0,"linked":1,"t_ns":3000})j"},
       "rank-1.jsonl:3: field 'linked' must be a boolean"},
  };
  shardscope::testing::CheckBothReaders(cases, ErrorOfV3);
}

TEST_CASE("a v2 file with a form of version 3 is refused naming the field, by both readers",
          "[trace][v2][reader]") {
  // Each line is valid in a version-3 file (the first case's "(no error)" there); a version-2
  // reader predating version 3 would have ignored rule_number, linked and imported, so a v2 file
  // that has them is an error, not a silently different trace.
  const std::string numbered =
      R"j({"type":"op","id":1,"step":1,"like":0,"rule_number":4,"t_ns":3000,"end_ns":3000})j";
  const std::string linked =
      R"j({"type":"op","id":1,"step":1,"like":0,"linked":true,"t_ns":3000,"end_ns":3000})j";
  const std::string imported =
      R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5000,"dt":[1,2,3,4,5],"imported":{"line":40}})j";
  const std::string shifted = R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5000})j";
  const std::string no_step = R"j({"type":"op","id":1,"like":0,"t_ns":3000,"end_ns":3000})j";
  const std::string no_end = R"j({"type":"op","id":1,"step":1,"like":0,"t_ns":3000})j";
  const std::vector<shardscope::testing::ReadErrorCase> v2_cases = {
      {{kOpLine, numbered}, "rank-1.jsonl:3: field 'rule_number' needs trace format version 3"},
      {{kOpLine, linked}, "rank-1.jsonl:3: field 'linked' needs trace format version 3"},
      {Plus(kImportedRun, {imported}), "rank-1.jsonl:7: field 'imported' needs trace format version 3"},
      {Plus(kImportedRun, {shifted}),
       "rank-1.jsonl:7: missing field 'dt' (only trace format version 3 may leave it out)"},
      {{kOpLine, no_step},
       "rank-1.jsonl:3: missing field 'step' (only trace format version 3 may leave it out)"},
      {{kOpLine, no_end},
       "rank-1.jsonl:3: missing field 'end_ns' (only trace format version 3 may leave it out)"},
  };
  shardscope::testing::CheckBothReaders(v2_cases, ErrorOf);
  std::vector<shardscope::testing::ReadErrorCase> v3_cases = v2_cases;
  for (auto& c : v3_cases) c.second = "(no error)";
  shardscope::testing::CheckBothReaders(v3_cases, ErrorOfV3);
}

TEST_CASE("a header of format version 4 is refused: upgrade shardscope", "[trace][v2][reader]") {
  for (bool fast : {true, false}) {
    CHECK(
        shardscope::testing::ReadErrorOf(ToLine(ToJson(Rank1(4))), {kOpLine}, fast) ==
        "rank-1.jsonl:1: trace format version 4 is newer than this shardscope reads (3); upgrade shardscope");
  }
}

TEST_CASE("a writer asked for version 2 writes a replayed import in version 2's forms; for 3, in 3's",
          "[trace][v2][writer]") {
  // Op 0 in full, a replayed imported redistribute (0, then 1 linked to op 1's input 0, 4000 ns
  // later), and op 1 like op 0 at another log line with its input from redistribute 1.
  std::vector<Event> events = ReadLines(Plus({kOpLine}, kImportedRun), false, 2);
  REQUIRE(events.size() == 6);
  for (size_t k = 1; k < 6; ++k) {
    Event e = events[k];
    std::visit(
        [](auto& x) {
          using E = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<E, RedistributeBegin>) {
            x.id = 1, x.t_ns += 4000, x.op_id = 1, x.op_input = 0;
          } else if constexpr (std::is_same_v<E, RedistributeEnd>) {
            x.id = 1, x.t_ns += 4000;
          } else if constexpr (std::is_same_v<E, Collective>) {
            x.redistribute_id = 1, x.start_ns += 4000, x.end_ns += 4000;
          } else if constexpr (std::is_same_v<E, StepBegin> || std::is_same_v<E, StepEnd>) {
            x.redistribute_id = 1, x.t_ns += 4000;
          }
        },
        e);
    events.push_back(std::move(e));
  }
  Op op = std::get<Op>(events[0]);
  op.id = 1, op.step = 1, op.t_ns = op.end_ns = 9000;
  op.Mutable().rule = "recorded by PyTorch DebugMode (line 47, module m); opaque: nothing computed";
  op.Mutable().inputs.Mutable()[0].redistribute_id = 1;
  events.push_back(op);
  const fs::path dir = Temp("vwriter");
  const std::string v2 = shardscope::testing::WriteRankText(dir, Rank1(2), events);
  const std::vector<std::string> l2 = shardscope::testing::SplitLines(v2);
  REQUIRE(l2.size() == 13);  // the header and every event on its own line
  CHECK(l2[0].starts_with(R"({"type":"header","format":"shardscope-trace","version":2,)"));
  // Redistribute 1 as lines of its own (its begin by `like`), op 1 with its step, whole rule,
  // input ids and end_ns.
  CHECK(l2[7].starts_with(R"j({"type":"redistribute_begin","id":1,)j"));
  CHECK(shardscope::testing::CountOf(l2[7], R"("like":0)") == 1);
  CHECK(
      l2[12] ==
      R"j({"type":"op","id":1,"like":0,"step":1,"rule":"recorded by PyTorch DebugMode (line 47, module m); )j"
      R"j(opaque: nothing computed","redistribute_ids":[1],"t_ns":9000,"end_ns":9000})j");
  for (bool fast : {true, false}) CHECK(Read(dir / "rank-1.jsonl", fast) == events);
  const std::string v3 = shardscope::testing::WriteRankText(dir, Rank1(3), events);
  const std::vector<std::string> l3 = shardscope::testing::SplitLines(v3);
  REQUIRE(l3.size() == 9);
  CHECK(l3[0].starts_with(R"({"type":"header","format":"shardscope-trace","version":3,)"));
  CHECK(l3[7] == R"j({"type":"redistribute_repeat","id":1,"like":0,"t_ns":5000,"op_id":1,"op_input":0})j");
  CHECK(l3[8] == R"j({"type":"op","id":1,"like":0,"linked":true,"rule_number":47,"t_ns":9000})j");
  for (bool fast : {true, false}) CHECK(Read(dir / "rank-1.jsonl", fast) == events);
  fs::remove_all(dir);
}
