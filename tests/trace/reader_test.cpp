// Reader: tolerance of torn files and unknown events, and one failing fixture per kind of
// corrupt input (tests/golden/trace/{torn,unknown,corrupt,dirs}, written by hand).
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include "shardscope/error.hpp"
#include "shardscope/trace/reader.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;
using shardscope::ErrorCode;

namespace {

const fs::path kGolden = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests" / "golden" / "trace";

// The Error thrown by `read`, or a test failure if none is.
template <typename Fn>
shardscope::Error ErrorOf(Fn read) {
  try {
    read();
  } catch (const shardscope::Error& e) {
    return e;
  }
  FAIL("expected a shardscope::Error");
  return shardscope::Error(ErrorCode::kInternal, "unreachable");
}

// `read` fails with kInvalidInput and a message that `matcher` accepts.
template <typename Fn, typename Matcher>
void CheckInvalidInput(Fn read, const Matcher& matcher) {
  shardscope::Error e = ErrorOf(read);
  CHECK(e.code() == ErrorCode::kInvalidInput);
  CHECK_THAT(e.what(), matcher);
}

}  // namespace

TEST_CASE("a torn last line is a warning and the rest is readable", "[trace][reader]") {
  // Cut mid-object without a newline (a killed writer), and cut with its newline.
  auto file = GENERATE(as<std::string>{}, "rank-0.jsonl", "torn_newline.jsonl");
  Model model = ReadTraceFile(kGolden / "torn" / file);
  REQUIRE(model.diagnostics.size() == 1);
  CHECK(model.diagnostics[0].file == file);
  CHECK(model.diagnostics[0].line == 7);
  CHECK_THAT(model.diagnostics[0].message, Catch::StartsWith("warning: torn last line skipped"));
  REQUIRE(model.ranks.size() == 1);
  CHECK(model.ranks[0].events.size() == 5);
  REQUIRE(model.redistributes.size() == 1);
  const RedistributeRecord& rec = model.redistributes[0];
  CHECK(rec.end.has_value());
  CHECK(rec.steps.size() == 1);
  CHECK(rec.collectives.size() == 1);
  CHECK(rec.collectives[0].bytes_sent() == std::vector<int64_t>{0, 8});
}

TEST_CASE("unknown event types are skipped with one diagnostic per type", "[trace][reader]") {
  Model model = ReadTraceFile(kGolden / "unknown" / "rank-0.jsonl");
  REQUIRE(model.diagnostics.size() == 1);
  CHECK(model.diagnostics[0] ==
        Diagnostic{"rank-0.jsonl", 2,
                   "skipped 2 event(s) of unknown type 'kernel' (written by a newer shardscope?)"});
  CHECK(model.ranks[0].events.size() == 5);
  REQUIRE(model.redistributes.size() == 1);
  CHECK(model.redistributes[0].collectives.size() == 1);
}

TEST_CASE("events of an op without its op event are a warning", "[trace][reader]") {
  // An implicit redistribute of op 0 and a halo exchange of op 1; neither op event was written.
  Model model = ReadTraceFile(kGolden / "unfinished_op" / "rank-0.jsonl");
  REQUIRE(model.diagnostics.size() == 2);
  CHECK(model.diagnostics[0] ==
        Diagnostic{"rank-0.jsonl", 2, "op 0 has no op event (the rank stopped before finishing it)"});
  CHECK(model.diagnostics[1] ==
        Diagnostic{"rank-0.jsonl", 4, "op 1 has no op event (the rank stopped before finishing it)"});
  CHECK(model.ops.empty());
  REQUIRE(model.redistributes.size() == 1);
  CHECK(model.redistributes[0].begin->op_id == 0);
  CHECK(model.redistributes[0].begin->op_input == 1);
}

TEST_CASE("a missing rank file is a warning", "[trace][reader]") {
  Model model = ReadTraceDir(kGolden / "dirs" / "missing_rank");
  REQUIRE(model.diagnostics.size() == 1);
  CHECK(model.diagnostics[0].message == "warning: 1 of 2 ranks have no trace file (1)");
  CHECK(model.redistributes.size() == 1);
}

TEST_CASE("a newer format version is refused with a clear message", "[trace][reader]") {
  shardscope::Error e = ErrorOf([] { ReadTraceFile(kGolden / "corrupt" / "future_version.jsonl"); });
  CHECK(e.code() == ErrorCode::kUnsupported);
  CHECK(std::string(e.what()) ==
        "future_version.jsonl:1: trace format version 7 is newer than this shardscope reads (3); upgrade "
        "shardscope");
}

TEST_CASE("each kind of corrupt file is an error naming file, line and what was expected",
          "[trace][reader]") {
  struct Case {
    const char* file;
    const char* message;
  };
  // Messages follow the format doc's rules for each fixture; line numbers count from 1.
  auto c = GENERATE(values<Case>({
      {"malformed_middle.jsonl",
       "malformed_middle.jsonl:3: expected one JSON object: parse error at line 1, column 42"},
      {"wrong_type.jsonl", "wrong_type.jsonl:3: field 'mesh_dims' must be an array of integers"},
      {"missing_field.jsonl", "missing_field.jsonl:4: missing field 'group'"},
      {"zero_version.jsonl",
       "zero_version.jsonl:1: trace format version 0 is not valid (this shardscope reads 1 to 3)"},
      {"missing_header.jsonl",
       "missing_header.jsonl:1: first line must be the header (\"type\": \"header\")"},
      {"empty.jsonl", "empty.jsonl:1: missing header line (the file is empty)"},
      {"not_shardscope.jsonl",
       "not_shardscope.jsonl:1: field 'format' is 'chrome-trace', not 'shardscope-trace'"},
      {"huge_world.jsonl", "huge_world.jsonl:1: field 'world' is 1073741824, outside [1, 1048576]"},
      // Bounds that keep the tools' sums and time differences inside int64 (format doc).
      {"huge_bytes.jsonl",
       "huge_bytes.jsonl:4: field 'bytes_sent[1]' is 4398046511105, outside [0, 4398046511104]"},
      {"far_time.jsonl",
       "far_time.jsonl:3: field 't_ns' is 2305843009213693953, outside [-2305843009213693952, "
       "2305843009213693952]"},
      {"mesh_world_mismatch.jsonl",
       "mesh_world_mismatch.jsonl:1: field 'mesh.shape' has 4 ranks but 'world' is 2"},
      {"huge_extent.jsonl",
       "huge_extent.jsonl:2: field 'global_shape[0]' is 4000000000000000000, outside [0, "
       "281474976710656]"},
      {"too_many_dims.jsonl",
       "too_many_dims.jsonl:3: field 'mesh_dims' has 17 entries, more than the limit 16"},
      {"group_outside_world.jsonl",
       "group_outside_world.jsonl:4: field 'group' names rank 5 but the world has 2 ranks"},
      {"group_without_self.jsonl",
       "group_without_self.jsonl:4: field 'group' must contain this file's rank 0"},
      {"bytes_mismatch.jsonl",
       "bytes_mismatch.jsonl:4: fields 'bytes_sent' and 'bytes_recv' must have one entry per "
       "rank of 'group' (2)"},
      {"orphan_step.jsonl",
       "orphan_step.jsonl:3: step_begin refers to redistribute 9, which has no earlier "
       "redistribute_begin"},
      {"step_outside_plan.jsonl",
       "step_outside_plan.jsonl:3: field 'step' is 3 but redistribute 0 has 1 optimized "
       "plan steps"},
      {"duplicate_begin.jsonl", "duplicate_begin.jsonl:4: redistribute 0 begins twice (first at line 2)"},
      {"step_end_without_begin.jsonl",
       "step_end_without_begin.jsonl:3: step_end for step 0 has no earlier step_begin"},
      {"second_header.jsonl",
       "second_header.jsonl:3: a second header line; each file holds one rank's trace"},
      {"fractional_integer.jsonl", "fractional_integer.jsonl:2: field 'id' must be an integer"},
      {"mesh_dim_outside_mesh.jsonl",
       "mesh_dim_outside_mesh.jsonl:3: field 'mesh_dims' names mesh dim 3 but the "
       "mesh has 1 dims"},
      {"not_an_object.jsonl", "not_an_object.jsonl:2: line must be a JSON object"},
      {"placements_per_mesh_dim.jsonl",
       "placements_per_mesh_dim.jsonl:2: field 'src_placements' must have one "
       "placement per mesh dim (1)"},
      {"deep_nesting.jsonl", "deep_nesting.jsonl:3: JSON nested deeper than 16 levels"},
      {"halo_without_op.jsonl",
       "halo_without_op.jsonl:2: field 'redistribute_id' is -1 but 'op_id' is absent: only an op's own "
       "collective (a halo exchange, with 'op_id' >= 0) has no redistribute"},
      {"op_chosen_outside.jsonl",
       "op_chosen_outside.jsonl:2: field 'chosen' is 1 but the op has 1 candidate strategies"},
      {"op_duplicate.jsonl", "op_duplicate.jsonl:3: op 0 appears twice (first at line 2)"},
      {"op_input_link.jsonl",
       "op_input_link.jsonl:4: field 'inputs[0].redistribute_id' is 0 but that redistribute_begin (line 2) "
       "does not carry op_id 0 and op_input 0"},
      {"op_link_half.jsonl", "op_link_half.jsonl:2: fields 'op_id' and 'op_input' must appear together"},
      {"op_strategy_arity.jsonl",
       "op_strategy_arity.jsonl:2: strategy 0 must have one placement list per input (1) and per output (1)"},
      {"op_negative_cost.jsonl",
       "op_negative_cost.jsonl:2: field 'candidates[0].cost_us' must be >= 0, or -1 for an infinite cost"},
      {"op_unrequested_output.jsonl",
       "op_unrequested_output.jsonl:2: output 0 is not requested, so its 'tensor', 'placements', "
       "'global_shape' and 'local_shape' must be empty"},
      {"op_input_outside.jsonl", "op_input_outside.jsonl:2: field 'op_input' is 3 but op 0 has 1 inputs"},
  }));
  CAPTURE(c.file);
  CheckInvalidInput([&] { ReadTraceFile(kGolden / "corrupt" / c.file); }, Catch::StartsWith(c.message));
}

TEST_CASE("inconsistent trace directories are errors", "[trace][reader]") {
  struct Case {
    const char* dir;
    const char* message;
  };
  auto c = GENERATE(values<Case>({
      {"duplicate_rank", "two files for rank 0 in '"},
      {"world_mismatch",
       "rank-1.jsonl:1: world 4 differs from world 2 in rank-0.jsonl; files of different runs?"},
      {"rank_name_mismatch", "rank-1.jsonl:1: header says rank 0 but the file name says rank 1"},
  }));
  CAPTURE(c.dir);
  CheckInvalidInput([&] { ReadTraceDir(kGolden / "dirs" / c.dir); }, Catch::Contains(c.message));
}

TEST_CASE("missing files and empty directories are errors", "[trace][reader]") {
  fs::path empty =
      fs::temp_directory_path() / ("shardscope_trace_empty_" + std::to_string(std::random_device{}()));
  fs::create_directories(empty);
  CHECK_THAT(ErrorOf([&] { ReadTraceDir(empty); }).what(), Catch::Contains("no rank-<R>.jsonl files"));
  CHECK_THAT(ErrorOf([&] { ReadTraceDir(empty / "nope"); }).what(), Catch::Contains("is not a directory"));
  CHECK_THAT(ErrorOf([&] { ReadTraceFile(empty / "rank-0.jsonl"); }).what(), Catch::Contains("cannot open"));
  fs::remove_all(empty);
}
