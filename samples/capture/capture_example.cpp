// Capture a shardscope trace from a C++ job: run with SHARDSCOPE_TRACE=<dir> to write one
// rank-<R>.jsonl per rank, then `shardscope show <dir>` or open it in shardscope-gui.
#include <shardscope/engine/comm/local_backend.hpp>
#include <shardscope/engine/exec/executor.hpp>
#include <shardscope/engine/plan/planner.hpp>
#include <shardscope/trace/session.hpp>
using namespace shardscope;

int main() {
  trace::TraceSession session = trace::TraceSession::FromEnv();  // off unless SHARDSCOPE_TRACE is set
  engine::Mesh mesh({2, 2}, {"dp", "tp"});
  auto spec = [&](const char* placements) {
    return engine::MakeSpec(mesh, engine::ParsePlacements(placements, "example"), std::nullopt, {8, 6},
                            engine::DType::kF32, engine::ChunkRule::kTorch, {}, "example");
  };
  const engine::TensorSpec src = spec("S(0),S(1)"), dst = spec("R,S(0)");
  engine::PlanCache plans;
  engine::LocalWorld::Run(mesh.size(), [&](engine::Communicator& comm, int64_t rank) {
    engine::ExecuteOptions options;  // options.trace == nullptr: tracing costs one branch
    options.trace = session.WriterFor(
        rank, trace::MakeHeader(rank, mesh.size(), mesh.shape(), mesh.dim_names(), "local"));
    options.tensor_name = "activation";
    engine::LocalTensor x = engine::Distribute(engine::SeededTensor(src.shape, src.dtype, 1), src, rank);
    engine::LocalTensor y =
        engine::Redistribute(comm, rank, x, src, dst, *plans.Get(src, dst, rank, {}), options);
  });
  return 0;
}
