// Stragglers of profiler (Kineto) traces for triage (docs/triage.md, "Profiler traces"): per rank,
// over AnalyzeKineto's matched collectives, how often it arrived last at a delayed one and how long
// the others waited for it, overall and per process group.
#include "triage_kineto.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace shardscope::trace::detail {

namespace {

void Count(TriageLateness& l, const KinetoCollective& c, int64_t rank, bool delayed, int64_t spread,
           int64_t others_wait) {
  ++l.collectives;
  l.own_wait_ns += c.wait_ns.at(rank);
  if (!delayed) return;
  ++l.delayed;
  if (c.last_rank != rank) return;
  ++l.last;
  l.caused_wait_ns += others_wait;
  if (spread > l.worst_wait_ns) {  // ties keep the first, in (group, p2p, seq) order
    l.worst_wait_ns = spread;
    l.worst_process_group = c.process_group;
    l.worst_kind = c.kind;
    l.worst_seq = c.seq;
    l.worst_step = c.step;
    l.worst_p2p = c.p2p;
  }
}

std::string WorstText(const TriageLateness& l, bool with_group) {
  std::string out = l.worst_kind + (l.worst_p2p ? " p2p seq " : " seq ") + std::to_string(l.worst_seq);
  if (with_group) out += " of process group " + l.worst_process_group;
  return out + (l.worst_step >= 0 ? ", step " + std::to_string(l.worst_step) : ", outside every step");
}

int64_t MeanOwnWait(const TriageLateness& l) { return l.collectives > 0 ? l.own_wait_ns / l.collectives : 0; }

}  // namespace

std::string WaitText(int64_t ns) {
  char buf[64];
  if (ns < 1'000'000)
    std::snprintf(buf, sizeof buf, "%lld us", static_cast<long long>(ns / 1000));
  else
    std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

KinetoStragglers FindKinetoStragglers(const KinetoAnalysis& analysis) {
  KinetoStragglers out;
  std::map<int64_t, TriageLateness> overall;
  std::map<int64_t, std::map<std::string, TriageLateness>> per_group;
  for (const KinetoCollective& c : analysis.collectives) {
    if (!c.matched || c.wait_ns.size() < 2) continue;
    int64_t spread = 0, total = 0;
    for (const auto& [r, w] : c.wait_ns) spread = std::max(spread, w), total += w;
    const bool delayed = spread > kKinetoLateNs;
    out.delayed += delayed ? 1 : 0;
    for (const auto& [r, w] : c.wait_ns) {
      Count(overall[r], c, r, delayed, spread, total);
      TriageLateness& g = per_group[r][c.process_group];
      g.process_group = c.process_group;
      g.group_size = static_cast<int64_t>(c.group.size());
      Count(g, c, r, delayed, spread, total);
    }
  }
  const TriageLateness* most = nullptr;
  int64_t most_rank = -1;
  for (const auto& [r, l] : overall) {
    if (l.caused_wait_ns > 0 && (most == nullptr || l.caused_wait_ns > most->caused_wait_ns))
      most = &l, most_rank = r;
    const int64_t mean_wait = MeanOwnWait(l);
    if (l.delayed >= 3 && 2 * l.last >= l.delayed && mean_wait < kKinetoLateNs / 2) {
      TriageStraggler s;
      s.rank = r;
      s.overall = l;
      for (const auto& [name, g] : per_group[r])
        if (g.last > 0) s.groups.push_back(g);
      std::stable_sort(s.groups.begin(), s.groups.end(),
                       [](const TriageLateness& a, const TriageLateness& b) {
                         return a.caused_wait_ns > b.caused_wait_ns;
                       });
      out.stragglers.push_back(std::move(s));
    } else if (mean_wait >= kKinetoLateNs / 2) {
      out.slowed.push_back(r);
    }
  }
  for (const TriageStraggler& s : out.stragglers) {
    const TriageLateness& l = s.overall;
    out.evidence.push_back(
        "rank " + std::to_string(s.rank) + " arrived last at " + std::to_string(l.last) + " of the " +
        std::to_string(l.delayed) + " delayed collectives it is a member of (" +
        std::to_string(l.collectives) + " matched in all); the others waited " + WaitText(l.caused_wait_ns) +
        " for it in total, at worst " + WaitText(l.worst_wait_ns) + " (" + WorstText(l, true) +
        "); it waited " + WaitText(MeanOwnWait(l)) + " itself on average");
    for (const TriageLateness& g : s.groups) {
      out.evidence.push_back("rank " + std::to_string(s.rank) + " in process group " + g.process_group +
                             " (" + std::to_string(g.group_size) + " ranks): last at " +
                             std::to_string(g.last) + " of " + std::to_string(g.delayed) + " delayed of " +
                             std::to_string(g.collectives) + " collectives, " + WaitText(g.caused_wait_ns) +
                             " waited in total, at worst " + WaitText(g.worst_wait_ns) + " (" +
                             WorstText(g, false) + ")");
    }
  }
  if (out.stragglers.empty() && out.delayed > 0 && most != nullptr) {
    out.note = std::to_string(out.delayed) + " matched collective(s) started more than " +
               WaitText(kKinetoLateNs) + " apart across their ranks, but no rank arrived last at most of " +
               "its delayed collectives while waiting little itself; rank " + std::to_string(most_rank) +
               " made the others wait the most (" + WaitText(most->caused_wait_ns) + " over " +
               std::to_string(most->last) + " last arrival(s))";
  }
  return out;
}

}  // namespace shardscope::trace::detail
