// One op on one rank: implicit redistributes, halo exchange, local kernel, trace event.
#include "shardscope/engine/ops/op_executor.hpp"

#include <algorithm>

#include "exec/trace_records.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::engine {
namespace {

using detail::PlacementStrings;

// No placements (an absent input or unrequested output): an empty list.
std::vector<std::string> PlacementStrings(const std::optional<Placements>& placements) {
  return placements ? detail::PlacementStrings(*placements) : std::vector<std::string>{};
}

// The single interval a plain (non-strided) shard holds along `dim`.
Interval RangeAlong(const RankLayout& layout, int64_t dim) {
  const IndexSet& set = layout.indices[static_cast<size_t>(dim)];
  if (set.empty()) return {0, 0};
  return {set.front().begin, set.back().end};
}

Interval Clip(Interval a, Interval b) {
  Interval c{std::max(a.begin, b.begin), std::min(a.end, b.end)};
  if (c.end < c.begin) c.end = c.begin;
  return c;
}

// A box of every position of `shape` except `dim`, where it takes [begin, end).
Box SliceBox(const Shape& shape, int64_t dim, Interval positions) {
  Box box = FullBox(shape);
  box.dims[static_cast<size_t>(dim)] = positions.size() > 0 ? IndexSet{positions} : IndexSet{};
  return box;
}

// `x` with `h` zeros added on both sides of `dim` (conv's zero padding, and the window a rank's
// halo is received into).
LocalTensor PadAlong(const LocalTensor& x, int64_t dim, int64_t h) {
  Shape padded_shape = x.shape();
  padded_shape[static_cast<size_t>(dim)] += 2 * h;
  LocalTensor padded(padded_shape, x.dtype());  // zero-filled
  const int64_t stride = RowMajorStrides(x.shape())[static_cast<size_t>(dim)] * DTypeSize(x.dtype());
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape()[static_cast<size_t>(d)];
  const int64_t row = x.shape()[static_cast<size_t>(dim)] * stride;
  const int64_t padded_row = padded_shape[static_cast<size_t>(dim)] * stride;
  for (int64_t o = 0; o < outer; ++o)
    std::copy_n(x.data() + o * row, row, padded.data() + o * padded_row + h * stride);
  return padded;
}

// conv on a spatially sharded tensor: fetches the halo the kernel needs from the ranks that
// hold it (over every mesh dim that shards the conv dim, so uneven and empty shards and halos
// wider than a neighbour's shard are exact) and returns this rank's shard padded by `h` on both
// sides of `dim` (zeros beyond the tensor's edge).
LocalTensor HaloExchange(Communicator& comm, int64_t rank, const OpCall& call, const OpDecision& decision,
                         const TensorSpec& spec, const LocalTensor& local, const OpExecuteOptions& options) {
  const auto nd = static_cast<int64_t>(spec.shape.size());
  const int64_t dim = call.dim < 0 ? call.dim + nd : call.dim;
  const int64_t h = ConvHalo(call);
  Group group;
  group.ranks = spec.mesh.Group(rank, decision.halo_mesh_dims);
  group.mesh_dims = decision.halo_mesh_dims;
  const size_t n = group.ranks.size();
  std::vector<Interval> owned(n);
  size_t me = 0;
  for (size_t j = 0; j < n; ++j) {
    owned[j] = RangeAlong(ComputeRankLayout(spec, group.ranks[j]), dim);
    if (group.ranks[j] == rank) me = j;
  }
  const Interval mine = owned[me];
  // What member j needs from outside its own range: the h elements on each side (none when
  // its shard is empty, as its output is empty too).
  auto needs = [&](size_t j) {
    const Interval r = owned[j];
    if (r.size() == 0) return std::vector<Interval>{};
    return std::vector<Interval>{{r.begin - h, r.begin}, {r.end, r.end + h}};
  };
  // Own data in the middle of the window (a local copy); the halos are received around it. An
  // empty shard needs nothing and gets an empty window.
  LocalTensor padded = mine.size() > 0 ? PadAlong(local, dim, h) : local;
  const Shape padded_shape = padded.shape();
  std::vector<SendView> send;
  std::vector<RecvView> recv;
  for (size_t j = 0; j < n; ++j) {
    Interval out_piece{0, 0};  // what I send to j, in my global indices
    Interval in_piece{0, 0};   // what I receive from j, in global indices
    if (j != me) {
      for (const Interval& want : needs(j)) {
        const Interval c = Clip(want, mine);
        if (c.size() > 0) out_piece = c;
      }
      for (const Interval& want : needs(me)) {
        const Interval c = Clip(want, owned[j]);
        if (c.size() > 0) in_piece = c;
      }
    }
    send.push_back(ViewOf(
        local, SliceBox(local.shape(), dim, {out_piece.begin - mine.begin, out_piece.end - mine.begin})));
    const int64_t window_begin = mine.begin - h;
    recv.push_back(MutableViewOf(
        padded, SliceBox(padded_shape, dim, {in_piece.begin - window_begin, in_piece.end - window_begin})));
  }
  CollectiveStats stats = comm.AllToAllV(group, std::move(send), std::move(recv));
  if (options.collectives) options.collectives->push_back({0, group, stats, false, true});
  if (options.trace) {
    trace::Collective e;
    e.redistribute_id = -1;
    e.op_id = options.op_id;
    trace::CollectiveShape& shape = e.Mutable();
    shape.step = 0;
    shape.kind = "halo_exchange";
    for (int md : group.mesh_dims) shape.mesh_dims.push_back(md);
    shape.group = group.ranks;
    shape.dtype = std::string(DTypeName(local.dtype()));
    shape.bytes_sent = stats.bytes_sent;
    shape.bytes_recv = stats.bytes_recv;
    e.start_ns = stats.start_ns;
    e.end_ns = stats.end_ns;
    options.trace->Emit(std::move(e));
  }
  return padded;
}

}  // namespace

LocalTensor ConvGlobal(const OpCall& call, const LocalTensor& x) {
  const auto nd = static_cast<int64_t>(x.shape().size());
  const int64_t dim = call.dim < 0 ? call.dim + nd : call.dim;
  const LocalTensor padded = PadAlong(x, dim, ConvHalo(call));
  return *ComputeOp(call, {&padded})[0];
}

std::vector<std::optional<LocalTensor>> ComputeOpGlobal(const OpCall& call,
                                                        const std::vector<const LocalTensor*>& inputs) {
  if (call.kind == OpKind::kConv) return {ConvGlobal(call, *inputs[0])};
  return ComputeOp(call, inputs);
}

namespace {

// The op's trace event before it runs: the call, every candidate strategy, the choice and the
// inputs as given and as required.
trace::Op OpEvent(const OpCall& call, const OpDecision& decision,
                  const std::vector<const TensorSpec*>& input_specs, size_t num_inputs,
                  const OpExecuteOptions& options) {
  trace::Op event;
  event.id = options.op_id;
  event.step = options.step;
  event.Mutable().name = std::string(OpKindName(call.kind));
  event.Mutable().args = call.ArgsText();
  event.t_ns = trace::NowNs();
  const OpStrategy& chosen = decision.candidates[decision.chosen];
  for (const OpStrategy& c : decision.candidates) {
    trace::OpStrategy s;
    for (const auto& p : c.inputs) s.inputs.push_back(PlacementStrings(p));
    for (const auto& p : c.outputs) s.outputs.push_back(PlacementStrings(p));
    s.cost_us = c.cost_us;
    event.Mutable().candidates.push_back(std::move(s));
  }
  event.Mutable().chosen = static_cast<int64_t>(decision.chosen);
  event.Mutable().rule = decision.rule;
  event.Mutable().note = decision.note;
  for (size_t i = 0; i < num_inputs; ++i) {
    trace::OpInput in;
    in.tensor = i < call.inputs.size() ? call.inputs[i] : "";
    if (input_specs[i]) in.placements = PlacementStrings(input_specs[i]->placements);
    in.required = PlacementStrings(chosen.inputs[i]);
    event.Mutable().inputs.push_back(std::move(in));
  }
  return event;
}

// Implicit redistributes of inputs whose placements differ from the chosen strategy's: the
// inputs the kernel reads (redistributed ones held in `moved`); records each redistribute's id
// on its event input.
std::vector<const LocalTensor*> RedistributeInputs(Communicator& comm, int64_t rank,
                                                   const OpDecision& decision,
                                                   const std::vector<const TensorSpec*>& input_specs,
                                                   const std::vector<const LocalTensor*>& inputs,
                                                   const OpExecuteOptions& options, trace::Op& event,
                                                   std::vector<LocalTensor>& moved) {
  std::vector<const LocalTensor*> ready = inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!input_specs[i] || !decision.inputs[i]) continue;
    const TensorSpec& src = *input_specs[i];
    const TensorSpec& dst = *decision.inputs[i];
    if (src.placements == dst.placements) continue;
    // An op's strategy may ask for a Partial input: PyTorch runs that through its internal
    // redistribute, which the public API's Partial-target guard does not cover.
    PlanOptions plan_options = options.plan_options;
    plan_options.internal_partial_target = true;
    std::shared_ptr<const Plan> plan =
        options.cache ? options.cache->Get(src, dst, rank, plan_options)
                      : std::make_shared<const Plan>(MakePlan(src, dst, rank, plan_options));
    ExecuteOptions exec;
    exec.shapes = options.shapes;
    exec.trace = options.trace;
    exec.trace_id = options.next_redistribute_id ? (*options.next_redistribute_id)++ : 0;
    exec.tensor_name = event.inputs()[i].tensor;
    exec.checksums = options.checksums;
    exec.collectives = options.collectives;
    exec.op_id = options.op_id;
    exec.op_input = static_cast<int64_t>(i);
    event.Mutable().inputs.Mutable()[i].redistribute_id = exec.trace_id;
    moved[i] = Redistribute(comm, rank, *inputs[i], src, dst, *plan, exec);
    ready[i] = &moved[i];
  }
  return ready;
}

// The local kernel on the ready inputs (conv first fetches its halo).
std::vector<std::optional<LocalTensor>> RunKernel(Communicator& comm, int64_t rank, const OpCall& call,
                                                  const OpDecision& decision,
                                                  const std::vector<const LocalTensor*>& ready,
                                                  const OpExecuteOptions& options) {
  if (call.kind != OpKind::kConv) return ComputeOp(call, ready, decision.mean_divisor);
  if (decision.halo_mesh_dims.empty()) return {ConvGlobal(call, *ready[0])};  // the whole conv dim is local
  LocalTensor padded = HaloExchange(comm, rank, call, decision, *decision.inputs[0], *ready[0], options);
  const int64_t dim = call.dim < 0 ? call.dim + padded.ndim() : call.dim;
  if (padded.shape()[static_cast<size_t>(dim)] == 0) {  // an empty shard
    return {LocalTensor(ComputeRankLayout(*decision.outputs[0], rank).local_shape, padded.dtype())};
  }
  return ComputeOp(call, {&padded});
}

// The kernel's shapes must be the layouts the decision promised; unrequested outputs are
// dropped. Adds the outputs to the event.
void CheckOutputs(int64_t rank, const OpCall& call, const OpDecision& decision,
                  std::vector<std::optional<LocalTensor>>& outputs, trace::Op& event) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    trace::OpOutput out;
    out.tensor = o < call.outputs.size() ? call.outputs[o] : "";
    out.requested = decision.outputs[o].has_value();
    if (out.requested) {
      const Shape want = ComputeRankLayout(*decision.outputs[o], rank).local_shape;
      if (!outputs[o] || outputs[o]->shape() != want) {
        throw InternalError(event.name() + ": output " + std::to_string(o) + " on rank " +
                            std::to_string(rank) + " has shape " +
                            (outputs[o] ? FormatShape(outputs[o]->shape()) : "none") + " but its layout is " +
                            FormatShape(want));
      }
      out.placements = PlacementStrings(decision.outputs[o]->placements);
      out.global_shape = decision.outputs[o]->shape;
      out.local_shape = want;
    } else {
      outputs[o].reset();
      out.tensor.clear();
    }
    event.Mutable().outputs.push_back(std::move(out));
  }
}

}  // namespace

std::vector<std::optional<LocalTensor>> ExecuteOp(Communicator& comm, int64_t rank, const OpCall& call,
                                                  const OpDecision& decision,
                                                  const std::vector<const TensorSpec*>& input_specs,
                                                  const std::vector<const LocalTensor*>& inputs,
                                                  const OpExecuteOptions& options) {
  trace::Op event = OpEvent(call, decision, input_specs, inputs.size(), options);
  try {
    std::vector<LocalTensor> moved(inputs.size());
    std::vector<const LocalTensor*> ready =
        RedistributeInputs(comm, rank, decision, input_specs, inputs, options, event, moved);
    std::vector<std::optional<LocalTensor>> outputs = RunKernel(comm, rank, call, decision, ready, options);
    CheckOutputs(rank, call, decision, outputs, event);
    event.end_ns = trace::NowNs();
    if (options.trace) options.trace->Emit(std::move(event));
    return outputs;
  } catch (const Error& e) {
    if (options.trace) {
      event.Mutable().ok = false;
      event.Mutable().error = e.what();
      event.end_ns = trace::NowNs();
      options.trace->Emit(std::move(event));
    }
    throw;
  }
}

}  // namespace shardscope::engine
