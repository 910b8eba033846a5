// Encoding of trace lines as JSON (the reference writer; fast_encode.cpp and encode_v2.cpp write
// the same lines without a JSON tree). Decoding lives in codec.cpp.
#include <cmath>

#include "codec.hpp"
#include "shardscope/trace/codec.hpp"

namespace shardscope::trace {

using OJson = nlohmann::ordered_json;  // encoding keeps the documented field order
using namespace detail;                // the kType* names

namespace {

// An infinite (or NaN) strategy cost cannot be JSON; the format writes it as -1.
double CostToJson(double cost_us) { return std::isfinite(cost_us) ? cost_us : -1.0; }

OJson PlanToJson(const std::vector<PlanStep>& plan) {
  OJson out = OJson::array();
  for (const PlanStep& s : plan) {
    out.push_back({{"mesh_dims", s.mesh_dims},
                   {"src", s.src},
                   {"dst", s.dst},
                   {"comm", s.comm},
                   {"logical_shape", s.logical_shape},
                   {"flattened", s.flattened},
                   {"avg_scale", s.avg_scale},
                   {"cost_us", s.cost_us}});
  }
  return out;
}

OJson SkippedToJson(const std::vector<SkippedMerge>& merges) {
  OJson out = OJson::array();
  for (const SkippedMerge& m : merges) {
    out.push_back({{"mesh_dims", m.mesh_dims}, {"comm", m.comm}, {"reason", m.reason}, {"hint", m.hint}});
  }
  return out;
}

OJson EncodeEvent(const RedistributeBegin& e) {
  OJson out = {{"type", kTypeRedistributeBegin},
               {"id", e.id},
               {"tensor", e.tensor},
               {"global_shape", e.global_shape.get()},
               {"dtype", e.dtype},
               {"src_placements", e.src_placements.get()},
               {"dst_placements", e.dst_placements.get()},
               {"src_order", e.src_order},
               {"dst_order", e.dst_order},
               {"planner", e.planner},
               {"planner_reason", e.planner_reason},
               {"notation", e.notation},
               {"notation_unoptimized", e.notation_unoptimized},
               {"raw_plan", PlanToJson(e.raw_plan)},
               {"optimized_plan", PlanToJson(e.optimized_plan)},
               {"skipped_merges", SkippedToJson(e.skipped_merges)},
               {"cost_us", e.cost_us},
               {"t_ns", e.t_ns}};
  if (e.op_id >= 0) {
    out["op_id"] = e.op_id;
    out["op_input"] = e.op_input;
  }
  if (e.imported) {
    OJson collectives = OJson::array();
    for (const ImportedCollective& c : e.imported->collectives) {
      collectives.push_back({{"kind", c.kind}, {"group_size", c.group_size}, {"group_name", c.group_name}});
    }
    out["imported"] = {{"source", e.imported->source},     {"line", e.imported->line},
                       {"notation", e.imported->notation}, {"collectives", std::move(collectives)},
                       {"verdict", e.imported->verdict},   {"reason", e.imported->reason}};
  }
  return out;
}

OJson EncodeEvent(const RedistributeEnd& e) {
  OJson out = {{"type", kTypeRedistributeEnd}, {"id", e.id}, {"t_ns", e.t_ns}, {"ok", e.ok}};
  if (!e.error.empty()) out["error"] = e.error;
  if (e.checksum_before) out["checksum_before"] = *e.checksum_before;
  if (e.checksum_after) out["checksum_after"] = *e.checksum_after;
  return out;
}

OJson EncodeEvent(const StepBegin& e) {
  return {{"type", kTypeStepBegin},
          {"redistribute_id", e.redistribute_id},
          {"step", e.step},
          {"mesh_dims", e.mesh_dims.get()},
          {"src", e.src},
          {"dst", e.dst},
          {"comm", e.comm},
          {"logical_shape", e.logical_shape.get()},
          {"local_shape_before", e.local_shape_before.get()},
          {"global_offset_before", e.global_offset_before.get()},
          {"t_ns", e.t_ns}};
}

OJson EncodeEvent(const StepEnd& e) {
  return {{"type", kTypeStepEnd},
          {"redistribute_id", e.redistribute_id},
          {"step", e.step},
          {"local_shape_after", e.local_shape_after.get()},
          {"global_offset_after", e.global_offset_after.get()},
          {"t_ns", e.t_ns}};
}

OJson EncodeEvent(const Collective& e) {
  OJson out = {{"type", kTypeCollective},
               {"redistribute_id", e.redistribute_id},
               {"step", e.step},
               {"kind", e.kind},
               {"mesh_dims", e.mesh_dims.get()},
               {"group", e.group.get()},
               {"dtype", e.dtype},
               {"bytes_sent", e.bytes_sent.get()},
               {"bytes_recv", e.bytes_recv.get()},
               {"negotiated", e.negotiated},
               {"start_ns", e.start_ns},
               {"end_ns", e.end_ns}};
  if (e.op_id >= 0) out["op_id"] = e.op_id;
  if (e.flight) {
    const FlightRecord& f = *e.flight;
    OJson flight = {{"pg_name", f.pg_name},
                    {"pg_desc", f.pg_desc},
                    {"seq_id", f.seq_id},
                    {"p2p_seq_id", f.p2p_seq_id},
                    {"record_id", f.record_id},
                    {"op_id", f.op_id},
                    {"profiling_name", f.profiling_name},
                    {"state", f.state},
                    {"input_sizes", f.input_sizes.get()},
                    {"output_sizes", f.output_sizes.get()},
                    {"input_dtypes", f.input_dtypes.get()},
                    {"output_dtypes", f.output_dtypes.get()},
                    {"created_ns", f.created_ns}};
    // JSON has no infinity: nlohmann would write null, which is no number. Unknown is left out.
    if (f.duration_ms && std::isfinite(*f.duration_ms)) flight["duration_ms"] = *f.duration_ms;
    flight["timeout_ms"] = f.timeout_ms;
    flight["is_p2p"] = f.is_p2p;
    out["flight"] = std::move(flight);
  }
  return out;
}

OJson EncodeEvent(const Op& e) {
  OJson inputs = OJson::array();
  for (const OpInput& in : e.inputs) {
    inputs.push_back({{"tensor", in.tensor},
                      {"placements", in.placements},
                      {"required", in.required},
                      {"redistribute_id", in.redistribute_id}});
  }
  OJson outputs = OJson::array();
  for (const OpOutput& out : e.outputs) {
    outputs.push_back({{"tensor", out.tensor},
                       {"requested", out.requested},
                       {"placements", out.placements},
                       {"global_shape", out.global_shape},
                       {"local_shape", out.local_shape}});
  }
  OJson candidates = OJson::array();
  for (const OpStrategy& c : e.candidates) {
    candidates.push_back({{"inputs", c.inputs}, {"outputs", c.outputs}, {"cost_us", CostToJson(c.cost_us)}});
  }
  OJson out = {{"type", kTypeOp},
               {"id", e.id},
               {"step", e.step},
               {"name", e.name},
               {"args", e.args},
               {"inputs", std::move(inputs)},
               {"outputs", std::move(outputs)},
               {"candidates", std::move(candidates)},
               {"chosen", e.chosen},
               {"rule", e.rule},
               {"note", e.note},
               {"t_ns", e.t_ns},
               {"end_ns", e.end_ns},
               {"ok", e.ok}};
  if (!e.error.empty()) out["error"] = e.error;
  return out;
}

}  // namespace

OJson ToJson(const Header& h) {
  return {{"type", kTypeHeader},  {"format", h.format},
          {"version", h.version}, {"rank", h.rank},
          {"world", h.world},     {"mesh", {{"shape", h.mesh_shape}, {"dim_names", h.mesh_dim_names}}},
          {"backend", h.backend}, {"host", h.host},
          {"pid", h.pid},         {"clock", {{"name", h.clock.name}, {"offset_ns", h.clock.offset_ns}}}};
}

OJson ToJson(const Event& event) {
  return std::visit([](const auto& e) { return EncodeEvent(e); }, event);
}

std::string ToLine(const OJson& line) { return line.dump(-1, ' ', false, OJson::error_handler_t::replace); }

std::string_view EventTypeName(const Event& event) {
  static constexpr const char* kNames[] = {kTypeRedistributeBegin, kTypeRedistributeEnd, kTypeStepBegin,
                                           kTypeStepEnd,           kTypeCollective,      kTypeOp};
  static_assert(std::size(kNames) == std::variant_size_v<Event>);
  return kNames[event.index()];
}

}  // namespace shardscope::trace
