// Kineto collectives across ranks: matched by (process group, sequence number), the rank that
// arrived last and everyone's wait, and nccl-tests' bandwidth figures per step, group and kind
// (docs/kineto.md, "Across ranks").
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "kineto_names.hpp"
#include "shardscope/trace/kineto.hpp"

namespace shardscope::trace {

namespace {

struct Key {
  std::string pg;
  std::vector<int64_t> sorted_group;
  bool p2p = false;
  int64_t a = -1, b = -1;  // a p2p pair (global ranks, a < b) when the trace names it
  int64_t seq = 0;
  auto Tie() const { return std::tie(pg, sorted_group, p2p, a, b, seq); }
  bool operator<(const Key& o) const { return Tie() < o.Tie(); }
};

// nccl-tests' S: the bytes the collective's definition counts (docs/kineto.md).
int64_t SizeBytes(const Collective& c) {
  if (!c.HasFlight()) return 0;
  const FlightShape& f = *c.shape->flight;
  const std::string& dtype = !f.input_dtypes.empty() ? f.input_dtypes.front() : std::string();
  const int64_t es = detail::DtypeBytes(dtype);
  auto numel = [](const std::vector<std::vector<int64_t>>& shapes) -> int64_t {
    if (shapes.empty()) return 0;
    int64_t n = 1;
    for (int64_t e : shapes.front())
      if (__builtin_mul_overflow(n, e, &n)) return 0;
    return n;
  };
  const int64_t elems = c.kind() == "all_gather" ? numel(f.output_sizes) : numel(f.input_sizes);
  int64_t b = 0;
  return __builtin_mul_overflow(elems, es, &b) ? 0 : b;
}

// ProfilerStep spans of one rank, from its "ProfilerStep#N" op events, sorted by start.
std::vector<std::tuple<int64_t, int64_t, int64_t>> StepSpans(const RankTrace& rt) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> out;  // (start, end, n)
  for (const Op& op : rt.events.Of<Op>())
    if (op.name().rfind("ProfilerStep#", 0) == 0) out.emplace_back(op.t_ns, op.end_ns, op.step);
  std::sort(out.begin(), out.end());
  return out;
}

int64_t StepOf(const std::vector<std::tuple<int64_t, int64_t, int64_t>>& spans, int64_t t) {
  auto it = std::upper_bound(spans.begin(), spans.end(), std::make_tuple(t, INT64_MAX, INT64_MAX));
  if (it == spans.begin()) return -1;
  --it;
  return t <= std::get<1>(*it) ? std::get<2>(*it) : -1;
}

}  // namespace

double BusBandwidthFactor(const std::string& kind, int64_t n) {
  if (n <= 0) return 0.0;
  const double d = static_cast<double>(n);
  if (kind == "all_reduce") return 2.0 * (d - 1.0) / d;
  if (kind == "all_gather" || kind == "reduce_scatter" || kind == "all_to_all") return (d - 1.0) / d;
  if (kind == "broadcast" || kind == "reduce" || detail::IsP2pKind(kind)) return 1.0;
  return 0.0;
}

KinetoAnalysis AnalyzeKineto(const Model& model) {
  KinetoAnalysis out;
  std::set<int64_t> with_file;
  std::map<int64_t, std::vector<std::tuple<int64_t, int64_t, int64_t>>> spans;
  for (const RankTrace& rt : model.ranks) {
    with_file.insert(rt.header.rank);
    spans[rt.header.rank] = StepSpans(rt);
  }
  std::map<Key, std::map<int64_t, const Collective*>> calls;
  for (const RankTrace& rt : model.ranks) {
    // The k-th p2p between one pair of ranks on one group matches the k-th on the peer.
    std::map<std::tuple<std::string, int64_t, int64_t>, int64_t> pair_count;
    for (const Collective& c : rt.events.Of<Collective>()) {
      if (!c.HasFlight()) continue;
      Key k;
      k.pg = c.flight_shape().pg_name;
      k.sorted_group = c.group();
      std::sort(k.sorted_group.begin(), k.sorted_group.end());
      k.p2p = c.flight_shape().is_p2p;
      k.seq = k.p2p ? c.flight.p2p_seq_id : c.flight.seq_id;
      if (k.p2p) {
        auto [self, peer] = detail::P2pLocalPair(c.flight_shape().profiling_name);
        if (self >= 0 && peer >= 0 && peer < static_cast<int64_t>(c.group().size())) {
          int64_t g_peer = c.group()[static_cast<size_t>(peer)];
          k.a = std::min(rt.header.rank, g_peer);
          k.b = std::max(rt.header.rank, g_peer);
          k.seq = ++pair_count[{k.pg, k.a, k.b}];
        }
      }
      calls[k].emplace(rt.header.rank, &c);
    }
  }
  std::map<std::tuple<int64_t, std::string, std::string>, KinetoStepStat> stats;
  std::map<int64_t, const std::vector<Collective>*> columns;  // rank -> its collective column
  for (const RankTrace& rt : model.ranks) columns[rt.header.rank] = &rt.events.Of<Collective>();
  for (const auto& [key, at] : calls) {
    KinetoCollective kc;
    const Collective& first = *at.begin()->second;
    kc.process_group = key.pg;
    kc.group = first.group();
    kc.seq = key.seq;
    kc.p2p = key.p2p;
    kc.kind = first.kind();
    kc.step = StepOf(spans[at.begin()->first], first.flight.created_ns);
    int64_t expected = 0;
    if (key.p2p && key.a >= 0) {
      expected = (with_file.count(key.a) ? 1 : 0) + (with_file.count(key.b) ? 1 : 0);
    } else if (key.p2p) {
      expected = 2;
    } else {
      for (int64_t r : first.group()) expected += with_file.count(r) ? 1 : 0;
    }
    kc.matched =
        static_cast<int64_t>(at.size()) >= expected && at.size() >= (first.group().size() > 1 ? 2u : 1u);
    int64_t latest = INT64_MIN, earliest = INT64_MAX;
    for (const auto& [r, c] : at) {
      kc.start_ns[r] = c->start_ns;
      kc.end_ns[r] = c->end_ns;
      kc.event[r] = c - columns.at(r)->data();
      if (c->start_ns > latest) {
        latest = c->start_ns;
        kc.last_rank = r;
      }
      earliest = std::min(earliest, c->start_ns);
    }
    int64_t wait_sum = 0;
    for (const auto& [r, c] : at) {
      kc.wait_ns[r] = latest - c->start_ns;
      wait_sum += latest - c->start_ns;
    }
    const Collective& last = *at.at(kc.last_rank);
    kc.time_ns = last.end_ns - last.start_ns;
    kc.bytes = SizeBytes(first);
    kc.dtype = !first.flight_shape().input_dtypes.empty() ? first.flight_shape().input_dtypes.front()
                                                          : first.dtype().str();
    if (kc.matched) {
      ++out.matched;
      if (latest > earliest && at.size() > 1) ++out.last_arrivals[kc.last_rank];
    } else {
      ++out.unmatched;
    }
    KinetoStepStat& s = stats[{kc.step, kc.process_group, kc.kind}];
    s.step = kc.step;
    s.process_group = kc.process_group;
    s.group_size = static_cast<int64_t>(kc.group.size());
    s.kind = kc.kind;
    ++s.count;
    s.bytes += kc.bytes;
    s.time_ns += kc.time_ns;
    s.wait_ns += wait_sum;
    out.collectives.push_back(std::move(kc));
  }
  for (auto& [k, s] : stats) {
    // bytes per nanosecond is GB/s (1e9 bytes per second), nccl-tests' unit.
    s.algbw_gbps = s.time_ns > 0 ? static_cast<double>(s.bytes) / static_cast<double>(s.time_ns) : 0.0;
    const int64_t n = s.kind == "send" || s.kind == "recv" || s.kind == "send_recv" ? 2 : s.group_size;
    s.busbw_gbps = s.algbw_gbps * BusBandwidthFactor(s.kind, n);
    out.steps.push_back(s);
  }
  return out;
}

}  // namespace shardscope::trace
