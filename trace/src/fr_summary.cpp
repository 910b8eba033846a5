// The flight records' parts of `show` and `diff` (wherever collectives carry one: Flight Recorder
// dumps, Kineto traces, mixed models): per process group, every collective_seq_id with what each
// rank's buffer says about it, and the sends/recvs per rank.
#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "collective_match.hpp"
#include "flight_groups.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

using detail::FlightEntry;
using detail::FlightSig;
using detail::FlightTable;

// One collective_seq_id of a group: each rank's entry (rank order), the lowest rank's first.
struct Row {
  int64_t seq = 0;
  std::span<const std::pair<int64_t, const FlightEntry*>> by_rank;
  const FlightEntry& first() const { return *by_rank.front().second; }
  /// Rank r's entry, or nullptr.
  const FlightEntry* Of(int64_t r) const {
    auto it = std::lower_bound(by_rank.begin(), by_rank.end(), r,
                               [](const auto& cell, int64_t rank) { return cell.first < rank; });
    return it != by_rank.end() && it->first == r ? it->second : nullptr;
  }
};

// A group's rows by seq, over one sorted list of (rank, entry) cells: a map of maps cost a node
// per entry, 2M of them for a 1024-rank dump set, and most of `diff`'s time.
class Rows {
 public:
  explicit Rows(const detail::FlightGroup* g) {
    if (g == nullptr) return;
    struct Cell {
      int64_t seq, rank;
      const FlightEntry* entry;
    };
    std::vector<Cell> all;
    for (const auto& [r, m] : g->members)
      for (const FlightEntry& e : m.by_seq) all.push_back({e.seq, r, &e});
    // Stable: of two entries with one (seq, rank), the first in the rank's buffer stays.
    std::stable_sort(all.begin(), all.end(), [](const Cell& a, const Cell& b) {
      return a.seq != b.seq ? a.seq < b.seq : a.rank < b.rank;
    });
    cells_.reserve(all.size());
    std::vector<std::pair<int64_t, size_t>> starts;  // (seq, first cell)
    for (size_t i = 0; i < all.size(); ++i) {
      if (i > 0 && all[i].seq == all[i - 1].seq && all[i].rank == all[i - 1].rank) continue;
      if (i == 0 || all[i].seq != all[i - 1].seq) starts.emplace_back(all[i].seq, cells_.size());
      cells_.emplace_back(all[i].rank, all[i].entry);
    }
    rows_.reserve(starts.size());
    for (size_t k = 0; k < starts.size(); ++k) {
      const size_t end = k + 1 < starts.size() ? starts[k + 1].second : cells_.size();
      rows_.push_back({starts[k].first, {cells_.data() + starts[k].second, end - starts[k].second}});
    }
  }
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;
  std::vector<Row>::const_iterator begin() const { return rows_.begin(); }
  std::vector<Row>::const_iterator end() const { return rows_.end(); }
  size_t size() const { return rows_.size(); }
  /// The row of `seq`, or nullptr.
  const Row* Find(int64_t seq) const {
    auto it = std::lower_bound(rows_.begin(), rows_.end(), seq,
                               [](const Row& row, int64_t s) { return row.seq < s; });
    return it != rows_.end() && it->seq == seq ? &*it : nullptr;
  }

 private:
  std::vector<std::pair<int64_t, const FlightEntry*>> cells_;
  std::vector<Row> rows_;
};

// Sends and recvs as (rank, entry), in rank and record order.
std::vector<std::pair<int64_t, const FlightEntry*>> P2p(const detail::FlightGroup& g) {
  std::vector<std::pair<int64_t, const FlightEntry*>> out;
  for (const auto& [r, m] : g.members)
    for (const FlightEntry& e : m.p2p) out.emplace_back(r, &e);
  return out;
}

std::string ShapesText(const std::vector<std::vector<int64_t>>& shapes) {
  std::string out;
  for (size_t i = 0; i < shapes.size(); ++i) out += (i ? " " : "") + detail::FormatInts(shapes[i]);
  return out.empty() ? "-" : out;
}

std::string RanksText(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out;
}

}  // namespace

std::string FormatFlightText(const Model& model) {
  std::string out;
  const FlightTable t = detail::GroupFlightRecords(model);
  for (const auto& [key, g] : t.Groups()) {
    const Rows rows(&g);
    const auto p2p = P2p(g);
    out += "\nprocess group " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")") + " ranks " +
           detail::FormatInts(g.ranks) + ": " + std::to_string(rows.size()) + " collective(s), " +
           std::to_string(p2p.size()) + " p2p entr" + (p2p.size() == 1 ? "y" : "ies") + "\n";
    for (const Row& row : rows) {
      const FlightSig& f = t.Sig(row.first().sig);
      std::map<std::string, std::vector<int64_t>> by_state;
      std::vector<int64_t> absent;
      for (int64_t r : g.ranks) {
        const FlightEntry* e = row.Of(r);
        if (e == nullptr)
          absent.push_back(r);
        else
          by_state[t.State(e->state)].push_back(r);
      }
      out += "  seq " + std::to_string(row.seq) + "  " + f.profiling_name + "  " + ShapesText(f.input_sizes) +
             " -> " + ShapesText(f.output_sizes) + "  " +
             (f.input_dtypes.empty() ? "-" : f.input_dtypes.front());
      for (const auto& [state, ranks] : by_state) out += "  " + state + ": " + RanksText(ranks);
      if (!absent.empty()) out += "  absent: " + RanksText(absent);
      out += "\n";
    }
    for (const auto& [rank, e] : p2p) {
      const FlightSig& f = t.Sig(e->sig);
      out += "  rank " + std::to_string(rank) + " p2p seq " + std::to_string(e->seq) + "  " +
             f.profiling_name + "  " + ShapesText(f.input_sizes) + "  " +
             (f.input_dtypes.empty() ? "-" : f.input_dtypes.front()) + "  " + t.State(e->state) + "\n";
    }
  }
  return out;
}

json FlightJson(const Model& model) {
  json groups = json::array();
  const FlightTable t = detail::GroupFlightRecords(model);
  for (const auto& [key, g] : t.Groups()) {
    json rows = json::array();
    for (const Row& row : Rows(&g)) {
      json states = json::object();
      for (const auto& [r, e] : row.by_rank) states[std::to_string(r)] = t.State(e->state);
      const FlightSig& first = t.Sig(row.first().sig);
      rows.push_back({{"seq_id", row.seq},
                      {"profiling_name", first.profiling_name},
                      {"input_sizes", first.input_sizes},
                      {"output_sizes", first.output_sizes},
                      {"input_dtypes", first.input_dtypes},
                      {"states", states}});
    }
    json p2p = json::array();
    for (const auto& [rank, e] : P2p(g)) {
      const FlightSig& f = t.Sig(e->sig);
      p2p.push_back({{"rank", rank},
                     {"p2p_seq_id", e->seq},
                     {"profiling_name", f.profiling_name},
                     {"input_sizes", f.input_sizes},
                     {"state", t.State(e->state)}});
    }
    groups.push_back(
        {{"name", g.name}, {"desc", g.desc}, {"ranks", g.ranks}, {"collectives", rows}, {"p2p", p2p}});
  }
  return {{"process_groups", groups}};
}

namespace detail {

void DiffFlightRecords(const Model& baseline, const Model& candidate, const DiffOptions& options,
                       std::vector<Difference>& out) {
  const FlightTable tb = GroupFlightRecords(baseline), tc = GroupFlightRecords(candidate);
  const auto& gb = tb.Groups();
  const auto& gc = tc.Groups();
  std::set<FlightGroupKey> keys;
  for (const auto& [k, g] : gb) keys.insert(k);
  for (const auto& [k, g] : gc) keys.insert(k);
  auto add = [&](DiffCategory cat, const FlightGroup& g, std::optional<int64_t> b_seq,
                 std::optional<int64_t> c_seq, std::string what, std::string b, std::string c) {
    Difference d;
    d.category = cat;
    d.baseline_id = b_seq;
    d.candidate_id = c_seq;
    d.subject = "process group " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")") + " " +
                detail::FormatInts(g.ranks) + " collective";
    d.what = std::move(what);
    d.baseline = std::move(b);
    d.candidate = std::move(c);
    d.failing = options.fail_on.count(cat) > 0;
    out.push_back(std::move(d));
  };
  for (const auto& key : keys) {
    const FlightGroup& named = gb.count(key) ? gb.at(key) : gc.at(key);
    const Rows rows_b(gb.count(key) ? &gb.at(key) : nullptr);
    const Rows rows_c(gc.count(key) ? &gc.at(key) : nullptr);
    std::set<int64_t> seqs;
    for (const Row& row : rows_b) seqs.insert(row.seq);
    for (const Row& row : rows_c) seqs.insert(row.seq);
    for (int64_t seq : seqs) {
      const Row* ib = rows_b.Find(seq);
      const Row* ic = rows_c.Find(seq);
      if (ic == nullptr) {
        add(DiffCategory::kCollectives, named, seq, std::nullopt, "removed",
            tb.Sig(ib->first().sig).profiling_name, "");
        continue;
      }
      if (ib == nullptr) {
        add(DiffCategory::kCollectives, named, std::nullopt, seq, "added", "",
            tc.Sig(ic->first().sig).profiling_name);
        continue;
      }
      // Rank by rank: what each rank's entry says in each trace ("absent" when its buffer lacks it).
      std::set<int64_t> ranks;
      for (const auto& [r, f] : ib->by_rank) ranks.insert(r);
      for (const auto& [r, f] : ic->by_rank) ranks.insert(r);
      auto sizes = [](const FlightSig& f) {
        return ShapesText(f.input_sizes) + " -> " + ShapesText(f.output_sizes);
      };
      auto dtypes = [](const FlightSig& f) {
        std::string text;
        for (const auto& t : f.input_dtypes) text += (text.empty() ? "" : ",") + t;
        return text;
      };
      for (int64_t r : ranks) {
        const FlightEntry* b = ib->Of(r);
        const FlightEntry* c = ic->Of(r);
        auto rank = [r] { return "rank " + std::to_string(r) + " "; };  // built only for a difference
        if (b == nullptr || c == nullptr) {
          add(DiffCategory::kCollectives, named, seq, seq, rank() + "state",
              b ? tb.State(b->state).str() : "absent", c ? tc.State(c->state).str() : "absent");
          continue;
        }
        const FlightSig* fb = &tb.Sig(b->sig);
        const FlightSig* fc = &tc.Sig(c->sig);
        if (fb->profiling_name != fc->profiling_name)
          add(DiffCategory::kCollectives, named, seq, seq, rank() + "profiling name", fb->profiling_name,
              fc->profiling_name);
        // Equal lists print equal texts: the texts are built only for lists that differ (and
        // compared, as the report is about what they print).
        const bool same_sizes = fb->input_sizes == fc->input_sizes && fb->output_sizes == fc->output_sizes;
        if (!same_sizes && sizes(*fb) != sizes(*fc))
          add(DiffCategory::kBytes, named, seq, seq, rank() + "sizes", sizes(*fb), sizes(*fc));
        if (fb->input_dtypes != fc->input_dtypes && dtypes(*fb) != dtypes(*fc))
          add(DiffCategory::kBytes, named, seq, seq, rank() + "dtypes", dtypes(*fb), dtypes(*fc));
        if (tb.State(b->state) != tc.State(c->state))
          add(DiffCategory::kCollectives, named, seq, seq, rank() + "state", tb.State(b->state),
              tc.State(c->state));
      }
    }
  }
}

}  // namespace detail
}  // namespace shardscope::trace
