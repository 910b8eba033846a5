// The diff view's side-by-side comparison (issue 38, item 3): a redistribute whose target
// placement changed is paired with its old self (by its place: tensor, shape, op and argument) and
// compared quantity by quantity; per-kind totals sum every collective of each run. Expected values
// follow from the traces' own records by the definitions in diff_compare_model.hpp.
#include <catch2/catch.hpp>

#include <map>

#include "diff_compare_model.hpp"
#include "diff_test_traces.hpp"
#include "diff_view_model.hpp"
#include "sample_data.hpp"
#include "view_model.hpp"

using namespace shardscope::app::gui;
namespace trace = shardscope::trace;
using shardscope_gui_test::DiffSpec;

namespace {

// "a" [8, 6] from S(0),S(1) to `dst` on the 2x2 (dp, tp) mesh.
std::shared_ptr<trace::Model> OneRedistribute(const char* dst) {
  return ModelFromPlans({{"a", DiffSpec({8, 6}, "S(0),S(1)"), DiffSpec({8, 6}, dst), {}}}, "test");
}

const DiffCompareRow* Row(const std::vector<DiffCompareRow>& rows, const std::string& what) {
  for (const DiffCompareRow& r : rows)
    if (r.what == what) return &r;
  return nullptr;
}

// Rank-side calls and the bytes each rank sent, from the records of `id`.
struct Counts {
  int64_t calls = 0, max_rank = 0, total = 0;
};
Counts CountsOf(const trace::Model& m, int64_t id) {
  Counts c;
  for (const trace::RedistributeRecord* r : m.RedistributesWithId(id)) {
    int64_t sent = 0;
    for (const trace::Collective& x : r->collectives) {
      ++c.calls;
      for (int64_t b : x.bytes_sent()) sent += b;
    }
    c.max_rank = std::max(c.max_rank, sent), c.total += sent;
  }
  return c;
}

}  // namespace

TEST_CASE("diff compare: a changed target placement is one pair, compared side by side", "[gui][diff]") {
  auto base = OneRedistribute("R,S(1)"), cand = OneRedistribute("R,R");
  const DiffView view = BuildDiffView(*base, *cand);
  REQUIRE(view.rows.size() == 1);
  CHECK(view.rows[0].kind == DiffRowKind::kChanged);
  CHECK(view.rows[0].baseline_id == 0);
  CHECK(view.rows[0].candidate_id == 0);

  const auto rows = ComparePair(base.get(), 0, cand.get(), 0);
  const DiffCompareRow* placements = Row(rows, "placements");
  REQUIRE(placements);
  CHECK(placements->baseline == "S(0),S(1) -> R,S(1)");
  CHECK(placements->candidate == "S(0),S(1) -> R,R");
  CHECK(placements->differs);
  // Collective rows add up to the records' calls on each side.
  int64_t calls[2] = {0, 0};
  for (const DiffCompareRow& r : rows) {
    if (r.what.rfind("collectives ", 0) != 0) continue;
    for (int k = 0; k < 2; ++k) {
      const std::string& v = k ? r.candidate : r.baseline;
      if (!v.empty()) calls[k] += std::stoll(v);
    }
  }
  const Counts cb = CountsOf(*base, 0), cc = CountsOf(*cand, 0);
  CHECK(calls[0] == cb.calls);
  CHECK(calls[1] == cc.calls);
  // Gathering the tp dim as well sends more: the largest rank's bytes differ, with their ratio.
  const DiffCompareRow* bytes = Row(rows, "bytes sent, largest rank");
  REQUIRE(bytes);
  CHECK(bytes->baseline == FormatBytes(static_cast<double>(cb.max_rank)));
  CHECK(bytes->candidate == FormatBytes(static_cast<double>(cc.max_rank)));
  CHECK(cc.max_rank > cb.max_rank);
  CHECK(bytes->differs);
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "x%.2f",
                static_cast<double>(cc.max_rank) / static_cast<double>(cb.max_rank));
  CHECK(bytes->change == ratio);
  REQUIRE(Row(rows, "predicted time"));
  REQUIRE(Row(rows, "measured time (slowest rank)"));
}

TEST_CASE("diff compare: a gap side is empty, an identical pair differs nowhere", "[gui][diff]") {
  auto base = OneRedistribute("R,S(1)");
  for (const DiffCompareRow& r : ComparePair(base.get(), 0, nullptr, -1)) {
    CHECK(r.candidate.empty());
    CHECK(r.change.empty());
  }
  for (const DiffCompareRow& r : ComparePair(base.get(), 0, base.get(), 0)) {
    INFO(r.what);
    CHECK_FALSE(r.differs);
    CHECK(r.baseline == r.candidate);
  }
}

TEST_CASE("diff compare: per-kind totals sum every collective of each run", "[gui][diff]") {
  auto base = ModelFromPlans(shardscope_gui_test::DiffItems(false), "test");
  auto cand = ModelFromPlans(shardscope_gui_test::DiffItems(true), "test");
  const auto totals = CompareKindTotals(*base, *cand);
  REQUIRE(!totals.empty());
  CHECK(totals.back().kind == "all");
  const trace::Model* models[2] = {base.get(), cand.get()};
  for (int k = 0; k < 2; ++k) {
    std::map<std::string, std::pair<int64_t, int64_t>> want;  // kind -> calls, bytes
    int64_t all_calls = 0, all_bytes = 0;
    for (const trace::RedistributeRecord& r : models[k]->redistributes) {
      for (const trace::Collective& c : r.collectives) {
        int64_t sent = 0;
        for (int64_t b : c.bytes_sent()) sent += b;
        ++want[std::string(c.kind())].first, want[std::string(c.kind())].second += sent;
        ++all_calls, all_bytes += sent;
      }
    }
    for (const KindTotals& t : totals) {
      INFO("side " << k << " kind " << t.kind);
      if (t.kind == "all") {
        CHECK(t.calls[k] == all_calls);
        CHECK(t.bytes[k] == all_bytes);
      } else {
        CHECK(t.calls[k] == want[t.kind].first);
        CHECK(t.bytes[k] == want[t.kind].second);
      }
    }
  }
}
