#include "timeline_model.hpp"

#include <algorithm>
#include <limits>

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
          {col.start_ns + off, col.end_ns + off, rec.begin->id, static_cast<int32_t>(col.step),
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
    const int64_t start = rec.op.t_ns + off, end = std::max(rec.op.end_ns, rec.op.t_ns) + off;
    data.ops[static_cast<size_t>(rec.rank)].push_back(
        {start, end, rec.op.id, -1, -1, -1, static_cast<int32_t>(i)});
    t0 = std::min(t0, start);
    t1 = std::max(t1, end);
    for (size_t c = 0; c < rec.collectives.size(); ++c) {
      const trace::Collective& col = rec.collectives[c];
      data.collectives[static_cast<size_t>(rec.rank)].push_back(
          {col.start_ns + off, col.end_ns + off, -1, static_cast<int32_t>(col.step), -1,
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
  return data;
}

}  // namespace shardscope::app::gui
