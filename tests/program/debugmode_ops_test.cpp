// Ops of an imported DebugMode dump that shardscope implements (issue 14): the aten -> shardscope
// mapping of docs/import.md, the op verdicts and the computed op events. Expected placements
// follow PyTorch's sharding propagation rules (transpose/permute move shard dims, a reduced
// shard becomes P(sum)/P(avg), select/stack shift later dims, pointwise ops follow the most
// sharded input, mm over a sharded contracting dim is P(sum)) and torch.chunk's layouts, not the
// output of the code under test.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "shardscope/program/debugmode_import.hpp"
#include "shardscope/trace/reader.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using namespace shardscope::program;

namespace {

const fs::path kDumps = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests" / "golden" / "import" / "debugmode";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ImportOptions Options(engine::Shape mesh) {
  ImportOptions o;
  o.mesh = engine::Mesh(std::move(mesh));
  return o;
}

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
    CHECK(r.ops[j].verdict == (expected[j].first.empty() ? "opaque" : "same"));
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
  CHECK(One("aten::t(dt: f32[8]| S(0))").verdict == "opaque");                     // 1-d t is the identity
  CHECK(One("aten::_softmax(dt: f32[8, 4]| S(0), 1, True)").verdict == "opaque");  // half_to_float
  CHECK(One("aten::sum(dt: i32[8]| S(0))").verdict == "opaque");  // PyTorch sums ints into i64
  CHECK(One("aten::linear(dt: f32[8, 4]| S(0), dt: f32[6, 4]| R)").shardscope_op == "linear");
  CHECK(One("aten::linear(dt: f32[8, 4]| S(0), dt: f32[6, 4]| R, dt: f32[6]| R)").verdict == "opaque");
  CHECK(One("aten::mm(dt: f32[8, 4]| S(0), t: f32[4, 4])").verdict == "opaque");  // a local tensor
  ImportedOp ln = One("aten::layer_norm(dt: f32[8, 4]| S(0), [8, 4])");           // normalizes both dims
  CHECK(ln.shardscope_op == "layer_norm");
  CHECK(ln.verdict == "differs");  // normalizing dim 0 too needs it replicated
  CHECK(One("aten::layer_norm(dt: f32[8, 4]| S(0), [3])").verdict == "opaque");
}

TEST_CASE("op verdicts: differs and not_computed", "[program][debugmode][ops]") {
  ImportResult r = ImportDebugMode(ReadFile(kDumps / "ops_differs.txt"), Options({2}));
  REQUIRE(r.ops.size() == 3);
  // S(1) x S(0): the contracting dim is sharded on both, so the output is P(sum), not R.
  CHECK(r.ops[0].verdict == "differs");
  CHECK(r.ops[0].shardscope_outputs == Strings{"P(sum)"});
  CHECK_THAT(r.ops[0].reason, Catch::Contains("PyTorch R, shardscope P(sum)"));
  // S(0) x S(0) with no redistribute recorded: no mm strategy takes these inputs as they are.
  CHECK(r.ops[1].verdict == "differs");
  CHECK_THAT(r.ops[1].reason, Catch::Contains("where PyTorch ran it on S(0)"));
  CHECK(r.ops[2].verdict == "not_computed");
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
    verdicts.push_back(v.verdict);
  }
  CHECK(ops == Strings{"", "", "mm", "gelu", "mm", "add", "layer_norm", "sum"});
  CHECK(verdicts == Strings{"opaque", "opaque", "same", "same", "same", "same", "same", "same"});
  CHECK(r.op_runs == 6);
  // The add's second input as it ran: RR redistributed to RP(sum) (PyTorch's internal path).
  CHECK(r.ops[5].inputs == Strings{"S(0)P(sum)", "RP(sum)"});
  CHECK(r.redistributes[2].verdict == "same");
  CHECK(r.redistributes[2].replayed);
  trace::Model m = trace::ReadTraceDir(dir);
  REQUIRE(m.ops.size() == 8 * 8);
  // The first mm on rank 3 = (dp 1, tp 1): [256,64] S(0)R x [64,128] RS(1) -> [256,128] S(0)S(1);
  // torch.chunk gives it rows 64..127 of the input and a 64x64 output block.
  const trace::Op* mm = nullptr;
  for (const auto& rec : m.ops) {
    if (rec.rank == 3 && rec.op.id == 2) mm = &rec.op;
  }
  REQUIRE(mm);
  CHECK(mm->name == "aten::mm");
  CHECK_THAT(mm->rule, Catch::Contains("computed as mm"));
  REQUIRE(mm->outputs.size() == 1);
  CHECK(mm->outputs[0].tensor == "dt$10");
  CHECK(mm->outputs[0].placements == Strings{"S(0)", "S(1)"});
  CHECK(mm->outputs[0].global_shape == std::vector<int64_t>{256, 128});
  CHECK(mm->outputs[0].local_shape == std::vector<int64_t>{64, 64});
  REQUIRE(mm->inputs.size() == 2);
  CHECK(mm->inputs[1].tensor == "dt$9");
  CHECK(mm->inputs[1].required == Strings{"R", "S(1)"});
  fs::remove_all(dir);
}
