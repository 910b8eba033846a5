// `shardscope diff` of two runs read from profiler traces (docs/kineto.md, "Comparing two runs"):
// the mean ProfilerStep time, and per (process group, kind) the count, bytes and time of the
// collectives matched across ranks (AnalyzeKineto), so a collective added to every step reads as
// one line and not one per rank and occurrence.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "shardscope/text.hpp"
#include "shardscope/trace/kineto.hpp"
#include "shardscope/trace/kineto_diff.hpp"

namespace shardscope::trace {

namespace {

// Reported, but failing only with --fail-on time:N%, when no threshold was given.
constexpr double kDefaultTimeThresholdPct = 5.0;

struct KindTotals {
  int64_t count = 0, bytes = 0, time_ns = 0;
  int64_t first_step = -1;  // the step of the first one (-1 outside every step)
};

struct RunFigures {
  int64_t ranks = 0;
  int64_t steps = 0;                                                // distinct ProfilerStep numbers
  int64_t step_spans = 0;                                           // (rank, step) spans
  double step_mean_ns = 0;                                          // mean over (rank, step) spans
  std::map<std::pair<std::string, std::string>, KindTotals> kinds;  // (process group, kind)
};

RunFigures Figures(const Model& model) {
  RunFigures f;
  f.ranks = static_cast<int64_t>(model.ranks.size());
  std::map<int64_t, bool> steps;
  double sum = 0;
  for (const RankTrace& rt : model.ranks) {
    for (const Op& op : rt.events.Of<Op>()) {
      if (op.name.rfind("ProfilerStep#", 0) != 0) continue;
      steps[op.step] = true;
      sum += static_cast<double>(op.end_ns - op.t_ns);
      ++f.step_spans;
    }
  }
  f.steps = static_cast<int64_t>(steps.size());
  f.step_mean_ns = f.step_spans > 0 ? sum / static_cast<double>(f.step_spans) : 0.0;
  for (const KinetoCollective& c : AnalyzeKineto(model).collectives) {
    KindTotals& t = f.kinds[{c.process_group, c.kind}];
    if (t.count == 0) t.first_step = c.step;
    ++t.count;
    t.bytes += c.bytes;
    t.time_ns += c.time_ns;
  }
  return f;
}

std::string Us(double ns) { return Fixed(ns / 1000.0, 1) + " us"; }

std::string Change(double a, double b) {
  if (a <= 0) return "";
  const double pct = (b - a) / a * 100.0;
  return " (" + std::string(pct >= 0 ? "+" : "") + Fixed(pct, 1) + "%)";
}

std::string StepText(int64_t step) {
  return step >= 0 ? "step " + std::to_string(step) : "outside the steps";
}

}  // namespace

bool IsKinetoModel(const Model& model) {
  if (model.ranks.empty()) return false;
  return std::all_of(model.ranks.begin(), model.ranks.end(),
                     [](const RankTrace& rt) { return rt.header.backend == "kineto"; });
}

DiffResult DiffKineto(const Model& baseline, const Model& candidate, const DiffOptions& options) {
  DiffResult result;
  result.options = options;
  const RunFigures a = Figures(baseline), b = Figures(candidate);
  const double threshold = options.time_threshold_pct.value_or(kDefaultTimeThresholdPct);
  auto add = [&](DiffCategory category, std::string subject, std::string what, std::string base,
                 std::string cand, bool failing_if_selected = true) {
    Difference d;
    d.category = category;
    d.subject = std::move(subject);
    d.what = std::move(what);
    d.baseline = std::move(base);
    d.candidate = std::move(cand);
    d.failing = failing_if_selected && options.fail_on.count(category) > 0;
    result.differences.push_back(std::move(d));
  };
  // A time beyond the threshold either way is reported; only a slowdown fails, and only when a
  // threshold was given (--fail-on time:N%), as for the other traces' time.
  auto time = [&](std::string subject, std::string what, double x, double y) {
    if (x <= 0 || y <= 0 || std::fabs(y - x) / x * 100.0 <= threshold) return;
    add(DiffCategory::kTime, std::move(subject), std::move(what), Us(x), Us(y) + Change(x, y),
        options.time_threshold_pct.has_value() && y > x);
  };
  if (a.ranks != b.ranks)
    add(DiffCategory::kPlan, "run", "ranks", std::to_string(a.ranks), std::to_string(b.ranks));
  if (a.steps != b.steps)
    add(DiffCategory::kPlan, "run", "profiled steps", std::to_string(a.steps), std::to_string(b.steps));
  time("run", "step time (mean ProfilerStep)", a.step_mean_ns, b.step_mean_ns);
  std::map<std::pair<std::string, std::string>, bool> keys;
  for (const auto& [k, t] : a.kinds) keys[k] = true;
  for (const auto& [k, t] : b.kinds) keys[k] = true;
  for (const auto& [key, unused] : keys) {
    const auto& [pg, kind] = key;
    const std::string subject = "process group " + pg + " " + kind;
    auto ia = a.kinds.find(key);
    auto ib = b.kinds.find(key);
    if (ib == b.kinds.end()) {
      add(DiffCategory::kCollectives, subject, "removed",
          std::to_string(ia->second.count) + " collective(s) from " + StepText(ia->second.first_step), "");
      continue;
    }
    if (ia == a.kinds.end()) {
      add(DiffCategory::kCollectives, subject, "added", "",
          std::to_string(ib->second.count) + " collective(s) from " + StepText(ib->second.first_step));
      continue;
    }
    const KindTotals &x = ia->second, &y = ib->second;
    if (x.count != y.count)
      add(DiffCategory::kCollectives, subject, "count", std::to_string(x.count), std::to_string(y.count));
    if (x.bytes != y.bytes)
      add(DiffCategory::kBytes, subject, "bytes", std::to_string(x.bytes),
          std::to_string(y.bytes) + Change(static_cast<double>(x.bytes), static_cast<double>(y.bytes)));
    time(subject, "time", static_cast<double>(x.time_ns), static_cast<double>(y.time_ns));
  }
  return result;
}

std::string FormatKinetoRuns(const Model& baseline, const Model& candidate) {
  std::string out;
  for (const auto& [name, model] : {std::pair<const char*, const Model*>{"baseline", &baseline},
                                    std::pair<const char*, const Model*>{"candidate", &candidate}}) {
    const RunFigures f = Figures(*model);
    int64_t count = 0, bytes = 0, time_ns = 0;
    for (const auto& [k, t] : f.kinds) {
      count += t.count;
      bytes += t.bytes;
      time_ns += t.time_ns;
    }
    out += std::string(name) + (std::string(name) == "baseline" ? ":  " : ": ") + std::to_string(f.ranks) +
           " rank(s), " + std::to_string(f.steps) + " profiled step(s), step time " + Us(f.step_mean_ns) +
           "; " + std::to_string(count) + " collective(s), " + std::to_string(bytes) + " bytes, " +
           Us(static_cast<double>(time_ns)) + "\n";
  }
  return out;
}

}  // namespace shardscope::trace
