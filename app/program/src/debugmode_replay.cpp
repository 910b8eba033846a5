// Replays an imported dump's redistributes and computes its ops shardscope implements through the
// engine's scenario runner (local backend, seeded data, every result verified against the
// definition), then has debugmode_trace.cpp write the final trace.
#include "debugmode_replay.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>

#include "debugmode_trace.hpp"
#include "shardscope/error.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::program {
namespace {

namespace fs = std::filesystem;

std::string SpecKey(const engine::TensorSpec& s) {
  return engine::FormatShardOrderStr(s.placements, s.EffectiveOrder()) + "|" + engine::FormatShape(s.shape) +
         "|" + std::string(engine::DTypeName(s.dtype));
}

// Identical redistributes (a training loop repeats them) replay once, and so do identical ops.
std::string ReplayKey(const Replayable& r) {
  return SpecKey(r.src) + "|" + engine::FormatShardOrderStr(r.dst.placements, r.dst.EffectiveOrder()) +
         (r.options.internal_partial_target ? "|internal" : "");
}

std::string OpKey(const ComputableOp& op) {
  std::string key = std::string(engine::OpKindName(op.call.kind)) + "(" + op.call.ArgsText() + ")";
  char eps[40];
  std::snprintf(eps, sizeof eps, "eps=%.17g", op.call.eps);
  key += eps;
  for (const auto& in : op.inputs) key += ";" + (in ? SpecKey(*in) : std::string("-"));
  for (const auto& out : op.call.outputs) key += out.empty() ? ";-" : ";o";
  return key;
}

// The op's largest tensor and all its tensors, in elements.
std::pair<int64_t, int64_t> OpElements(const ComputableOp& op) {
  int64_t largest = 0, total = 0;
  auto add = [&](const engine::TensorSpec& s) {
    const int64_t n = engine::NumElements(s.shape);
    largest = std::max(largest, n);
    total = total > std::numeric_limits<int64_t>::max() - n ? std::numeric_limits<int64_t>::max() : total + n;
  };
  for (const auto& in : op.inputs) {
    if (in) add(*in);
  }
  for (const auto& out : op.outputs) add(out);
  return {largest, total};
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

// Adds `op` as one op step on freshly seeded inputs (names prefixed so ops stay apart).
void AddOp(program::Scenario& scenario, const ComputableOp& op, size_t k, uint64_t& seed,
           const engine::PlanOptions& plan_options) {
  const std::string prefix = "op" + std::to_string(k) + ".";
  engine::OpCall call = op.call;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (call.inputs[i].empty()) continue;
    call.inputs[i] = prefix + call.inputs[i];
    program::ScenarioTensor t;
    t.name = call.inputs[i];
    t.spec = *op.inputs[i];
    t.seed = seed++;
    scenario.tensors.push_back(std::move(t));
  }
  size_t o = 0;
  for (std::string& out : call.outputs) {
    if (out.empty()) continue;
    out = prefix + out;
    program::ScenarioTensor t;
    t.name = out;
    t.spec = op.outputs[o++];
    t.produced_by = static_cast<int64_t>(scenario.steps.size());
    scenario.tensors.push_back(std::move(t));
  }
  program::ScenarioStep s;
  s.op = std::move(call);
  s.options = plan_options;
  scenario.steps.push_back(std::move(s));
}

// Runs `items` (one tensor and one redistribute step each), then `ops` (one op step each on
// fresh inputs: no op needs an implicit redistribute, so redistribute ids stay the items'
// indexes and op ids the ops' indexes) as one scenario.
ReplayRun Run(const std::vector<const Replayable*>& items, const std::vector<const ComputableOp*>& ops,
              const engine::Mesh& mesh, const engine::PlanOptions& plan_options) {
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
    s.options = items[k]->options;
    scenario.steps.push_back(std::move(s));
  }
  uint64_t seed = items.size() + 1;
  for (size_t k = 0; k < ops.size(); ++k) AddOp(scenario, *ops[k], k, seed, plan_options);
  ReplayRun run;
  run.dir = TempDir();
  program::RunOptions options;
  options.trace_dir = run.dir;
  options.verify = true;
  try {
    program::RunReport report = program::RunScenario(scenario, options);
    run.seconds.assign(scenario.steps.size(), 0.0);
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

std::vector<size_t> Indexes(size_t n) {
  std::vector<size_t> all(n);
  for (size_t k = 0; k < n; ++k) all[k] = k;
  return all;
}

// The replay's element budget: per record, and over the distinct records run (every distinct
// tensor's global data is held during the run).
struct ReplayBudget {
  explicit ReplayBudget(int64_t per_record)
      : per_record(per_record),
        total(per_record > (int64_t{1} << 60) ? int64_t{1} << 62 : 4 * per_record),
        left(total) {}
  int64_t per_record, total, left;
};

// The distinct records of one kind (redistributes or ops), which record each stands for, and
// where each ran.
template <typename T>
struct Distinct {
  std::map<std::string, size_t> index;
  std::vector<const T*> unique;
  std::vector<int64_t> of;  ///< record -> unique index, -1 when not run
  std::vector<Where> where;
  std::vector<double> seconds;
  std::vector<std::string> failure;

  // Adds a record whose largest tensor has `largest` elements and all its tensors `elements`;
  // returns why it is not run ("" when it is).
  std::string Add(size_t record, const T& item, std::string key, int64_t largest, int64_t elements,
                  ReplayBudget& budget) {
    if (largest > budget.per_record) {
      return std::to_string(largest) + " elements exceed the replay limit of " +
             std::to_string(budget.per_record);
    }
    auto it = index.find(key);
    if (it == index.end()) {
      if (budget.left < elements) {
        return "the replay budget of " + std::to_string(budget.total) +
               " elements (4x --max-replay-elements) is spent";
      }
      budget.left -= elements;
      it = index.emplace(std::move(key), unique.size()).first;
      unique.push_back(&item);
      where.emplace_back(-1, -1);
      seconds.push_back(0.0);
      failure.emplace_back();
    }
    if (of.size() <= record) of.resize(record + 1, -1);
    of[record] = static_cast<int64_t>(it->second);
    return "";
  }
  void Ran(size_t u, int run, int64_t id, const std::vector<double>& step_seconds, size_t step) {
    where[u] = {run, id};
    seconds[u] = step < step_seconds.size() ? step_seconds[step] : 0.0;
  }
  // For every record added: failed(record, message) when its run failed, else
  // ran(record, where, seconds).
  template <typename Failed, typename Ran>
  void ForEachRecord(size_t records, Failed failed, Ran ran) const {
    for (size_t i = 0; i < records && i < of.size(); ++i) {
      if (of[i] < 0) continue;
      auto u = static_cast<size_t>(of[i]);
      if (!failure[u].empty()) {
        failed(i, failure[u]);
      } else {
        ran(i, where[u], seconds[u]);
      }
    }
  }
  int64_t Runs() const {
    return std::count_if(where.begin(), where.end(), [](const Where& w) { return w.first >= 0; });
  }
};

// Adds the distinct units to replay (redistributes, then ops), skipping tensors over the size
// limit: a redistribute left out gets a warning; an op says so in its reason (and its trace rule),
// not as a warning: it was judged.
void AddUnits(ImportResult& result, const std::vector<std::optional<Replayable>>& replays,
              const std::vector<const ComputableOp*>& ops, const ImportOptions& options,
              Distinct<Replayable>& redistributes, Distinct<ComputableOp>& computed) {
  ReplayBudget budget(options.max_replay_elements);
  for (size_t i = 0; i < replays.size(); ++i) {
    if (!replays[i]) continue;
    const int64_t elements = engine::NumElements(replays[i]->src.shape);
    std::string why = redistributes.Add(i, *replays[i], ReplayKey(*replays[i]), elements, elements, budget);
    if (!why.empty()) result.warnings.push_back({result.dump.redistributes[i].line, "not replayed: " + why});
  }
  std::map<const ComputableOp*, std::string> op_keys;  // repeated calls share one ComputableOp
  for (size_t j = 0; j < ops.size(); ++j) {
    if (!ops[j]) continue;
    std::string& key = op_keys[ops[j]];
    if (key.empty()) key = OpKey(*ops[j]);
    const auto [largest, elements] = OpElements(*ops[j]);
    std::string why = computed.Add(j, *ops[j], key, largest, elements, budget);
    if (!why.empty()) {
      std::string& reason = result.ops[j].reason;
      reason += (reason.empty() ? "" : "; ") + std::string("not computed: ") + why;
    }
  }
}

}  // namespace

void ReplayAndWriteTrace(ImportResult& result, const std::vector<std::optional<Replayable>>& replays,
                         const std::vector<const ComputableOp*>& ops, const ImportOptions& options) {
  // Distinct units (redistributes, then ops), skipping tensors over the size limit.
  Distinct<Replayable> redistributes;
  Distinct<ComputableOp> computed;
  AddUnits(result, replays, ops, options, redistributes, computed);
  // One run for all; when it fails, each distinct unit alone so a failure is pinned on the
  // record that caused it.
  std::vector<RunEvents> runs;
  auto collect = [&](ReplayRun& run, const std::vector<size_t>& items, const std::vector<size_t>& op_items) {
    RunEvents events = SplitEvents(run.model, options.mesh.size());
    for (size_t k = 0; k < items.size(); ++k)
      redistributes.Ran(items[k], static_cast<int>(runs.size()), static_cast<int64_t>(k), run.seconds, k);
    for (size_t k = 0; k < op_items.size(); ++k)
      computed.Ran(op_items[k], static_cast<int>(runs.size()), static_cast<int64_t>(k), run.seconds,
                   items.size() + k);
    runs.push_back(std::move(events));
  };
  auto start = std::chrono::steady_clock::now();
  if (!redistributes.unique.empty() || !computed.unique.empty()) {
    try {
      ReplayRun run = Run(redistributes.unique, computed.unique, options.mesh, options.plan);
      collect(run, Indexes(redistributes.unique.size()), Indexes(computed.unique.size()));
    } catch (const Error&) {
      for (size_t k = 0; k < redistributes.unique.size(); ++k) {
        try {
          ReplayRun run = Run({redistributes.unique[k]}, {}, options.mesh, options.plan);
          collect(run, {k}, {});
        } catch (const Error& e) {
          redistributes.failure[k] = e.what();
        }
      }
      for (size_t k = 0; k < computed.unique.size(); ++k) {
        try {
          ReplayRun run = Run({}, {computed.unique[k]}, options.mesh, options.plan);
          collect(run, {}, {k});
        } catch (const Error& e) {
          computed.failure[k] = e.what();
        }
      }
    }
  }
  result.replay_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.replays = redistributes.Runs();
  result.op_runs = computed.Runs();
  std::vector<Where> replay_of(replays.size(), {-1, -1});
  redistributes.ForEachRecord(
      replays.size(),
      [&](size_t i, const std::string& failure) {
        result.redistributes[i].verdict = trace::ImportVerdict::kNotReplayable;
        result.redistributes[i].reason = "the replay failed: " + failure;
      },
      [&](size_t i, const Where& where, double seconds) {
        replay_of[i] = where;
        result.redistributes[i].replayed = where.first >= 0;
        result.redistributes[i].seconds = seconds;
      });
  std::vector<Where> op_of(ops.size(), {-1, -1});
  computed.ForEachRecord(
      ops.size(),
      [&](size_t j, const std::string& failure) {
        result.ops[j].verdict = trace::ImportVerdict::kNotComputed;
        result.ops[j].reason = "the run failed: " + failure;
      },
      [&](size_t j, const Where& where, double) {
        op_of[j] = where;
        result.ops[j].computed = where.first >= 0;
      });
  WriteImportTrace(result, options, ops, runs, replay_of, op_of);
}

}  // namespace shardscope::program
