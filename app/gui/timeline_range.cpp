#include "timeline_range.hpp"

#include <algorithm>
#include <unordered_set>

namespace shardscope::app::gui {
namespace {

// Calls visit(span) for each span of a lane (sorted by start) overlapping [start, end]. A lane's
// spans may nest or overlap (a redistribute's collectives), so every span starting at or before
// `end` is looked at from the first whose start could reach `start`: the longest span bounds it.
template <class Visit>
void Overlapping(const std::vector<TimelineSpan>& lane, int64_t start, int64_t end, Visit&& visit) {
  int64_t longest = 0;
  for (const TimelineSpan& s : lane) longest = std::max(longest, s.end - s.start);
  auto it = std::lower_bound(lane.begin(), lane.end(), start - longest,
                             [](const TimelineSpan& s, int64_t t) { return s.start < t; });
  for (; it != lane.end() && it->start <= end; ++it) {
    if (it->end >= start) visit(*it);
  }
}

}  // namespace

RangeStats ComputeRangeStats(const trace::Model& model, const TimelineData& data, int64_t start,
                             int64_t end) {
  RangeStats out;
  if (start > end) std::swap(start, end);
  out.start_ns = start, out.end_ns = end;
  std::unordered_set<int64_t> redistributes, ops;
  for (size_t lane = 0; lane < data.lane_rank.size(); ++lane) {
    RangeRankStats r;
    r.rank = data.lane_rank[lane];
    if (lane < data.bars.size()) {
      Overlapping(data.bars[lane], start, end, [&](const TimelineSpan& s) {
        ++r.redistributes;
        redistributes.insert(s.redistribute_id);
      });
    }
    if (lane < data.ops.size()) {
      Overlapping(data.ops[lane], start, end, [&](const TimelineSpan& s) {
        ++r.ops;
        ops.insert(s.redistribute_id);  // an op bar carries its op id there
      });
    }
    if (lane < data.collectives.size()) {
      Overlapping(data.collectives[lane], start, end, [&](const TimelineSpan& s) {
        ++r.collectives;
        for (int64_t b : SpanCollective(model, s).bytes_sent()) r.bytes_sent += b;
        r.busy_ns += std::max<int64_t>(0, std::min(s.end, end) - std::max(s.start, start));
      });
    }
    if (r.redistributes + r.ops + r.collectives == 0) continue;
    out.collectives += r.collectives;
    out.bytes_sent += r.bytes_sent;
    out.ranks.push_back(r);
  }
  out.redistributes = static_cast<int64_t>(redistributes.size());
  out.ops = static_cast<int64_t>(ops.size());
  return out;
}

}  // namespace shardscope::app::gui
