#!/usr/bin/env bash
# README quick start, command 2: install what is missing, build, and run the whole test suite.
# ctest's summary line ("100% tests passed, ...") is the last thing it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
cd build
ctest --output-on-failure
