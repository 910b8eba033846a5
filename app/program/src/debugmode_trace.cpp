// The trace of an imported DebugMode dump: the replay's redistribute and op events rearranged in
// dump order with PyTorch's recorded plans attached, the ops shardscope did not compute as records
// of what the dump shows, on one continuous clock per rank.
#include "debugmode_trace.hpp"

#include <algorithm>
#include <exception>
#include <thread>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::program {
namespace {

std::vector<std::string> Strings(const engine::Placements& placements) {
  std::vector<std::string> out;
  for (const auto& p : placements) out.push_back(p.ToString());
  return out;
}

std::string OrderText(const std::optional<engine::ShardOrder>& order) {
  return order && !engine::IsDefaultOrder(*order) ? engine::FormatShardOrder(*order) : "";
}

void Shift(trace::Event& event, int64_t delta) {
  std::visit(
      [delta](auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, trace::Collective>) {
          e.start_ns += delta;
          e.end_ns += delta;
        } else if constexpr (std::is_same_v<T, trace::Op>) {
          e.t_ns += delta;
          e.end_ns += delta;
        } else {
          e.t_ns += delta;
        }
      },
      event);
}

int64_t LastTime(const trace::Event& event) {
  return std::visit(
      [](const auto& e) -> int64_t {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, trace::Collective> || std::is_same_v<T, trace::Op>) {
          return e.end_ns;
        } else {
          return e.t_ns;
        }
      },
      event);
}

int64_t RedistributeIdOf(const trace::Event& event) {
  return std::visit(
      [](const auto& e) -> int64_t {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, trace::RedistributeBegin> ||
                      std::is_same_v<T, trace::RedistributeEnd>) {
          return e.id;
        } else if constexpr (std::is_same_v<T, trace::Op>) {
          return -1;
        } else {
          return e.redistribute_id;
        }
      },
      event);
}

void SetRedistributeId(trace::Event& event, int64_t id) {
  std::visit(
      [id](auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, trace::RedistributeBegin> ||
                      std::is_same_v<T, trace::RedistributeEnd>) {
          e.id = id;
        } else if constexpr (!std::is_same_v<T, trace::Op>) {
          e.redistribute_id = id;
        }
      },
      event);
}

trace::ImportedPlan ImportedOf(const DumpRedistribute& r, const ImportedRedistribute& v) {
  trace::ImportedPlan p;
  p.source = "debugmode";
  p.line = r.line;
  p.notation = r.pytorch_trace.value_or("");
  for (const auto& c : r.collectives) p.collectives.push_back({c.kind, c.group_size, c.group_name});
  p.verdict = std::string(trace::ImportVerdictName(v.verdict));
  p.reason = v.reason;
  return p;
}

// A dump tensor's name: its DTensor id ("dt$6"), else `unnamed` and its position ("arg 1", "out 0").
std::string NameOr(const DumpTensor& t, const char* unnamed, int64_t index) {
  return t.id.empty() ? unnamed + (" " + std::to_string(index)) : t.prefix + t.id;
}

// An op input or output record of dump tensor `t` (position `index`): its name and placements.
template <class Record>
Record Recorded(const DumpTensor& t, const char* unnamed, size_t index) {
  Record r;
  r.tensor = NameOr(t, unnamed, static_cast<int64_t>(index));
  r.placements = Strings(t.placements);
  return r;
}

std::string TensorName(const DumpRedistribute& r, const DebugModeDump& dump) {
  if (r.op >= 0 && r.input >= 0) {
    const DumpTensor& t = dump.ops[static_cast<size_t>(r.op)].inputs[static_cast<size_t>(r.input)];
    if (!t.id.empty()) return t.prefix + t.id;
    return dump.ops[static_cast<size_t>(r.op)].name + " arg " + std::to_string(r.arg_index);
  }
  return "line " + std::to_string(r.line);
}

// Writes every rank's file: ops and redistributes in dump order.
class TraceBuilder {
 public:
  TraceBuilder(ImportResult& result, const ImportOptions& options,
               const std::vector<const ComputableOp*>& ops, const std::vector<RunEvents>& runs,
               const std::vector<Where>& replay_of, const std::vector<Where>& op_of)
      : result_(result), options_(options), ops_(ops), runs_(runs), replay_of_(replay_of), op_of_(op_of) {}

  void Write() {
    const engine::Mesh& mesh = options_.mesh;
    const DebugModeDump& dump = result_.dump;
    // Emission order: a redistribute at its line; an op after its last redistribute (its op
    // event is written once it finished, as the engine's runner does).
    std::vector<std::pair<double, int64_t>> items;  // (key, index: >= 0 redistribute, < 0 op -1-j)
    for (size_t i = 0; i < dump.redistributes.size(); ++i)
      items.push_back({static_cast<double>(dump.redistributes[i].line), static_cast<int64_t>(i)});
    for (size_t j = 0; j < dump.ops.size(); ++j) {
      int64_t last = dump.ops[j].line;
      for (int64_t ri : dump.ops[j].redistributes)
        last = std::max(last, dump.redistributes[static_cast<size_t>(ri)].line);
      items.push_back({static_cast<double>(last) + 0.5, -1 - static_cast<int64_t>(j)});
    }
    std::stable_sort(items.begin(), items.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    // Trace ids: redistributes and ops numbered in emission order, the same on every rank.
    std::vector<int64_t> redistribute_id(dump.redistributes.size(), -1);
    std::vector<int64_t> op_id(dump.ops.size(), -1);
    int64_t next_r = 0, next_op = 0;
    for (const auto& [key, index] : items) {
      if (index >= 0) {
        if (Writable(static_cast<size_t>(index))) redistribute_id[static_cast<size_t>(index)] = next_r++;
      } else {
        op_id[static_cast<size_t>(-1 - index)] = next_op++;
      }
    }
    for (size_t i = 0; i < dump.redistributes.size(); ++i)
      result_.redistributes[i].trace_id = redistribute_id[i];
    for (size_t j = 0; j < dump.ops.size(); ++j) result_.ops[j].trace_id = op_id[j];
    std::vector<std::string> names = mesh.dim_names();
    if (names.empty()) names.assign(static_cast<size_t>(mesh.ndim()), "");
    // Ranks are independent files: encoding them is most of the import's time, so they are written
    // by up to hardware_concurrency threads. One clock start for all, so ranks line up: 0, since
    // the log records no times (its times then take a few digits fewer on every line than the
    // steady clock's, about 3% of the trace's bytes).
    const int64_t start = 0;
    auto write_rank = [&](int64_t rank) {
      // Format version 3: its compact forms (a repeated replay as one redistribute_repeat line with
      // its plan in part, `rule_number`, `linked`) are what keep the trace near the log's size; a
      // version-2 reader, which would ignore them, then refuses the file instead.
      trace::Header header = trace::MakeHeader(rank, mesh.size(), mesh.shape(), names, "local");
      header.version = trace::kCompactImportVersion;
      trace::Writer writer(options_.trace_dir, header);
      int64_t clock = start;
      for (const auto& [key, index] : items) {
        if (index >= 0) {
          auto i = static_cast<size_t>(index);
          if (redistribute_id[i] < 0) continue;
          const DumpRedistribute& r = dump.redistributes[i];
          int64_t linked_op = r.op >= 0 && r.input >= 0 ? op_id[static_cast<size_t>(r.op)] : -1;
          WriteRedistribute(writer, rank, i, redistribute_id[i], linked_op, clock);
        } else {
          WriteOp(writer, rank, static_cast<size_t>(-1 - index), op_id, redistribute_id, clock);
        }
      }
      writer.Close();
    };
    const int64_t threads =
        std::clamp<int64_t>(static_cast<int64_t>(std::thread::hardware_concurrency()), 1, mesh.size());
    std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        try {
          for (int64_t rank = t; rank < mesh.size(); rank += threads) write_rank(rank);
        } catch (...) {
          errors[static_cast<size_t>(t)] = std::current_exception();
        }
      });
    }
    for (auto& th : pool) th.join();
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  }

 private:
  bool Writable(size_t i) const {
    const DumpRedistribute& r = result_.dump.redistributes[i];
    auto n = static_cast<size_t>(options_.mesh.ndim());
    return r.src.size() == n && r.dst.size() == n;
  }

  bool Computed(size_t j) const { return result_.ops[j].computed && op_of_[j].first >= 0; }

  // The Op input index of a dump input: a computed op's are its call's inputs; an opaque op's
  // only its DTensor inputs with placements.
  int64_t TraceInput(size_t j, int64_t dump_input) const {
    if (Computed(j)) {
      const auto& map = ops_[j]->dump_inputs;
      auto it = std::find(map.begin(), map.end(), dump_input);
      return it == map.end() ? -1 : static_cast<int64_t>(it - map.begin());
    }
    const DumpOp& op = result_.dump.ops[j];
    int64_t k = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(op.inputs.size()); ++i) {
      bool kept =
          op.inputs[static_cast<size_t>(i)].IsDTensor() && op.inputs[static_cast<size_t>(i)].has_placements;
      if (i == dump_input) return kept ? k : -1;
      if (kept) ++k;
    }
    return -1;
  }

  void WriteRedistribute(trace::Writer& writer, int64_t rank, size_t i, int64_t id, int64_t linked_op,
                         int64_t& clock) {
    const DumpRedistribute& r = result_.dump.redistributes[i];
    const ImportedRedistribute& v = result_.redistributes[i];
    int64_t op_input = -1;
    if (linked_op >= 0) op_input = TraceInput(static_cast<size_t>(r.op), r.input);
    if (op_input < 0) linked_op = -1;
    const auto& [run, step] = replay_of_[i];
    if (run >= 0 && v.replayed) {
      const auto& events = runs_[static_cast<size_t>(run)].redistributes[static_cast<size_t>(rank)].at(step);
      int64_t delta = events.empty() ? 0 : clock - LastTime(events.front());
      for (trace::Event e : events) {
        SetRedistributeId(e, id);
        Shift(e, delta);
        if (auto* begin = std::get_if<trace::RedistributeBegin>(&e)) {
          begin->Mutable().tensor = TensorName(r, result_.dump);
          begin->op_id = linked_op;
          begin->op_input = linked_op >= 0 ? op_input : -1;
          begin->imported = ImportedOf(r, v);
        }
        clock = std::max(clock, LastTime(e));
        writer.Emit(e);
      }
      clock += 1000;
      return;
    }
    trace::RedistributeBegin b;
    b.id = id;
    b.Mutable().tensor = TensorName(r, result_.dump);
    b.Mutable().global_shape = r.global_shape;
    b.Mutable().dtype = r.dtype;
    b.Mutable().src_placements = Strings(r.src);
    b.Mutable().dst_placements = Strings(r.dst);
    b.Mutable().src_order = OrderText(r.src_order);
    b.Mutable().dst_order = OrderText(r.dst_order);
    b.Mutable().notation = v.shardscope_notation;
    b.t_ns = clock;
    b.op_id = linked_op;
    b.op_input = linked_op >= 0 ? op_input : -1;
    b.imported = ImportedOf(r, v);
    writer.Emit(b);
    trace::RedistributeEnd e;
    e.id = id;
    e.t_ns = clock;
    e.ok = false;
    e.error = "not replayed: " + (v.verdict == trace::ImportVerdict::kNotReplayable
                                      ? v.reason
                                      : std::string("see the import warnings"));
    writer.Emit(e);
    clock += 1000;
  }

  // The replayed op event of a computed op, renamed to the dump's tensors and linked to the
  // recorded redistributes that placed its inputs.
  void WriteComputedOp(trace::Writer& writer, int64_t rank, size_t j, int64_t id,
                       const std::vector<int64_t>& redistribute_id, int64_t& clock) {
    const DumpOp& op = result_.dump.ops[j];
    const ComputableOp& c = *ops_[j];
    const auto& [run, step] = op_of_[j];
    trace::Op e = runs_[static_cast<size_t>(run)].ops[static_cast<size_t>(rank)].at(step);
    const int64_t delta = clock - e.t_ns;
    e.t_ns += delta;
    e.end_ns += delta;
    e.id = id;
    e.step = id;
    for (size_t k = 0; k < e.inputs().size() && k < c.dump_inputs.size(); ++k) {
      const int64_t i = c.dump_inputs[k];
      if (i < 0) continue;
      const DumpTensor& t = op.inputs[static_cast<size_t>(i)];
      trace::OpInput& in = e.Mutable().inputs.Mutable()[k];  // the copy's own list (copied when shared)
      in.tensor = NameOr(t, "arg", static_cast<int64_t>(i));
      in.placements = Strings(t.placements);
      for (int64_t ri : op.redistributes) {
        const DumpRedistribute& r = result_.dump.redistributes[static_cast<size_t>(ri)];
        if (r.input == i && redistribute_id[static_cast<size_t>(ri)] >= 0 && in.redistribute_id < 0)
          in.redistribute_id = redistribute_id[static_cast<size_t>(ri)];
      }
    }
    std::vector<const DumpTensor*> named;
    for (const DumpTensor& t : op.outputs) {
      if (t.IsDTensor()) named.push_back(&t);
    }
    for (size_t o = 0; o < e.outputs().size(); ++o) {
      trace::OpOutput& out = e.Mutable().outputs.Mutable()[o];
      if (o >= c.call.outputs.size() || c.call.outputs[o].empty()) {
        out = trace::OpOutput{};  // computed but not an output of the aten op (layer_norm's mean, rstd)
        out.requested = false;
        continue;
      }
      if (!out.requested) continue;
      out.tensor =
          o < named.size() ? NameOr(*named[o], "out", static_cast<int64_t>(o)) : "out " + std::to_string(o);
    }
    const ImportedOp& v = result_.ops[j];
    // The dump's name and arguments, as for an opaque op; the rule says what computed it.
    const std::string computed_as = e.name() + (e.args().empty() ? "" : "(" + e.args() + ")");
    e.Mutable().name = op.name;
    e.Mutable().args = op.args;
    e.Mutable().rule = "recorded by PyTorch DebugMode (line " + std::to_string(op.line) +
                       (op.module.empty() ? "" : ", module " + op.module) + "); computed as " + computed_as +
                       ": " + e.rule();
    if (v.verdict == trace::ImportVerdict::kDiffers)
      e.Mutable().note = v.reason + (e.note().empty() ? "" : "; " + e.note());
    clock = std::max(clock, e.end_ns);
    writer.Emit(e);
    clock += 1000;
  }

  // The op's outputs as the dump records them (placements, global and this rank's local shape),
  // or, when it names none, the output placements of its strategy line.
  void RecordedOutputs(const DumpOp& op, int64_t rank, trace::Op& e, trace::OpStrategy& recorded) const {
    const engine::Mesh& mesh = options_.mesh;
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      const DumpTensor& t = op.outputs[o];
      if (!t.IsDTensor() || !t.has_placements) continue;
      auto out = Recorded<trace::OpOutput>(t, "out", o);
      out.global_shape = t.shape;
      out.local_shape = t.shape;
      try {
        engine::TensorSpec spec = engine::MakeSpec(mesh, t.placements, t.order, t.shape, engine::DType::kF32,
                                                   engine::ChunkRule::kTorch, {}, "output");
        out.local_shape = engine::ComputeRankLayout(spec, rank).local_shape;
      } catch (const Error&) {
      }
      recorded.outputs.push_back(out.placements);
      e.Mutable().outputs.push_back(std::move(out));
    }
    if (e.outputs().empty()) {
      for (size_t o = 0; o < op.output_placements.size(); ++o) {
        try {
          engine::Placements p =
              engine::ParsePlacementsWithOrder(op.output_placements[o], "output").placements;
          if (p.size() != static_cast<size_t>(mesh.ndim())) continue;
          trace::OpOutput out;
          out.tensor = "out " + std::to_string(o);
          out.placements = Strings(p);
          recorded.outputs.push_back(out.placements);
          e.Mutable().outputs.push_back(std::move(out));
        } catch (const Error&) {
        }
      }
    }
  }

  void WriteOp(trace::Writer& writer, int64_t rank, size_t j, const std::vector<int64_t>& op_id,
               const std::vector<int64_t>& redistribute_id, int64_t& clock) {
    if (Computed(j)) return WriteComputedOp(writer, rank, j, op_id[j], redistribute_id, clock);
    const DumpOp& op = result_.dump.ops[j];
    trace::Op e;
    e.id = op_id[j];
    e.step = e.id;
    e.Mutable().name = op.name;
    e.Mutable().args = op.args;
    trace::OpStrategy recorded;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const DumpTensor& t = op.inputs[i];
      if (!t.IsDTensor() || !t.has_placements) continue;
      auto in = Recorded<trace::OpInput>(t, "arg", i);
      in.required = in.placements;
      for (int64_t ri : op.redistributes) {
        const DumpRedistribute& r = result_.dump.redistributes[static_cast<size_t>(ri)];
        if (r.input != static_cast<int64_t>(i) || redistribute_id[static_cast<size_t>(ri)] < 0) continue;
        in.required = Strings(r.dst);
        if (in.redistribute_id < 0) in.redistribute_id = redistribute_id[static_cast<size_t>(ri)];
      }
      recorded.inputs.push_back(in.required);
      e.Mutable().inputs.push_back(std::move(in));
    }
    RecordedOutputs(op, rank, e, recorded);
    e.Mutable().candidates.push_back(std::move(recorded));
    e.Mutable().chosen = 0;
    // Op::note is reserved for "shardscope differs from PyTorch here"; the module goes in the rule.
    const ImportedOp& v = result_.ops[j];
    e.Mutable().rule = "recorded by PyTorch DebugMode (line " + std::to_string(op.line) +
                       (op.module.empty() ? "" : ", module " + op.module) + "); opaque: nothing computed" +
                       (v.verdict == trace::ImportVerdict::kOpaque ||
                                v.verdict == trace::ImportVerdict::kDiffers || v.reason.empty()
                            ? ""
                            : " (" + v.reason + ")");
    if (v.verdict == trace::ImportVerdict::kDiffers) e.Mutable().note = v.reason;
    e.t_ns = clock;
    e.end_ns = clock;
    writer.Emit(e);
    clock += 1000;
  }

  ImportResult& result_;
  const ImportOptions& options_;
  const std::vector<const ComputableOp*>& ops_;
  const std::vector<RunEvents>& runs_;
  const std::vector<Where>& replay_of_;
  const std::vector<Where>& op_of_;
};

}  // namespace

RunEvents SplitEvents(trace::Model& model, int64_t ranks) {
  RunEvents out;
  out.redistributes.resize(static_cast<size_t>(ranks));
  out.ops.resize(static_cast<size_t>(ranks));
  for (auto& rank : model.ranks) {
    if (rank.header.rank < 0 || rank.header.rank >= ranks) continue;
    auto r = static_cast<size_t>(rank.header.rank);
    for (trace::Event e : rank.events) {
      if (auto* op = std::get_if<trace::Op>(&e)) {
        out.ops[r][op->id] = std::move(*op);
        continue;
      }
      int64_t id = RedistributeIdOf(e);
      if (id >= 0) out.redistributes[r][id].push_back(std::move(e));
    }
  }
  return out;
}

void WriteImportTrace(ImportResult& result, const ImportOptions& options,
                      const std::vector<const ComputableOp*>& ops, const std::vector<RunEvents>& runs,
                      const std::vector<Where>& replay_of, const std::vector<Where>& op_of) {
  TraceBuilder(result, options, ops, runs, replay_of, op_of).Write();
}

}  // namespace shardscope::program
