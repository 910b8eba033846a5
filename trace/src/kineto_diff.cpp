// `shardscope diff` of two runs read from profiler traces (docs/kineto.md, "Comparing two runs"):
// the mean ProfilerStep time, and per (process group, kind) the count, bytes and time of the
// collectives matched across ranks (AnalyzeKineto), so a collective added to every step reads as
// one line and not one per rank and occurrence.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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
      if (op.name().rfind("ProfilerStep#", 0) != 0) continue;
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

// Above this many cells (baseline x candidate collectives of one group and step) the alignment
// skips the longest common subsequence and pairs by kind in order (4M cells: 16 MB, well under 1 s).
constexpr int64_t kMaxAlignCells = int64_t{4} << 20;

// What must be equal for two collectives to be "the same": the kind and, for p2p, the ranks.
std::string Identity(const KinetoCollective& c) {
  std::string id = c.kind;
  if (c.p2p)
    for (const auto& [rank, t] : c.start_ns) id += " " + std::to_string(rank);
  return id;
}

bool Same(const KinetoCollective& a, const KinetoCollective& b) {
  return a.bytes == b.bytes && a.dtype == b.dtype && Identity(a) == Identity(b);
}

// One run's collectives per (step ordinal, process group), each list in launch order (the lowest
// rank's start, then p2p after collectives, then seq); the step numbers by ordinal.
struct Buckets {
  std::map<std::pair<int64_t, std::string>, std::vector<const KinetoCollective*>> lists;
  std::vector<int64_t> steps;
};

Buckets BucketsOf(const std::vector<KinetoCollective>& collectives) {
  Buckets b;
  std::set<int64_t> steps;
  for (const KinetoCollective& c : collectives)
    if (c.step >= 0) steps.insert(c.step);
  b.steps.assign(steps.begin(), steps.end());
  for (const KinetoCollective& c : collectives) {
    const int64_t ordinal =
        c.step < 0 ? -1 : std::lower_bound(b.steps.begin(), b.steps.end(), c.step) - b.steps.begin();
    b.lists[{ordinal, c.process_group}].push_back(&c);
  }
  auto start = [](const KinetoCollective* c) {
    return c->start_ns.empty() ? 0 : c->start_ns.begin()->second;
  };
  for (auto& [key, list] : b.lists)
    std::stable_sort(list.begin(), list.end(), [&](const KinetoCollective* x, const KinetoCollective* y) {
      return std::make_tuple(start(x), x->p2p, x->seq) < std::make_tuple(start(y), y->p2p, y->seq);
    });
  return b;
}

// Pairs (i, j) of a and b with Same(), a longest common subsequence, in order.
std::vector<std::pair<size_t, size_t>> CommonPairs(const std::vector<const KinetoCollective*>& a,
                                                   const std::vector<const KinetoCollective*>& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::pair<size_t, size_t>> out;
  if (n == 0 || m == 0 || static_cast<int64_t>(n) * static_cast<int64_t>(m) > kMaxAlignCells) return out;
  // Each collective's signature as a number: equal numbers are Same().
  std::map<std::tuple<std::string, int64_t, std::string>, uint32_t> ids;
  auto ids_of = [&](const std::vector<const KinetoCollective*>& list) {
    std::vector<uint32_t> out_ids;
    for (const KinetoCollective* c : list)
      out_ids.push_back(
          ids.emplace(std::make_tuple(Identity(*c), c->bytes, c->dtype), static_cast<uint32_t>(ids.size()))
              .first->second);
    return out_ids;
  };
  const std::vector<uint32_t> ia = ids_of(a), ib = ids_of(b);
  // len[i][j]: LCS of a[i..] and b[j..].
  std::vector<uint32_t> len((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return len[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) = ia[i] == ib[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  for (size_t i = 0, j = 0; i < n && j < m;) {
    if (ia[i] == ib[j]) {
      out.emplace_back(i++, j++);
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
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

bool KinetoCollectiveDiff::Failed() const {
  return std::any_of(changes.begin(), changes.end(),
                     [](const KinetoCollectiveChange& c) { return c.failing; });
}

KinetoCollectiveDiff DiffKinetoCollectives(const Model& baseline, const Model& candidate,
                                           const DiffOptions& options) {
  KinetoCollectiveDiff out;
  const std::vector<KinetoCollective> ca = AnalyzeKineto(baseline).collectives;
  const std::vector<KinetoCollective> cb = AnalyzeKineto(candidate).collectives;
  out.baseline = static_cast<int64_t>(ca.size());
  out.candidate = static_cast<int64_t>(cb.size());
  const Buckets ba = BucketsOf(ca), bb = BucketsOf(cb);
  std::set<std::pair<int64_t, std::string>> keys;
  for (const auto& [k, list] : ba.lists) keys.insert(k);
  for (const auto& [k, list] : bb.lists) keys.insert(k);
  static const std::vector<const KinetoCollective*> kNone;
  auto step_of = [](const Buckets& b, int64_t ordinal) {
    return ordinal >= 0 && ordinal < static_cast<int64_t>(b.steps.size())
               ? b.steps[static_cast<size_t>(ordinal)]
               : int64_t{-1};
  };
  for (const auto& key : keys) {
    auto ia = ba.lists.find(key), ib = bb.lists.find(key);
    const auto& a = ia != ba.lists.end() ? ia->second : kNone;
    const auto& b = ib != bb.lists.end() ? ib->second : kNone;
    auto emit = [&](const KinetoCollective* x, size_t i, const KinetoCollective* y, size_t j) {
      if (x != nullptr && y != nullptr && Same(*x, *y)) {
        ++out.same;
        return;
      }
      KinetoCollectiveChange c;
      c.change = x == nullptr ? "added" : y == nullptr ? "removed" : "changed";
      c.category = x != nullptr && y != nullptr && x->bytes != y->bytes ? DiffCategory::kBytes
                                                                        : DiffCategory::kCollectives;
      c.failing = options.fail_on.count(c.category) > 0;
      c.process_group = key.second;
      c.kind = (x != nullptr ? x : y)->kind;
      c.baseline_step = step_of(ba, key.first);
      c.candidate_step = step_of(bb, key.first);
      if (x != nullptr) {
        c.baseline_position = static_cast<int64_t>(i) + 1;
        c.baseline_seq = x->seq;
        c.baseline_bytes = x->bytes;
        c.baseline_dtype = x->dtype;
      }
      if (y != nullptr) {
        c.candidate_position = static_cast<int64_t>(j) + 1;
        c.candidate_seq = y->seq;
        c.candidate_bytes = y->bytes;
        c.candidate_dtype = y->dtype;
      }
      out.changes.push_back(std::move(c));
    };
    // Between two common pairs (and before the first, after the last), pair by kind in order.
    auto gap = [&](size_t i0, size_t i1, size_t j0, size_t j1) {
      constexpr size_t kUnpaired = SIZE_MAX;
      std::map<std::string, std::pair<std::vector<size_t>, size_t>> left;  // identity -> (indices, next)
      for (size_t j = j0; j < j1; ++j) left[Identity(*b[j])].first.push_back(j);
      std::vector<size_t> partner(i1 - i0, kUnpaired);
      std::vector<bool> taken(j1 - j0, false);
      for (size_t i = i0; i < i1; ++i) {
        auto it = left.find(Identity(*a[i]));
        if (it == left.end() || it->second.second == it->second.first.size()) continue;
        partner[i - i0] = it->second.first[it->second.second++];
        taken[partner[i - i0] - j0] = true;
      }
      // Walk both in order: an added one where it stands, a pair or a removed one at its baseline place.
      size_t j = j0;
      for (size_t i = i0; i < i1; ++i) {
        for (; j < j1 && !taken[j - j0]; ++j) emit(nullptr, 0, b[j], j);
        const size_t pj = partner[i - i0];
        emit(a[i], i, pj == kUnpaired ? nullptr : b[pj], pj == kUnpaired ? 0 : pj);
        if (pj == j) ++j;
      }
      for (; j < j1; ++j)
        if (!taken[j - j0]) emit(nullptr, 0, b[j], j);
    };
    size_t i = 0, j = 0;
    for (const auto& [pi, pj] : CommonPairs(a, b)) {
      gap(i, pi, j, pj);
      ++out.same;
      i = pi + 1;
      j = pj + 1;
    }
    gap(i, a.size(), j, b.size());
  }
  return out;
}

namespace {

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s;
}

// "2" when both runs say 2, "2->5" when they differ, "-" where one lacks it.
std::string Both(int64_t a, int64_t b, int64_t absent) {
  if (a == absent) return b == absent ? "-" : std::to_string(b);
  if (b == absent || a == b) return std::to_string(a);
  return std::to_string(a) + "->" + std::to_string(b);
}

std::string SizeText(int64_t bytes, const std::string& dtype) {
  if (bytes < 0) return "-";
  return std::to_string(bytes) + " B" + (dtype.empty() ? "" : " " + dtype);
}

}  // namespace

std::string FormatKinetoCollectiveDiff(const KinetoCollectiveDiff& diff, int64_t max_rows) {
  std::string out;
  int64_t added = 0, removed = 0, changed = 0, failing = 0;
  std::set<std::string> failing_categories;
  for (const KinetoCollectiveChange& c : diff.changes) {
    added += c.change == "added";
    removed += c.change == "removed";
    changed += c.change == "changed";
    if (c.failing) {
      ++failing;
      failing_categories.insert(std::string(DiffCategoryName(c.category)));
    }
  }
  if (!diff.changes.empty()) {
    out += Pad("change", 9) + Pad("category", 13) + Pad("group", 7) + Pad("step", 8) + Pad("#", 8) +
           Pad("kind", 16) + Pad("baseline", 24) + "candidate\n";
    int64_t rows = 0;
    for (const KinetoCollectiveChange& c : diff.changes) {
      if (rows++ == max_rows) {
        out += "(" + std::to_string(diff.changes.size() - static_cast<size_t>(max_rows)) +
               " more; --json lists every one)\n";
        break;
      }
      std::string line = Pad(c.change, 9) + Pad(std::string(DiffCategoryName(c.category)), 13) +
                         Pad(c.process_group, 7) + Pad(Both(c.baseline_step, c.candidate_step, -1), 8) +
                         Pad(Both(c.baseline_position, c.candidate_position, 0), 8) + Pad(c.kind, 16) +
                         Pad(SizeText(c.baseline_bytes, c.baseline_dtype), 24) +
                         SizeText(c.candidate_bytes, c.candidate_dtype);
      out += line + "\n";
    }
  }
  std::string cats;
  for (const std::string& c : failing_categories) cats += (cats.empty() ? "" : ", ") + c;
  out += "collectives one by one: " + std::to_string(diff.same) + " same, " + std::to_string(added) +
         " added, " + std::to_string(removed) + " removed, " + std::to_string(changed) + " changed" +
         (failing > 0 ? "; " + std::to_string(failing) + " failing (" + cats + ")" : std::string()) + "\n";
  return out;
}

nlohmann::json KinetoCollectiveDiffJson(const KinetoCollectiveDiff& diff) {
  using nlohmann::json;
  auto or_null = [](int64_t v, int64_t absent) { return v == absent ? json(nullptr) : json(v); };
  json changes = json::array();
  int64_t added = 0, removed = 0, changed = 0;
  for (const KinetoCollectiveChange& c : diff.changes) {
    added += c.change == "added";
    removed += c.change == "removed";
    changed += c.change == "changed";
    changes.push_back(
        {{"change", c.change},
         {"category", std::string(DiffCategoryName(c.category))},
         {"failing", c.failing},
         {"process_group", c.process_group},
         {"kind", c.kind},
         {"baseline_step", or_null(c.baseline_step, -1)},
         {"candidate_step", or_null(c.candidate_step, -1)},
         {"baseline_position", or_null(c.baseline_position, 0)},
         {"candidate_position", or_null(c.candidate_position, 0)},
         {"baseline_seq", or_null(c.baseline_seq, -1)},
         {"candidate_seq", or_null(c.candidate_seq, -1)},
         {"baseline_bytes", or_null(c.baseline_bytes, -1)},
         {"candidate_bytes", or_null(c.candidate_bytes, -1)},
         {"baseline_dtype", c.baseline_position > 0 ? json(c.baseline_dtype) : json(nullptr)},
         {"candidate_dtype", c.candidate_position > 0 ? json(c.candidate_dtype) : json(nullptr)}});
  }
  return {{"baseline", diff.baseline}, {"candidate", diff.candidate},
          {"same", diff.same},         {"added", added},
          {"removed", removed},        {"changed", changed},
          {"failed", diff.Failed()},   {"changes", changes}};
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
