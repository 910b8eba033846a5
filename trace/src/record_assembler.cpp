#include "record_assembler.hpp"

#include <algorithm>

namespace shardscope::trace::detail {

namespace {
// The line an id index holds for an id that has one (0 when it has none).
int64_t Line(const IdIndex& lines, int64_t id) {
  const size_t* line = lines.Find(id);
  return line == nullptr ? 0 : static_cast<int64_t>(*line);
}
}  // namespace

void Assembler::AddStored(size_t count, const std::vector<int64_t>& lines) {
  LineRef at{r_.trace.file, 0};
  // One allocation each (a record per redistribute_begin and per op event).
  r_.records.reserve(r_.records.size() + r_.trace.events.Of<RedistributeBegin>().size());
  r_.ops.reserve(r_.ops.size() + r_.trace.events.Of<Op>().size());
  for (size_t i = 0; i < count; ++i) {
    at.line = lines[i];
    r_.trace.events.Visit(i, [&](const auto& e) { AddOne(e, at); });
  }
}

void Assembler::Finish() {
  for (const RedistributeRecord& rec : r_.records) {
    if (!rec.end) {
      r_.diagnostics.push_back({r_.trace.file, Line(begin_line_, rec.begin->id),
                                "redistribute " + std::to_string(rec.begin->id) +
                                    " has no redistribute_end (the rank stopped before finishing it)"});
    }
    int64_t op_id = rec.begin->op_id;
    if (op_id < 0) continue;
    if (const size_t* at = op_index_.Find(op_id)) {
      OpRecord& op = r_.ops[*at];
      if (rec.begin->op_input >= static_cast<int64_t>(op.op->inputs().size())) {
        ThrowAt({r_.trace.file, Line(begin_line_, rec.begin->id)},
                "field 'op_input' is " + std::to_string(rec.begin->op_input) + " but op " +
                    std::to_string(op_id) + " has " + std::to_string(op.op->inputs().size()) + " inputs");
      }
      op.redistribute_ids.push_back(rec.begin->id);
    } else if (!unfinished_ops_.count(op_id)) {
      unfinished_ops_[op_id] = Line(begin_line_, rec.begin->id);
    }
  }
  for (const auto& [op_id, halo] : pending_halo_) {
    if (!unfinished_ops_.count(op_id)) unfinished_ops_[op_id] = halo.first;
  }
  // An op event is written when the op finished, so events of an op without one are those of a
  // rank that stopped inside the op.
  for (const auto& [op_id, line] : unfinished_ops_) {
    r_.diagnostics.push_back(
        {r_.trace.file, line,
         "op " + std::to_string(op_id) + " has no op event (the rank stopped before finishing it)"});
  }
  for (OpRecord& rec : r_.ops) std::sort(rec.redistribute_ids.begin(), rec.redistribute_ids.end());
}

std::string Assembler::FieldName::Text() const {
  return index < 0 ? std::string(head)
                   : std::string(head) + "[" + std::to_string(index) + "]" + std::string(tail);
}

void Assembler::CheckMeshDims(const std::vector<int64_t>& dims, const FieldName& field, const LineRef& at) {
  int64_t ndim = static_cast<int64_t>(header().mesh_shape.size());
  for (int64_t d : dims) {
    if (d >= ndim) {
      ThrowAt(at, "field '" + field.Text() + "' names mesh dim " + std::to_string(d) + " but the mesh has " +
                      std::to_string(ndim) + " dims");
    }
  }
}

void Assembler::CheckPlacements(const std::vector<std::string>& placements, const FieldName& field,
                                const LineRef& at) {
  size_t ndim = header().mesh_shape.size();
  if (placements.size() != ndim) {
    ThrowAt(at, "field '" + field.Text() + "' must have one placement per mesh dim (" + std::to_string(ndim) +
                    ")");
  }
}

RedistributeRecord& Assembler::Record(int64_t id, const char* type, const LineRef& at) {
  const size_t* at_index = index_.Find(id);
  if (at_index == nullptr) {
    ThrowAt(at, std::string(type) + " refers to redistribute " + std::to_string(id) +
                    ", which has no earlier redistribute_begin");
  }
  return r_.records[*at_index];
}

void Assembler::CheckStep(const RedistributeRecord& rec, int64_t step, const LineRef& at) {
  int64_t n = static_cast<int64_t>(rec.begin->optimized_plan().size());
  if (step >= n) {
    ThrowAt(at, "field 'step' is " + std::to_string(step) + " but redistribute " +
                    std::to_string(rec.begin->id) + " has " + std::to_string(n) + " optimized plan steps");
  }
}

void Assembler::AddOne(const RedistributeBegin& e, const LineRef& at) {
  if (index_.Contains(e.id)) {
    ThrowAt(at, "redistribute " + std::to_string(e.id) + " begins twice (first at line " +
                    std::to_string(Line(begin_line_, e.id)) + ")");
  }
  CheckPlacements(e.src_placements(), {"src_placements"}, at);
  CheckPlacements(e.dst_placements(), {"dst_placements"}, at);
  for (size_t i = 0; i < e.raw_plan().size(); ++i)
    CheckMeshDims(e.raw_plan()[i].mesh_dims, {"raw_plan", static_cast<int64_t>(i), ".mesh_dims"}, at);
  for (size_t i = 0; i < e.optimized_plan().size(); ++i)
    CheckMeshDims(e.optimized_plan()[i].mesh_dims, {"optimized_plan", static_cast<int64_t>(i), ".mesh_dims"},
                  at);
  index_.TryEmplace(e.id, r_.records.size());
  begin_line_.TryEmplace(e.id, static_cast<size_t>(at.line));
  RedistributeRecord rec;
  rec.rank = header().rank;
  rec.begin = EventRef<RedistributeBegin>::To(&e);
  r_.records.push_back(std::move(rec));
}

void Assembler::AddOne(const RedistributeEnd& e, const LineRef& at) {
  RedistributeRecord& rec = Record(e.id, "redistribute_end", at);
  if (rec.end) ThrowAt(at, "redistribute " + std::to_string(e.id) + " ends twice");
  rec.end = EventRef<RedistributeEnd>::To(&e);
}

void Assembler::AddOne(const StepBegin& e, const LineRef& at) {
  RedistributeRecord& rec = Record(e.redistribute_id, "step_begin", at);
  CheckStep(rec, e.step, at);
  CheckMeshDims(e.mesh_dims, {"mesh_dims"}, at);
  for (const StepRecord& s : rec.steps) {
    if (s.begin->step == e.step) ThrowAt(at, "step " + std::to_string(e.step) + " begins twice");
  }
  rec.steps.push_back({EventRef<StepBegin>::To(&e), std::nullopt});
}

void Assembler::AddOne(const StepEnd& e, const LineRef& at) {
  RedistributeRecord& rec = Record(e.redistribute_id, "step_end", at);
  for (StepRecord& s : rec.steps) {
    if (s.begin->step != e.step) continue;
    if (s.end) ThrowAt(at, "step " + std::to_string(e.step) + " ends twice");
    s.end = EventRef<StepEnd>::To(&e);
    return;
  }
  ThrowAt(at, "step_end for step " + std::to_string(e.step) + " has no earlier step_begin");
}

void Assembler::AddOne(const Collective& e, const LineRef& at) {
  // A collective without a redistribute is an op's own (a halo exchange); `step` then is not
  // an index into a plan.
  RedistributeRecord* rec = e.redistribute_id >= 0 ? &Record(e.redistribute_id, "collective", at) : nullptr;
  if (rec != nullptr) CheckStep(*rec, e.step(), at);
  CheckMeshDims(e.mesh_dims(), {"mesh_dims"}, at);
  // The reader shares one buffer among a file's equal groups: each is checked once (a group of
  // 1024 ranks on every collective of a Flight Recorder import took 40% of the reading).
  if (!e.group().SharesWith(checked_group_) || e.group().empty()) {
    bool has_self = false;
    for (int64_t g : e.group()) {
      if (g >= header().world) {
        ThrowAt(at, "field 'group' names rank " + std::to_string(g) + " but the world has " +
                        std::to_string(header().world) + " ranks");
      }
      has_self = has_self || g == header().rank;
    }
    if (!has_self)
      ThrowAt(at, "field 'group' must contain this file's rank " + std::to_string(header().rank));
    checked_group_ = e.group();
  }
  if (rec != nullptr) {
    rec->collectives.push_back(EventRef<Collective>::To(&e));
    return;
  }
  if (e.op_id < 0) return;  // an imported Flight Recorder entry: neither a redistribute's nor an op's
  if (const size_t* op = op_index_.Find(e.op_id)) {
    r_.ops[*op].collectives.push_back(EventRef<Collective>::To(&e));
    return;
  }
  auto [pending, inserted] = pending_halo_.try_emplace(e.op_id, at.line, EventRefs<Collective>{});
  pending->second.second.push_back(EventRef<Collective>::To(&e));
}

void Assembler::AddOne(const Op& e, const LineRef& at) {
  if (op_index_.Contains(e.id)) {
    ThrowAt(at, "op " + std::to_string(e.id) + " appears twice (first at line " +
                    std::to_string(Line(op_line_, e.id)) + ")");
  }
  for (size_t i = 0; i < e.inputs().size(); ++i) {
    const OpInput& in = e.inputs()[i];
    // An absent optional input (layer_norm_backward without weight) has no name and no placements.
    if (in.tensor.empty() && in.placements.empty() && in.required.empty() && in.redistribute_id < 0) continue;
    CheckPlacements(in.placements, {"inputs", static_cast<int64_t>(i), ".placements"}, at);
    CheckPlacements(in.required, {"inputs", static_cast<int64_t>(i), ".required"}, at);
    if (in.redistribute_id < 0) continue;
    const RedistributeRecord& rec = Record(in.redistribute_id, "op input", at);
    if (rec.begin->op_id != e.id || rec.begin->op_input != static_cast<int64_t>(i)) {
      ThrowAt(at, "field 'inputs[" + std::to_string(i) + "].redistribute_id' is " +
                      std::to_string(in.redistribute_id) + " but that redistribute_begin (line " +
                      std::to_string(Line(begin_line_, in.redistribute_id)) + ") does not carry op_id " +
                      std::to_string(e.id) + " and op_input " + std::to_string(i));
    }
  }
  for (size_t i = 0; i < e.outputs().size(); ++i) {
    const OpOutput& out = e.outputs()[i];
    if (!out.requested) continue;
    CheckPlacements(out.placements, {"outputs", static_cast<int64_t>(i), ".placements"}, at);
    if (out.local_shape.size() != out.global_shape.size()) {
      ThrowAt(at, "field 'outputs[" + std::to_string(i) +
                      "].local_shape' must have one entry per dim of "
                      "'global_shape' (" +
                      std::to_string(out.global_shape.size()) + ")");
    }
  }
  size_t ndim = header().mesh_shape.size();
  for (size_t c = 0; c < e.candidates().size(); ++c) {
    const OpStrategy& s = e.candidates()[c];
    for (size_t i = 0; i < s.inputs.size() + s.outputs.size(); ++i) {
      bool is_input = i < s.inputs.size();
      const auto& list = is_input ? s.inputs[i] : s.outputs[i - s.inputs.size()];
      if (list.empty() || list.size() == ndim) continue;
      ThrowAt(at, "field 'candidates[" + std::to_string(c) + "]." + (is_input ? "inputs[" : "outputs[") +
                      std::to_string(is_input ? i : i - s.inputs.size()) +
                      "]' must be empty or have one placement per mesh dim (" + std::to_string(ndim) + ")");
    }
  }
  op_index_.TryEmplace(e.id, r_.ops.size());
  op_line_.TryEmplace(e.id, static_cast<size_t>(at.line));
  OpRecord rec;
  rec.rank = header().rank;
  rec.op = EventRef<Op>::To(&e);
  auto pending = pending_halo_.find(e.id);
  if (pending != pending_halo_.end()) {
    rec.collectives = std::move(pending->second.second);
    pending_halo_.erase(pending);
  }
  r_.ops.push_back(std::move(rec));
}

}  // namespace shardscope::trace::detail
