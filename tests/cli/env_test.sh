#!/usr/bin/env bash
# `shardscope env`: every SHARDSCOPE_* knob the sources read is listed with what it does, what it
# accepts, its default and its value now; a bad value is listed, then named on one stderr line
# with exit 2 (docs/cli.md).
source "$(dirname "$0")/lib.sh" "$@"

# The knobs are the SHARDSCOPE_* variables the library and the tools read (knob registrations in
# every layer); unset them all so that "now" is known. The test suites' own variables
# (TEST_KNOBS, tests/common/test_knobs.hpp) are not part of the shipped library and not listed.
KNOBS="SHARDSCOPE_BLOCK_CACHE_MIB SHARDSCOPE_MEMORY_LIMIT SHARDSCOPE_NCCL_REDUCE SHARDSCOPE_TRACE"
TEST_KNOBS="SHARDSCOPE_FUZZ_ITERATIONS SHARDSCOPE_FUZZ_SECONDS SHARDSCOPE_FUZZ_SEED SHARDSCOPE_GPU_CASES
SHARDSCOPE_PROPERTY_CASES SHARDSCOPE_UPDATE_GOLDEN"
# shellcheck disable=SC2086
unset $KNOBS $TEST_KNOBS

run_ok env --json
# Sorted by name, each with a description, what it accepts and a default; none set.
expect_json "[k['name'] for k in j['knobs']] == '''$KNOBS'''.split()"
expect_json 'all(k["description"] and k["accepts"] and k["default"] for k in j["knobs"])'
expect_json 'all(k["value"] is None and k["valid"] for k in j["knobs"])'
expect_json '{k["name"]: k["layer"] for k in j["knobs"]}["SHARDSCOPE_MEMORY_LIMIT"] == "program"'
expect_json '{k["name"]: k["accepts"] for k in j["knobs"]}["SHARDSCOPE_NCCL_REDUCE"] == "one of native, exact"'

# Every knob, the test suites' included, is documented in docs/cli.md.
for knob in $KNOBS $TEST_KNOBS; do
  CHECKS=$((CHECKS + 1))
  grep -q "\`$knob\`" "$ROOT/docs/cli.md" || fail "docs/cli.md does not document $knob"
done

# Text: one block per knob; a set value shows as now '<value>'.
SHARDSCOPE_BLOCK_CACHE_MIB=0 run env
expect_rc 0
expect_out_contains "SHARDSCOPE_BLOCK_CACHE_MIB (engine)"
expect_out_contains "accepts a whole number of MiB from 0 to 16777216; default 1024; now '0'"
expect_out_contains "SHARDSCOPE_TRACE (trace)"

# A bad value: listed as invalid, then one error line naming the knob and the value, exit 2.
SHARDSCOPE_NCCL_REDUCE=fast run env --json
expect_rc 2
expect_json '[k["valid"] for k in j["knobs"] if k["name"] == "SHARDSCOPE_NCCL_REDUCE"] == [False]'
expect_json '[k["value"] for k in j["knobs"] if k["name"] == "SHARDSCOPE_NCCL_REDUCE"] == ["fast"]'
CHECKS=$((CHECKS + 1))
[ "$ERR" = "shardscope: SHARDSCOPE_NCCL_REDUCE='fast' is not one of native, exact" ] ||
  fail "$CMD: stderr should be one line naming the knob: $ERR"
SHARDSCOPE_MEMORY_LIMIT=-5 run env
expect_rc 2
expect_out_contains "now '-5' (invalid)"
CHECKS=$((CHECKS + 1))
[ "$ERR" = "shardscope: SHARDSCOPE_MEMORY_LIMIT='-5' is not a positive number of bytes" ] ||
  fail "$CMD: stderr should be one line naming the knob: $ERR"

# The same message where the knob is read: `run` refuses a bad SHARDSCOPE_MEMORY_LIMIT.
SHARDSCOPE_MEMORY_LIMIT=lots run run "$ROOT/samples/uneven_empty.json"
expect_rc 2
expect_one_error_line "SHARDSCOPE_MEMORY_LIMIT='lots' is not a positive number of bytes"

finish
