#pragma once
// Program traces for the GUI program-view tests: a hand-made 2-rank trace whose content is known
// by construction, and a sample program (samples/programs/) run on the local backend.
// Hand-made program on mesh [2] (tp):
//   op 0  mm(x S(0), w S(0) -> R by implicit redistribute 0: all_gather) -> y S(0)
//   redistribute 1 (explicit step): y S(0) -> R
//   op 1  conv(x S(0)) -> xs S(0), one halo_exchange collective
//   op 2  add(y R -> S(0) by implicit redistribute 2: local, xs S(0)) -> z S(0), with a note
//   op 3  layer_norm_backward(z) -> gx S(0), second output not requested

#include <filesystem>
#include <string>
#include <vector>

#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope_gui_test {

namespace program_detail {

namespace trace = shardscope::trace;

inline trace::RedistributeBegin Begin(int64_t id, const std::string& tensor, const char* src, const char* dst,
                                      const char* comm, int64_t op_id, int64_t op_input, int64_t t) {
  trace::RedistributeBegin b;
  b.id = id;
  b.Mutable().tensor = tensor;
  b.Mutable().global_shape = {8, 6};
  b.Mutable().dtype = "f32";
  b.Mutable().src_placements = {src};
  b.Mutable().dst_placements = {dst};
  b.Mutable().planner = "greedy";
  b.Mutable().planner_reason = "default";
  b.Mutable().notation = std::string(src) + "->" + dst;
  b.Mutable().notation_unoptimized = b.notation();
  trace::PlanStep s;
  s.mesh_dims = {0};
  s.src = src, s.dst = dst, s.comm = comm;
  s.logical_shape = {8, 6};
  s.cost_us = 4.5;
  b.Mutable().raw_plan = b.Mutable().optimized_plan = {s};
  b.Mutable().cost_us = 4.5;
  b.t_ns = t;
  b.op_id = op_id;
  b.op_input = op_input;
  return b;
}

inline trace::OpInput In(const std::string& tensor, const char* cur, const char* req, int64_t rid) {
  trace::OpInput in;
  in.tensor = tensor;
  if (!tensor.empty()) in.placements = {cur}, in.required = {req};
  in.redistribute_id = rid;
  return in;
}

inline trace::OpOutput Out(const std::string& tensor, const char* placement) {
  trace::OpOutput out;
  out.tensor = tensor;
  out.requested = !tensor.empty();
  if (out.requested) out.placements = {placement}, out.global_shape = {8, 6}, out.local_shape = {4, 6};
  return out;
}

inline trace::Op MakeOp(int64_t id, int64_t step, const std::string& name, const std::string& args,
                        std::vector<trace::OpInput> inputs, std::vector<trace::OpOutput> outputs, int64_t t) {
  trace::Op op;
  op.id = id, op.step = step, op.Mutable().name = name, op.Mutable().args = args;
  op.Mutable().inputs = std::move(inputs);
  op.Mutable().outputs = std::move(outputs);
  trace::OpStrategy chosen, other;
  for (const auto& in : op.inputs()) chosen.inputs.push_back(in.required), other.inputs.push_back({"R"});
  for (const auto& out : op.outputs())
    chosen.outputs.push_back(out.placements), other.outputs.push_back({"R"});
  chosen.cost_us = 4.5;
  other.cost_us = -1;
  op.Mutable().candidates = {other, chosen};
  op.Mutable().chosen = 1;
  op.Mutable().rule = "least redistribute cost";
  op.t_ns = t;
  op.end_ns = t + 50;
  return op;
}

// Rank `rank` of the two ranks of a local run on mesh [2] whose dim is named `dim_name`.
inline trace::Header Header(int64_t rank, const char* dim_name) {
  trace::Header h;
  h.rank = rank, h.world = 2, h.mesh_shape = {2}, h.mesh_dim_names = {dim_name}, h.backend = "local";
  return h;
}

// A redistribute_begin and its end 40 ns later.
inline void EmitRedistribute(trace::Writer& w, const trace::RedistributeBegin& b) {
  w.Emit(b);
  trace::RedistributeEnd e;
  e.id = b.id, e.t_ns = b.t_ns + 40;
  w.Emit(e);
}

}  // namespace program_detail

/// Writes the hand-made program trace (see the file comment) into `dir`.
inline void WriteHandMadeProgramTrace(const std::filesystem::path& dir) {
  using namespace program_detail;
  for (int64_t rank = 0; rank < 2; ++rank) {
    trace::Writer w(dir, Header(rank, "tp"));
    EmitRedistribute(w, Begin(0, "w", "S(0)", "R", "all_gather", 0, 1, 110));
    w.Emit(MakeOp(0, 0, "mm", "", {In("x", "S(0)", "S(0)", -1), In("w", "S(0)", "R", 0)}, {Out("y", "S(0)")},
                  100));
    EmitRedistribute(w, Begin(1, "y", "S(0)", "R", "all_gather", -1, -1, 300));
    trace::Collective halo;
    halo.redistribute_id = -1, halo.op_id = 1, halo.Mutable().kind = "halo_exchange",
    halo.Mutable().mesh_dims = {0}, halo.Mutable().group = {0, 1}, halo.Mutable().dtype = "f32";
    halo.Mutable().bytes_sent = rank == 0 ? std::vector<int64_t>{0, 24} : std::vector<int64_t>{24, 0};
    halo.Mutable().bytes_recv = halo.bytes_sent();
    halo.start_ns = 410, halo.end_ns = 420;
    w.Emit(halo);
    w.Emit(MakeOp(1, 2, "conv", "dim=0, kernel=3 taps", {In("x", "S(0)", "S(0)", -1)}, {Out("xs", "S(0)")},
                  400));
    EmitRedistribute(w, Begin(2, "y", "R", "S(0)", "local", 2, 0, 510));
    trace::Op add = MakeOp(2, 3, "add", "", {In("y", "R", "S(0)", 2), In("xs", "S(0)", "S(0)", -1)},
                           {Out("z", "S(0)")}, 500);
    add.Mutable().note = "hand-made note: shardscope differs from PyTorch here";
    w.Emit(add);
    w.Emit(MakeOp(3, 4, "layer_norm_backward", "normalized_ndim=1", {In("z", "S(0)", "S(0)", -1)},
                  {Out("gx", "S(0)"), Out("", "")}, 600));
    w.Close();
  }
}

/// An imported program (shardscope import debugmode, issue 14) on mesh [2]:
///   op 0 mm(x S(0), w S(0) -> R by implicit redistribute 0, PyTorch recorded "S(0)->R": same)
///   op 1 add(y R -> S(0) by implicit redistribute 1, PyTorch recorded "R->P(sum)->S(0)": differs)
///   redistribute 2 (explicit): z S(0) -> R, PyTorch recorded "S(0)-->R": corrupting_merge
inline void WriteImportedProgramTrace(const std::filesystem::path& dir) {
  using namespace program_detail;
  auto imported = [](trace::RedistributeBegin b, const char* notation, const char* verdict) {
    trace::ImportedPlan p;
    p.source = "debugmode", p.line = 3 + b.id, p.notation = notation, p.verdict = verdict;
    p.collectives = {{"all_gather", 2, "0"}};
    if (std::string(verdict) != "same") p.reason = "hand-made";
    b.imported = p;
    return b;
  };
  for (int64_t rank = 0; rank < 2; ++rank) {
    trace::Writer w(dir, Header(rank, ""));
    EmitRedistribute(w, imported(Begin(0, "w", "S(0)", "R", "all_gather", 0, 1, 110), "S(0)->R", "same"));
    w.Emit(MakeOp(0, 0, "aten::mm", "", {In("x", "S(0)", "S(0)", -1), In("w", "S(0)", "R", 0)},
                  {Out("y", "S(0)")}, 100));
    EmitRedistribute(w,
                     imported(Begin(1, "y", "R", "S(0)", "local", 1, 0, 210), "R->P(sum)->S(0)", "differs"));
    w.Emit(MakeOp(1, 1, "aten::add.Tensor", "", {In("y", "R", "S(0)", 1)}, {Out("z", "S(0)")}, 200));
    EmitRedistribute(
        w, imported(Begin(2, "z", "S(0)", "R", "all_gather", -1, -1, 300), "S(0)-->R", "corrupting_merge"));
    w.Close();
  }
}

/// Runs samples/programs/<name>.json on the local backend, tracing into `dir`.
inline void RunSampleProgram(const std::string& name, const std::filesystem::path& dir) {
  namespace program = shardscope::program;
  program::Scenario scenario =
      program::LoadScenario(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/programs/" + name + ".json");
  program::RunOptions options;
  options.trace_dir = dir;
  program::RunScenario(scenario, options);
}

}  // namespace shardscope_gui_test
