#include "flight_view_model.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "view_model.hpp"

namespace shardscope::app::gui {
namespace {

// Marks are bounded: past this many the lanes would be all badges; the list still names them all.
constexpr size_t kMaxMarks = 100000;

// The span of `rank` for collective `seq` of group `pg` (p2p spans carry seq -1 and never match).
std::optional<size_t> FindSpan(const FlightViewData& d, int64_t rank, const std::string& pg, int64_t seq) {
  if (rank < 0 || rank >= d.world) return std::nullopt;
  for (size_t i = d.rank_begin[static_cast<size_t>(rank)]; i < d.rank_begin[static_cast<size_t>(rank) + 1];
       ++i)
    if (d.spans[i].seq == seq && d.spans[i].pg() == pg) return i;
  return std::nullopt;
}

std::string Tensors(const trace::SharedVec<std::vector<int64_t>>& sizes,
                    const trace::SharedVec<std::string>& dtypes) {
  std::string out;
  const size_t n = std::max(sizes.size(), dtypes.size());
  for (size_t i = 0; i < n && i < 8; ++i) {
    if (i) out += ", ";
    out += i < sizes.size() ? FormatInts(sizes[i]) : std::string("[?]");
    out += " ";
    out += i < dtypes.size() ? dtypes[i] : std::string("?");
  }
  if (n > 8) out += ", ... (" + std::to_string(n) + " tensors)";
  return n == 0 ? "none" : out;
}

}  // namespace

std::string FlightMarkOf(trace::MismatchClass kind) {
  switch (kind) {
    case trace::MismatchClass::kCollectiveType:
      return "kind";
    case trace::MismatchClass::kDtype:
      return "dtype";
    case trace::MismatchClass::kSizeOrSyntax:
    case trace::MismatchClass::kAllToAllTotal:
      return "size";
    default:
      return "";
  }
}

std::string FlightMarkOfRoot(const std::string& cls) {
  if (cls == "size_mismatch") return "size";
  if (cls == "dtype_mismatch") return "dtype";
  if (cls == "kind_mismatch") return "kind";
  return "";
}

FlightAnalysis AnalyzeFlight(const trace::Model& model) {
  FlightAnalysis a;
  a.check = trace::CheckTrace(model);
  a.triage = trace::TriageModel(model);
  a.data = BuildFlightView(model, a.check, a.triage);
  return a;
}

FlightViewData BuildFlightView(const trace::Model& model, const trace::CheckResult& check,
                               const trace::TriageResult& triage) {
  FlightViewData d;
  d.world = std::max<int64_t>(0, model.world);
  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = 0;
  for (const trace::RankTrace& rt : model.ranks) {
    if (rt.header.rank < 0 || rt.header.rank >= d.world) continue;
    // By reference into the rank's collective column: the spans keep pointers to them.
    for (const trace::Collective& col : rt.events.Of<trace::Collective>()) {
      const trace::Collective* c = &col;
      if (!c->HasFlight()) continue;
      t0 = std::min(t0, c->start_ns);
      FlightSpan s;
      s.rank = rt.header.rank;
      s.start = c->start_ns;
      s.end = c->end_ns;
      s.seq = c->flight_shape().is_p2p ? -1 : c->flight.seq_id;
      s.incomplete = c->flight_shape().state != "completed";
      s.collective = c;
      d.spans.push_back(std::move(s));
    }
  }
  if (t0 == std::numeric_limits<int64_t>::max()) t0 = 0;
  d.t0 = t0;
  for (FlightSpan& s : d.spans) {
    s.start -= t0, s.end -= t0;
    t1 = std::max(t1, std::max(s.start, s.end));
  }
  // Incomplete collectives never ended: they run to the end of the axis, past every known time.
  d.t_end = std::max<int64_t>(1, t1 + std::max<int64_t>(1, t1 / 8));
  for (FlightSpan& s : d.spans)
    if (s.incomplete) s.end = d.t_end;
  std::stable_sort(d.spans.begin(), d.spans.end(), [](const FlightSpan& a, const FlightSpan& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start < b.start;
  });
  d.rank_begin.assign(static_cast<size_t>(d.world) + 1, 0);
  for (const FlightSpan& s : d.spans) ++d.rank_begin[static_cast<size_t>(s.rank) + 1];
  for (size_t r = 1; r < d.rank_begin.size(); ++r) d.rank_begin[r] += d.rank_begin[r - 1];

  d.is_culprit.assign(static_cast<size_t>(d.world), 0);
  d.is_victim.assign(static_cast<size_t>(d.world), 0);
  for (int64_t r : triage.culprits)
    if (r >= 0 && r < d.world) d.is_culprit[static_cast<size_t>(r)] = 1;
  for (int64_t r : triage.victims)
    if (r >= 0 && r < d.world) d.is_victim[static_cast<size_t>(r)] = 1;

  // Slots: where the group's members ran the collective the missing rank never joined.
  std::map<std::pair<std::string, int64_t>, std::pair<int64_t, int64_t>> range;  // (pg, seq) -> [start, end]
  for (const trace::Mismatch& mm : check.mismatches)
    if (mm.kind == trace::MismatchClass::kMissingRanks && mm.seq_id)
      range.emplace(std::make_pair(mm.process_group, *mm.seq_id),
                    std::make_pair(std::numeric_limits<int64_t>::max(), int64_t{0}));
  if (!range.empty()) {
    for (const FlightSpan& s : d.spans) {
      auto it = range.find({s.pg(), s.seq});
      if (it == range.end()) continue;
      it->second.first = std::min(it->second.first, s.start);
      it->second.second = std::max(it->second.second, s.end);
    }
  }
  for (const trace::Mismatch& mm : check.mismatches) {
    if (mm.kind != trace::MismatchClass::kMissingRanks || !mm.seq_id) continue;
    const auto& [start, end] = range.at({mm.process_group, *mm.seq_id});
    if (start > end) continue;  // a send/recv without partner: no collective slot to show
    for (int64_t r : mm.culprits) d.slots.push_back({r, start, end, *mm.seq_id, mm.process_group});
  }

  // Marks: the checker's size / dtype / kind mismatches and triage's roots of those classes.
  std::set<std::pair<size_t, std::string>> seen;
  auto mark = [&](int64_t rank, const std::string& pg, int64_t seq, const std::string& what) {
    if (what.empty() || d.marks.size() >= kMaxMarks) return;
    std::optional<size_t> span = FindSpan(d, rank, pg, seq);
    if (!span || !seen.insert({*span, what}).second) return;
    d.marks.push_back({rank, *span, what,
                       static_cast<char>(what == "dtype"  ? 'D'
                                         : what == "kind" ? 'K'
                                                          : 'S')});
  };
  for (const trace::TriageRoot& root : triage.roots)
    if (root.seq)
      for (int64_t r : root.culprits) mark(r, root.process_group, *root.seq, FlightMarkOfRoot(root.cls));
  for (const trace::Mismatch& mm : check.mismatches)
    if (mm.seq_id)
      for (int64_t r : mm.culprits) mark(r, mm.process_group, *mm.seq_id, FlightMarkOf(mm.kind));
  std::stable_sort(d.marks.begin(), d.marks.end(),
                   [](const FlightMark& a, const FlightMark& b) { return a.rank < b.rank; });

  // Group lanes above kTimelineGroupAbove ranks, exactly as the timeline groups its lanes.
  if (d.world > kTimelineGroupAbove && !model.ranks.empty()) {
    const trace::Header& h = model.ranks.front().header;
    d.groups = MeshGroups(d.world, h.mesh_shape, h.mesh_dim_names);
    d.group_lanes.resize(d.groups.size());
    size_t next_mark = 0;
    for (size_t g = 0; g < d.groups.size(); ++g) {
      const TimelineGroup& group = d.groups[g];
      FlightGroupLane& lane = d.group_lanes[g];
      std::vector<std::pair<int64_t, TimelineSpan>> done, stuck;
      for (int64_t r = group.first_rank; r < group.first_rank + group.size; ++r) {
        const size_t rr = static_cast<size_t>(r);
        lane.culprits += d.is_culprit[rr];
        lane.victims += d.is_victim[rr];
        for (size_t i = d.rank_begin[rr]; i < d.rank_begin[rr + 1]; ++i) {
          TimelineSpan t;
          t.start = d.spans[i].start, t.end = d.spans[i].end, t.record = static_cast<int32_t>(i);
          (d.spans[i].incomplete ? stuck : done).emplace_back(r, t);
        }
      }
      while (next_mark < d.marks.size() && d.marks[next_mark].rank < group.first_rank + group.size) {
        ++lane.marks;
        ++next_mark;
      }
      lane.done = UnionSpans(std::move(done));
      lane.stuck = UnionSpans(std::move(stuck));
    }
  }
  return d;
}

std::vector<std::string> FlightSpanDetails(const FlightViewData& d, size_t span) {
  std::vector<std::string> out;
  if (span >= d.spans.size() || d.spans[span].collective == nullptr) return out;
  const FlightSpan& s = d.spans[span];
  const trace::Collective& c = *s.collective;
  const trace::FlightRecord& f = c.flight;
  const trace::FlightShape& shape = c.flight_shape();
  out.push_back("rank " + std::to_string(s.rank) + "  process group " + shape.pg_name.str() +
                (shape.pg_desc.empty() ? "" : " (" + shape.pg_desc.str() + ")"));
  out.push_back(shape.is_p2p ? "p2p seq " + std::to_string(f.p2p_seq_id)
                             : "seq " + std::to_string(f.seq_id) + "  record " + std::to_string(f.record_id));
  out.push_back(shape.profiling_name.str() + "  state " + shape.state.str());
  out.push_back("in:  " + Tensors(shape.input_sizes, shape.input_dtypes));
  out.push_back("out: " + Tensors(shape.output_sizes, shape.output_dtypes));
  const double start = static_cast<double>(c.start_ns - d.t0), end = static_cast<double>(c.end_ns - d.t0);
  const std::string at = shape.state == "scheduled" ? "scheduled at " : "started at ";
  if (shape.state == "completed") {
    out.push_back(at + FormatTimeNs(start) + ", completed at " + FormatTimeNs(end) + " (" +
                  FormatTimeNs(end - start) + ")");
  } else {
    out.push_back(at + FormatTimeNs(start) + ", never completed" +
                  (shape.state == "scheduled" ? " (never started)" : ""));
  }
  if (shape.timeout_ms > 0) out.push_back("timeout " + std::to_string(shape.timeout_ms) + " ms");
  for (const FlightMark& m : d.marks)
    if (m.span == span)
      out.push_back(std::string(1, m.letter) + ": " + m.what +
                    " mismatch (differs from the group's other ranks)");
  return out;
}

std::string FlightRowLabel(const FlightViewData& d, const TimelineRow& row, bool expanded) {
  if (row.rank < 0) return (expanded ? "- " : "+ ") + d.groups[static_cast<size_t>(row.group)].label;
  return (row.group >= 0 ? "  r" : "r") + std::to_string(row.rank);
}

}  // namespace shardscope::app::gui
