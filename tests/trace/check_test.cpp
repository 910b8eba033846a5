// Cross-rank check on hand-made traces (tests/golden/check/<case>/rank-*.jsonl): a clean 2x2-mesh
// trace and one copy per mismatch class with a single hand edit. The expected class, culprit and
// numbers follow from the edit (byte counts derived by hand in the comments).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "../common/check_figures.hpp"
#include "shardscope/trace/check.hpp"
#include "shardscope/trace/reader.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;

namespace {

const fs::path kCases = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests" / "golden" / "check";

CheckResult CheckCase(const std::string& name) { return CheckTrace(ReadTraceDir(kCases / name)); }

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("check: the hand-made clean 2x2 trace has no mismatch", "[trace][check]") {
  CheckResult r = CheckCase("clean");
  // Groups: dp groups {0,2} and {1,3}, the flattened {0,1,2,3}. Calls paired: per dp group ids
  // 0, 2, 3, 4 (4 calls), plus one flattened reduce_scatter.
  shardscope::testing::CheckClean(
      r, {.ranks = 4, .world = 4, .groups = 3, .collectives = 9, .redistributes = 5});
  CHECK(Contains(FormatCheckText(r, 20), "clean: 4 of 4 rank files"));
}

TEST_CASE("check: the two-rank trace fixture of the reader is clean", "[trace][check]") {
  CHECK(CheckTrace(ReadTraceDir(fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/two_rank")).Clean());
}

TEST_CASE("check: each mismatch class names its culprit and first divergent event", "[trace][check]") {
  struct Case {
    std::string name;
    MismatchClass kind;
    std::vector<int64_t> culprits;
    int64_t redistribute_id;
    std::string needle;  // part of the message that follows from the edit
  };
  const std::vector<Case> cases = {
      // rank 3 has no file at all.
      {"missing_rank_file", MismatchClass::kMissingRankFile, {3}, -1, "rank 3 of world 4 has no trace file"},
      // rank 3 stopped inside redistribute #0 before its all_gather with rank 1.
      {"missing_ranks", MismatchClass::kMissingRanks, {3}, 0, "rank 3 never issued it; rank 1 did"},
      // rank 2 issued an all_to_all where rank 0 issued the all_gather of #0.
      {"collective_type",
       MismatchClass::kCollectiveType,
       {2},
       0,
       "rank 2 has 'all_to_all'; rank 0 has 'all_gather'"},
      // rank 2 skipped #2's all_gather, so its second call on {0,2} belongs to #3.
      {"collective_sequence",
       MismatchClass::kCollectiveSequence,
       {2},
       2,
       "rank 2 has 'redistribute #3 step 0'; rank 0 has 'redistribute #2 step 0'"},
      {"dtype", MismatchClass::kDtype, {3}, 0, "rank 3 has 'bf16'; rank 1 has 'f32'"},
      // reduce_scatter of an [8,4] f32 tensor: input 128 B on every rank; rank 1 now sends
      // 32 + 32 + 24 B and keeps a 32 B chunk = 120 B.
      {"size_reduce_scatter",
       MismatchClass::kSizeOrSyntax,
       {1},
       1,
       "rank 1 has '120 B'; ranks 0, 2, 3 have '128 B'"},
      // all_gather of a [2,2] f32 shard is 16 B; rank 2 claims 12 B from rank 0.
      {"size_pairwise",
       MismatchClass::kSizeOrSyntax,
       {0, 2},
       0,
       "rank 0 sends 16 B to rank 2, which receives 12 B"},
      // all_to_all on {0,2}: 16 + 16 B sent, 16 + 20 B received.
      {"all_to_all_total", MismatchClass::kAllToAllTotal, {0, 2}, 4, "sends 32 B in total but receives 36 B"},
      {"redistribute",
       MismatchClass::kRedistribute,
       {1},
       0,
       "planner differs across ranks: rank 1 has 'graph'"},
      {"state", MismatchClass::kState, {3}, 1, "rank 3 failed: collective watchdog: timed out"},
      // R,S(1): ranks 1 and 3 differ only along dp (Replicate) and must hold the same columns 2-3.
      {"shape_replica", MismatchClass::kShape, {3}, 0, "rank 3 has 'shape [4, 2] offset [0, 0]'"},
      // S(1),R of [4,4] over 2x2: 16 elements x 2 (tp replicates) = 32; ranks hold 8+8+4+4 = 24.
      {"shape_coverage", MismatchClass::kShape, {}, 4, "the shards hold 24 elements in total, but S(1),R"},
      {"checksum", MismatchClass::kChecksum, {2}, 0, "rank 2 has '999'; rank 0 has '111'"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      CheckResult r = CheckCase(c.name);
      REQUIRE_FALSE(r.Clean());
      const Mismatch& first = r.mismatches.front();
      INFO(FormatCheckText(r, 20));
      CHECK(first.kind == c.kind);
      CHECK(first.culprits == c.culprits);
      CHECK(first.redistribute_id.value_or(-1) == c.redistribute_id);
      CHECK(Contains(first.message, c.needle));
    }
  }
}

TEST_CASE("check: single-edit cases report exactly one mismatch", "[trace][check]") {
  // Pairing in a group stops at its first mismatch, and the redistribute checks are independent of
  // the collective ones, so one edited line yields one report.
  for (const char* name : {"missing_rank_file", "collective_type", "collective_sequence", "dtype",
                           "size_reduce_scatter", "size_pairwise", "all_to_all_total", "redistribute",
                           "state", "shape_replica", "shape_coverage", "checksum"}) {
    INFO(name);
    CHECK(CheckCase(name).mismatches.size() == 1);
  }
}

TEST_CASE("check: a rank that stops is reported at its first missing collective, then per redistribute",
          "[trace][check]") {
  CheckResult r = CheckCase("missing_ranks");
  // #0: missing from the {1,3} all_gather, and incomplete; #1: never began, missing from the
  // flattened reduce_scatter; #2, #3, #4: never began. 7 in all.
  REQUIRE(r.mismatches.size() == 7);
  CHECK(r.mismatches[0].kind == MismatchClass::kMissingRanks);
  CHECK(r.mismatches[0].group == std::vector<int64_t>{1, 3});
  CHECK(r.mismatches[0].call == 0);
  CHECK(r.mismatches[1].kind == MismatchClass::kState);
  CHECK(Contains(r.mismatches[1].message, "rank 3 stopped in or after step 0"));
  for (const Mismatch& m : r.mismatches) CHECK(m.culprits == std::vector<int64_t>{3});
}

TEST_CASE("check: --max-reports caps the printed mismatches, not the count", "[trace][check]") {
  CheckResult r = CheckCase("missing_ranks");
  std::string text = FormatCheckText(r, 2);
  CHECK(Contains(text, "7 mismatches (2 shown, --max-reports 2)"));
  size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  CHECK(lines == 3);
  nlohmann::json j = CheckJson(r, 2);
  CHECK(j["mismatch_count"] == 7);
  CHECK(j["mismatches"].size() == 2);
  CHECK(j["mismatches"][0]["class"] == "missing_ranks");
}

TEST_CASE("check: the hand-made program trace with ops and a halo exchange is clean", "[trace][check]") {
  // Groups: dp {0,2}, {1,3} (all_gather of #0, the halo of op #1, all_gather of #2: 3 calls each)
  // and tp {0,1}, {2,3} (all_gather of #1: 1 call each).
  CheckResult r = CheckTrace(ReadTraceDir(fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/program"));
  INFO(FormatCheckText(r, 20));
  CHECK(r.Clean());
  CHECK(r.groups == 4);
  CHECK(r.collectives == 8);
  CHECK(r.redistributes == 3);
  CHECK(r.ops == 3);
  CHECK(FormatCheckText(r, 20) ==
        "clean: 4 of 4 rank files, 4 groups, 8 collective calls paired, 3 redistributes, 3 ops\n");
}

TEST_CASE("check: op mismatches name the rank and its first divergent op", "[trace][check]") {
  SECTION("a rank that chose another strategy") {
    // rank 3 ran mm with candidate 1 (w replicated, y S(0)R); its later ops are not reported again.
    CheckResult r = CheckCase("op_strategy");
    REQUIRE(r.mismatches.size() == 1);
    const Mismatch& m = r.mismatches[0];
    CHECK(m.kind == MismatchClass::kOp);
    CHECK(m.culprits == std::vector<int64_t>{3});
    CHECK(m.op_id == 0);
    CHECK_FALSE(m.redistribute_id.has_value());
    CHECK(m.message ==
          "op #0 mm(x, w): chosen strategy differs across ranks: rank 3 has 'S(0)R, RR => S(0)R'; ranks 0, "
          "1, 2 "
          "have 'S(0)R, RS(1) => S(0)S(1)' (first divergent op of rank 3)");
    CHECK(FormatCheckText(r, 20).find("op: op #0 mm(x, w)") == 0);
  }
  SECTION("a rank that skipped an op and its halo exchange") {
    // rank 2 has neither conv2d (op #1) nor its halo, so its second call on {0,2} is #2's all_gather
    // where rank 0 issued the halo exchange.
    CheckResult r = CheckCase("op_missing");
    INFO(FormatCheckText(r, 20));
    REQUIRE(r.mismatches.size() == 2);
    CHECK(r.mismatches[0].kind == MismatchClass::kOp);
    CHECK(r.mismatches[0].culprits == std::vector<int64_t>{2});
    CHECK(r.mismatches[0].message ==
          "op #1 conv2d(y): rank 2 has 'no op event'; ranks 0, 1, 3 have 'ran it' (first divergent op of "
          "rank 2)");
    CHECK(r.mismatches[1].kind == MismatchClass::kCollectiveType);
    CHECK(r.mismatches[1].culprits == std::vector<int64_t>{2});
    CHECK(r.mismatches[1].op_id == 1);
    CHECK(r.mismatches[1].call == 1);
    CHECK(Contains(r.mismatches[1].message,
                   "call 1 of group [0, 2], halo_exchange on mesh dims [0] (op #1): kind differs: rank 2 has "
                   "'all_gather'; rank 0 has 'halo_exchange'"));
  }
  SECTION("halo byte counts that do not pair up") {
    // rank 1 records 8 B received from rank 3, which sent it one 3-element f32 row (12 B).
    CheckResult r = CheckCase("halo_size");
    REQUIRE(r.mismatches.size() == 1);
    const Mismatch& m = r.mismatches[0];
    CHECK(m.kind == MismatchClass::kSizeOrSyntax);
    CHECK(m.culprits == std::vector<int64_t>{1, 3});
    CHECK(m.op_id == 1);
    CHECK(
        m.message ==
        "call 1 of group [1, 3], halo_exchange on mesh dims [0] (op #1): rank 3 sends 12 B to rank 1, which "
        "receives 8 B from it");
  }
}

TEST_CASE("check: a redistribute that every rank failed is not clean", "[trace][check]") {
  // The clean trace with redistribute #1 failed on all four ranks the same way (as when every rank's
  // watchdog fires in the same collective): the ranks agree, but the trace is not clean.
  const fs::path dir = fs::temp_directory_path() / "shardscope_check_all_failed";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(kCases / "clean")) {
    std::ifstream in(entry.path());
    std::ofstream out(dir / entry.path().filename());
    std::string line;
    const std::string end1 = "{\"type\":\"redistribute_end\",\"id\":1,", ok = "\"ok\":true";
    while (std::getline(in, line)) {
      const size_t at = line.find(ok);
      if (line.rfind(end1, 0) == 0 && at != std::string::npos)
        line.replace(at, ok.size(), "\"ok\":false,\"error\":\"timeout\"");
      out << line << "\n";
    }
  }
  CheckResult r = CheckTrace(ReadTraceDir(dir));
  REQUIRE(r.mismatches.size() == 1);
  CHECK(r.mismatches[0].kind == MismatchClass::kState);
  CHECK(r.mismatches[0].redistribute_id == 1);
  INFO(r.mismatches[0].message);
  CHECK(Contains(r.mismatches[0].message, "every rank failed it (rank 0: timeout)"));
  CHECK_FALSE(Contains(FormatCheckText(r, 20), "clean:"));
  fs::remove_all(dir);
}

TEST_CASE("check: a stopped rank is blamed alone, not the peers that waited for it", "[trace][check]") {
  // As after `kill -STOP` of rank 2 under MPI (tests/mpi/run.sh stuck): rank 2's file ends after
  // redistribute 0; ranks 0 and 1 fail redistribute 1 on the watchdog and the job ends; rank 3 is
  // killed inside it. Every rank but 2 did everything it could: the only culprit is rank 2.
  // Second variant: rank 3 was killed inside it after beginning, and the begin never reached its
  // file (an open redistribute is written at its end); ranks 0 and 1 name rank 2 in their roll call.
  // Third variant: rank 2 finished redistribute 1 and then stopped, but what it sent never reached
  // rank 0, which fails it naming rank 2; ranks 1 and 3 finish it.
  const int variant = GENERATE(0, 1, 2);
  const bool lost = variant == 1;
  const fs::path dir = fs::temp_directory_path() / "shardscope_check_stopped_rank";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string name = "rank-" + std::to_string(rank) + ".jsonl";
    std::ifstream in(kCases / "clean" / name);
    std::ofstream out(dir / name);
    std::string line;
    const std::string begin1 = "{\"type\":\"redistribute_begin\",\"id\":1,",
                      end1 = "{\"type\":\"redistribute_end\",\"id\":1,", ok = "\"ok\":true";
    while (std::getline(in, line)) {
      if (variant < 2 && (rank == 2 || (lost && rank == 3)) && line.rfind(begin1, 0) == 0) break;
      if (line.rfind(end1, 0) == 0) {
        if (variant == 2 && rank != 0) {
          out << line << "\n";
          break;
        }
        if (rank == 3) break;  // killed inside it
        line.replace(
            line.find(ok), ok.size(),
            "\"ok\":false,\"error\":\"all_gather not complete after 2 s; rank(s) 2 did not answer a roll "
            "call (stopped, dead or in another collective)\"");
        out << line << "\n";
        break;  // the job ended
      }
      out << line << "\n";
    }
  }
  CheckResult r = CheckTrace(ReadTraceDir(dir));
  REQUIRE_FALSE(r.mismatches.empty());
  for (const Mismatch& m : r.mismatches) {
    INFO(m.message);
    CHECK(m.culprits == std::vector<int64_t>{2});
  }
  fs::remove_all(dir);
}

TEST_CASE("check: each op field the ranks compare is reported where one rank differs, and only those",
          "[trace][check]") {
  // docs/trace-tools.md, class `op`: name/args, input tensors, chosen strategy, outputs (placements,
  // global shapes) and outcome are compared; rank 2's op #0 of the clean program trace (mm(x, w),
  // candidate 0 of [S(0)R, RS(1) => S(0)S(1)], output y S(0)S(1) [8, 6]) gets one edit. An edited
  // list is rank 2's own copy, no longer the buffer the ranks shared.
  struct Edit {
    std::string what;
    std::function<void(Op&)> apply;
    std::string noun, rank2, others;  // "" when the edit touches nothing compared
  };
  const std::vector<Edit> edits = {
      {"name", [](Op& op) { op.Mutable().name = "bmm"; }, "name", "bmm", "mm"},
      {"args", [](Op& op) { op.Mutable().args = "alpha=2"; }, "name", "mm(alpha=2)", "mm"},
      {"input tensor", [](Op& op) { op.Mutable().inputs.Mutable()[1].tensor = "v"; }, "inputs", "x, v",
       "x, w"},
      {"chosen candidate's placements",
       [](Op& op) {
         op.Mutable().candidates.Mutable()[0].inputs[1] = {"R", "R"};
       },
       "chosen strategy", "S(0)R, RR => S(0)S(1)", "S(0)R, RS(1) => S(0)S(1)"},
      {"chosen index", [](Op& op) { op.Mutable().chosen = 1; }, "chosen strategy", "S(0)R, RR => S(0)R",
       "S(0)R, RS(1) => S(0)S(1)"},
      {"output global shape",
       [](Op& op) {
         op.Mutable().outputs.Mutable()[0].global_shape = std::vector<int64_t>{8, 7};
       },
       "outputs", "y: S(0)S(1) [8, 7]", "y: S(0)S(1) [8, 6]"},
      {"output placements",
       [](Op& op) {
         op.Mutable().outputs.Mutable()[0].placements = std::vector<std::string>{"S(0)", "R"};
       },
       "outputs", "y: S(0)R [8, 6]", "y: S(0)S(1) [8, 6]"},
      {"outcome",
       [](Op& op) {
         op.Mutable().ok = false;
         op.Mutable().error = "oom";
       },
       "outcome", "failed: oom", "ok"},
      // Not compared: a rank's own shard shape, and what an unchosen candidate costs.
      {"output local shape",
       [](Op& op) {
         op.Mutable().outputs.Mutable()[0].local_shape = std::vector<int64_t>{4, 4};
       },
       "", "", ""},
      {"unchosen candidate's cost", [](Op& op) { op.Mutable().candidates.Mutable()[1].cost_us = 1.0; }, "",
       "", ""},
  };
  const Edit& edit = GENERATE_REF(from_range(edits));
  INFO(edit.what);
  Model model = ReadTraceDir(fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/program");
  auto rec = std::find_if(model.ops.begin(), model.ops.end(),
                          [](const OpRecord& r) { return r.rank == 2 && r.op->id == 0; });
  REQUIRE(rec != model.ops.end());
  edit.apply(rec->op.Mutable());
  CheckResult r = CheckTrace(model);
  if (edit.noun.empty()) {
    INFO(FormatCheckText(r, 20));
    CHECK(r.Clean());
    return;
  }
  REQUIRE(r.mismatches.size() == 1);
  const Mismatch& m = r.mismatches[0];
  CHECK(m.kind == MismatchClass::kOp);
  CHECK(m.culprits == std::vector<int64_t>{2});
  CHECK(m.op_id == 0);
  CHECK(m.message == "op #0 mm(x, w): " + edit.noun + " differs across ranks: rank 2 has '" + edit.rank2 +
                         "'; ranks 0, 1, 3 have '" + edit.others + "' (first divergent op of rank 2)");
}

TEST_CASE("check: each redistribute field the ranks compare is reported where one rank differs",
          "[trace][check]") {
  // docs/trace-tools.md, class `redistribute`: tensor, shape, dtype, placements (with their shard
  // order), planner and plan. Rank 2's redistribute #0 of the clean program trace (w [4, 6] f32,
  // S(0),R -> R,S(1) in the default order, greedy, S(0)R->RR->RS(1)) gets one edit.
  struct Edit {
    std::string noun;
    std::function<void(RedistributeBegin&)> apply;
    std::string rank2, others;
  };
  const std::vector<Edit> edits = {
      {"tensor", [](RedistributeBegin& b) { b.Mutable().tensor = "v"; }, "v", "w"},
      {"global shape",
       [](RedistributeBegin& b) {
         b.Mutable().global_shape = std::vector<int64_t>{4, 8};
       },
       "[4, 8]", "[4, 6]"},
      {"dtype", [](RedistributeBegin& b) { b.Mutable().dtype = "f64"; }, "f64", "f32"},
      {"source placements",
       [](RedistributeBegin& b) {
         b.Mutable().src_placements = std::vector<std::string>{"S(0)", "S(1)"};
       },
       "S(0),S(1) ", "S(0),R "},
      {"target placements", [](RedistributeBegin& b) { b.Mutable().dst_order = "S(1)[0]"; }, "R,S(1) S(1)[0]",
       "R,S(1) "},
      {"planner", [](RedistributeBegin& b) { b.Mutable().planner = "graph"; }, "graph", "greedy"},
      {"plan", [](RedistributeBegin& b) { b.Mutable().notation = "S(0)R->RS(1)"; }, "S(0)R->RS(1)",
       "S(0)R->RR->RS(1)"},
  };
  const Edit& edit = GENERATE_REF(from_range(edits));
  INFO(edit.noun);
  Model model = ReadTraceDir(fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/trace/program");
  auto rec = std::find_if(model.redistributes.begin(), model.redistributes.end(),
                          [](const RedistributeRecord& r) { return r.rank == 2 && r.begin->id == 0; });
  REQUIRE(rec != model.redistributes.end());
  edit.apply(rec->begin.Mutable());
  CheckResult r = CheckTrace(model);
  REQUIRE(r.mismatches.size() == 1);
  const Mismatch& m = r.mismatches[0];
  CHECK(m.kind == MismatchClass::kRedistribute);
  CHECK(m.culprits == std::vector<int64_t>{2});
  CHECK(m.redistribute_id == 0);
  CHECK(m.message == "redistribute #0 (w [4, 6] S(0),R -> R,S(1)): " + edit.noun +
                         " differs across ranks: rank 2 has '" + edit.rank2 + "'; ranks 0, 1, 3 have '" +
                         edit.others + "'");
}
