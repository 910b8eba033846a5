#!/usr/bin/env bash
# Installs shardscope into a temporary prefix, builds samples/capture against the installed
# package with find_package(shardscope), runs it with SHARDSCOPE_TRACE set and reads the trace
# back with the installed CLI. Args: $1 = build dir, $2 = source dir.
set -euo pipefail
build="$1"
src="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/lib/cmake/shardscope/shardscopeConfig.cmake"
test -f "$tmp/prefix/include/shardscope/engine/exec/executor.hpp"
test -f "$tmp/prefix/include/shardscope/trace/session.hpp"
test -f "$tmp/prefix/include/shardscope/program/runner.hpp"
test -x "$tmp/prefix/bin/shardscope"
cmake -S "$src/samples/capture" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/build" -j2 >/dev/null
# Tracing off: no files.
"$tmp/build/capture_example"
# Tracing on through the environment variable.
SHARDSCOPE_TRACE="$tmp/trace" "$tmp/build/capture_example"
for r in 0 1 2 3; do test -s "$tmp/trace/rank-$r.jsonl"; done
out=$("$tmp/prefix/bin/shardscope" show "$tmp/trace")
# [S(0),S(1)] -> [R,S(0)] on a 2x2 mesh, greedy (PyTorch semantics §3): pass 1 finds mesh dim 1's
# target S(0) misaligned (an earlier S(0) now, none in the target) so unshards it, then mesh dim 0;
# pass 2 chunks mesh dim 1 locally.
grep -q "activation" <<<"$out"
grep -q "notation: S(0)S(1)->S(0)R->RR->RS(0)" <<<"$out"
# Capture never takes the job down (exit 0 under set -e): SHARDSCOPE_TRACE naming a regular file,
# and a full disk for rank 2 (its file is a link to /dev/full): one warning line, the other ranks'
# files kept.
touch "$tmp/a_file"
err=$(SHARDSCOPE_TRACE="$tmp/a_file" "$tmp/build/capture_example" 2>&1 >/dev/null)
test "$(printf '%s\n' "$err" | grep -c '')" -eq 1
grep -q "^shardscope: warning: trace: cannot create directory .*tracing is off, the job goes on$" <<<"$err"
mkdir "$tmp/full"
ln -s /dev/full "$tmp/full/rank-2.jsonl"
err=$(SHARDSCOPE_TRACE="$tmp/full" "$tmp/build/capture_example" 2>&1 >/dev/null)
test "$(printf '%s\n' "$err" | grep -c '')" -eq 1
grep -q "No space left on device; tracing is off, the job goes on" <<<"$err"
for r in 0 1 3; do test -s "$tmp/full/rank-$r.jsonl"; done
echo "install test ok"
