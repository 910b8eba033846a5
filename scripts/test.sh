#!/usr/bin/env bash
# README quick start, command 2: install what is missing, build, and run the whole test suite
# (ctest in parallel, JOBS at a time, default one per core; the MPI suites take turns and the
# 4 GiB MPI transfer runs alone, see tests/CMakeLists.txt).
# ctest prints its label and timing summaries after "N% tests passed, ..."; that line is repeated
# at the end so it is the last thing this script (and .ci/run) prints.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
cd build
set +e
ctest --output-on-failure -j "${JOBS:-$(nproc)}" 2>&1 | tee ctest.log
rc=${PIPESTATUS[0]}
set -e
grep -E '^[0-9]+% tests passed' ctest.log | tail -n 1 || true
exit "$rc"
