#!/usr/bin/env bash
# CI use of `shardscope diff`: re-run a scenario with the shardscope under test, diff its trace
# against the checked-in golden trace, and fail the job when a plan, a collective, a byte count or a
# shard shape changed (timing is never compared here: CI machines are noisy).
#
#   samples/ci/check_plans.sh [SHARDSCOPE] [SCENARIO] [GOLDEN_DIR]
#     SHARDSCOPE  the binary to test      (default: build/bin/shardscope)
#     SCENARIO    the scenario to re-run  (default: samples/flatten_merge.json)
#     GOLDEN_DIR  the reference trace     (default: samples/ci/golden)
#
# Exit status is diff's: 0 unchanged, 1 something changed (the lines say what), 2 bad input.
# After an intentional planner change, review the diff and refresh the golden trace with
#   SHARDSCOPE_UPDATE_GOLDEN=1 samples/ci/check_plans.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/bin/shardscope}
scenario=${2:-$root/samples/flatten_merge.json}
golden=${3:-$root/samples/ci/golden}

if [ "${SHARDSCOPE_UPDATE_GOLDEN:-}" = 1 ]; then
  rm -rf "$golden"
  "$bin" run "$scenario" --trace "$golden" >/dev/null
  echo "golden trace refreshed: $golden"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" run "$scenario" --trace "$work/candidate" >/dev/null
"$bin" diff "$golden" "$work/candidate" --fail-on plan,collectives,bytes,shapes
