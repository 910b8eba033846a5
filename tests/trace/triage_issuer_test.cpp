// Triage names what issued the stuck collective (NameIssuers, docs/triage.md) from shardscope traces
// beside the dumps. Dumps: tests/trace/make_fr_faults.py not_enqueued on a 4 x 8 (dp x tp) job; its
// answer gives the culprit, its tp process group and the stuck seq S. Traces: built here by hand for
// ranks of that tp group, from the definition of the case: redistributes #1..#S-1 each run one
// all_gather over the tp group; #S ('w', S(1),S(0) -> R,R, serving op #7 'mm' of program step 3)
// runs plan step 0 over the rank's dp group, then plan step 1 (S(0) -> R, all_gather) over the tp
// group: that step-1 collective is the group's S-th, the stuck one. The culprit's own trace stops
// inside #S before either collective (it never enqueued it).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "shardscope/trace/model.hpp"
#include "shardscope/trace/triage.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

constexpr int64_t kDp = 4, kTp = 8;

std::vector<int64_t> TpGroup(int64_t r) {
  std::vector<int64_t> g;
  for (int64_t t = 0; t < kTp; ++t) g.push_back(r / kTp * kTp + t);
  return g;
}
std::vector<int64_t> DpGroup(int64_t r) {
  std::vector<int64_t> g;
  for (int64_t d = 0; d < kDp; ++d) g.push_back(d * kTp + r % kTp);
  return g;
}

PlanStep Step(int64_t mesh_dim, const char* src, const char* dst) {
  PlanStep p;
  p.mesh_dims = {mesh_dim};
  p.src = src;
  p.dst = dst;
  p.comm = "all_gather";
  return p;
}

RedistributeEnd End(int64_t id) {
  RedistributeEnd e;
  e.id = id;
  return e;
}

Collective Coll(int64_t redistribute_id, int64_t step, std::vector<int64_t> group) {
  Collective c;
  c.redistribute_id = redistribute_id;
  c.Mutable().step = step;
  c.Mutable().kind = "all_gather";
  c.Mutable().group = std::move(group);
  return c;
}

// Rank r's trace: #1..#S-1 complete; #S complete when `issued`, else only begun.
RankTrace Trace(int64_t r, int64_t s, bool issued) {
  RankTrace rt;
  rt.header.rank = r;
  rt.header.world = kDp * kTp;
  rt.header.mesh_shape = {kDp, kTp};
  rt.header.mesh_dim_names = {"dp", "tp"};
  for (int64_t k = 1; k < s; ++k) {
    RedistributeBegin b;
    b.id = k;
    b.Mutable().tensor = "x";
    b.Mutable().src_placements = std::vector<std::string>{"R", "S(0)"};
    b.Mutable().dst_placements = std::vector<std::string>{"R", "R"};
    b.Mutable().optimized_plan = std::vector<PlanStep>{Step(1, "S(0)", "R")};
    rt.events.push_back(b);
    rt.events.push_back(Coll(k, 0, TpGroup(r)));
    rt.events.push_back(End(k));
  }
  Op op;
  op.id = 7;
  op.step = 3;
  op.Mutable().name = "mm";
  rt.events.push_back(op);
  RedistributeBegin b;
  b.id = s;
  b.Mutable().tensor = "w";
  b.op_id = 7;
  b.Mutable().src_placements = std::vector<std::string>{"S(1)", "S(0)"};
  b.Mutable().dst_placements = std::vector<std::string>{"R", "R"};
  b.Mutable().optimized_plan = std::vector<PlanStep>{Step(0, "S(1)", "R"), Step(1, "S(0)", "R")};
  rt.events.push_back(b);
  if (issued) {
    rt.events.push_back(Coll(s, 0, DpGroup(r)));
    rt.events.push_back(Coll(s, 1, TpGroup(r)));
  }
  return rt;
}

Model ModelOf(std::vector<RankTrace> ranks) {
  Model m;
  m.world = kDp * kTp;
  m.ranks = std::move(ranks);
  return m;
}

// `base` with its issuers named from the traces `ranks`.
TriageResult WithIssuers(const TriageResult& base, std::vector<RankTrace> ranks) {
  const Model m = ModelOf(std::move(ranks));
  TriageResult r = base;
  NameIssuers(r, {&m});
  return r;
}

// The root's issuer, which must be there, after checking the rank it came from, whether that rank
// issued the stuck collective, and the redistribute it was in.
const TriageIssuer& CheckIssuer(const TriageResult& r, int64_t rank, bool issued, int64_t redistribute_id) {
  REQUIRE(r.roots[0].issuer);
  const TriageIssuer& is = *r.roots[0].issuer;
  CHECK(is.issued == issued);
  CHECK(is.rank == rank);
  CHECK(is.redistribute_id == redistribute_id);
  return is;
}

}  // namespace

TEST_CASE("triage names the redistribute, placements and plan step that issued the stuck collective",
          "[trace][triage]") {
  const fs::path dir = fs::temp_directory_path() / ("shardscope_triage_issuer_" + std::to_string(getpid()));
  fs::remove_all(dir);
  const std::string cmd = std::string("python3 ") + SHARDSCOPE_SOURCE_DIR +
                          "/tests/trace/make_fr_faults.py not_enqueued " + dir.string() +
                          " --dp 4 --tp 8 --entries 60 --no-wrap --jobs 1 >/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(dir / "triage_expected.json");
  const auto want = nlohmann::json::parse(in);
  const int64_t culprit = want["culprits"][0].get<int64_t>();
  const int64_t seq = want["seq"].get<int64_t>();
  const int64_t peer = TpGroup(culprit)[0] == culprit ? culprit + 1 : TpGroup(culprit)[0];

  const TriageResult base = TriagePaths({dir}, {}, 1);
  REQUIRE(base.roots.size() == 1);
  REQUIRE(base.roots[0].seq == seq);
  CHECK(base.roots[0].group == TpGroup(culprit));
  CHECK_FALSE(base.roots[0].issuer);

  SECTION("a peer's trace: the stuck collective's redistribute, placements, plan step and op") {
    const TriageResult r = WithIssuers(base, {Trace(peer, seq, true)});
    const TriageIssuer& is = CheckIssuer(r, peer, true, seq);
    CHECK(is.tensor == "w");
    CHECK(is.src == "S(1),S(0)");
    CHECK(is.dst == "R,R");
    CHECK(is.step == 1);
    CHECK(is.step_src == "S(0)");
    CHECK(is.step_dst == "R");
    CHECK(is.comm == "all_gather");
    CHECK(is.op == "mm");
    CHECK(is.program_step == 3);
    const nlohmann::json j = TriageJson(r);
    CHECK(j["issued_by"]["redistribute_id"] == seq);
    CHECK(j["issued_by"]["step"] == 1);
    CHECK(j["roots"][0]["issued_by"]["src"] == "S(1),S(0)");
    CHECK(
        FormatTriageText(r).find("stuck collective: issued by redistribute #" + std::to_string(seq) +
                                 " of 'w' (S(1),S(0) -> R,R), plan step 1 (S(0) -> R, all_gather) for op mm "
                                 "(program step 3)") != std::string::npos);
  }
  SECTION("the culprit's own trace: it never issued it, and stopped inside redistribute #S") {
    const TriageResult r = WithIssuers(base, {Trace(culprit, seq, false)});
    const TriageIssuer& is = CheckIssuer(r, culprit, false, seq);
    CHECK(is.step == -1);
    CHECK(is.op == "mm");
  }
  SECTION("the job's traces: a rank that issued it wins over the culprit's") {
    const TriageResult r = WithIssuers(base, {Trace(culprit, seq, false), Trace(peer, seq, true)});
    REQUIRE(r.roots[0].issuer);
    CHECK(r.roots[0].issuer->issued);
    CHECK(r.roots[0].issuer->rank == peer);
    CHECK(r.roots[0].issuer->step == 1);
  }
  SECTION("a trace of a rank outside the group names nothing") {
    const int64_t other = (culprit + kTp) % (kDp * kTp);
    const TriageResult r = WithIssuers(base, {Trace(other, seq, true)});
    CHECK_FALSE(r.roots[0].issuer);
  }
  fs::remove_all(dir);
}
