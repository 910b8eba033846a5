#!/usr/bin/env bash
# Configures and builds shardscope into build/ (Release, 2 parallel jobs).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
