#include "exec/trace_records.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <utility>

#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/engine/exec/trace_events.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::engine {
namespace detail {

std::vector<std::string> PlacementStrings(const Placements& placements) {
  std::vector<std::string> out;
  for (const Placement& p : placements) out.push_back(p.ToString());
  return out;
}

}  // namespace detail

trace::PlanStep TraceStep(const Transform& t) {
  trace::PlanStep s;
  detail::DescribeTransform(t, s);
  s.flattened = t.flattened;
  s.avg_scale = static_cast<double>(t.avg_scale);
  s.cost_us = t.cost_us;
  return s;
}

trace::RedistributeBegin TraceBegin(const TensorSpec& src, const TensorSpec& dst, const Plan& plan) {
  trace::RedistributeBegin e;
  trace::RedistributeShape& shape = e.Mutable();
  shape.global_shape = src.shape;
  shape.dtype = std::string(DTypeName(src.dtype));
  shape.src_placements = detail::PlacementStrings(src.placements);
  shape.dst_placements = detail::PlacementStrings(dst.placements);
  // PyTorch's notation (format_shard_order_str), read back by ParseShardOrderStr; "" = no order.
  shape.src_order = src.shard_order ? FormatShardOrderStr(src.placements, *src.shard_order) : "";
  shape.dst_order = dst.shard_order ? FormatShardOrderStr(dst.placements, *dst.shard_order) : "";
  shape.planner = std::string(PlannerName(plan.planner));
  shape.planner_reason = plan.planner_reason;
  shape.notation = plan.notation;
  shape.notation_unoptimized = plan.notation_unoptimized;
  std::vector<trace::PlanStep> raw, optimized;
  for (const Transform& t : plan.raw) raw.push_back(TraceStep(t));
  for (const Transform& t : plan.optimized) optimized.push_back(TraceStep(t));
  shape.raw_plan = std::move(raw);
  shape.optimized_plan = std::move(optimized);
  std::vector<trace::SkippedMerge> skipped;
  for (const SkippedMerge& s : plan.skipped_merges) {
    skipped.push_back({detail::ToInt64(s.mesh_dims), std::string(CommKindName(s.comm)), s.reason, s.hint});
  }
  shape.skipped_merges = std::move(skipped);
  shape.cost_us = plan.cost_us;
  return e;
}

trace::StepBegin TraceStepBegin(int64_t k, const Transform& t, const RankLayout& mine) {
  trace::StepBegin e;
  e.step = k;
  detail::DescribeTransform(t, e);
  e.local_shape_before = mine.local_shape;
  e.global_offset_before = mine.global_offset;
  return e;
}

trace::StepEnd TraceStepEnd(int64_t k, const RankLayout& mine) {
  trace::StepEnd e;
  e.step = k;
  e.local_shape_after = mine.local_shape;
  e.global_offset_after = mine.global_offset;
  return e;
}

trace::Collective TraceCollective(int64_t k, std::string_view kind, const std::vector<int>& mesh_dims,
                                  const std::vector<int64_t>& group, DType dtype,
                                  const std::vector<int64_t>& bytes_sent,
                                  const std::vector<int64_t>& bytes_recv, bool negotiated) {
  trace::Collective c;
  trace::CollectiveShape& shape = c.Mutable();
  shape.step = static_cast<int32_t>(k);
  shape.kind = kind;
  shape.mesh_dims = detail::ToInt64(mesh_dims);
  shape.group = group;
  shape.dtype = DTypeName(dtype);
  shape.bytes_sent = bytes_sent;
  shape.bytes_recv = bytes_recv;
  shape.negotiated = negotiated;
  return c;
}

namespace detail {

namespace {

// What a begin event takes from (src, dst, plan), and the event fields built from it.
struct BeginTemplate {
  Shape shape;
  DType dtype = DType::kF32;
  Placements src_placements, dst_placements;
  std::optional<ShardOrder> src_order, dst_order;
  Plan plan;
  trace::RedistributeBegin event;  ///< every field but id, tensor, t_ns, op_id and op_input

  bool Matches(const TensorSpec& src, const TensorSpec& dst, const Plan& p) const {
    return shape == src.shape && dtype == src.dtype && src_placements == src.placements &&
           dst_placements == dst.placements && src_order == src.shard_order && dst_order == dst.shard_order &&
           plan == p;
  }
};

bool SameInts(const std::vector<int64_t>& a, const std::vector<int>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](int64_t x, int y) { return x == static_cast<int64_t>(y); });
}

}  // namespace

struct RedistributeRecords::Templates {
  BeginTemplate key;  ///< what the templates were built for (its event is the begin template's)
  trace::EventTemplate begin, end;
  std::string tensor_name;  ///< the last tensor name a begin carried, and its interned form
  trace::IStr tensor;
  struct CollectiveTemplate {
    CollectiveKind kind = CollectiveKind::kBarrier;
    bool negotiated = false;
    trace::EventTemplate event;  ///< a trace::Collective
  };
  struct Step {
    trace::EventTemplate begin, end;              ///< a trace::StepBegin, a trace::StepEnd
    std::vector<CollectiveTemplate> collectives;  ///< one per (kind, negotiated) seen at this step
  };
  std::vector<Step> steps;  ///< one per optimized plan step

  Step& At(int64_t k) {
    if (static_cast<size_t>(k) >= steps.size()) steps.resize(static_cast<size_t>(k) + 1);
    return steps[static_cast<size_t>(k)];
  }
};

namespace {

// This thread's templates for its last few distinct (src, dst, plan).
std::shared_ptr<RedistributeRecords::Templates> TemplatesFor(const TensorSpec& src, const TensorSpec& dst,
                                                             const Plan& plan) {
  constexpr size_t kSlots = 8;
  thread_local std::array<std::shared_ptr<RedistributeRecords::Templates>, kSlots> cache;
  thread_local size_t next = 0;
  for (const auto& slot : cache) {
    if (slot && slot->key.Matches(src, dst, plan)) return slot;
  }
  auto entry = std::make_shared<RedistributeRecords::Templates>();
  entry->key = BeginTemplate{src.shape,       src.dtype,       src.placements, dst.placements,
                             src.shard_order, dst.shard_order, plan,           TraceBegin(src, dst, plan)};
  entry->begin = std::make_shared<const trace::Event>(entry->key.event);
  entry->end = std::make_shared<const trace::Event>(trace::RedistributeEnd{});
  cache[next] = entry;
  next = (next + 1) % kSlots;
  return entry;
}

// The fields of a step or end template's emit: the redistribute's id and the time now.
trace::TemplateFields Now(int64_t id) {
  trace::TemplateFields f;
  f.id = id;
  f.t_ns = trace::NowNs();
  return f;
}

template <class E>
const E& As(const trace::EventTemplate& t) {
  return std::get<E>(*t);
}

}  // namespace

RedistributeRecords::RedistributeRecords(const TensorSpec& src, const TensorSpec& dst, const Plan& plan,
                                         const ExecuteOptions& options)
    : options_(options) {
  if (options_.trace) templates_ = TemplatesFor(src, dst, plan);
}

RedistributeRecords::~RedistributeRecords() = default;

void RedistributeRecords::Begin() {
  if (!options_.trace) return;
  Templates& t = *templates_;
  if (options_.tensor_name != t.tensor_name) {
    t.tensor_name = options_.tensor_name;
    t.tensor = options_.tensor_name;
  }
  trace::TemplateFields f;
  f.id = options_.trace_id;
  f.t_ns = trace::NowNs();
  f.tensor = t.tensor;
  f.op_id = options_.op_id;
  f.op_input = options_.op_id >= 0 ? options_.op_input : -1;
  options_.trace->Emit(t.begin, f);
}

void RedistributeRecords::StepBegin(int64_t k, const Transform& t, const RankLayout& mine) {
  if (!options_.trace) return;
  Templates::Step& s = templates_->At(k);
  if (!s.begin || As<trace::StepBegin>(s.begin).local_shape_before.get() != mine.local_shape ||
      As<trace::StepBegin>(s.begin).global_offset_before.get() != mine.global_offset) {
    s.begin = std::make_shared<const trace::Event>(TraceStepBegin(k, t, mine));  // never changed once emitted
  }
  options_.trace->Emit(s.begin, Now(options_.trace_id));
}

void RedistributeRecords::StepEnd(int64_t k, const RankLayout& mine) {
  if (!options_.trace) return;
  Templates::Step& s = templates_->At(k);
  if (!s.end || As<trace::StepEnd>(s.end).local_shape_after.get() != mine.local_shape ||
      As<trace::StepEnd>(s.end).global_offset_after.get() != mine.global_offset) {
    s.end = std::make_shared<const trace::Event>(TraceStepEnd(k, mine));
  }
  options_.trace->Emit(s.end, Now(options_.trace_id));
}

void RedistributeRecords::Collective(int64_t k, const std::vector<int>& mesh_dims,
                                     const std::vector<int64_t>& group, DType dtype,
                                     const CollectiveStats& stats, bool negotiated) {
  if (!options_.trace) return;
  std::vector<Templates::CollectiveTemplate>& seen = templates_->At(k).collectives;
  auto it = std::find_if(seen.begin(), seen.end(), [&](const Templates::CollectiveTemplate& c) {
    return c.kind == stats.kind && c.negotiated == negotiated;
  });
  const std::string_view dtype_name = DTypeName(dtype);
  const trace::Collective* known = it == seen.end() ? nullptr : &As<trace::Collective>(it->event);
  if (known == nullptr || known->group().get() != group || !SameInts(known->mesh_dims(), mesh_dims) ||
      known->dtype().view() != dtype_name || known->bytes_sent().get() != stats.bytes_sent ||
      known->bytes_recv().get() != stats.bytes_recv) {
    if (it == seen.end()) it = seen.insert(seen.end(), {stats.kind, negotiated, nullptr});
    it->event = std::make_shared<const trace::Event>(
        TraceCollective(k, CollectiveKindName(stats.kind), mesh_dims, group, dtype, stats.bytes_sent,
                        stats.bytes_recv, negotiated));
  }
  trace::TemplateFields f;
  f.id = options_.trace_id;
  f.t_ns = stats.start_ns;
  f.end_ns = stats.end_ns;
  options_.trace->Emit(it->event, f);
}

void RedistributeRecords::End(bool ok, const std::string& error, const LocalTensor& in,
                              const LocalTensor* out) {
  if (!options_.trace) return;
  if (ok && error.empty() && !options_.checksums) {
    options_.trace->Emit(templates_->end, Now(options_.trace_id));
    return;
  }
  trace::RedistributeEnd e;
  e.id = options_.trace_id;
  e.t_ns = trace::NowNs();
  e.ok = ok;
  e.error = error;
  if (options_.checksums) {
    e.set_checksum_before(Checksum(in));
    if (out != nullptr) e.set_checksum_after(Checksum(*out));
  }
  options_.trace->Emit(std::move(e));
}

}  // namespace detail
}  // namespace shardscope::engine
