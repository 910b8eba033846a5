#include "shardscope/trace/diff.hpp"

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdio>
#include <map>
#include <tuple>
#include <type_traits>

#include "collective_match.hpp"
#include "flight_groups.hpp"
#include "json_null.hpp"
#include "shardscope/error.hpp"
#include "shardscope/names.hpp"
#include "shardscope/printable.hpp"
#include "shardscope/text.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

std::string Micros(double us) { return Fixed(us, 2) + " us"; }

// One logical redistribute or op: the records of one id on every rank that ran it (rank order);
// the lowest rank's is the reference.
template <typename Record>
struct LogicalOf {
  int64_t id = 0;
  std::vector<const Record*> recs;
  const RedistributeBegin& Begin() const requires std::same_as<Record, RedistributeRecord> {
    return recs.front()->begin;
  }
  const Op& Ref() const requires std::same_as<Record, OpRecord> { return recs.front()->op; }
};
using Logical = LogicalOf<RedistributeRecord>;
using LogicalOp = LogicalOf<OpRecord>;

std::vector<Logical> Logicals(const Model& model) {
  std::vector<Logical> out;
  for (auto& [id, recs] : detail::RecordsById(model)) out.push_back({id, std::move(recs)});
  return out;
}

// Alignment key: what the redistribute is, not how it was planned.
std::string Signature(const RedistributeBegin& b) {
  return b.tensor() + "\x1f" + detail::FormatInts(b.global_shape()) + "\x1f" +
         detail::JoinComma(b.src_placements()) + "\x1f" + b.src_order() + "\x1f" +
         detail::JoinComma(b.dst_placements()) + "\x1f" + b.dst_order();
}

std::string Subject(const RedistributeBegin& b) {
  std::string s = (b.tensor().empty() ? "<anonymous>" : Printable(b.tensor())) + " " +
                  detail::FormatInts(b.global_shape()) + " " + detail::JoinComma(b.src_placements()) +
                  " -> " + detail::JoinComma(b.dst_placements());
  if (!b.src_order().empty() || !b.dst_order().empty())
    s += " (order '" + b.src_order() + "' -> '" + b.dst_order() + "')";
  return s;
}

// Longest common subsequence of two key lists, as index pairs in increasing order. Common prefix
// and suffix are matched first so identical runs cost O(n); a middle too large for the table
// falls back to a greedy in-order match.
std::vector<std::pair<size_t, size_t>> Align(const std::vector<std::string>& a,
                                             const std::vector<std::string>& b) {
  std::vector<std::pair<size_t, size_t>> head, tail;
  size_t lo = 0;
  while (lo < a.size() && lo < b.size() && a[lo] == b[lo]) {
    head.emplace_back(lo, lo);
    ++lo;
  }
  size_t ea = a.size(), eb = b.size();
  while (ea > lo && eb > lo && a[ea - 1] == b[eb - 1]) {
    tail.emplace_back(ea - 1, eb - 1);
    --ea;
    --eb;
  }
  const size_t n = ea - lo, m = eb - lo;
  std::vector<std::pair<size_t, size_t>> mid;
  constexpr size_t kMaxCells = size_t{16} << 20;
  if (n > 0 && m > 0 && (n + 1) * (m + 1) <= kMaxCells) {
    std::vector<uint32_t> t((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint32_t& { return t[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;) {
      for (size_t j = m; j-- > 0;) {
        at(i, j) = a[lo + i] == b[lo + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
      }
    }
    size_t i = 0, j = 0;
    while (i < n && j < m) {
      if (a[lo + i] == b[lo + j]) {
        mid.emplace_back(lo + i, lo + j);
        ++i;
        ++j;
      } else if (at(i + 1, j) >= at(i, j + 1)) {
        ++i;
      } else {
        ++j;
      }
    }
  } else if (n > 0 && m > 0) {
    size_t j = 0;
    for (size_t i = 0; i < n && j < m; ++i) {
      for (size_t k = j; k < m && k < j + 64; ++k) {
        if (a[lo + i] == b[lo + k]) {
          mid.emplace_back(lo + i, lo + k);
          j = k + 1;
          break;
        }
      }
    }
  }
  head.insert(head.end(), mid.begin(), mid.end());
  head.insert(head.end(), tail.rbegin(), tail.rend());
  return head;
}

std::string StepText(const PlanStep& s) {
  std::string t = s.src + "->" + s.dst + " on mesh dims " + detail::FormatInts(s.mesh_dims) + " " + s.comm +
                  " logical " + detail::FormatInts(s.logical_shape);
  if (s.flattened) t += " flattened";
  return t;
}

std::string SkippedText(const std::vector<SkippedMerge>& merges) {
  if (merges.empty()) return "none";
  std::string t;
  for (size_t i = 0; i < merges.size(); ++i) {
    t += (i ? "; " : "") + merges[i].comm + " on mesh dims " + detail::FormatInts(merges[i].mesh_dims) +
         ": " + merges[i].reason;
  }
  return t;
}

std::string Outcome(const RedistributeRecord& rec) {
  if (!rec.end) return "incomplete";
  return rec.end->ok ? "ok" : "failed: " + rec.end->error;
}

const RedistributeRecord* ForRank(const Logical& l, int64_t rank) {
  for (const RedistributeRecord* r : l.recs)
    if (r->rank == rank) return r;
  return nullptr;
}

std::vector<int64_t> RanksOf(const Logical& l) {
  std::vector<int64_t> out;
  for (const RedistributeRecord* r : l.recs) out.push_back(r->rank);
  return out;
}

std::string CollectiveKey(const Collective& c) {
  return c.kind() + " on mesh dims " + detail::FormatInts(c.mesh_dims()) +
         (c.negotiated() ? " (shape negotiation)" : "");
}

std::string ShardText(const std::vector<int64_t>& shape, const std::vector<int64_t>& offset) {
  return "shape " + detail::FormatInts(shape) + " offset " + detail::FormatInts(offset);
}

std::optional<std::string> ShardBefore(const RedistributeRecord& rec) {
  for (const StepRecord& s : rec.steps)
    if (s.begin->step == 0) return ShardText(s.begin->local_shape_before, s.begin->global_offset_before);
  return std::nullopt;
}

std::optional<std::string> ShardAfterStep(const RedistributeRecord& rec, int64_t step) {
  for (const StepRecord& s : rec.steps)
    if (s.begin->step == step && s.end)
      return ShardText(s.end->local_shape_after, s.end->global_offset_after);
  return std::nullopt;
}

std::optional<std::string> ShardAfter(const RedistributeRecord& rec) {
  const StepRecord* last = nullptr;
  for (const StepRecord& s : rec.steps)
    if (s.end && (last == nullptr || s.begin->step > last->begin->step)) last = &s;
  if (last == nullptr) return std::nullopt;
  return ShardText(last->end->local_shape_after, last->end->global_offset_after);
}

std::optional<int64_t> MaxDurationNs(const Logical& l) {
  std::optional<int64_t> out;
  for (const RedistributeRecord* r : l.recs) {
    if (!r->end) continue;
    int64_t ns = r->end->t_ns - r->begin->t_ns;
    if (!out || ns > *out) out = ns;
  }
  return out;
}

// ---- ops ----

std::vector<LogicalOp> LogicalOps(const Model& model) {
  std::vector<LogicalOp> out;
  for (int64_t id : model.OpIds()) out.push_back({id, model.OpsWithId(id)});
  return out;
}

std::string Concat(const std::vector<std::string>& placements) {
  return detail::ConcatPlacements(placements);
}

// Alignment key and subject of an op: what it is called on, not how it was sharded.
std::string OpSubject(const Op& op) { return detail::OpCallText(op); }

std::string StrategyText(const Op& op, int64_t index) { return detail::OpStrategyText(op, index); }

std::string OutputsText(const Op& op) {
  std::string out = detail::OpOutputsText(op);
  return out.empty() ? "none" : out;
}

std::string InputsText(const Op& op) {
  std::string out;
  for (size_t i = 0; i < op.inputs().size(); ++i)
    out += (i ? ", " : "") + Printable(op.inputs()[i].tensor) + ": " + Concat(op.inputs()[i].placements);
  return out.empty() ? "none" : out;
}

// The implicit redistributes an op caused (on its reference rank): which input, from and to.
std::string ImplicitText(const Op& op) {
  std::string out;
  for (const OpInput& in : op.inputs()) {
    if (in.redistribute_id < 0) continue;
    out += (out.empty() ? "" : ", ") + Printable(in.tensor) + " " + Concat(in.placements) + "->" +
           Concat(in.required);
  }
  return out.empty() ? "none" : out;
}

std::string OpOutcome(const Op& op) { return op.ok() ? "ok" : "failed: " + op.error(); }

std::string CostText(double us) { return std::isinf(us) ? std::string("inf") : Micros(us); }

class Differ {
 public:
  Differ(const DiffOptions& options, std::vector<Difference>& out) : options_(options), out_(out) {}

  void Add(DiffCategory category, std::string what, std::string baseline, std::string candidate) {
    Difference d;
    d.category = category;
    d.op = op_;
    d.baseline_id = baseline_id_;
    d.candidate_id = candidate_id_;
    d.subject = subject_;
    d.what = std::move(what);
    d.baseline = std::move(baseline);
    d.candidate = std::move(candidate);
    d.failing = options_.fail_on.count(category) > 0;
    out_.push_back(std::move(d));
  }

  void Run(const Model& b, const Model& c) {
    subject_ = "run";
    baseline_id_.reset();
    candidate_id_.reset();
    if (b.world != c.world)
      Add(DiffCategory::kPlan, "world", std::to_string(b.world), std::to_string(c.world));
    auto mesh = [](const Model& m) {
      return m.ranks.empty() ? std::string("[]") : detail::FormatInts(m.ranks.front().header.mesh_shape);
    };
    if (mesh(b) != mesh(c)) Add(DiffCategory::kPlan, "mesh", mesh(b), mesh(c));
  }

  void Unmatched(const Logical& l, bool baseline) {
    subject_ = Subject(l.Begin());
    baseline_id_.reset();
    candidate_id_.reset();
    (baseline ? baseline_id_ : candidate_id_) = l.id;
    if (baseline)
      Add(DiffCategory::kPlan, "removed", l.Begin().notation(), "");
    else
      Add(DiffCategory::kPlan, "added", "", l.Begin().notation());
  }

  void UnmatchedOp(const LogicalOp& l, bool baseline) {
    op_ = true;
    subject_ = OpSubject(l.Ref());
    baseline_id_.reset();
    candidate_id_.reset();
    (baseline ? baseline_id_ : candidate_id_) = l.id;
    std::string call = StrategyText(l.Ref(), l.Ref().chosen());
    if (baseline)
      Add(DiffCategory::kOps, "removed", call, "");
    else
      Add(DiffCategory::kOps, "added", "", call);
    op_ = false;
  }

  void CompareOp(const LogicalOp& lb, const LogicalOp& lc) {
    op_ = true;
    const Op& b = lb.Ref();
    const Op& c = lc.Ref();
    subject_ = OpSubject(b);
    baseline_id_ = lb.id;
    candidate_id_ = lc.id;
    if (b.args() != c.args()) Add(DiffCategory::kOps, "args", b.args(), c.args());
    std::string ib = InputsText(b), ic = InputsText(c);
    if (ib != ic) Add(DiffCategory::kOps, "input placements", ib, ic);
    std::string sb = StrategyText(b, b.chosen()), sc = StrategyText(c, c.chosen());
    if (sb != sc) Add(DiffCategory::kOps, "chosen strategy", sb, sc);
    std::string ob = OutputsText(b), oc = OutputsText(c);
    if (ob != oc) Add(DiffCategory::kOps, "outputs", ob, oc);
    std::string rb = ImplicitText(b), rc = ImplicitText(c);
    if (rb != rc) Add(DiffCategory::kOps, "implicit redistributes", rb, rc);
    if (b.candidates().size() != c.candidates().size()) {
      Add(DiffCategory::kOps, "candidates", std::to_string(b.candidates().size()),
          std::to_string(c.candidates().size()));
    }
    std::vector<int64_t> ranks_b, ranks_c;
    for (const OpRecord* r : lb.recs) ranks_b.push_back(r->rank);
    for (const OpRecord* r : lc.recs) ranks_c.push_back(r->rank);
    if (ranks_b != ranks_c)
      Add(DiffCategory::kOps, "ranks", detail::FormatInts(ranks_b), detail::FormatInts(ranks_c));
    for (const OpRecord* r : lb.recs) {
      for (const OpRecord* o : lc.recs) {
        if (o->rank != r->rank) continue;
        std::string xb = OpOutcome(r->op), xc = OpOutcome(o->op);
        if (xb != xc) Add(DiffCategory::kOps, "rank " + std::to_string(r->rank) + " outcome", xb, xc);
      }
    }
    if (options_.time_threshold_pct) CompareCandidateCosts(b, c);
    op_ = false;
  }

  void Compare(const Logical& b, const Logical& c) {
    subject_ = Subject(b.Begin());
    baseline_id_ = b.id;
    candidate_id_ = c.id;
    // Paired by place rather than signature: the placements (or orders) themselves changed.
    if (Signature(b.Begin()) != Signature(c.Begin())) {
      auto text = [](const RedistributeBegin& x) {
        // "from A to B": the difference line puts "->" between the two sides.
        std::string t =
            "from " + detail::JoinComma(x.src_placements()) + " to " + detail::JoinComma(x.dst_placements());
        if (!x.src_order().empty() || !x.dst_order().empty())
          t += " (order '" + x.src_order() + "' -> '" + x.dst_order() + "')";
        return t;
      };
      Add(DiffCategory::kPlan, "placements", text(b.Begin()), text(c.Begin()));
    }
    ComparePlan(b, c);
    CompareCost(b.Begin(), c.Begin());
    CompareCollectives(b, c);
    CompareBytes(b, c);
    CompareShapes(b, c);
    if (options_.time_threshold_pct) CompareTime(b, c);
  }

 private:
  void ComparePlan(const Logical& lb, const Logical& lc) {
    const RedistributeBegin& b = lb.Begin();
    const RedistributeBegin& c = lc.Begin();
    if (b.planner() != c.planner()) Add(DiffCategory::kPlan, "planner", b.planner(), c.planner());
    if (b.notation() != c.notation()) {
      Add(DiffCategory::kPlan, "notation", b.notation(), c.notation());
    } else {
      CompareSteps("optimized plan", b.optimized_plan(), c.optimized_plan());
    }
    if (b.notation_unoptimized() != c.notation_unoptimized()) {
      Add(DiffCategory::kPlan, "unoptimized notation", b.notation_unoptimized(), c.notation_unoptimized());
    } else {
      CompareSteps("raw plan", b.raw_plan(), c.raw_plan());
    }
    std::string sb = SkippedText(b.skipped_merges()), sc = SkippedText(c.skipped_merges());
    if (sb != sc) Add(DiffCategory::kPlan, "skipped merges", sb, sc);
    std::vector<int64_t> rb = RanksOf(lb), rc = RanksOf(lc);
    if (rb != rc) Add(DiffCategory::kPlan, "ranks", detail::FormatInts(rb), detail::FormatInts(rc));
    for (const RedistributeRecord* r : lb.recs) {
      const RedistributeRecord* o = ForRank(lc, r->rank);
      if (o == nullptr) continue;
      std::string ob = Outcome(*r), oc = Outcome(*o);
      if (ob != oc) Add(DiffCategory::kPlan, "rank " + std::to_string(r->rank) + " outcome", ob, oc);
    }
  }

  void CompareSteps(const std::string& what, const std::vector<PlanStep>& b, const std::vector<PlanStep>& c) {
    if (b.size() != c.size()) {
      Add(DiffCategory::kPlan, what + " steps", std::to_string(b.size()), std::to_string(c.size()));
      return;
    }
    for (size_t k = 0; k < b.size(); ++k) {
      std::string tb = StepText(b[k]), tc = StepText(c[k]);
      if (tb != tc) Add(DiffCategory::kPlan, what + " step " + std::to_string(k), tb, tc);
    }
  }

  void CompareCost(const RedistributeBegin& b, const RedistributeBegin& c) {
    double scale = std::max({1.0, std::fabs(b.cost_us()), std::fabs(c.cost_us())});
    if (std::fabs(b.cost_us() - c.cost_us()) > 1e-9 * scale)
      Add(DiffCategory::kCost, "predicted cost", Micros(b.cost_us()), Micros(c.cost_us()));
  }

  void CompareCollectives(const Logical& b, const Logical& c) {
    std::map<std::string, std::pair<int64_t, int64_t>> counts;
    for (const RedistributeRecord* r : b.recs)
      for (const Collective& x : r->collectives) ++counts[CollectiveKey(x)].first;
    for (const RedistributeRecord* r : c.recs)
      for (const Collective& x : r->collectives) ++counts[CollectiveKey(x)].second;
    for (const auto& [key, n] : counts) {
      if (n.first != n.second) {
        Add(DiffCategory::kCollectives, "collectives " + key, std::to_string(n.first) + " rank-side calls",
            std::to_string(n.second) + " rank-side calls");
      }
    }
  }

  // Per-collective totals keyed by (step, kind and dims, occurrence on the rank), summed over ranks.
  using CallKey = std::tuple<int64_t, std::string, int64_t>;
  static std::map<CallKey, std::pair<int64_t, int64_t>> CallBytes(const Logical& l) {
    std::map<CallKey, std::pair<int64_t, int64_t>> out;
    for (const RedistributeRecord* r : l.recs) {
      std::map<std::pair<int64_t, std::string>, int64_t> seen;
      for (const Collective& x : r->collectives) {
        std::string key = CollectiveKey(x);
        int64_t occ = seen[{x.step(), key}]++;
        auto& v = out[{x.step(), key, occ}];
        v.first = detail::SaturatingAdd(v.first, detail::SumBytes(x.bytes_sent()));
        v.second = detail::SaturatingAdd(v.second, detail::SumBytes(x.bytes_recv()));
      }
    }
    return out;
  }

  static std::string BytesText(int64_t sent, int64_t recv) {
    return "sent " + std::to_string(sent) + " B, received " + std::to_string(recv) + " B";
  }

  void CompareBytes(const Logical& b, const Logical& c) {
    if (b.Begin().dtype() != c.Begin().dtype())
      Add(DiffCategory::kBytes, "dtype", b.Begin().dtype(), c.Begin().dtype());
    auto cb = CallBytes(b), cc = CallBytes(c);
    bool same_calls =
        cb.size() == cc.size() && std::equal(cb.begin(), cb.end(), cc.begin(),
                                             [](const auto& x, const auto& y) { return x.first == y.first; });
    if (same_calls) {
      for (const auto& [key, vb] : cb) {
        const auto& vc = cc.at(key);
        if (vb == vc) continue;
        const auto& [step, what, occ] = key;
        std::string name = "bytes of step " + std::to_string(step) + " " + what;
        if (occ > 0) name += " call " + std::to_string(occ + 1);
        Add(DiffCategory::kBytes, name, BytesText(vb.first, vb.second), BytesText(vc.first, vc.second));
      }
    }
    for (const RedistributeRecord* r : b.recs) {
      const RedistributeRecord* o = ForRank(c, r->rank);
      if (o == nullptr) continue;
      int64_t sb = 0, rb = 0, sc = 0, rc = 0;
      for (const Collective& x : r->collectives) {
        sb = detail::SaturatingAdd(sb, detail::SumBytes(x.bytes_sent()));
        rb = detail::SaturatingAdd(rb, detail::SumBytes(x.bytes_recv()));
      }
      for (const Collective& x : o->collectives) {
        sc = detail::SaturatingAdd(sc, detail::SumBytes(x.bytes_sent()));
        rc = detail::SaturatingAdd(rc, detail::SumBytes(x.bytes_recv()));
      }
      if (sb != sc || rb != rc)
        Add(DiffCategory::kBytes, "rank " + std::to_string(r->rank) + " bytes", BytesText(sb, rb),
            BytesText(sc, rc));
    }
  }

  void CompareShard(const std::string& what, const std::optional<std::string>& b,
                    const std::optional<std::string>& c) {
    if (b == c) return;
    Add(DiffCategory::kShapes, what, b.value_or("unknown"), c.value_or("unknown"));
  }

  void CompareShapes(const Logical& b, const Logical& c) {
    const auto& pb = b.Begin().optimized_plan();
    const auto& pc = c.Begin().optimized_plan();
    bool same_plan =
        pb.size() == pc.size() && std::equal(pb.begin(), pb.end(), pc.begin(),
                                             [](auto& x, auto& y) { return StepText(x) == StepText(y); });
    for (const RedistributeRecord* r : b.recs) {
      const RedistributeRecord* o = ForRank(c, r->rank);
      if (o == nullptr) continue;
      std::string rank = "rank " + std::to_string(r->rank) + " shard";
      CompareShard(rank + " before", ShardBefore(*r), ShardBefore(*o));
      if (same_plan) {
        for (size_t k = 0; k < pb.size(); ++k) {
          int64_t step = static_cast<int64_t>(k);
          CompareShard(rank + " after step " + std::to_string(k), ShardAfterStep(*r, step),
                       ShardAfterStep(*o, step));
        }
      } else {
        CompareShard(rank + " after", ShardAfter(*r), ShardAfter(*o));
      }
    }
  }

  void CompareTime(const Logical& b, const Logical& c) {
    std::optional<int64_t> tb = MaxDurationNs(b), tc = MaxDurationNs(c);
    if (!tb || !tc || *tc <= *tb) return;
    double pct = *tb > 0 ? 100.0 * static_cast<double>(*tc - *tb) / static_cast<double>(*tb) : HUGE_VAL;
    if (pct <= *options_.time_threshold_pct) return;
    std::string change = std::isinf(pct) ? "(from 0)" : "(+" + Fixed(pct, 1) + "%)";
    Add(DiffCategory::kTime, "time (max over ranks)", Micros(static_cast<double>(*tb) / 1000.0),
        Micros(static_cast<double>(*tc) / 1000.0) + " " + change);
  }

  // Candidate costs are predictions from a cost model of the machine, so like time they are only
  // compared with a threshold; a candidate is matched by its strategy, not its position.
  void CompareCandidateCosts(const Op& b, const Op& c) {
    for (size_t i = 0; i < b.candidates().size(); ++i) {
      std::string key = StrategyText(b, static_cast<int64_t>(i));
      for (size_t k = 0; k < c.candidates().size(); ++k) {
        if (StrategyText(c, static_cast<int64_t>(k)) != key) continue;
        double xb = b.candidates()[i].cost_us, xc = c.candidates()[k].cost_us;
        if (xb == xc) break;
        bool beyond =
            std::isinf(xb) || std::isinf(xc) ||
            std::fabs(xc - xb) > *options_.time_threshold_pct / 100.0 * std::max(std::fabs(xb), 1e-9);
        if (!beyond) break;
        std::string change =
            std::isinf(xb) || std::isinf(xc) || xb == 0
                ? std::string()
                : std::string(" (") + (xc > xb ? "+" : "") + Fixed(100.0 * (xc - xb) / xb, 1) + "%)";
        Add(DiffCategory::kTime, "cost of strategy " + key, CostText(xb), CostText(xc) + change);
        break;
      }
    }
  }

  const DiffOptions& options_;
  std::vector<Difference>& out_;
  bool op_ = false;
  std::string subject_;
  std::optional<int64_t> baseline_id_, candidate_id_;
};

// Fills the gaps between the aligned `pairs` (increasing) with pairs of equal place key, aligned
// within each gap the same way (longest common subsequence).
template <typename T, typename Place>
std::vector<std::pair<size_t, size_t>> PairByPlace(const std::vector<T>& b, const std::vector<T>& c,
                                                   const std::vector<std::pair<size_t, size_t>>& pairs,
                                                   Place place) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t i = 0, j = 0;
  auto gap = [&](size_t end_i, size_t end_j) {
    if (i < end_i && j < end_j) {
      std::vector<std::string> pb, pc;
      for (size_t k = i; k < end_i; ++k) pb.push_back(place(b[k]));
      for (size_t k = j; k < end_j; ++k) pc.push_back(place(c[k]));
      for (const auto& [x, y] : Align(pb, pc)) out.emplace_back(i + x, j + y);
    }
  };
  for (const auto& [pi, pj] : pairs) {
    gap(pi, pj);
    out.emplace_back(pi, pj);
    i = pi + 1, j = pj + 1;
  }
  gap(b.size(), c.size());
  return out;
}

// Aligns the baseline list `b` with the candidate list `c` by `key` and walks both in order:
// `unmatched(x, in_baseline)` for an item without a partner, `compare(x, y)` for an aligned pair.
// Returns the number of aligned pairs.
// `place` (optional): a second key for what the alignment by `key` leaves unmatched: between two
// aligned pairs, items of equal place are paired in order too (a redistribute whose placements
// changed is still the one at its place in the program).
template <typename T, typename Key, typename Unmatched, typename Compare, typename Place = std::nullptr_t>
int64_t AlignAndWalk(const std::vector<T>& b, const std::vector<T>& c, Key key, Unmatched unmatched,
                     Compare compare, Place place = nullptr) {
  std::vector<std::string> kb, kc;
  for (const T& x : b) kb.push_back(key(x));
  for (const T& x : c) kc.push_back(key(x));
  std::vector<std::pair<size_t, size_t>> pairs = Align(kb, kc);
  if constexpr (!std::is_same_v<Place, std::nullptr_t>) pairs = PairByPlace(b, c, pairs, place);
  const auto aligned = static_cast<int64_t>(pairs.size());
  pairs.emplace_back(b.size(), c.size());  // sentinel flushes the tails
  size_t i = 0, j = 0;
  for (const auto& [pi, pj] : pairs) {
    for (; i < pi; ++i) unmatched(b[i], true);
    for (; j < pj; ++j) unmatched(c[j], false);
    if (pi < b.size() && pj < c.size()) compare(b[pi], c[pj]);
    i = pi + 1;
    j = pj + 1;
  }
  return aligned;
}

}  // namespace

bool DiffResult::Failed() const {
  return std::any_of(differences.begin(), differences.end(), [](const Difference& d) { return d.failing; });
}

DiffResult DiffTraces(const Model& baseline, const Model& candidate, const DiffOptions& options) {
  DiffResult result;
  result.options = options;
  std::vector<Logical> lb = Logicals(baseline), lc = Logicals(candidate);
  result.baseline_redistributes = static_cast<int64_t>(lb.size());
  result.candidate_redistributes = static_cast<int64_t>(lc.size());

  Differ differ(options, result.differences);
  differ.Run(baseline, candidate);
  // Collectives that carry a flight record are also compared per process group and sequence number
  // (a ring buffer's entries have no redistribute to align them by); none carry one: nothing added.
  detail::DiffFlightRecords(baseline, candidate, options, result.differences);

  std::vector<LogicalOp> ob = LogicalOps(baseline), oc = LogicalOps(candidate);
  result.baseline_ops = static_cast<int64_t>(ob.size());
  result.candidate_ops = static_cast<int64_t>(oc.size());
  result.aligned_ops = AlignAndWalk(
      ob, oc, [](const LogicalOp& l) { return OpSubject(l.Ref()); },
      [&](const LogicalOp& l, bool in_baseline) { differ.UnmatchedOp(l, in_baseline); },
      [&](const LogicalOp& b, const LogicalOp& c) { differ.CompareOp(b, c); });
  // A redistribute's place in the program: its tensor and global shape, and the op and argument
  // that caused it (by op name: op ids may differ between the runs); placements, planner and dtype
  // may change at one place.
  auto place_of = [](const Model& model) {
    std::map<int64_t, std::string> op_names;
    for (int64_t id : model.OpIds()) {
      const auto recs = model.OpsWithId(id);
      if (!recs.empty()) op_names[id] = recs.front()->op->name();
    }
    return [op_names = std::move(op_names)](const Logical& l) {
      const RedistributeBegin& x = l.Begin();
      auto op = op_names.find(x.op_id);
      return x.tensor() + "\x1f" + detail::FormatInts(x.global_shape()) + "\x1f" +
             (op == op_names.end() ? std::string("-") : op->second) + "\x1f" + std::to_string(x.op_input);
    };
  };
  auto place_b = place_of(baseline), place_c = place_of(candidate);
  // The two sides' keys come from their own models: one function that knows which side it is given.
  std::map<const Logical*, bool> side;
  for (const Logical& l : lb) side[&l] = true;
  result.aligned = AlignAndWalk(
      lb, lc, [](const Logical& l) { return Signature(l.Begin()); },
      [&](const Logical& l, bool in_baseline) { differ.Unmatched(l, in_baseline); },
      [&](const Logical& b, const Logical& c) { differ.Compare(b, c); },
      [&](const Logical& l) { return side.count(&l) ? place_b(l) : place_c(l); });
  return result;
}

}  // namespace shardscope::trace
