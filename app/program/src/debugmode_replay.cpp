// Replays an imported dump's redistributes through the engine's scenario runner (local backend,
// seeded data, every result verified against the definition), then writes the final trace: the
// dump's ops as opaque op events and each redistribute's replayed events with PyTorch's recorded
// plan attached, in dump order, on one continuous clock per rank.
#include "debugmode_replay.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <thread>

#include "debugmode_internal.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/error.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::program {
namespace {

namespace fs = std::filesystem;

// Identical redistributes (a training loop repeats them) replay once.
std::string ReplayKey(const Replayable& r) {
  return engine::FormatShardOrderStr(r.src.placements, r.src.EffectiveOrder()) + "|" +
         engine::FormatShardOrderStr(r.dst.placements, r.dst.EffectiveOrder()) + "|" +
         engine::FormatShape(r.src.shape) + "|" + std::string(engine::DTypeName(r.src.dtype));
}

fs::path TempDir() {
  static std::atomic<int> counter{0};
  return fs::temp_directory_path() /
         ("shardscope-import-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
}

struct ReplayRun {
  fs::path dir;
  trace::Model model;
  std::vector<double> seconds;  ///< per step
};

// Runs `items` as one scenario (one tensor and one redistribute step each).
ReplayRun Run(const std::vector<const Replayable*>& items, const engine::Mesh& mesh,
              const engine::PlanOptions& plan_options) {
  program::Scenario scenario;
  scenario.path = "<debugmode import>";
  scenario.mesh = mesh;
  for (size_t k = 0; k < items.size(); ++k) {
    program::ScenarioTensor t;
    t.name = "r" + std::to_string(k);
    t.spec = items[k]->src;
    t.seed = k + 1;
    scenario.tensors.push_back(std::move(t));
    program::ScenarioStep s;
    s.tensor = scenario.tensors.back().name;
    s.to = items[k]->dst.placements;
    s.order = items[k]->dst.shard_order;
    s.options = plan_options;
    scenario.steps.push_back(std::move(s));
  }
  ReplayRun run;
  run.dir = TempDir();
  program::RunOptions options;
  options.trace_dir = run.dir;
  options.verify = true;
  try {
    program::RunReport report = program::RunScenario(scenario, options);
    run.seconds.assign(items.size(), 0.0);
    for (const auto& s : report.steps) {
      if (s.step < run.seconds.size()) run.seconds[s.step] = s.seconds;
    }
    run.model = trace::ReadTraceDir(run.dir);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(run.dir, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(run.dir, ec);
  return run;
}

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
  p.verdict = v.verdict;
  p.reason = v.reason;
  return p;
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
               const std::vector<std::vector<std::map<int64_t, std::vector<trace::Event>>>>& runs,
               const std::vector<std::pair<int, int64_t>>& replay_of)
      : result_(result), options_(options), runs_(runs), replay_of_(replay_of) {}

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
    std::vector<std::string> names = mesh.dim_names();
    if (names.empty()) names.assign(static_cast<size_t>(mesh.ndim()), "");
    // Ranks are independent files: encoding them is most of the import's time, so they are written
    // by up to hardware_concurrency threads. One clock start for all, so ranks line up.
    const int64_t start = trace::NowNs();
    auto write_rank = [&](int64_t rank) {
      trace::Writer writer(options_.trace_dir,
                           trace::MakeHeader(rank, mesh.size(), mesh.shape(), names, "local"));
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

  // The Op input index of a dump input: only DTensor inputs with placements are op inputs.
  static int64_t TraceInput(const DumpOp& op, int64_t dump_input) {
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
    if (linked_op >= 0) op_input = TraceInput(result_.dump.ops[static_cast<size_t>(r.op)], r.input);
    if (op_input < 0) linked_op = -1;
    const auto& [run, step] = replay_of_[i];
    if (run >= 0 && v.replayed) {
      const auto& events = runs_[static_cast<size_t>(run)][static_cast<size_t>(rank)].at(step);
      int64_t delta = events.empty() ? 0 : clock - LastTime(events.front());
      for (trace::Event e : events) {
        SetRedistributeId(e, id);
        Shift(e, delta);
        if (auto* begin = std::get_if<trace::RedistributeBegin>(&e)) {
          begin->tensor = TensorName(r, result_.dump);
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
    b.tensor = TensorName(r, result_.dump);
    b.global_shape = r.global_shape;
    b.dtype = r.dtype;
    b.src_placements = Strings(r.src);
    b.dst_placements = Strings(r.dst);
    b.src_order = OrderText(r.src_order);
    b.dst_order = OrderText(r.dst_order);
    b.notation = v.shardscope_notation;
    b.t_ns = clock;
    b.op_id = linked_op;
    b.op_input = linked_op >= 0 ? op_input : -1;
    b.imported = ImportedOf(r, v);
    writer.Emit(b);
    trace::RedistributeEnd e;
    e.id = id;
    e.t_ns = clock;
    e.ok = false;
    e.error = "not replayed: " +
              (v.verdict == "not_replayable" ? v.reason : std::string("see the import warnings"));
    writer.Emit(e);
    clock += 1000;
  }

  void WriteOp(trace::Writer& writer, int64_t rank, size_t j, const std::vector<int64_t>& op_id,
               const std::vector<int64_t>& redistribute_id, int64_t& clock) {
    const DumpOp& op = result_.dump.ops[j];
    const engine::Mesh& mesh = options_.mesh;
    trace::Op e;
    e.id = op_id[j];
    e.step = e.id;
    e.name = op.name;
    e.args = op.args;
    trace::OpStrategy recorded;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const DumpTensor& t = op.inputs[i];
      if (!t.IsDTensor() || !t.has_placements) continue;
      trace::OpInput in;
      in.tensor = t.id.empty() ? "arg " + std::to_string(i) : t.prefix + t.id;
      in.placements = Strings(t.placements);
      in.required = in.placements;
      for (int64_t ri : op.redistributes) {
        const DumpRedistribute& r = result_.dump.redistributes[static_cast<size_t>(ri)];
        if (r.input != static_cast<int64_t>(i) || redistribute_id[static_cast<size_t>(ri)] < 0) continue;
        in.required = Strings(r.dst);
        if (in.redistribute_id < 0) in.redistribute_id = redistribute_id[static_cast<size_t>(ri)];
      }
      recorded.inputs.push_back(in.required);
      e.inputs.push_back(std::move(in));
    }
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      const DumpTensor& t = op.outputs[o];
      if (!t.IsDTensor() || !t.has_placements) continue;
      trace::OpOutput out;
      out.tensor = t.id.empty() ? "out " + std::to_string(o) : t.prefix + t.id;
      out.placements = Strings(t.placements);
      out.global_shape = t.shape;
      out.local_shape = t.shape;
      try {
        engine::TensorSpec spec = engine::MakeSpec(mesh, t.placements, t.order, t.shape, engine::DType::kF32,
                                                   engine::ChunkRule::kTorch, {}, "output");
        out.local_shape = engine::ComputeRankLayout(spec, rank).local_shape;
      } catch (const Error&) {
      }
      recorded.outputs.push_back(out.placements);
      e.outputs.push_back(std::move(out));
    }
    if (e.outputs.empty()) {
      for (size_t o = 0; o < op.output_placements.size(); ++o) {
        try {
          engine::Placements p =
              engine::ParsePlacementsWithOrder(op.output_placements[o], "output").placements;
          if (p.size() != static_cast<size_t>(mesh.ndim())) continue;
          trace::OpOutput out;
          out.tensor = "out " + std::to_string(o);
          out.placements = Strings(p);
          recorded.outputs.push_back(out.placements);
          e.outputs.push_back(std::move(out));
        } catch (const Error&) {
        }
      }
    }
    e.candidates.push_back(std::move(recorded));
    e.chosen = 0;
    // Op::note is reserved for "shardscope differs from PyTorch here"; the module goes in the rule.
    e.rule = "recorded by PyTorch DebugMode (line " + std::to_string(op.line) +
             (op.module.empty() ? "" : ", module " + op.module) + "); opaque: nothing computed";
    e.t_ns = clock;
    e.end_ns = clock;
    writer.Emit(e);
    clock += 1000;
  }

  ImportResult& result_;
  const ImportOptions& options_;
  const std::vector<std::vector<std::map<int64_t, std::vector<trace::Event>>>>& runs_;
  const std::vector<std::pair<int, int64_t>>& replay_of_;
};

}  // namespace

void ReplayAndWriteTrace(ImportResult& result, const std::vector<std::optional<Replayable>>& replays,
                         const ImportOptions& options) {
  // Distinct replays, skipping tensors over the size limit.
  std::map<std::string, size_t> unique_index;
  std::vector<const Replayable*> unique;
  std::vector<int64_t> unique_of(replays.size(), -1);
  const int64_t total_budget =
      options.max_replay_elements > (int64_t{1} << 60) ? int64_t{1} << 62 : 4 * options.max_replay_elements;
  int64_t budget = total_budget;
  for (size_t i = 0; i < replays.size(); ++i) {
    if (!replays[i]) continue;
    int64_t elements = engine::NumElements(replays[i]->src.shape);
    if (elements > options.max_replay_elements) {
      result.warnings.push_back(
          {result.dump.redistributes[i].line, "not replayed: " + std::to_string(elements) +
                                                  " elements exceed the replay limit of " +
                                                  std::to_string(options.max_replay_elements)});
      continue;
    }
    std::string key = ReplayKey(*replays[i]);
    auto it = unique_index.find(key);
    if (it == unique_index.end()) {
      // Every distinct tensor's global data is held during the run: bound their sum too.
      if (budget < elements) {
        result.warnings.push_back({result.dump.redistributes[i].line,
                                   "not replayed: the replay budget of " + std::to_string(total_budget) +
                                       " elements (4x --max-replay-elements) is spent"});
        continue;
      }
      budget -= elements;
      it = unique_index.emplace(std::move(key), unique.size()).first;
      unique.push_back(&*replays[i]);
    }
    unique_of[i] = static_cast<int64_t>(it->second);
  }
  // One run for all; when it fails, each distinct redistribute alone so a failure is pinned on
  // the record that caused it.
  std::vector<std::vector<std::map<int64_t, std::vector<trace::Event>>>> runs;  // run -> rank -> id -> events
  std::vector<std::pair<int, int64_t>> where(unique.size(), {-1, -1});          // unique -> (run, id)
  std::vector<double> seconds(unique.size(), 0.0);
  std::vector<std::string> failure(unique.size());
  auto collect = [&](ReplayRun& run, const std::vector<size_t>& members) {
    std::vector<std::map<int64_t, std::vector<trace::Event>>> per_rank(
        static_cast<size_t>(options.mesh.size()));
    for (auto& rank : run.model.ranks) {
      if (rank.header.rank < 0 || rank.header.rank >= options.mesh.size()) continue;
      auto& by_id = per_rank[static_cast<size_t>(rank.header.rank)];
      for (trace::Event e : rank.events) {
        int64_t id = RedistributeIdOf(e);
        if (id >= 0) by_id[id].push_back(std::move(e));
      }
    }
    for (size_t k = 0; k < members.size(); ++k) {
      where[members[k]] = {static_cast<int>(runs.size()), static_cast<int64_t>(k)};
      seconds[members[k]] = k < run.seconds.size() ? run.seconds[k] : 0.0;
    }
    runs.push_back(std::move(per_rank));
  };
  auto start = std::chrono::steady_clock::now();
  if (!unique.empty()) {
    std::vector<size_t> all(unique.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    try {
      ReplayRun run = Run(unique, options.mesh, options.plan);
      collect(run, all);
    } catch (const Error&) {
      for (size_t k = 0; k < unique.size(); ++k) {
        try {
          ReplayRun run = Run({unique[k]}, options.mesh, options.plan);
          collect(run, {k});
        } catch (const Error& e) {
          failure[k] = e.what();
        }
      }
    }
  }
  result.replay_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.replays = 0;
  for (const auto& w : where) result.replays += w.first >= 0 ? 1 : 0;
  std::vector<std::pair<int, int64_t>> replay_of(replays.size(), {-1, -1});
  for (size_t i = 0; i < replays.size(); ++i) {
    if (unique_of[i] < 0) continue;
    auto u = static_cast<size_t>(unique_of[i]);
    ImportedRedistribute& v = result.redistributes[i];
    if (!failure[u].empty()) {
      v.verdict = "not_replayable";
      v.reason = "the replay failed: " + failure[u];
      continue;
    }
    replay_of[i] = where[u];
    v.replayed = where[u].first >= 0;
    v.seconds = seconds[u];
  }
  TraceBuilder(result, options, runs, replay_of).Write();
}

}  // namespace shardscope::program
