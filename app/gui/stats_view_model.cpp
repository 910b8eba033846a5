#include "stats_view_model.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "shardscope/trace/sums.hpp"

namespace shardscope::app::gui {

namespace {

using trace::SaturatingAdd;  // shardscope/trace/sums.hpp

// Adds one sample: a duration `ns` measured on `rank` (untimed when `timed` is false).
void AddSample(StatsRow& row, int64_t rank, bool timed, int64_t ns) {
  ++row.count;
  if (!timed) return;
  ++row.timed;
  row.total_ns = SaturatingAdd(row.total_ns, ns);
  if (row.slowest_rank < 0 || ns > row.max_ns || (ns == row.max_ns && rank < row.slowest_rank)) {
    row.max_ns = ns;
    row.slowest_rank = rank;
  }
}

void AddBytes(StatsRow& row, const trace::Collective& c) {
  row.bytes = SaturatingAdd(row.bytes, trace::SumBytes(c.bytes_sent()));
}

void AddCollective(std::map<std::string, StatsRow>& kinds, int64_t rank, const trace::Collective& c) {
  StatsRow& row = kinds[c.kind()];
  row.label = c.kind();
  AddSample(row, rank, true, c.end_ns - c.start_ns);
  AddBytes(row, c);
}

void Finish(StatsRow& row) {
  row.mean_ns = row.timed > 0 ? static_cast<double>(row.total_ns) / static_cast<double>(row.timed) : 0.0;
}

}  // namespace

TraceStats ComputeTraceStats(const trace::Model& model) {
  std::map<std::string, StatsRow> kinds;
  std::map<int64_t, StatsRow> redistributes;
  // model.redistributes is sorted by (rank, id): the first record of an id is its lowest rank's.
  for (const trace::RedistributeRecord& rec : model.redistributes) {
    auto [it, inserted] = redistributes.try_emplace(rec.begin->id);
    StatsRow& row = it->second;
    if (inserted) {
      row.id = rec.begin->id;
      row.label = "#" + std::to_string(rec.begin->id) +
                  (rec.begin->tensor().empty() ? "" : " " + rec.begin->tensor());
    }
    AddSample(row, rec.rank, rec.end.has_value(), rec.end ? rec.end->t_ns - rec.begin->t_ns : 0);
    for (const trace::Collective& c : rec.collectives) {
      AddBytes(row, c);
      AddCollective(kinds, rec.rank, c);
    }
  }
  for (const trace::OpRecord& op : model.ops) {
    for (const trace::Collective& c : op.collectives) AddCollective(kinds, op.rank, c);
  }
  TraceStats stats;
  for (auto& [kind, row] : kinds) stats.kinds.push_back(std::move(row));
  for (auto& [id, row] : redistributes) stats.redistributes.push_back(std::move(row));
  for (StatsRow& row : stats.kinds) Finish(row);
  for (StatsRow& row : stats.redistributes) Finish(row);
  return stats;
}

void SortStatsRows(std::vector<StatsRow>& rows, StatsColumn column, bool ascending) {
  auto key = [column](const StatsRow& r) -> double {
    switch (column) {
      case StatsColumn::kCount:
        return static_cast<double>(r.count);
      case StatsColumn::kBytes:
        return static_cast<double>(r.bytes);
      case StatsColumn::kTotal:
        return static_cast<double>(r.total_ns);
      case StatsColumn::kMean:
        return r.mean_ns;
      case StatsColumn::kMax:
        return static_cast<double>(r.max_ns);
      case StatsColumn::kSlowestRank:
        return static_cast<double>(r.slowest_rank);
      case StatsColumn::kLabel:
        break;
    }
    return 0.0;
  };
  // Redistribute rows order by id, kind rows by name, when the label is the key or on a tie.
  auto label_less = [](const StatsRow& a, const StatsRow& b) {
    return std::tie(a.id, a.label) < std::tie(b.id, b.label);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const StatsRow& a, const StatsRow& b) {
    if (column != StatsColumn::kLabel && key(a) != key(b))
      return ascending ? key(a) < key(b) : key(a) > key(b);
    return ascending || column != StatsColumn::kLabel ? label_less(a, b) : label_less(b, a);
  });
}

}  // namespace shardscope::app::gui
