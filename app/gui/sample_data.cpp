#include "sample_data.hpp"

#include <algorithm>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/engine/exec/trace_events.hpp"
#include "shardscope/error.hpp"

namespace shardscope::app::gui {
namespace {

int64_t Numel(const engine::Shape& s) {
  int64_t n = 1;
  for (int64_t e : s) n *= e;
  return n;
}

// Rank `r`'s file and header in a plan-only sample on `mesh`.
trace::RankTrace SampleRank(const engine::Mesh& mesh, int64_t r) {
  trace::RankTrace rt;
  rt.file = "rank-" + std::to_string(r) + ".jsonl";
  rt.header.rank = r;
  rt.header.world = mesh.size();
  rt.header.mesh_shape = mesh.shape();
  rt.header.mesh_dim_names = mesh.dim_names();
  // One entry per mesh dim, "" when unnamed, as trace::Session writes them (the reader insists).
  rt.header.mesh_dim_names.resize(mesh.shape().size());
  rt.header.backend = "plan-only";
  rt.header.host = "sandbox";
  return rt;
}

// The collective rank `r` runs for step `k` (transform `tr`) of redistribute `b`, holding `mine`
// bytes before it, from `start_ns` to `end_ns`: all_gather sends the whole shard to each peer, the
// others a 1/g share.
trace::Collective SampleCollective(const trace::RedistributeBegin& b, size_t k, const engine::Transform& tr,
                                   const engine::Mesh& mesh, int64_t r, int64_t mine, int64_t start_ns,
                                   int64_t end_ns, engine::DType dtype) {
  const std::vector<int64_t> group = mesh.Group(r, tr.mesh_dims);
  const auto g = static_cast<int64_t>(group.size());
  std::vector<int64_t> bytes;
  for (int64_t peer : group)
    bytes.push_back(peer == r                                 ? 0
                    : tr.comm == engine::CommKind::kAllGather ? mine
                                                              : mine / std::max<int64_t>(1, g));
  trace::Collective c = engine::TraceCollective(static_cast<int64_t>(k), engine::CommKindName(tr.comm),
                                                tr.mesh_dims, group, dtype, bytes, bytes, false);
  c.redistribute_id = b.id;
  c.start_ns = start_ns;
  c.end_ns = end_ns;
  return c;
}

// Rank `r`'s steps (and collectives) of `plan` for `item` on `mesh` in `rec`, on a synthetic clock from
// `now`: each step lasts its predicted cost. Returns the clock after the last step.
int64_t AddSteps(const engine::Mesh& mesh, const SampleRedistribute& item, const engine::Plan& plan,
                 int64_t r, int64_t now, trace::RedistributeRecord& rec) {
  const int64_t id = rec.begin->id;
  const engine::ShardOrder src_order = item.src.EffectiveOrder();
  engine::PlanState state = engine::ExecutionStartState(item.src.placements, &src_order, mesh,
                                                        static_cast<int>(item.src.shape.size()));
  int itemsize = engine::DTypeSize(item.src.dtype);
  for (size_t k = 0; k < plan.optimized.size(); ++k) {
    const engine::Transform& tr = plan.optimized[k];
    engine::LayoutInput in{&mesh, &state.placements, &state.order, &item.src.shape};
    engine::RankLayout before = engine::ComputeRankLayout(in, r);
    engine::PlanState next = engine::ExecutionAdvance(state, tr, mesh);
    engine::LayoutInput in2{&mesh, &next.placements, &next.order, &item.src.shape};
    engine::RankLayout after = engine::ComputeRankLayout(in2, r);
    trace::StepRecord sr;
    trace::StepBegin& sb = sr.begin.Mutable();
    sb = engine::TraceStepBegin(static_cast<int64_t>(k), tr, before);
    sb.redistribute_id = id;
    sb.t_ns = now + 100;
    int64_t dur = std::max<int64_t>(2000, static_cast<int64_t>(tr.cost_us * 1000.0));
    if (tr.comm != engine::CommKind::kLocal) {
      rec.collectives.push_back(SampleCollective(*rec.begin, k, tr, mesh, r,
                                                 Numel(before.local_shape) * itemsize, now + 300,
                                                 now + dur - 300, item.src.dtype));
    }
    now += dur;
    sr.end = engine::TraceStepEnd(static_cast<int64_t>(k), after);
    sr.end.Mutable().redistribute_id = id;
    sr.end.Mutable().t_ns = now;
    rec.steps.push_back(sr);
    state = next;
  }
  return now;
}

// The record's events in file order: begin, each step's begin, collectives and end, then end.
void AppendEvents(const trace::RedistributeRecord& rec, trace::EventList& events) {
  events.push_back(*rec.begin);
  for (size_t k = 0; k < rec.steps.size(); ++k) {
    events.push_back(*rec.steps[k].begin);
    for (const auto& c : rec.collectives) {
      if (c.step() == static_cast<int64_t>(k)) events.push_back(c);
    }
    events.push_back(*rec.steps[k].end);
  }
  events.push_back(*rec.end);
}

}  // namespace

std::shared_ptr<trace::Model> ModelFromPlans(const std::vector<SampleRedistribute>& items,
                                             const std::string& source) {
  if (items.empty()) throw InvalidInput("sample: no redistribute to synthesize");
  const engine::Mesh& mesh = items.front().src.mesh;
  int64_t world = mesh.size();
  auto model = std::make_shared<trace::Model>();
  model->source = source;
  model->world = world;
  for (int64_t r = 0; r < world; ++r) model->ranks.push_back(SampleRank(mesh, r));
  int64_t t = 1000;
  for (size_t id = 0; id < items.size(); ++id) {
    const SampleRedistribute& item = items[id];
    int64_t item_start = t, item_end = t;
    for (int64_t r = 0; r < world; ++r) {
      engine::Plan plan = engine::MakePlan(item.src, item.dst, r, item.options);
      trace::RedistributeRecord rec;
      rec.rank = r;
      auto& b = rec.begin.Mutable();
      b = engine::TraceBegin(item.src, item.dst, plan);
      b.id = static_cast<int64_t>(id);
      b.Mutable().tensor = item.tensor;
      // Synthetic clock: ranks start a little apart.
      b.t_ns = item_start + r * 150;
      int64_t now = AddSteps(mesh, item, plan, r, b.t_ns, rec);
      rec.end = trace::RedistributeEnd{b.id, now + 200, true, ""};
      item_end = std::max(item_end, now + 200);
      AppendEvents(rec, model->ranks[static_cast<size_t>(r)].events);
      model->redistributes.push_back(std::move(rec));
    }
    t = item_end + 3000;
  }
  std::sort(model->redistributes.begin(), model->redistributes.end(),
            [](const trace::RedistributeRecord& a, const trace::RedistributeRecord& b) {
              return a.rank != b.rank ? a.rank < b.rank : a.begin->id < b.begin->id;
            });
  return model;
}

std::shared_ptr<trace::Model> MakeSampleModel() {
  engine::Mesh mesh({2, 2}, {"dp", "tp"});
  mesh.RegisterFlattened({0, 1});
  auto spec = [&](const char* placements, engine::Shape shape, engine::DType dtype) {
    return engine::MakeSpec(mesh, engine::ParsePlacements(placements, "sample"), std::nullopt,
                            std::move(shape), dtype, engine::ChunkRule::kTorch, {}, "sample");
  };
  std::vector<SampleRedistribute> items;
  items.push_back({"h",
                   spec("S(0),S(1)", {8, 6}, engine::DType::kF32),
                   spec("S(1),S(0)", {8, 6}, engine::DType::kF32),
                   {}});
  items.push_back(
      {"w", spec("S(0),S(0)", {15, 6}, engine::DType::kF32), spec("R,R", {15, 6}, engine::DType::kF32), {}});
  items.push_back({"g",
                   spec("P(sum),P(sum)", {8, 8}, engine::DType::kF32),
                   spec("R,R", {8, 8}, engine::DType::kF32),
                   {}});
  items.push_back(
      {"x", spec("R,S(1)", {6, 9}, engine::DType::kBF16), spec("S(0),R", {6, 9}, engine::DType::kBF16), {}});
  return ModelFromPlans(items, "sample (2x2 dp,tp)");
}

}  // namespace shardscope::app::gui
