#include "exec/trace_records.hpp"

#include <array>
#include <memory>
#include <optional>
#include <utility>

#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::engine::detail {

std::vector<std::string> PlacementStrings(const Placements& placements) {
  std::vector<std::string> out;
  for (const Placement& p : placements) out.push_back(p.ToString());
  return out;
}

trace::PlanStep ToTraceStep(const Transform& t) {
  trace::PlanStep s;
  DescribeTransform(t, s);
  s.flattened = t.flattened;
  s.avg_scale = static_cast<double>(t.avg_scale);
  s.cost_us = t.cost_us;
  return s;
}

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

trace::RedistributeBegin BuildBegin(const TensorSpec& src, const TensorSpec& dst, const Plan& plan) {
  trace::RedistributeBegin e;
  e.global_shape = src.shape;
  e.dtype = std::string(DTypeName(src.dtype));
  e.src_placements = PlacementStrings(src.placements);
  e.dst_placements = PlacementStrings(dst.placements);
  // PyTorch's notation (format_shard_order_str), read back by ParseShardOrderStr; "" = no order.
  e.src_order = src.shard_order ? FormatShardOrderStr(src.placements, *src.shard_order) : "";
  e.dst_order = dst.shard_order ? FormatShardOrderStr(dst.placements, *dst.shard_order) : "";
  e.planner = std::string(PlannerName(plan.planner));
  e.planner_reason = plan.planner_reason;
  e.notation = plan.notation;
  e.notation_unoptimized = plan.notation_unoptimized;
  std::vector<trace::PlanStep> raw, optimized;
  for (const Transform& t : plan.raw) raw.push_back(ToTraceStep(t));
  for (const Transform& t : plan.optimized) optimized.push_back(ToTraceStep(t));
  e.raw_plan = std::move(raw);
  e.optimized_plan = std::move(optimized);
  std::vector<trace::SkippedMerge> skipped;
  for (const SkippedMerge& s : plan.skipped_merges) {
    skipped.push_back({ToInt64(s.mesh_dims), std::string(CommKindName(s.comm)), s.reason, s.hint});
  }
  e.skipped_merges = std::move(skipped);
  e.cost_us = plan.cost_us;
  return e;
}

// The plan-dependent part of a begin event, from this thread's last few distinct (src, dst,
// plan): a job runs the same redistributes over and over, and comparing them is much cheaper
// than building the strings and plan steps again (no allocation). The cached event shares its
// vectors with the events it was copied into (SharedVec), so a hit copies no elements.
const trace::RedistributeBegin& CachedBegin(const TensorSpec& src, const TensorSpec& dst, const Plan& plan) {
  constexpr size_t kSlots = 8;
  thread_local std::array<std::unique_ptr<BeginTemplate>, kSlots> cache;
  thread_local size_t next = 0;
  for (const std::unique_ptr<BeginTemplate>& slot : cache) {
    if (slot && slot->Matches(src, dst, plan)) return slot->event;
  }
  auto entry = std::make_unique<BeginTemplate>(BeginTemplate{src.shape, src.dtype, src.placements,
                                                             dst.placements, src.shard_order, dst.shard_order,
                                                             plan, BuildBegin(src, dst, plan)});
  std::unique_ptr<BeginTemplate>& slot = cache[next];
  next = (next + 1) % kSlots;
  slot = std::move(entry);
  return slot->event;
}

}  // namespace

void EmitRedistributeBegin(const ExecuteOptions& options, const TensorSpec& src, const TensorSpec& dst,
                           const Plan& plan) {
  trace::RedistributeBegin e = CachedBegin(src, dst, plan);
  e.id = options.trace_id;
  e.tensor = options.tensor_name;
  e.t_ns = trace::NowNs();
  e.op_id = options.op_id;
  e.op_input = options.op_id >= 0 ? options.op_input : -1;
  options.trace->Emit(std::move(e));
}

void EmitRedistributeEnd(const ExecuteOptions& options, bool ok, const std::string& error,
                         const LocalTensor& in, const LocalTensor* out) {
  trace::RedistributeEnd e;
  e.id = options.trace_id;
  e.t_ns = trace::NowNs();
  e.ok = ok;
  e.error = error;
  if (options.checksums) {
    e.checksum_before = Checksum(in);
    if (out != nullptr) e.checksum_after = Checksum(*out);
  }
  options.trace->Emit(std::move(e));
}

}  // namespace shardscope::engine::detail
