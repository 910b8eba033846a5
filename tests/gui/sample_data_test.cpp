// The gallery's plan-only sample (sample_data.cpp) holds the events a run writes: its begin, step
// and collective events come from the engine's plan -> events conversion, as the executor's do, so
// for the same redistribute they agree field for field but for ids, times and byte counts (the
// gallery's are synthetic) and the shape negotiations only a run has.
#include <catch2/catch.hpp>

#include <filesystem>
#include <variant>
#include <vector>

#include "sample_data.hpp"
#include "shardscope/engine/comm/local_backend.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace gui = shardscope::app::gui;
namespace engine = shardscope::engine;
namespace trace = shardscope::trace;

namespace {

// The event with its ids, times and byte counts cleared.
trace::Event Bare(trace::Event e) {
  std::visit(
      [](auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, trace::RedistributeBegin>) {
          x.id = 0, x.t_ns = 0;
        } else if constexpr (std::is_same_v<T, trace::StepBegin> || std::is_same_v<T, trace::StepEnd>) {
          x.redistribute_id = 0, x.t_ns = 0;
        } else if constexpr (std::is_same_v<T, trace::Collective>) {
          x.redistribute_id = 0, x.start_ns = x.end_ns = 0, x.Mutable().bytes_sent = {},
          x.Mutable().bytes_recv = {};
        } else if constexpr (std::is_same_v<T, trace::RedistributeEnd>) {
          x.id = 0, x.t_ns = 0;
        }
      },
      e);
  return e;
}

}  // namespace

TEST_CASE("the gallery's sample events are the events a run of the same redistribute writes",
          "[gui][sample]") {
  engine::Mesh mesh({2, 2}, {"dp", "tp"});
  mesh.RegisterFlattened({0, 1});
  auto spec = [&](const char* placements, engine::Shape shape) {
    return engine::MakeSpec(mesh, engine::ParsePlacements(placements, "test"), std::nullopt, std::move(shape),
                            engine::DType::kF32, engine::ChunkRule::kTorch, {}, "test");
  };
  const std::vector<gui::SampleRedistribute> items = {
      {"h", spec("S(0),S(1)", {8, 6}), spec("S(1),S(0)", {8, 6}), {}},
      {"w", spec("S(0),S(0)", {15, 6}), spec("R,R", {15, 6}), {}}};
  const auto sample = gui::ModelFromPlans(items, "test");

  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "shardscope_gui_sample_run";
  std::filesystem::remove_all(dir);
  {
    trace::TraceSession session(dir);
    engine::LocalWorld::Run(4, [&](engine::Communicator& comm, int64_t rank) {
      engine::ExecuteOptions options;
      options.trace = session.WriterFor(rank, trace::MakeHeader(rank, 4, {2, 2}, {"dp", "tp"}, "local"));
      for (size_t i = 0; i < items.size(); ++i) {
        const engine::Plan plan = engine::MakePlan(items[i].src, items[i].dst, rank, items[i].options);
        const engine::LocalTensor in(engine::ComputeRankLayout(items[i].src, rank).local_shape,
                                     items[i].src.dtype);
        options.tensor_name = items[i].tensor;
        options.trace_id = static_cast<int64_t>(i);
        engine::Redistribute(comm, rank, in, items[i].src, items[i].dst, plan, options);
      }
    });
  }
  const trace::Model run = trace::ReadTraceDir(dir);
  REQUIRE(run.ranks.size() == 4);
  REQUIRE(sample->ranks.size() == 4);
  for (size_t r = 0; r < 4; ++r) {
    INFO("rank " << r);
    // The plan's events: a run's shape negotiations (negotiated collectives) are the executor's
    // own, which a plan-only sample does not show.
    std::vector<trace::Event> ran;
    for (const trace::Event& e : run.ranks[r].events.ToVector()) {
      const auto* c = std::get_if<trace::Collective>(&e);
      if (c == nullptr || !c->negotiated()) ran.push_back(e);
    }
    const std::vector<trace::Event> shown = sample->ranks[r].events.ToVector();
    std::string ran_types, shown_types;
    for (const auto& e : ran) ran_types += std::string(trace::EventTypeName(e)) + " ";
    for (const auto& e : shown) shown_types += std::string(trace::EventTypeName(e)) + " ";
    INFO("run: " << ran_types << "\nsample: " << shown_types);
    REQUIRE(ran.size() == shown.size());
    for (size_t k = 0; k < ran.size(); ++k) {
      INFO("event " << k << " (" << trace::EventTypeName(ran[k]) << ")");
      CHECK(Bare(shown[k]) == Bare(ran[k]));
    }
  }
  std::filesystem::remove_all(dir);
}
