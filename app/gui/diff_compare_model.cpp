#include "diff_compare_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "shardscope/text.hpp"
#include "view_model.hpp"

namespace shardscope::app::gui {
namespace {

std::string Us(double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f us", us);
  return buf;
}

std::string Bytes(int64_t b) { return FormatBytes(static_cast<double>(b)); }

// What one side of a pair did, from every rank's record of the id.
struct SideFacts {
  bool present = false;
  std::string placements, planner, notation, dtype;
  std::map<std::string, int64_t> calls;  // kind (with mesh dims) -> rank-side calls
  int64_t max_rank_bytes = 0, total_bytes = 0;
  double cost_us = 0;
  double time_us = -1;  // -1: no rank finished it
};

SideFacts Facts(const trace::Model* model, int64_t id) {
  SideFacts f;
  if (!model || id < 0) return f;
  const auto recs = model->RedistributesWithId(id);
  if (recs.empty()) return f;
  const trace::RedistributeRecord* first = recs.front();
  for (const auto* r : recs)
    if (r->rank < first->rank) first = r;
  const trace::RedistributeBegin& b = first->begin;
  f.present = true;
  f.placements = Join(b.src_placements(), ",") + " -> " + Join(b.dst_placements(), ",");
  f.planner = b.planner();
  f.notation = b.notation();
  f.dtype = b.dtype();
  f.cost_us = b.cost_us();
  for (const trace::RedistributeRecord* r : recs) {
    int64_t sent = 0;
    for (const trace::Collective& c : r->collectives) {
      std::string key = std::string(c.kind()) + " on [";
      for (size_t i = 0; i < c.mesh_dims().size(); ++i)
        key += (i ? "," : "") + std::to_string(c.mesh_dims()[i]);
      key += "]";
      ++f.calls[key];
      for (int64_t x : c.bytes_sent()) sent += x;
    }
    f.max_rank_bytes = std::max(f.max_rank_bytes, sent);
    f.total_bytes += sent;
    if (r->end) f.time_us = std::max(f.time_us, static_cast<double>(r->end->t_ns - r->begin->t_ns) / 1000.0);
  }
  return f;
}

std::string Change(double b, double c, bool ratio) {
  if (b == c) return "";
  char buf[64];
  if (ratio && b > 0) {
    std::snprintf(buf, sizeof buf, "x%.2f", c / b);
  } else if (b != 0) {
    std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * (c - b) / b);
  } else {
    std::snprintf(buf, sizeof buf, "%+g", c - b);
  }
  return buf;
}

}  // namespace

std::vector<DiffCompareRow> ComparePair(const trace::Model* baseline, int64_t baseline_id,
                                        const trace::Model* candidate, int64_t candidate_id) {
  const SideFacts sides[2] = {Facts(baseline, baseline_id), Facts(candidate, candidate_id)};
  std::vector<DiffCompareRow> rows;
  auto text = [&](const char* what, std::string SideFacts::*field) {
    DiffCompareRow r{what, sides[0].present ? sides[0].*field : "", sides[1].present ? sides[1].*field : "",
                     false, ""};
    r.differs = r.baseline != r.candidate;
    rows.push_back(std::move(r));
  };
  text("placements", &SideFacts::placements);
  text("planner", &SideFacts::planner);
  text("plan", &SideFacts::notation);
  text("dtype", &SideFacts::dtype);
  std::map<std::string, std::pair<int64_t, int64_t>> calls;
  for (int k = 0; k < 2; ++k)
    for (const auto& [kind, n] : sides[k].calls) (k ? calls[kind].second : calls[kind].first) = n;
  for (const auto& [kind, n] : calls) {
    DiffCompareRow r{"collectives " + kind, sides[0].present ? std::to_string(n.first) + " calls" : "",
                     sides[1].present ? std::to_string(n.second) + " calls" : "", n.first != n.second, ""};
    if (sides[0].present && sides[1].present && n.first != n.second)
      r.change = (n.second > n.first ? "+" : "") + std::to_string(n.second - n.first);
    rows.push_back(std::move(r));
  }
  auto number = [&](const char* what, auto value, auto format, bool ratio) {
    DiffCompareRow r{what, "", "", false, ""};
    if (sides[0].present) r.baseline = format(value(sides[0]));
    if (sides[1].present) r.candidate = format(value(sides[1]));
    r.differs = r.baseline != r.candidate;
    if (sides[0].present && sides[1].present && r.differs)
      r.change = Change(static_cast<double>(value(sides[0])), static_cast<double>(value(sides[1])), ratio);
    rows.push_back(std::move(r));
  };
  number(
      "bytes sent, largest rank", [](const SideFacts& f) { return f.max_rank_bytes; }, Bytes, true);
  number(
      "bytes sent, all ranks", [](const SideFacts& f) { return f.total_bytes; }, Bytes, true);
  number(
      "predicted time", [](const SideFacts& f) { return f.cost_us; }, Us, false);
  DiffCompareRow measured{"measured time (slowest rank)", "", "", false, ""};
  for (int k = 0; k < 2; ++k) {
    if (!sides[k].present) continue;
    (k ? measured.candidate : measured.baseline) = sides[k].time_us < 0 ? "unfinished" : Us(sides[k].time_us);
  }
  // Measured time always varies between runs: shown, marked only beyond 10%.
  if (sides[0].time_us > 0 && sides[1].time_us >= 0) {
    measured.change = Change(sides[0].time_us, sides[1].time_us, false);
    measured.differs = std::abs(sides[1].time_us - sides[0].time_us) > 0.1 * sides[0].time_us;
  }
  rows.push_back(std::move(measured));
  return rows;
}

std::vector<KindTotals> CompareKindTotals(const trace::Model& baseline, const trace::Model& candidate) {
  std::map<std::string, KindTotals> by_kind;
  KindTotals all;
  all.kind = "all";
  const trace::Model* models[2] = {&baseline, &candidate};
  for (int k = 0; k < 2; ++k) {
    auto add = [&](const trace::Collective& c) {
      KindTotals& t = by_kind[std::string(c.kind())];
      t.kind = c.kind();
      int64_t sent = 0;
      for (int64_t x : c.bytes_sent()) sent += x;
      for (KindTotals* x : {&t, &all}) {
        ++x->calls[k];
        x->bytes[k] += sent;
        x->time_ns[k] += std::max<int64_t>(0, c.end_ns - c.start_ns);
      }
    };
    for (const trace::RedistributeRecord& r : models[k]->redistributes)
      for (const trace::Collective& c : r.collectives) add(c);
    for (const trace::OpRecord& r : models[k]->ops)
      for (const trace::Collective& c : r.collectives) add(c);
  }
  std::vector<KindTotals> out;
  for (auto& [kind, t] : by_kind) out.push_back(t);
  out.push_back(all);
  return out;
}

}  // namespace shardscope::app::gui
