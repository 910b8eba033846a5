// The rules by which a v2 reader rebuilds what a v2 line left out (docs/trace-format.md,
// "Version 2"); the decoders parse, this completes.
#include "format_v2.hpp"

#include "codec.hpp"

namespace shardscope::trace::detail {

const RedistributeBegin* FileContext::Begin(int64_t id) const {
  auto it = begins_.find(id);
  return it == begins_.end() ? nullptr : &it->second;
}

const Op* FileContext::OpWithId(int64_t id) const {
  auto it = ops_.find(id);
  return it == ops_.end() ? nullptr : &it->second;
}

const std::pair<size_t, size_t>* FileContext::Run(int64_t id) const {
  auto it = runs_.find(id);
  return it == runs_.end() ? nullptr : &it->second;
}

void FileContext::Remember(const Event& event, size_t index) {
  if (!v2()) return;  // v1 lines never refer to earlier ones
  // Whether this event continues the run of redistribute run_id_ (and ends it).
  const bool next = run_id_ >= 0 && index == run_next_;
  bool continues = false, ends = false;
  if (const auto* begin = std::get_if<RedistributeBegin>(&event)) {
    begins_.try_emplace(begin->id, *begin);
    run_id_ = begin->id, run_first_ = index, run_next_ = index + 1;
    return;
  } else if (const auto* op = std::get_if<Op>(&event)) {
    ops_.try_emplace(op->id, *op);
  } else if (const auto* e = std::get_if<StepBegin>(&event)) {
    continues = next && e->redistribute_id == run_id_;
  } else if (const auto* e = std::get_if<StepEnd>(&event)) {
    continues = next && e->redistribute_id == run_id_;
  } else if (const auto* e = std::get_if<Collective>(&event)) {
    continues = next && e->redistribute_id == run_id_;
  } else if (const auto* e = std::get_if<RedistributeEnd>(&event)) {
    ends = next && e->id == run_id_;
  }
  if (ends) runs_.try_emplace(run_id_, run_first_, index);
  if (continues)
    ++run_next_;
  else
    run_id_ = -1;
}

std::string ExpandRepeat(const RepeatLine& r, const FileContext& ctx, const EventList& events,
                         std::vector<Event>& out) {
  const std::pair<size_t, size_t>* run = ctx.Run(r.like);
  if (run == nullptr) {
    return "field 'like' is " + std::to_string(r.like) +
           " but no redistribute with that id was read as one run of lines (its redistribute_begin, steps, "
           "collectives and redistribute_end, nothing between) before this line in this file";
  }
  // One pass: the events are copied and their times set while `dt` is counted against them.
  size_t k = 0;
  std::string why;
  auto at = [&](int64_t& t) {
    if (k < r.dt.size()) {
      t = r.t_ns + r.dt[k];  // |t_ns| <= 2^61 and |dt| <= 2^62: the sum fits
      if (why.empty() && (t < -kMaxTimeNs || t > kMaxTimeNs))
        why = "field 'dt[" + std::to_string(k) + "]' puts a time outside [-2^61, 2^61] ns";
    }
    ++k;
  };
  const size_t start = out.size();
  for (size_t i = run->first; i <= run->second; ++i) {
    Event& e = out.emplace_back(events[i]);
    if (auto* b = std::get_if<RedistributeBegin>(&e)) {
      b->id = r.id, b->t_ns = r.t_ns, b->op_id = r.op_id, b->op_input = r.op_input;
      if (r.tensor) b->tensor = *r.tensor;
    } else if (auto* s = std::get_if<StepBegin>(&e)) {
      s->redistribute_id = r.id, at(s->t_ns);
    } else if (auto* s = std::get_if<StepEnd>(&e)) {
      s->redistribute_id = r.id, at(s->t_ns);
    } else if (auto* c = std::get_if<Collective>(&e)) {
      c->redistribute_id = r.id, at(c->start_ns), at(c->end_ns);
    } else if (auto* end = std::get_if<RedistributeEnd>(&e)) {
      end->id = r.id, at(end->t_ns);
    }
  }
  if (k != r.dt.size()) {
    why = "field 'dt' has " + std::to_string(r.dt.size()) + " entries but redistribute " +
          std::to_string(r.like) + " has " + std::to_string(k) + " times after its begin";
  }
  if (!why.empty()) out.resize(start);
  return why;
}

std::vector<int64_t> MeshGroup(const std::vector<int64_t>& mesh_shape, int64_t rank,
                               const std::vector<int64_t>& mesh_dims) {
  const auto dims = static_cast<int64_t>(mesh_shape.size());
  uint64_t in_group = 0;
  for (int64_t d : mesh_dims) {
    if (d < 0 || d >= dims) return {};
    in_group |= uint64_t{1} << d;
  }
  if (dims == 0) return {};
  std::vector<int64_t> stride(mesh_shape.size(), 1);
  for (int64_t d = dims - 2; d >= 0; --d) stride[d] = stride[d + 1] * mesh_shape[d + 1];
  if (rank < 0 || rank >= stride[0] * mesh_shape[0]) return {};
  // This rank with coordinate 0 on the group's dims, then every combination of them, the last
  // dim fastest: ascending ranks.
  int64_t base = rank;
  for (int64_t d = 0; d < dims; ++d)
    if (in_group >> d & 1) base -= (rank / stride[d] % mesh_shape[d]) * stride[d];
  std::vector<int64_t> group = {base};
  for (int64_t d = 0; d < dims; ++d) {
    if (!(in_group >> d & 1)) continue;
    std::vector<int64_t> next;
    next.reserve(group.size() * static_cast<size_t>(mesh_shape[d]));
    for (int64_t r : group)
      for (int64_t k = 0; k < mesh_shape[d]; ++k) next.push_back(r + k * stride[d]);
    group = std::move(next);
  }
  return group;
}

const SharedVec<int64_t>& FileContext::Group(const std::vector<int64_t>& mesh_dims) const {
  auto it = groups_.find(mesh_dims);
  if (it == groups_.end()) it = groups_.emplace(mesh_dims, MeshGroup(mesh_shape_, rank_, mesh_dims)).first;
  return it->second;
}

namespace {

// Copies field `i` of kBeginFields from `from`.
void CopyBeginField(int i, const RedistributeBegin& from, RedistributeBegin& to) {
  switch (i) {
    case 0:
      to.tensor = from.tensor;
      break;
    case 1:
      to.global_shape = from.global_shape;
      break;
    case 2:
      to.dtype = from.dtype;
      break;
    case 3:
      to.src_placements = from.src_placements;
      break;
    case 4:
      to.dst_placements = from.dst_placements;
      break;
    case 5:
      to.src_order = from.src_order;
      break;
    case 6:
      to.dst_order = from.dst_order;
      break;
    case 7:
      to.planner = from.planner;
      break;
    case 8:
      to.planner_reason = from.planner_reason;
      break;
    case 9:
      to.notation = from.notation;
      break;
    case 10:
      to.notation_unoptimized = from.notation_unoptimized;
      break;
    case 11:
      to.raw_plan = from.raw_plan;
      break;
    case 12:
      to.optimized_plan = from.optimized_plan;
      break;
    case 13:
      to.skipped_merges = from.skipped_merges;
      break;
    default:
      to.cost_us = from.cost_us;
      break;
  }
}

constexpr uint32_t Bit(std::string_view name) {
  for (int i = 0; i < kBeginFieldCount; ++i)
    if (kBeginFields[i] == name) return 1u << i;
  return 0;
}

// Without `like`, these have a default; every other field is required.
constexpr uint32_t kBeginDefaulted = Bit("src_order") | Bit("dst_order") | Bit("notation_unoptimized") |
                                     Bit("optimized_plan") | Bit("skipped_merges");

// The plan step a step_begin or collective refers to, or a message saying why there is none.
const PlanStep* StepOf(const FileContext& ctx, int64_t redistribute_id, int64_t step, std::string_view type,
                       std::string_view field, std::string& why) {
  const RedistributeBegin* begin = ctx.Begin(redistribute_id);
  const std::string prefix = std::string(type) + " leaves out '" + std::string(field) + "' but ";
  if (begin == nullptr) {
    why = prefix + "no redistribute_begin with id " + std::to_string(redistribute_id) +
          " comes before it in this file";
    return nullptr;
  }
  if (step < 0 || step >= static_cast<int64_t>(begin->optimized_plan.size())) {
    why = prefix + "step " + std::to_string(step) + " is not in redistribute " +
          std::to_string(redistribute_id) + "'s optimized_plan (" +
          std::to_string(begin->optimized_plan.size()) + " steps)";
    return nullptr;
  }
  return &begin->optimized_plan[static_cast<size_t>(step)];
}

std::vector<int64_t> ExpandUniform(const std::vector<int64_t>& group, int64_t count, int64_t rank) {
  std::vector<int64_t> out(group.size());
  for (size_t i = 0; i < group.size(); ++i) out[i] = group[i] == rank ? 0 : count;
  return out;
}

}  // namespace

std::string CompleteBegin(RedistributeBegin& e, uint32_t present, int64_t like, const FileContext& ctx) {
  if (like >= 0) {
    const RedistributeBegin* base = ctx.Begin(like);
    if (base == nullptr) {
      return "field 'like' is " + std::to_string(like) + " but no redistribute_begin with that id comes " +
             "before this line in this file";
    }
    for (int i = 0; i < kBeginFieldCount; ++i)
      if (!(present & (1u << i))) CopyBeginField(i, *base, e);
    return "";
  }
  for (int i = 0; i < kBeginFieldCount; ++i) {
    const uint32_t bit = 1u << i;
    if (!(present & bit) && !(kBeginDefaulted & bit))
      return "missing field '" + std::string(kBeginFields[i]) + "'";
  }
  if (!(present & Bit("optimized_plan"))) e.optimized_plan = e.raw_plan;
  if (!(present & Bit("notation_unoptimized"))) e.notation_unoptimized = e.notation;
  return "";
}

std::string CompleteStepBegin(StepBegin& e, uint32_t present, const FileContext& ctx) {
  if ((present & kStepAll) == kStepAll) return "";
  static constexpr std::string_view kNames[] = {"mesh_dims", "src", "dst", "comm", "logical_shape"};
  int first_absent = 0;
  while (present & (1u << first_absent)) ++first_absent;
  std::string why;
  const PlanStep* s = StepOf(ctx, e.redistribute_id, e.step, "step_begin", kNames[first_absent], why);
  if (s == nullptr) return why;
  if (!(present & kStepMeshDims)) e.mesh_dims = s->mesh_dims;
  if (!(present & kStepSrc)) e.src = s->src;
  if (!(present & kStepDst)) e.dst = s->dst;
  if (!(present & kStepComm)) e.comm = s->comm;
  if (!(present & kStepLogicalShape)) e.logical_shape = s->logical_shape;
  return "";
}

std::string CompleteCollective(Collective& e, uint32_t present, const FileContext& ctx) {
  std::string why;
  if (e.redistribute_id < 0) {  // an op's own collective has no plan to take fields from
    for (auto [bit, name] : {std::pair{kCollKind, "kind"},
                             {kCollMeshDims, "mesh_dims"},
                             {kCollDtype, "dtype"},
                             {kCollGroup, "group"}})
      if (!(present & bit)) return std::string("missing field '") + name + "'";
  }
  for (uint32_t bit : {kCollKind, kCollMeshDims}) {
    if (present & bit) continue;
    const PlanStep* s =
        StepOf(ctx, e.redistribute_id, e.step, "collective", bit == kCollKind ? "kind" : "mesh_dims", why);
    if (s == nullptr) return why;
    if (bit == kCollKind)
      e.kind = s->comm;
    else
      e.mesh_dims = s->mesh_dims;
  }
  if (!(present & kCollDtype)) {
    const RedistributeBegin* begin = ctx.Begin(e.redistribute_id);
    if (begin == nullptr) {
      return "collective leaves out 'dtype' but no redistribute_begin with id " +
             std::to_string(e.redistribute_id) + " comes before it in this file";
    }
    e.dtype = begin->dtype;
  }
  if (!(present & kCollGroup)) {
    e.group = ctx.Group(e.mesh_dims);
    if (e.group.empty())
      return "collective leaves out 'group' but its mesh dims are not all in the header's mesh";
  }
  if (!(present & kCollNegotiated)) e.negotiated = false;
  if (present & kCollUniformSent) e.bytes_sent = ExpandUniform(e.group, e.bytes_sent[0], ctx.rank());
  if (present & kCollUniformRecv) e.bytes_recv = ExpandUniform(e.group, e.bytes_recv[0], ctx.rank());
  return "";
}

bool UniformBytes(const std::vector<int64_t>& group, const std::vector<int64_t>& bytes, int64_t rank,
                  int64_t& count) {
  if (bytes.size() != group.size()) return false;
  count = 0;
  bool have = false;
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] == rank) {
      if (bytes[i] != 0) return false;
    } else if (!have) {
      count = bytes[i];
      have = true;
    } else if (bytes[i] != count) {
      return false;
    }
  }
  return true;
}

}  // namespace shardscope::trace::detail
