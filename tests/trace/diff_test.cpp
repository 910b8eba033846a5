// Trace diff on hand-built two-rank models with known divergences. Expected lines and byte counts
// follow from how each candidate was built (a [4,2] f32 S(0) shard on 2 ranks is 2x2x4 = 16 B).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "shardscope/error.hpp"
#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/reader.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

// One redistribute of a 2-rank, 1-d mesh run, described by what the tests vary.
struct Spec {
  std::string tensor = "x";
  std::vector<int64_t> shape = {4, 2};
  std::string src = "S(0)", dst = "R";
  std::string notation = "S(0)->R[0]", planner = "greedy";
  double cost_us = 4.0;
  std::vector<std::string> comms = {"all_gather"};  // one plan step and one collective per entry
  int64_t bytes = 16;                               // per peer, per collective
  std::vector<int64_t> rank1_after = {4, 2};        // rank 1's shard shape after every step
  int64_t duration_ns = 10000;
};

Model Make(const std::vector<Spec>& specs) {
  Model m;
  m.world = 2;
  for (int64_t rank = 0; rank < 2; ++rank) {
    RankTrace rt;
    rt.file = "rank-" + std::to_string(rank) + ".jsonl";
    rt.header.rank = rank;
    rt.header.world = 2;
    rt.header.mesh_shape = {2};
    m.ranks.push_back(rt);
  }
  for (int64_t rank = 0; rank < 2; ++rank) {
    int64_t t = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      const Spec& s = specs[i];
      RedistributeRecord rec;
      rec.rank = rank;
      RedistributeBegin& b = rec.begin.Mutable();
      b.id = static_cast<int64_t>(i);
      b.Mutable().tensor = s.tensor;
      b.Mutable().global_shape = s.shape;
      b.Mutable().dtype = "f32";
      b.Mutable().src_placements = {s.src};
      b.Mutable().dst_placements = {s.dst};
      b.Mutable().planner = s.planner;
      b.Mutable().notation = b.Mutable().notation_unoptimized = s.notation;
      b.Mutable().cost_us = s.cost_us;
      b.t_ns = t;
      for (size_t k = 0; k < s.comms.size(); ++k) {
        PlanStep p;
        p.mesh_dims = {0};
        p.src = s.src;
        p.dst = s.dst;
        p.comm = s.comms[k];
        p.logical_shape = s.shape;
        b.Mutable().optimized_plan.push_back(p);
        b.Mutable().raw_plan.push_back(p);
        StepRecord step;
        step.begin.Mutable().redistribute_id = b.id;
        step.begin.Mutable().step = static_cast<int64_t>(k);
        step.begin.Mutable().local_shape_before = {2, 2};
        step.begin.Mutable().global_offset_before = {2 * rank, 0};
        StepEnd end;
        end.redistribute_id = b.id;
        end.step = static_cast<int64_t>(k);
        end.local_shape_after = rank == 1 ? s.rank1_after : std::vector<int64_t>{4, 2};
        end.global_offset_after = {0, 0};
        step.end = end;
        rec.steps.push_back(step);
        Collective c;
        c.redistribute_id = b.id;
        c.Mutable().step = static_cast<int64_t>(k);
        c.Mutable().kind = s.comms[k];
        c.Mutable().mesh_dims = {0};
        c.Mutable().group = {0, 1};
        c.Mutable().dtype = "f32";
        c.Mutable().bytes_sent =
            rank == 0 ? std::vector<int64_t>{0, s.bytes} : std::vector<int64_t>{s.bytes, 0};
        c.Mutable().bytes_recv = c.bytes_sent();
        rec.collectives.push_back(c);
      }
      RedistributeEnd e;
      e.id = b.id;
      e.t_ns = t + s.duration_ns;
      rec.end = e;
      t += 100000;
      m.redistributes.push_back(rec);
    }
  }
  return m;
}

std::vector<std::string> Whats(const DiffResult& r) {
  std::vector<std::string> out;
  for (const Difference& d : r.differences)
    out.push_back(std::string(DiffCategoryName(d.category)) + "|" + d.what);
  return out;
}

// The diff of one default redistribute against the same one changed by `change`.
template <typename Change>
DiffResult DiffChanged(Change change, const DiffOptions& options = DiffOptions{}) {
  Spec base;
  Spec changed = base;
  change(changed);
  return DiffTraces(Make({base}), Make({changed}), options);
}

// `r` holds one difference: of `category`, about `what` (unless nullptr), from `baseline` to
// `candidate`.
void CheckOnlyDifference(const DiffResult& r, DiffCategory category, const char* what,
                         const std::string& baseline, const std::string& candidate) {
  REQUIRE(r.differences.size() == 1);
  const Difference& d = r.differences[0];
  CHECK(d.category == category);
  if (what != nullptr) CHECK(d.what == what);
  CHECK(d.baseline == baseline);
  CHECK(d.candidate == candidate);
}

const Difference* Find(const DiffResult& r, const std::string& what) {
  for (const Difference& d : r.differences)
    if (d.what == what) return &d;
  return nullptr;
}

}  // namespace

TEST_CASE("diff: identical traces have no differences", "[trace][diff]") {
  Spec a;
  Spec b;
  b.tensor = "y";
  DiffResult r = DiffTraces(Make({a, b}), Make({a, b}), DiffOptions{});
  CHECK(r.differences.empty());
  CHECK_FALSE(r.Failed());
  CHECK(r.aligned == 2);
  CHECK(FormatDiffText(r) ==
        "no differences; aligned 2 of 2 baseline / 2 candidate redistributes (fail on: "
        "plan,collectives,bytes,shapes,cost,ops)\n");
}

TEST_CASE("diff: a planner change is a failing plan difference by default", "[trace][diff]") {
  Spec base;
  Spec changed = base;
  changed.planner = "graph";
  changed.notation = "S(0)->R[0] (graph)";
  DiffResult r = DiffTraces(Make({base}), Make({changed}), DiffOptions{});
  CHECK(Whats(r) == std::vector<std::string>{"plan|planner", "plan|notation", "plan|unoptimized notation"});
  CHECK(r.Failed());
  const Difference* d = Find(r, "planner");
  REQUIRE(d != nullptr);
  CHECK(d->baseline == "greedy");
  CHECK(d->candidate == "graph");
  CHECK(d->baseline_id == 0);
  CHECK(d->candidate_id == 0);
  std::string text = FormatDiffText(r);
  CHECK(text.find("plan         #0 x [4, 2] S(0) -> R: planner: greedy -> graph\n") != std::string::npos);
  CHECK(text.find("3 differences, 3 failing (plan)") != std::string::npos);
  // Not chosen: reported, not failing.
  DiffResult only_bytes = DiffTraces(Make({base}), Make({changed}), ParseFailOn("bytes"));
  CHECK(only_bytes.differences.size() == 3);
  CHECK_FALSE(only_bytes.Failed());
}

TEST_CASE("diff: bytes per collective and per rank", "[trace][diff]") {
  DiffResult r = DiffChanged([](Spec& s) { s.bytes = 8; });
  // Over both ranks the all_gather sends 16 + 16 = 32 B and receives 32 B; now 8 + 8.
  const Difference* call = Find(r, "bytes of step 0 all_gather on mesh dims [0]");
  REQUIRE(call != nullptr);
  CHECK(call->baseline == "sent 32 B, received 32 B");
  CHECK(call->candidate == "sent 16 B, received 16 B");
  for (const char* rank : {"rank 0 bytes", "rank 1 bytes"}) {
    const Difference* d = Find(r, rank);
    REQUIRE(d != nullptr);
    CHECK(d->baseline == "sent 16 B, received 16 B");
    CHECK(d->candidate == "sent 8 B, received 8 B");
    CHECK(d->category == DiffCategory::kBytes);
  }
  CHECK(r.differences.size() == 3);
  CHECK(r.Failed());
}

TEST_CASE("diff: collective kinds and counts", "[trace][diff]") {
  // Same notation text, one more step: the plan steps differ.
  DiffResult r = DiffChanged([](Spec& s) { s.comms = {"all_gather", "all_gather"}; });
  const Difference* d = Find(r, "collectives all_gather on mesh dims [0]");
  REQUIRE(d != nullptr);
  CHECK(d->baseline == "2 rank-side calls");
  CHECK(d->candidate == "4 rank-side calls");
  CHECK(Find(r, "optimized plan steps") != nullptr);
  CHECK(Find(r, "raw plan steps") != nullptr);
  CHECK(r.Failed());
}

TEST_CASE("diff: per-rank shard shapes", "[trace][diff]") {
  DiffResult r = DiffChanged([](Spec& s) { s.rank1_after = {3, 2}; }, ParseFailOn("shapes"));
  CheckOnlyDifference(r, DiffCategory::kShapes, "rank 1 shard after step 0", "shape [4, 2] offset [0, 0]",
                      "shape [3, 2] offset [0, 0]");
  CHECK(r.Failed());
}

TEST_CASE("diff: predicted cost", "[trace][diff]") {
  DiffResult r = DiffChanged([](Spec& s) { s.cost_us = 6.5; });
  CheckOnlyDifference(r, DiffCategory::kCost, nullptr, "4.00 us", "6.50 us");
}

TEST_CASE("diff: added and removed redistributes are aligned around", "[trace][diff]") {
  Spec a, b, c, d;
  b.tensor = "b";
  c.tensor = "c";
  d.tensor = "d";
  // Baseline a b c; candidate a c d: b removed, d added, a and c compared (c is #2 -> #1).
  DiffResult r = DiffTraces(Make({a, b, c}), Make({a, c, d}), DiffOptions{});
  CHECK(r.aligned == 2);
  REQUIRE(r.differences.size() == 2);
  CHECK(r.differences[0].what == "removed");
  CHECK(r.differences[0].baseline_id == 1);
  CHECK_FALSE(r.differences[0].candidate_id.has_value());
  CHECK(r.differences[0].subject == "b [4, 2] S(0) -> R");
  CHECK(r.differences[1].what == "added");
  CHECK(r.differences[1].candidate_id == 2);
  CHECK(r.Failed());
  std::string text = FormatDiffText(r);
  CHECK(text.find("plan         -#1 b [4, 2] S(0) -> R: removed (baseline only: S(0)->R[0])") !=
        std::string::npos);
  CHECK(text.find("plan         +#2 d [4, 2] S(0) -> R: added (candidate only: S(0)->R[0])") !=
        std::string::npos);
  // A changed global shape is a different redistribute: removed + added.
  Spec wide = a;
  wide.shape = {8, 2};
  CHECK(Whats(DiffTraces(Make({a}), Make({wide}), DiffOptions{})) ==
        std::vector<std::string>{"plan|removed", "plan|added"});
}

TEST_CASE("diff: a redistribute whose placements changed is paired by its place, not removed and added",
          "[trace][diff]") {
  // Issue 38: only the target placement changed (S(0) -> R became S(0) -> S(1) at the same place:
  // tensor x, shape [4, 2], no op). The pair is compared: a placements difference names both.
  Spec a, changed;
  changed.dst = "S(1)";
  changed.notation = "S(0)->S(1)[0]";
  DiffResult r = DiffTraces(Make({a}), Make({changed}), DiffOptions{});
  CHECK(r.aligned == 1);
  REQUIRE(!r.differences.empty());
  CHECK(r.differences[0].what == "placements");
  CHECK(r.differences[0].baseline == "from S(0) to R");
  CHECK(r.differences[0].candidate == "from S(0) to S(1)");
  CHECK(r.differences[0].baseline_id == 0);
  CHECK(r.differences[0].candidate_id == 0);
  for (const Difference& d : r.differences) {
    CHECK(d.what != "removed");
    CHECK(d.what != "added");
  }
  // Between two anchors: a b c against a b' c pairs b with b'; a d c (another tensor) does not.
  Spec b, c, d;
  b.tensor = "b", c.tensor = "c", d.tensor = "d";
  Spec b2 = b;
  b2.src = "R";
  CHECK(DiffTraces(Make({a, b, c}), Make({a, b2, c}), DiffOptions{}).aligned == 3);
  CHECK(Whats(DiffTraces(Make({a, b, c}), Make({a, d, c}), DiffOptions{})) ==
        std::vector<std::string>{"plan|removed", "plan|added"});
}

TEST_CASE("diff: time beyond the threshold, only when asked", "[trace][diff]") {
  Spec base;
  Spec slower = base;
  slower.duration_ns = 12000;  // +20%
  CHECK(DiffTraces(Make({base}), Make({slower}), DiffOptions{}).differences.empty());
  DiffResult r = DiffTraces(Make({base}), Make({slower}), ParseFailOn("time:10%"));
  CheckOnlyDifference(r, DiffCategory::kTime, nullptr, "10.00 us", "12.00 us (+20.0%)");
  CHECK(r.Failed());
  CHECK(DiffTraces(Make({base}), Make({slower}), ParseFailOn("time:25%")).differences.empty());
  // Faster is never a difference.
  CHECK(DiffTraces(Make({slower}), Make({base}), ParseFailOn("time:1%")).differences.empty());
}

TEST_CASE("diff: --fail-on parsing", "[trace][diff]") {
  DiffOptions o = ParseFailOn("plan, time:5%");
  CHECK(o.fail_on == std::set<DiffCategory>{DiffCategory::kPlan, DiffCategory::kTime});
  CHECK(o.time_threshold_pct == 5.0);
  CHECK(ParseFailOn("time").time_threshold_pct == 10.0);
  CHECK(ParseFailOn("all").fail_on == DiffOptions{}.fail_on);
  CHECK_FALSE(ParseFailOn("all").time_threshold_pct.has_value());
  for (const char* bad : {"", "plan,,bytes", "bogus", "time:abc", "time:-1%", "time:"}) {
    INFO(bad);
    CHECK_THROWS_AS(ParseFailOn(bad), shardscope::Error);
  }
}

TEST_CASE("diff: JSON carries every difference", "[trace][diff]") {
  nlohmann::json j = DiffJson(DiffChanged([](Spec& s) { s.planner = "graph"; }));
  CHECK(j["failed"] == true);
  CHECK(j["aligned"] == 1);
  REQUIRE(j["differences"].size() == 1);
  CHECK(j["differences"][0]["category"] == "plan");
  CHECK(j["differences"][0]["what"] == "planner");
  CHECK(j["differences"][0]["baseline"] == "greedy");
  CHECK(j["differences"][0]["candidate"] == "graph");
}

namespace {

Model Program() { return ReadTraceDir(fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/program"); }

// Applies `edit` to op `id` on every rank.
template <typename Fn>
void EditOp(Model& m, int64_t id, Fn edit) {
  for (OpRecord& rec : m.ops)
    if (rec.op->id == id) edit(rec.op.Mutable());
}

}  // namespace

TEST_CASE("diff: ops are aligned and their strategy, outputs and implicit redistributes compared",
          "[trace][diff]") {
  Model base = Program();
  CHECK(DiffTraces(base, Program(), DiffOptions{}).differences.empty());

  // mm now takes the replicated-weight strategy: y comes out S(0)R and w is gathered to RR.
  Model cand = Program();
  EditOp(cand, 0, [](Op& op) {
    op.Mutable().chosen = 1;
    op.Mutable().outputs.Mutable()[0].placements = {"S(0)", "R"};
    op.Mutable().inputs.Mutable()[1].required = {"R", "R"};
  });
  DiffResult r = DiffTraces(base, cand, DiffOptions{});
  CHECK(Whats(r) ==
        std::vector<std::string>{"ops|chosen strategy", "ops|outputs", "ops|implicit redistributes"});
  CHECK(r.Failed());
  CHECK(r.aligned_ops == 3);
  const Difference* d = Find(r, "chosen strategy");
  REQUIRE(d != nullptr);
  CHECK(d->op);
  CHECK(d->baseline_id == 0);
  CHECK(d->subject == "mm(x, w)");
  CHECK(d->baseline == "S(0)R, RS(1) => S(0)S(1)");
  CHECK(d->candidate == "S(0)R, RR => S(0)R");
  CHECK(Find(r, "outputs")->candidate == "y: S(0)R [8, 6]");
  CHECK(Find(r, "implicit redistributes")->baseline == "w S(0)R->RS(1)");
  CHECK(Find(r, "implicit redistributes")->candidate == "w S(0)R->RR");
  std::string text = FormatDiffText(r);
  CHECK(
      text.find(
          "ops          op #0 mm(x, w): chosen strategy: S(0)R, RS(1) => S(0)S(1) -> S(0)R, RR => S(0)R\n") ==
      0);
  CHECK(
      text.find("; aligned 3 of 3 baseline / 3 candidate redistributes, 3 of 3 baseline / 3 candidate ops") !=
      std::string::npos);
  // Not failing when ops are not in --fail-on.
  CHECK_FALSE(DiffTraces(base, cand, ParseFailOn("plan")).Failed());
  nlohmann::json j = DiffJson(r);
  CHECK(j["differences"][0]["op"] == true);
  CHECK(j["differences"][0]["category"] == "ops");
  CHECK(j["aligned_ops"] == 3);
}

TEST_CASE("diff: candidate costs are compared like time, only with a threshold", "[trace][diff]") {
  Model base = Program();
  Model cand = Program();
  EditOp(cand, 0, [](Op& op) { op.Mutable().candidates.Mutable()[1].cost_us = 9.0; });  // 7.5 -> 9.0 us: +20%
  CHECK(DiffTraces(base, cand, DiffOptions{}).differences.empty());
  CHECK(DiffTraces(base, cand, ParseFailOn("ops,time:25%")).differences.empty());
  DiffResult r = DiffTraces(base, cand, ParseFailOn("ops,time:10%"));
  CheckOnlyDifference(r, DiffCategory::kTime, "cost of strategy S(0)R, RR => S(0)R", "7.50 us",
                      "9.00 us (+20.0%)");
  CHECK(r.differences[0].failing);
}

TEST_CASE("diff: added and removed ops; implicit redistributes stay redistributes", "[trace][diff]") {
  Model base = Program();
  Model cand = Program();
  cand.ops.erase(
      std::remove_if(cand.ops.begin(), cand.ops.end(), [](const OpRecord& r) { return r.op->id == 1; }),
      cand.ops.end());
  DiffResult r = DiffTraces(base, cand, DiffOptions{});
  CHECK(Whats(r) == std::vector<std::string>{"ops|removed"});
  CHECK(r.differences[0].baseline_id == 1);
  CHECK(r.differences[0].baseline == "S(0)S(1) => S(0)S(1)");
  CHECK(FormatDiffText(r).find(
            "ops          op -#1 conv2d(y): removed (baseline only: S(0)S(1) => S(0)S(1))\n") == 0);
  // The implicit redistribute of layer_norm_backward is diffed as a redistribute (#1).
  Model cand2 = Program();
  for (RedistributeRecord& rec : cand2.redistributes)
    if (rec.begin->id == 1) rec.begin.Mutable().Mutable().cost_us = 3.0;
  DiffResult r2 = DiffTraces(base, cand2, DiffOptions{});
  CHECK(Whats(r2) == std::vector<std::string>{"cost|predicted cost"});
  CHECK_FALSE(r2.differences[0].op);
  CHECK(r2.differences[0].baseline_id == 1);
}
