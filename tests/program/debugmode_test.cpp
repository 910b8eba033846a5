// The DebugMode reader and importer (issue 14). Expected values come from the reference's text
// forms (docs/pytorch-artifacts.md section 1), PyTorch's planner rules and, for the
// ops shardscope computes (the mapping of docs/import.md), PyTorch's sharding propagation rules
// (transpose/permute move shard dims, a reduced shard becomes P(sum)/P(avg), select/stack shift
// later dims, pointwise ops follow the most sharded input, mm over a sharded contracting dim is
// P(sum)) and torch.chunk's layouts, not from running the code under test. The fuzz case mutates the golden
// dumps like tests/trace/fuzz_test.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <unistd.h>

#include "../common/test_knobs.hpp"
#include "shardscope/error.hpp"
#include "shardscope/program/debugmode_import.hpp"
#include "shardscope/trace/reader.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using namespace shardscope::program;
using engine::Placement;
using trace::ImportVerdict;

namespace {

const fs::path kDumps = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests" / "golden" / "import" / "debugmode";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ImportOptions Options(engine::Shape mesh, bool flatten = false) {
  ImportOptions o;
  o.mesh = engine::Mesh(std::move(mesh));
  if (flatten) o.mesh.RegisterAllFlattened();
  return o;
}

int64_t EnvInt(const shardscope::Knob& knob, int64_t fallback) {
  return shardscope::KnobInteger(knob).value_or(fallback);
}

}  // namespace

TEST_CASE("tensor arguments in every printed form", "[program][debugmode]") {
  auto a = ParseDumpTensor("dt$0: f32[8, 8]| S(0)");
  REQUIRE(a);
  CHECK(a->prefix == "dt");
  CHECK(a->id == "$0");
  CHECK(a->dtype == "f32");
  CHECK(a->shape == std::vector<int64_t>{8, 8});
  CHECK(a->placements == engine::Placements{Placement::Shard(0)});

  auto b = ParseDumpTensor("dt: bf16[4, 6]{a1=x, a2=y}| S(0)[1]S(0)[0]R");
  REQUIRE(b);
  CHECK(b->placements ==
        engine::Placements{Placement::Shard(0), Placement::Shard(0), Placement::Replicate()});
  REQUIRE(b->order);
  CHECK(*b->order == engine::ShardOrder{{0, {1, 0}}});

  auto c = ParseDumpTensor("dt: f32[8, 8]DM(8)[S(0)]");
  REQUIRE(c);
  CHECK(c->printed_mesh == std::vector<int64_t>{8});
  CHECK(c->placements == engine::Placements{Placement::Shard(0)});

  auto d = ParseDumpTensor("t: f32[]");
  REQUIRE(d);
  CHECK(d->shape.empty());
  CHECK_FALSE(d->has_placements);

  auto e = ParseDumpTensor("dt: f32[8, 4]| (_StridedShard(dim=0, sf=2), Shard(dim=0))");
  REQUIRE(e);
  CHECK(e->placements == engine::Placements{Placement::StridedShard(0, 2), Placement::Shard(0)});

  auto f = ParseDumpTensor("dt: f32[8]| P");
  REQUIRE(f);
  CHECK(f->placements == engine::Placements{Placement::Partial(engine::ReduceOp::kSum)});

  CHECK_FALSE(ParseDumpTensor("2.0"));
  CHECK_FALSE(ParseDumpTensor("dim=1"));
  CHECK_FALSE(ParseDumpTensor("t: f32[-1]"));
}

TEST_CASE("PyTorch's plan notation splits into states and flattened steps", "[program][debugmode]") {
  NotationPlan p = ParseNotation("S(1)[0]S(1)[1]->S(1)R-->RR", "trace");
  REQUIRE(p.states.size() == 3);
  CHECK(p.flattened == std::vector<bool>{false, true});
  CHECK(p.states[0].order == engine::ShardOrder{{1, {0, 1}}});
  CHECK(p.states[2].placements == engine::Placements{Placement::Replicate(), Placement::Replicate()});
  CHECK_THROWS_AS(ParseNotation("S(0)->->R", "trace"), Error);
  CHECK_THROWS_AS(ParseNotation("S(0)R->R", "trace"), Error);
}

TEST_CASE("the reference's first example reads as one op input redistribute", "[program][debugmode]") {
  DebugModeDump d = ParseDebugModeDump(ReadFile(kDumps / "mm_1d.txt"));
  CHECK(d.format == "text");
  CHECK(d.lines == 10);
  // torch.mm, aten::mm, the sum method and aten::sum have DTensor arguments; aten::mm on local
  // tensors (line 7) and aten::sum(t: ...) do not.
  REQUIRE(d.ops.size() == 4);
  CHECK(d.ops[1].name == "aten::mm");
  CHECK(d.ops[2].name == "<method 'sum' of 'torch._C.TensorBase' objects>");
  REQUIRE(d.redistributes.size() == 1);
  const DumpRedistribute& r = d.redistributes[0];
  CHECK(r.line == 3);
  CHECK(r.op == 1);
  CHECK(r.arg_index == 1);
  CHECK_FALSE(r.explicit_call);
  CHECK(r.global_shape == std::vector<int64_t>{8, 32});
  CHECK(r.local_shape == std::vector<int64_t>{1, 32});
  CHECK(r.pytorch_trace == std::optional<std::string>("S(0)->R"));
  REQUIRE(r.collectives.size() == 1);  // wait_tensor is not a collective
  CHECK(r.collectives[0].kind == "all_gather");
  CHECK(r.collectives[0].group_size == 8);
  CHECK(r.collectives[0].group_name == "0");
  CHECK(d.warnings.empty());
}

TEST_CASE("old dumps: DM(...) placements, outer-only lines, plain P", "[program][debugmode]") {
  DebugModeDump d = ParseDebugModeDump(ReadFile(kDumps / "old_dm.txt"));
  CHECK(d.printed_mesh == std::vector<int64_t>{8});
  REQUIRE(d.redistributes.size() == 2);
  CHECK_FALSE(d.redistributes[0].pytorch_trace);
  CHECK(d.redistributes[1].src == engine::Placements{Placement::Partial(engine::ReduceOp::kSum)});
  REQUIRE(d.redistributes[1].collectives.size() == 1);
  CHECK(d.redistributes[1].collectives[0].kind == "all_reduce");
  CHECK(d.redistributes[1].collectives[0].group_size == -1);  // all_reduce does not carry it
  // The mesh the dump printed must be the one given.
  CHECK_THROWS_WITH(ImportDebugMode(ReadFile(kDumps / "old_dm.txt"), Options({2, 4})),
                    Catch::Contains("line 1") && Catch::Contains("--mesh 8 would fit"));
}

TEST_CASE("plain P in a trace compares as P(sum)", "[program][debugmode]") {
  std::string dump =
      "  aten::add.Tensor(dt: f32[8, 4]| P, dt: f32[8, 4]| R)\n"
      "    redistribute_input(0, P -> R)\n"
      "      redistribute_input(t: f32[8, 4], trace: P->R)\n"
      "        _c10d_functional::all_reduce(t: f32[8, 4], sum, 0)\n";
  ImportResult r = ImportDebugMode(dump, Options({4}));
  REQUIRE(r.redistributes.size() == 1);
  CHECK(r.dump.redistributes[0].pytorch_trace == std::optional<std::string>("P(sum)->R"));
  CHECK(r.redistributes[0].shardscope_notation == "P(sum)->R");
  CHECK(r.redistributes[0].verdict == ImportVerdict::kSame);
}

TEST_CASE("save_logs JSON reads like the text dump", "[program][debugmode]") {
  DebugModeDump d = ParseDebugModeDump(ReadFile(kDumps / "save_logs.json"));
  CHECK(d.format == "save_logs");
  REQUIRE(d.ops.size() == 1);
  CHECK(d.ops[0].output_placements == std::vector<std::string>{"S(0)"});
  REQUIRE(d.redistributes.size() == 1);
  CHECK(d.redistributes[0].arg_index == 1);
  CHECK(d.redistributes[0].pytorch_trace == std::optional<std::string>("S(0)->R"));
  REQUIRE(d.redistributes[0].collectives.size() == 1);
  CHECK(d.redistributes[0].collectives[0].group_size == 8);
  REQUIRE(d.warnings.size() == 1);
  CHECK(d.warnings[0].line == 10);
}

TEST_CASE("verdicts: same, differs, corrupting_merge, not_replayable", "[program][debugmode]") {
  ImportResult differs = ImportDebugMode(ReadFile(kDumps / "differs.txt"), Options({2, 2}));
  REQUIRE(differs.redistributes.size() == 2);
  CHECK(differs.redistributes[0].verdict == ImportVerdict::kDiffers);
  CHECK(differs.redistributes[1].verdict == ImportVerdict::kSame);

  ImportResult merge = ImportDebugMode(ReadFile(kDumps / "corrupting_merge.txt"), Options({2, 2}, true));
  CHECK(merge.redistributes[0].verdict == ImportVerdict::kCorruptingMerge);  // 6 rows over 4 ranks
  CHECK(merge.redistributes[1].verdict == ImportVerdict::kSame);             // 8 rows over 4 ranks

  // i8 is a dtype PyTorch prints and shardscope does not execute.
  std::string dump =
      "  aten::add.Tensor(dt: i8[8]| S(0), dt: i8[8]| R)\n"
      "    redistribute_input(0, S(0) -> R)\n";
  ImportResult bad = ImportDebugMode(dump, Options({2}));
  CHECK(bad.redistributes[0].verdict == ImportVerdict::kNotReplayable);
  CHECK_THAT(bad.redistributes[0].reason, Catch::Contains("i8"));
}

TEST_CASE("the written trace carries PyTorch's plan beside shardscope's", "[program][debugmode]") {
  fs::path dir = fs::temp_directory_path() / ("shardscope-dm-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ImportOptions o = Options({2, 2});
  o.trace_dir = dir;
  ImportResult r = ImportDebugMode(ReadFile(kDumps / "tp_2d.txt"), o);
  CHECK(r.replays == 2);
  trace::Model m = trace::ReadTraceDir(dir);
  CHECK(m.world == 4);
  REQUIRE(m.redistributes.size() == 8);  // 2 redistributes on 4 ranks
  const trace::RedistributeRecord* rec = m.FindRedistribute(3, 1);
  REQUIRE(rec);
  REQUIRE(rec->begin->imported);
  CHECK(rec->begin->imported->notation == "P(sum)R->S(0)R->S(0)S(1)");
  CHECK(rec->begin->imported->line == 15);
  CHECK(rec->begin->imported->verdict == "same");
  REQUIRE(rec->begin->imported->collectives.size() == 1);
  CHECK(rec->begin->imported->collectives[0] == trace::ImportedCollective{"reduce_scatter", 2, "0"});
  CHECK(rec->begin->notation() == "P(sum)R->S(0)R->S(0)S(1)");
  REQUIRE(m.ops.size() == 12);  // 3 opaque ops on 4 ranks
  CHECK(m.ops[0].op->name() == "aten::mm");
  fs::remove_all(dir);
}

namespace {

// Pieces of the dump grammar (and hostile values) the fuzzer inserts.
const std::vector<std::string>& FuzzTokens() {
  static const std::vector<std::string> tokens = {"(",
                                                  ")",
                                                  "[",
                                                  "]",
                                                  ",",
                                                  "->",
                                                  "-->",
                                                  "  ->  ",
                                                  "  # ",
                                                  "|",
                                                  "$",
                                                  ":",
                                                  "dt: ",
                                                  "t: ",
                                                  "f32[",
                                                  "S(",
                                                  "_S(0, ",
                                                  "P",
                                                  "R",
                                                  "[1]",
                                                  "[99]",
                                                  "DM(",
                                                  "redistribute_input",
                                                  "trace: ",
                                                  "\n",
                                                  "'",
                                                  "\"",
                                                  "{",
                                                  "}",
                                                  "\xff",
                                                  "-1",
                                                  "9223372036854775807",
                                                  "281474976710657",
                                                  "1048577",
                                                  "0",
                                                  std::string(2000, '['),
                                                  std::string(2000, '(')};
  return tokens;
}

// One to three random edits of `s`: a byte changed, a cut, a token inserted, a span erased or a
// line duplicated; `below(n)` draws in [0, n).
template <class Below>
void Mutate(std::string& s, Below& below) {
  for (int round = 0, rounds = 1 + static_cast<int>(below(3)); round < rounds; ++round) {
    switch (below(5)) {
      case 0:
        if (!s.empty()) s[below(s.size())] = static_cast<char>(below(256));
        break;
      case 1:
        s = s.substr(0, below(s.size() + 1));
        break;
      case 2:
        s.insert(below(s.size() + 1), FuzzTokens()[below(FuzzTokens().size())]);
        break;
      case 3: {
        size_t at = below(s.size() + 1), len = below(40);
        s.erase(at, len);
        break;
      }
      default: {  // duplicate a line
        size_t at = s.find('\n', below(s.size() + 1));
        if (at == std::string::npos) break;
        size_t end = s.find('\n', at + 1);
        if (end == std::string::npos) break;
        s.insert(at, s.substr(at, end - at));
      }
    }
  }
}

}  // namespace

TEST_CASE("fuzz: mutated dumps import or fail with shardscope::Error", "[program][debugmode][fuzz]") {
  std::vector<std::pair<std::string, engine::Shape>> seeds;
  for (const auto& [name, mesh] :
       std::vector<std::pair<std::string, engine::Shape>>{{"mm_1d.txt", {8}},
                                                          {"mm_1d_ids.txt", {8}},
                                                          {"explicit.txt", {8}},
                                                          {"old_dm.txt", {8}},
                                                          {"tp_2d.txt", {2, 2}},
                                                          {"nested_order.txt", {2, 2}},
                                                          {"strided.txt", {2, 2}},
                                                          {"corrupting_merge.txt", {2, 2}},
                                                          {"differs.txt", {2, 2}},
                                                          {"ops.txt", {2}},
                                                          {"ops_differs.txt", {2}},
                                                          {"save_logs.json", {8}}}) {
    seeds.emplace_back(ReadFile(kDumps / name), mesh);
  }
  std::mt19937_64 rng(static_cast<uint64_t>(EnvInt(shardscope::knobs::FuzzSeed(), 14)));
  auto below = [&](size_t n) {
    return n == 0 ? size_t{0} : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  const int64_t iterations = EnvInt(shardscope::knobs::FuzzIterations(), 2000);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(EnvInt(shardscope::knobs::FuzzSeconds(), 10));
  int64_t done = 0, imported = 0;
  for (; done < iterations && std::chrono::steady_clock::now() < deadline; ++done) {
    const auto& [text, mesh] = seeds[below(seeds.size())];
    std::string s = text;
    Mutate(s, below);
    try {
      ImportResult r = ImportDebugMode(s, Options(mesh));
      ++imported;
    } catch (const Error&) {
    }
  }
  INFO(done << " mutations, " << imported << " imported");
  CHECK(done > 0);
}

namespace {

// The single op of a one-line dump on a 1-D mesh of 2.
ImportedOp One(const std::string& line) {
  ImportResult r = ImportDebugMode("  " + line + "\n", Options({2}));
  REQUIRE(r.ops.size() == 1);
  return r.ops[0];
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("aten ops map onto shardscope's with PyTorch's propagation", "[program][debugmode][ops]") {
  ImportResult r = ImportDebugMode(ReadFile(kDumps / "ops.txt"), Options({2}));
  REQUIRE(r.ops.size() == 17);
  // (shardscope op, output placements) by line, from PyTorch's rules.
  const std::vector<std::pair<std::string, Strings>> expected = {
      {"transpose", {"S(1)"}},   // t: S(0) of [8,4] -> S(1) of [4,8]
      {"transpose", {"S(0)"}},   // transpose(0, 1)
      {"permute", {"S(0)"}},     // [2,0,1]: old dim 2 is new dim 0
      {"sum", {"P(sum)"}},       // the sharded dim is reduced
      {"sum", {"S(0)"}},         // dim 1 reduced, keepdim: dim 0 stays sharded
      {"mean", {"P(avg)"}},      // the sharded dim is averaged
      {"softmax", {"S(0)"}},     // softmax over dim -1, dim 0 sharded
      {"select", {"S(0)"}},      // selecting dim 0 shifts S(1) to S(0)
      {"cat", {"S(1)"}},         // cat along dim 0, dim 1 sharded
      {"stack", {"S(2)"}},       // the new dim 0 shifts S(1) to S(2)
      {"mul", {"S(0)"}},         // [8,4] S(0) * [4] R broadcast
      {"sub", {"S(0)"}},         //
      {"bmm", {"S(0)"}},         // the batch dim
      {"", {}},                  // add with alpha=2: opaque
      {"", {}},                  // gelu approximate='tanh': opaque
      {"", {}},                  // view: not one of shardscope's ops
      {"layer_norm", {"S(0)"}},  // normalized dim 1; mean and rstd not computed
  };
  for (size_t j = 0; j < expected.size(); ++j) {
    INFO("line " << r.dump.ops[j].line << " " << r.dump.ops[j].name << ": " << r.ops[j].reason);
    CHECK(r.ops[j].shardscope_op == expected[j].first);
    CHECK(r.ops[j].shardscope_outputs == expected[j].second);
    CHECK(r.ops[j].verdict == (expected[j].first.empty() ? ImportVerdict::kOpaque : ImportVerdict::kSame));
    CHECK_FALSE(r.ops[j].computed);  // no trace asked for
  }
  CHECK(r.ops[16].recorded_outputs == Strings{"S(0)", "S(0)", "S(0)"});
  CHECK(r.ops[8].inputs == Strings{"S(1)", "S(1)"});
  CHECK_THAT(r.ops[13].reason, Catch::Contains("alpha=2"));
  CHECK_THAT(r.ops[14].reason, Catch::Contains("approximate='tanh'"));
  CHECK(r.ops[15].reason.empty());
}

TEST_CASE("op mapping refuses arguments with other semantics", "[program][debugmode][ops]") {
  CHECK(One("aten::add.Tensor(dt: f32[8]| S(0), dt: f32[8]| S(0), alpha=1)").shardscope_op == "add");
  CHECK(One("aten::t(dt: f32[8]| S(0))").verdict == ImportVerdict::kOpaque);  // 1-d t is the identity
  CHECK(One("aten::_softmax(dt: f32[8, 4]| S(0), 1, True)").verdict ==
        ImportVerdict::kOpaque);                                                // half_to_float
  CHECK(One("aten::sum(dt: i32[8]| S(0))").verdict == ImportVerdict::kOpaque);  // PyTorch sums ints into i64
  CHECK(One("aten::linear(dt: f32[8, 4]| S(0), dt: f32[6, 4]| R)").shardscope_op == "linear");
  CHECK(One("aten::linear(dt: f32[8, 4]| S(0), dt: f32[6, 4]| R, dt: f32[6]| R)").verdict ==
        ImportVerdict::kOpaque);
  CHECK(One("aten::mm(dt: f32[8, 4]| S(0), t: f32[4, 4])").verdict ==
        ImportVerdict::kOpaque);                                         // a local tensor
  ImportedOp ln = One("aten::layer_norm(dt: f32[8, 4]| S(0), [8, 4])");  // normalizes both dims
  CHECK(ln.shardscope_op == "layer_norm");
  CHECK(ln.verdict == ImportVerdict::kDiffers);  // normalizing dim 0 too needs it replicated
  CHECK(One("aten::layer_norm(dt: f32[8, 4]| S(0), [3])").verdict == ImportVerdict::kOpaque);
}

TEST_CASE("op verdicts: differs and not_computed", "[program][debugmode][ops]") {
  ImportResult r = ImportDebugMode(ReadFile(kDumps / "ops_differs.txt"), Options({2}));
  REQUIRE(r.ops.size() == 3);
  // S(1) x S(0): the contracting dim is sharded on both, so the output is P(sum), not R.
  CHECK(r.ops[0].verdict == ImportVerdict::kDiffers);
  CHECK(r.ops[0].shardscope_outputs == Strings{"P(sum)"});
  CHECK_THAT(r.ops[0].reason, Catch::Contains("PyTorch R, shardscope P(sum)"));
  // S(0) x S(0) with no redistribute recorded: no mm strategy takes these inputs as they are.
  CHECK(r.ops[1].verdict == ImportVerdict::kDiffers);
  CHECK_THAT(r.ops[1].reason, Catch::Contains("where PyTorch ran it on S(0)"));
  CHECK(r.ops[2].verdict == ImportVerdict::kNotComputed);
  CHECK_THAT(r.ops[2].reason, Catch::Contains("i64"));
}

TEST_CASE("computed ops are op events with shardscope's strategy and the replayed layouts",
          "[program][debugmode][ops]") {
  fs::path dir = fs::temp_directory_path() / ("shardscope-dm-ops-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ImportOptions o = Options({4, 2});
  o.mesh.RegisterAllFlattened();
  o.trace_dir = dir;
  ImportResult r = ImportDebugMode(
      ReadFile(fs::path(SHARDSCOPE_SOURCE_DIR) / "samples" / "pytorch" / "debugmode_tp.txt"), o);
  // embedding and view are not shardscope's; mm, gelu, mm, add, layer_norm and sum are, and
  // each keeps the inputs as PyTorch placed them and gives the output PyTorch recorded.
  Strings ops, verdicts;
  for (const auto& v : r.ops) {
    ops.push_back(v.shardscope_op);
    verdicts.push_back(std::string(trace::ImportVerdictName(v.verdict)));
  }
  CHECK(ops == Strings{"", "", "mm", "gelu", "mm", "add", "layer_norm", "sum"});
  CHECK(verdicts == Strings{"opaque", "opaque", "same", "same", "same", "same", "same", "same"});
  CHECK(r.op_runs == 6);
  // The add's second input as it ran: RR redistributed to RP(sum) (PyTorch's internal path).
  CHECK(r.ops[5].inputs == Strings{"S(0)P(sum)", "RP(sum)"});
  CHECK(r.redistributes[2].verdict == ImportVerdict::kSame);
  CHECK(r.redistributes[2].replayed);
  trace::Model m = trace::ReadTraceDir(dir);
  REQUIRE(m.ops.size() == 8 * 8);
  // The first mm on rank 3 = (dp 1, tp 1): [256,64] S(0)R x [64,128] RS(1) -> [256,128] S(0)S(1);
  // torch.chunk gives it rows 64..127 of the input and a 64x64 output block.
  const trace::Op* mm = nullptr;
  for (const auto& rec : m.ops) {
    if (rec.rank == 3 && rec.op->id == 2) mm = &*rec.op;
  }
  REQUIRE(mm);
  CHECK(mm->name() == "aten::mm");
  CHECK_THAT(mm->rule(), Catch::Contains("computed as mm"));
  REQUIRE(mm->outputs().size() == 1);
  CHECK(mm->outputs()[0].tensor == "dt$10");
  CHECK(mm->outputs()[0].placements == Strings{"S(0)", "S(1)"});
  CHECK(mm->outputs()[0].global_shape == std::vector<int64_t>{256, 128});
  CHECK(mm->outputs()[0].local_shape == std::vector<int64_t>{64, 64});
  REQUIRE(mm->inputs().size() == 2);
  CHECK(mm->inputs()[1].tensor == "dt$9");
  CHECK(mm->inputs()[1].required == Strings{"R", "S(1)"});
  fs::remove_all(dir);
}
