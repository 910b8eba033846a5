#include "profiler_model.hpp"

#include <limits>
#include <string_view>
#include <utility>

namespace shardscope::app::gui {
namespace {

constexpr std::string_view kStepPrefix = "ProfilerStep#";

bool IsStep(const trace::Op& op) {
  return std::string_view(op.name()).substr(0, kStepPrefix.size()) == kStepPrefix;
}

}  // namespace

bool IsPlainOp(const trace::Op& op) {
  return op.candidates().empty() && op.inputs().empty() && op.outputs().empty() && op.ok();
}

bool HasProfilerLanes(const trace::Model& model) {
  if (!model.redistributes.empty()) return false;
  bool ops = false, timed = false;
  for (const trace::RankTrace& rt : model.ranks) {
    const std::vector<trace::Op>& events = rt.events.Of<trace::Op>();
    if (!std::all_of(events.begin(), events.end(), IsPlainOp)) return false;
    ops = ops || !events.empty();
    if (timed) continue;
    for (const trace::Collective& c : rt.events.Of<trace::Collective>()) {
      if (c.HasFlight() && c.end_ns > c.start_ns) {
        timed = true;
        break;
      }
    }
  }
  return ops && timed;
}

int32_t ProfilerData::LaneOf(int64_t rank) const {
  auto it = std::lower_bound(lanes.begin(), lanes.end(), rank,
                             [](const ProfilerLane& l, int64_t r) { return l.rank < r; });
  return it != lanes.end() && it->rank == rank ? static_cast<int32_t>(it - lanes.begin()) : -1;
}

ProfilerData BuildProfilerData(const trace::Model& model) {
  ProfilerData data;
  data.analysis = trace::AnalyzeKineto(model);
  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = std::numeric_limits<int64_t>::min();
  auto extend = [&](int64_t a, int64_t b) { t0 = std::min(t0, a), t1 = std::max(t1, b); };
  for (size_t ri = 0; ri < model.ranks.size(); ++ri) {
    const trace::RankTrace& rt = model.ranks[ri];
    ProfilerLane lane;
    lane.rank = rt.header.rank;
    lane.rank_index = ri;
    // Ops: ProfilerStep#N are the step boundaries; the others nest by time into rows.
    const std::vector<trace::Op>& ops = rt.events.Of<trace::Op>();
    std::vector<ProfilerOpSpan> spans;
    spans.reserve(ops.size());
    for (size_t k = 0; k < ops.size(); ++k) {
      const trace::Op& op = ops[k];
      const int64_t end = std::max(op.t_ns, op.end_ns);
      if (IsStep(op)) {
        lane.steps.push_back({op.t_ns, end, op.step});
      } else {
        spans.push_back({op.t_ns, end, static_cast<int32_t>(k)});
      }
      extend(op.t_ns, end);
    }
    std::sort(spans.begin(), spans.end(), [](const ProfilerOpSpan& a, const ProfilerOpSpan& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    const std::vector<int32_t> depth = NestingDepths(spans);
    for (size_t k = 0; k < spans.size(); ++k) {
      const size_t d = static_cast<size_t>(depth[k]);
      if (lane.rows.size() <= d) lane.rows.resize(d + 1);
      lane.rows[d].push_back(spans[k]);
    }
    data.ops += spans.size();
    data.depth = std::max(data.depth, static_cast<int32_t>(lane.rows.size()));
    std::sort(lane.steps.begin(), lane.steps.end(),
              [](const ProfilerStepSpan& a, const ProfilerStepSpan& b) { return a.start < b.start; });
    // Kernels: every collective of the rank (matched or not), by start.
    const std::vector<trace::Collective>& cols = rt.events.Of<trace::Collective>();
    for (size_t k = 0; k < cols.size(); ++k) {
      const trace::Collective& c = cols[k];
      if (!c.HasFlight()) continue;
      ProfilerKernelSpan s;
      s.start = c.start_ns, s.end = std::max(c.start_ns, c.end_ns), s.wait_end = s.start;
      s.event = static_cast<int32_t>(k);
      lane.kernels.push_back(s);
      lane.longest_kernel = std::max(lane.longest_kernel, s.end - s.start);
      extend(s.start, s.end);
      if (std::find(data.kinds.begin(), data.kinds.end(), std::string(c.kind())) == data.kinds.end())
        data.kinds.push_back(std::string(c.kind()));
    }
    std::sort(lane.kernels.begin(), lane.kernels.end(),
              [](const ProfilerKernelSpan& a, const ProfilerKernelSpan& b) { return a.start < b.start; });
    data.kernels += lane.kernels.size();
    data.lanes.push_back(std::move(lane));
  }
  std::sort(data.lanes.begin(), data.lanes.end(),
            [](const ProfilerLane& a, const ProfilerLane& b) { return a.rank < b.rank; });
  std::sort(data.kinds.begin(), data.kinds.end());
  // Join the matcher's collectives to their kernels: the matcher names each member's event.
  std::vector<std::vector<int32_t>> kernel_of_event(data.lanes.size());
  for (size_t l = 0; l < data.lanes.size(); ++l) {
    const ProfilerLane& lane = data.lanes[l];
    kernel_of_event[l].assign(model.ranks[lane.rank_index].events.Of<trace::Collective>().size(), -1);
    for (size_t k = 0; k < lane.kernels.size(); ++k)
      kernel_of_event[l][static_cast<size_t>(lane.kernels[k].event)] = static_cast<int32_t>(k);
  }
  data.members.resize(data.analysis.collectives.size());
  for (size_t ci = 0; ci < data.analysis.collectives.size(); ++ci) {
    const trace::KinetoCollective& kc = data.analysis.collectives[ci];
    const int64_t latest =
        kc.last_rank >= 0 && kc.start_ns.count(kc.last_rank) ? kc.start_ns.at(kc.last_rank) : 0;
    int64_t earliest = latest;
    for (const auto& [rank, start] : kc.start_ns) earliest = std::min(earliest, start);
    for (const auto& [rank, event] : kc.event) {
      const int32_t l = data.LaneOf(rank);
      if (l < 0 || event < 0 || static_cast<size_t>(event) >= kernel_of_event[static_cast<size_t>(l)].size())
        continue;
      const int32_t k = kernel_of_event[static_cast<size_t>(l)][static_cast<size_t>(event)];
      if (k < 0) continue;
      ProfilerKernelSpan& s = data.lanes[static_cast<size_t>(l)].kernels[static_cast<size_t>(k)];
      s.collective = static_cast<int32_t>(ci);
      s.wait_end = std::clamp(latest, s.start, s.end);
      // As the matcher counts last arrivals: a matched collective whose starts differ.
      s.last = kc.matched && rank == kc.last_rank && latest > earliest && kc.start_ns.size() > 1;
      data.members[ci].push_back({l, k});
    }
  }
  for (const auto& [rank, count] : data.analysis.last_arrivals) data.stragglers.emplace_back(rank, count);
  std::sort(data.stragglers.begin(), data.stragglers.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (t0 > t1) t0 = 0, t1 = 1;
  data.t0 = t0;
  data.t1 = std::max(t1, t0 + 1);
  return data;
}

}  // namespace shardscope::app::gui
