#include "timeline_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>

namespace shardscope::app::gui {

const trace::Collective& SpanCollective(const trace::Model& model, const TimelineSpan& s) {
  if (s.op_record >= 0)
    return model.ops[static_cast<size_t>(s.op_record)].collectives[static_cast<size_t>(s.collective)];
  return model.redistributes[static_cast<size_t>(s.record)].collectives[static_cast<size_t>(s.collective)];
}

TimelineData BuildTimeline(const trace::Model& model) {
  TimelineData data;
  std::vector<int64_t> offset(static_cast<size_t>(std::max<int64_t>(model.world, 0)), 0);
  for (const trace::RankTrace& r : model.ranks) {
    if (r.header.rank >= 0 && r.header.rank < model.world)
      offset[static_cast<size_t>(r.header.rank)] = r.header.clock.offset_ns;
  }
  int64_t lanes = model.world;
  data.lane_rank.resize(static_cast<size_t>(lanes));
  for (int64_t i = 0; i < lanes; ++i) data.lane_rank[static_cast<size_t>(i)] = i;
  data.bars.resize(static_cast<size_t>(lanes));
  data.collectives.resize(static_cast<size_t>(lanes));
  data.ops.resize(static_cast<size_t>(lanes));
  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < model.redistributes.size(); ++i) {
    const trace::RedistributeRecord& rec = model.redistributes[i];
    if (rec.rank < 0 || rec.rank >= lanes) continue;
    int64_t off = offset[static_cast<size_t>(rec.rank)];
    int64_t start = rec.begin->t_ns + off;
    int64_t end = start;
    if (rec.end) end = rec.end->t_ns + off;
    for (const auto& s : rec.steps) end = std::max(end, (s.end ? s.end->t_ns : s.begin->t_ns) + off);
    for (size_t c = 0; c < rec.collectives.size(); ++c) {
      const trace::Collective& col = rec.collectives[c];
      data.collectives[static_cast<size_t>(rec.rank)].push_back(
          {col.start_ns + off, col.end_ns + off, rec.begin->id, static_cast<int32_t>(col.step()),
           static_cast<int32_t>(i), static_cast<int32_t>(c)});
      end = std::max(end, col.end_ns + off);
    }
    data.bars[static_cast<size_t>(rec.rank)].push_back(
        {start, end, rec.begin->id, -1, static_cast<int32_t>(i), -1});
    t0 = std::min(t0, start);
    t1 = std::max(t1, end);
    data.events += 2 + rec.steps.size() * 2 + rec.collectives.size();
  }
  // Program traces: each op as a bar under its implicit redistributes, and the collectives it ran
  // itself (halo exchanges) beside the redistributes' collectives.
  for (size_t i = 0; i < model.ops.size(); ++i) {
    const trace::OpRecord& rec = model.ops[i];
    if (rec.rank < 0 || rec.rank >= lanes) continue;
    const int64_t off = offset[static_cast<size_t>(rec.rank)];
    const int64_t start = rec.op->t_ns + off, end = std::max(rec.op->end_ns, rec.op->t_ns) + off;
    data.ops[static_cast<size_t>(rec.rank)].push_back(
        {start, end, rec.op->id, -1, -1, -1, static_cast<int32_t>(i)});
    t0 = std::min(t0, start);
    t1 = std::max(t1, end);
    for (size_t c = 0; c < rec.collectives.size(); ++c) {
      const trace::Collective& col = rec.collectives[c];
      data.collectives[static_cast<size_t>(rec.rank)].push_back(
          {col.start_ns + off, col.end_ns + off, -1, static_cast<int32_t>(col.step()), -1,
           static_cast<int32_t>(c), static_cast<int32_t>(i)});
      t0 = std::min(t0, col.start_ns + off);
      t1 = std::max(t1, col.end_ns + off);
    }
    data.events += 1 + rec.collectives.size();
  }
  auto by_start = [](const TimelineSpan& a, const TimelineSpan& b) { return a.start < b.start; };
  for (auto& lane : data.bars) std::sort(lane.begin(), lane.end(), by_start);
  for (auto& lane : data.collectives) std::sort(lane.begin(), lane.end(), by_start);
  for (auto& lane : data.ops) std::sort(lane.begin(), lane.end(), by_start);
  if (t0 > t1) t0 = 0, t1 = 1;
  data.t0 = t0;
  data.t1 = std::max(t1, t0 + 1);
  if (model.world > kTimelineGroupAbove && !model.ranks.empty()) {
    const trace::Header& h = model.ranks.front().header;
    data.groups = MeshGroups(model.world, h.mesh_shape, h.mesh_dim_names);
    FillGroups(data);
  }
  return data;
}

std::vector<GroupSpan> UnionSpans(std::vector<std::pair<int64_t, TimelineSpan>> spans) {
  std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
    return a.second.start != b.second.start ? a.second.start < b.second.start : a.first < b.first;
  });
  std::vector<GroupSpan> out;
  std::unordered_map<int64_t, const TimelineSpan*>
      latest;  // member -> its latest-ending span in `out.back()`
  auto close = [&]() {
    GroupSpan& g = out.back();
    g.members = static_cast<int32_t>(latest.size());
    for (const auto& [rank, span] : latest) {
      if (g.slowest_rank < 0 || span->end > g.slowest_end ||
          (span->end == g.slowest_end && rank < g.slowest_rank)) {
        g.slowest_rank = rank, g.slowest_end = span->end, g.slowest = *span;
      }
      if (g.fastest_rank < 0 || span->end < g.fastest_end ||
          (span->end == g.fastest_end && rank < g.fastest_rank))
        g.fastest_rank = rank, g.fastest_end = span->end;
    }
    latest.clear();
  };
  for (const auto& [rank, s] : spans) {
    if (!out.empty() && s.start <= out.back().end) {
      out.back().end = std::max(out.back().end, s.end);
      ++out.back().spans;
    } else {
      if (!out.empty()) close();
      GroupSpan g;
      g.start = s.start, g.end = s.end, g.spans = 1;
      out.push_back(g);
    }
    auto [it, added] = latest.try_emplace(rank, &s);
    if (!added && s.end > it->second->end) it->second = &s;
  }
  if (!out.empty()) close();
  return out;
}

std::vector<TimelineGroup> MeshGroups(int64_t world, const std::vector<int64_t>& shape,
                                      const std::vector<std::string>& names) {
  std::vector<TimelineGroup> out;
  if (world <= 0) return out;
  int64_t product = 1;
  for (int64_t e : shape) product = e > 0 ? product * e : -1;
  const bool by_dim = shape.size() >= 2 && product == world && shape[0] > 1 && world / shape[0] > 1;
  const int64_t size =
      by_dim ? world / shape[0]
             : std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(world)))));
  const std::string dim = !names.empty() && !names[0].empty() ? names[0] : "d0";
  for (int64_t first = 0, g = 0; first < world; first += size, ++g) {
    TimelineGroup group;
    group.first_rank = first;
    group.size = std::min(size, world - first);
    group.label = by_dim ? dim + "=" + std::to_string(g)
                         : "r" + std::to_string(first) + "-" + std::to_string(first + group.size - 1);
    out.push_back(std::move(group));
  }
  return out;
}

void FillGroups(TimelineData& data) {
  using Lanes = std::vector<std::vector<TimelineSpan>>;
  for (TimelineGroup& g : data.groups) {
    auto gather = [&](const Lanes& lanes) {
      std::vector<std::pair<int64_t, TimelineSpan>> spans;
      for (int64_t r = g.first_rank; r < g.first_rank + g.size && r < static_cast<int64_t>(lanes.size());
           ++r) {
        for (const TimelineSpan& s : lanes[static_cast<size_t>(r)]) spans.emplace_back(r, s);
      }
      return UnionSpans(std::move(spans));
    };
    g.ops = gather(data.ops);
    g.bars = gather(data.bars);
    g.collectives = gather(data.collectives);
    g.slowest_rank = g.fastest_rank = -1;
    for (int64_t r = g.first_rank; r < g.first_rank + g.size && r < static_cast<int64_t>(data.bars.size());
         ++r) {
      const size_t lane = static_cast<size_t>(r);
      if (data.bars[lane].empty() && data.ops[lane].empty()) continue;
      int64_t last = std::numeric_limits<int64_t>::min();
      for (const TimelineSpan& s : data.bars[lane]) last = std::max(last, s.end);
      for (const TimelineSpan& s : data.ops[lane]) last = std::max(last, s.end);
      if (g.slowest_rank < 0 || last > g.slowest_end) g.slowest_rank = r, g.slowest_end = last;
      if (g.fastest_rank < 0 || last < g.fastest_end) g.fastest_rank = r, g.fastest_end = last;
    }
  }
}

std::vector<TimelineRow> BuildRows(const TimelineData& data, const std::vector<bool>& expanded) {
  return BuildRows(data.lane_rank, data.groups, expanded);
}

std::vector<TimelineRow> BuildRows(const std::vector<int64_t>& lane_rank,
                                   const std::vector<TimelineGroup>& groups,
                                   const std::vector<bool>& expanded) {
  std::vector<TimelineRow> rows;
  if (groups.empty()) {
    for (int64_t rank : lane_rank) rows.push_back({-1, rank});
    return rows;
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    rows.push_back({static_cast<int32_t>(g), -1});
    if (g >= expanded.size() || !expanded[g]) continue;
    const TimelineGroup& group = groups[g];
    for (int64_t r = group.first_rank; r < group.first_rank + group.size; ++r)
      rows.push_back({static_cast<int32_t>(g), r});
  }
  return rows;
}

std::vector<int32_t> RowOfRank(const std::vector<TimelineRow>& rows, const std::vector<TimelineGroup>& groups,
                               size_t ranks) {
  std::vector<int32_t> out(ranks, -1);
  for (size_t i = 0; i < rows.size(); ++i) {
    const TimelineRow& row = rows[i];
    if (row.rank >= 0 && row.rank < static_cast<int64_t>(ranks)) {
      out[static_cast<size_t>(row.rank)] = static_cast<int32_t>(i);
    } else if (row.rank < 0 && row.group >= 0) {  // a group row: its members' row until the group is expanded
      const TimelineGroup& g = groups[static_cast<size_t>(row.group)];
      for (int64_t r = g.first_rank; r < g.first_rank + g.size && r < static_cast<int64_t>(ranks); ++r)
        out[static_cast<size_t>(r)] = static_cast<int32_t>(i);
    }
  }
  return out;
}

bool IdRange(const std::vector<std::vector<TimelineSpan>>& lanes, int64_t id, int64_t& start, int64_t& end) {
  bool found = false;
  for (const auto& lane : lanes) {
    for (const TimelineSpan& s : lane) {
      if (s.redistribute_id != id) continue;
      start = found ? std::min(start, s.start) : s.start;
      end = found ? std::max(end, s.end) : s.end;
      found = true;
    }
  }
  return found;
}

}  // namespace shardscope::app::gui
