#include "exec/trace_records.hpp"

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

void EmitRedistributeBegin(const ExecuteOptions& options, const TensorSpec& src, const TensorSpec& dst,
                           const Plan& plan) {
  trace::RedistributeBegin e;
  e.id = options.trace_id;
  e.tensor = options.tensor_name;
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
  for (const Transform& t : plan.raw) e.raw_plan.push_back(ToTraceStep(t));
  for (const Transform& t : plan.optimized) e.optimized_plan.push_back(ToTraceStep(t));
  for (const SkippedMerge& s : plan.skipped_merges) {
    e.skipped_merges.push_back({ToInt64(s.mesh_dims), std::string(CommKindName(s.comm)), s.reason, s.hint});
  }
  e.cost_us = plan.cost_us;
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
