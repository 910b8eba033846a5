#include "diff_view_model.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "shardscope/text.hpp"

namespace shardscope::app::gui {
namespace {

// Lowest rank's record of every id, in id order (from the model's id index).
std::map<int64_t, const trace::RedistributeRecord*> FirstRecords(const trace::Model& model) {
  std::map<int64_t, const trace::RedistributeRecord*> out;
  for (int64_t id : model.RedistributeIds()) {
    for (const trace::RedistributeRecord* rec : model.RedistributesWithId(id)) {
      auto [it, inserted] = out.emplace(id, rec);
      if (!inserted && rec->rank < it->second->rank) it->second = rec;
    }
  }
  return out;
}

std::string RowText(const trace::RedistributeRecord& rec) {
  const trace::RedistributeBegin& b = rec.begin;
  size_t steps = b.optimized_plan().size();
  return "#" + std::to_string(b.id) + "  " + (b.tensor().empty() ? "-" : b.tensor()) + "  " +
         Join(b.src_placements(), ",") + " -> " + Join(b.dst_placements(), ",") + "  " +
         std::to_string(steps) + " step" + (steps == 1 ? "" : "s");
}

// The CLI's line for one difference: FormatDiffText of a result holding only it, less the summary.
std::string LineOf(const trace::Difference& d, const trace::DiffOptions& options) {
  trace::DiffResult one;
  one.options = options;
  one.differences.push_back(d);
  std::string text = trace::FormatDiffText(one);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  size_t summary = text.rfind('\n');
  return summary == std::string::npos ? text : text.substr(0, summary);
}

// The step a difference names ("optimized plan step 2", "bytes of step 1 all_gather ...",
// "rank 3 shard after step 0"), if any. Raw-plan steps are not the optimized plan's.
std::optional<int64_t> NamedStep(const std::string& what) {
  if (what.rfind("raw plan", 0) == 0) return std::nullopt;
  for (size_t at = what.find("step "); at != std::string::npos; at = what.find("step ", at + 1)) {
    size_t p = at + 5, e = p;
    while (e < what.size() && std::isdigit(static_cast<unsigned char>(what[e]))) ++e;
    if (e > p && (at == 0 || what[at - 1] == ' ')) return std::stoll(what.substr(p, e - p));
  }
  return std::nullopt;
}

// The last line of the CLI's diff text: its summary.
std::string SummaryOf(const trace::DiffResult& result) {
  std::string all = trace::FormatDiffText(result);
  if (!all.empty() && all.back() == '\n') all.pop_back();
  size_t last = all.rfind('\n');
  return last == std::string::npos ? all : all.substr(last + 1);
}

// The positions in `ids` of the ids not in `unmatched`.
std::vector<size_t> Matched(const std::vector<int64_t>& ids, const std::set<int64_t>& unmatched) {
  std::vector<size_t> out;
  for (size_t i = 0; i < ids.size(); ++i)
    if (!unmatched.count(ids[i])) out.push_back(i);
  return out;
}

bool SameTransform(const trace::PlanStep& a, const trace::PlanStep& b) {
  return a.mesh_dims == b.mesh_dims && a.src == b.src && a.dst == b.dst && a.comm == b.comm &&
         a.logical_shape == b.logical_shape && a.flattened == b.flattened;
}

}  // namespace

std::string_view DiffRowKindName(DiffRowKind kind) {
  constexpr std::string_view kNames[] = {"same", "changed", "removed", "added"};
  return kNames[static_cast<size_t>(kind)];
}

std::string_view DiffRowMarker(DiffRowKind kind) {
  constexpr std::string_view kMarkers[] = {"", "!=", "-", "+"};
  return kMarkers[static_cast<size_t>(kind)];
}

const trace::RedistributeRecord* FirstRecord(const trace::Model& model, int64_t id) {
  const trace::RedistributeRecord* best = nullptr;
  for (const trace::RedistributeRecord& rec : model.redistributes) {
    if (rec.begin->id == id && (best == nullptr || rec.rank < best->rank)) best = &rec;
  }
  return best;
}

DiffView BuildDiffView(const trace::Model& baseline, const trace::Model& candidate,
                       const trace::DiffOptions& options) {
  DiffView view;
  view.result = trace::DiffTraces(baseline, candidate, options);
  const std::vector<trace::Difference>& diffs = view.result.differences;
  view.summary = SummaryOf(view.result);

  std::set<int64_t> removed, added;
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_pair;
  std::map<int64_t, std::vector<size_t>> by_removed, by_added;
  view.lines.reserve(diffs.size());
  for (size_t i = 0; i < diffs.size(); ++i) {
    const trace::Difference& d = diffs[i];
    view.lines.push_back(LineOf(d, view.result.options));
    if (d.op) {
      // About an op (its ids are op ids, not redistribute ids): listed with the run-level lines.
      view.run_differences.push_back(i);
    } else if (d.baseline_id && d.candidate_id) {
      by_pair[{*d.baseline_id, *d.candidate_id}].push_back(i);
    } else if (d.baseline_id) {
      removed.insert(*d.baseline_id);
      by_removed[*d.baseline_id].push_back(i);
    } else if (d.candidate_id) {
      added.insert(*d.candidate_id);
      by_added[*d.candidate_id].push_back(i);
    } else {
      view.run_differences.push_back(i);
    }
  }

  auto first_b = FirstRecords(baseline), first_c = FirstRecords(candidate);
  std::vector<int64_t> ids_b, ids_c;
  for (const auto& [id, rec] : first_b) ids_b.push_back(id);
  for (const auto& [id, rec] : first_c) ids_c.push_back(id);
  // DiffTraces matches in order, so the redistributes it did not report as removed or added are
  // its aligned pairs, k-th with k-th.
  std::vector<size_t> matched_b = Matched(ids_b, removed), matched_c = Matched(ids_c, added);
  if (matched_b.size() != matched_c.size() || static_cast<int64_t>(matched_b.size()) != view.result.aligned) {
    view.error = "cannot recover the alignment: " + std::to_string(matched_b.size()) + " and " +
                 std::to_string(matched_c.size()) + " unmatched-free redistributes, " +
                 std::to_string(view.result.aligned) + " aligned";
    return view;
  }

  auto side_row = [&](bool is_baseline, size_t index) {
    DiffRow row;
    int64_t id = is_baseline ? ids_b[index] : ids_c[index];
    row.kind = is_baseline ? DiffRowKind::kRemoved : DiffRowKind::kAdded;
    (is_baseline ? row.baseline_id : row.candidate_id) = id;
    (is_baseline ? row.baseline_text : row.candidate_text) =
        RowText(*(is_baseline ? first_b : first_c).at(id));
    row.differences = (is_baseline ? by_removed : by_added)[id];
    return row;
  };
  // The same walk as DiffTraces: before each pair, the baseline-only then the candidate-only ones.
  size_t i = 0, j = 0;
  for (size_t k = 0; k <= matched_b.size(); ++k) {
    size_t pi = k < matched_b.size() ? matched_b[k] : ids_b.size();
    size_t pj = k < matched_c.size() ? matched_c[k] : ids_c.size();
    for (; i < pi; ++i) view.rows.push_back(side_row(true, i));
    for (; j < pj; ++j) view.rows.push_back(side_row(false, j));
    if (k == matched_b.size()) break;
    DiffRow row;
    row.baseline_id = ids_b[pi];
    row.candidate_id = ids_c[pj];
    row.baseline_text = RowText(*first_b.at(ids_b[pi]));
    row.candidate_text = RowText(*first_c.at(ids_c[pj]));
    auto it = by_pair.find({ids_b[pi], ids_c[pj]});
    if (it != by_pair.end()) row.differences = it->second;
    row.kind = row.differences.empty() ? DiffRowKind::kSame : DiffRowKind::kChanged;
    view.rows.push_back(std::move(row));
    i = pi + 1;
    j = pj + 1;
  }
  return view;
}

std::vector<DiffStepRow> DiffSteps(const DiffView& view, const DiffRow& row,
                                   const trace::RedistributeBegin* baseline,
                                   const trace::RedistributeBegin* candidate) {
  size_t nb = baseline ? baseline->optimized_plan().size() : 0;
  size_t nc = candidate ? candidate->optimized_plan().size() : 0;
  std::set<int64_t> named;
  for (size_t d : row.differences) {
    if (d >= view.result.differences.size()) continue;
    if (auto step = NamedStep(view.result.differences[d].what)) named.insert(*step);
  }
  std::vector<DiffStepRow> out;
  for (size_t k = 0; k < std::max(nb, nc); ++k) {
    DiffStepRow s;
    s.step = static_cast<int64_t>(k);
    s.in_baseline = k < nb;
    s.in_candidate = k < nc;
    s.differs = !s.in_baseline || !s.in_candidate ||
                !SameTransform(baseline->optimized_plan()[k], candidate->optimized_plan()[k]) ||
                named.count(s.step) > 0;
    out.push_back(s);
  }
  return out;
}

}  // namespace shardscope::app::gui
