#!/usr/bin/env bash
# Kineto import speed: `shardscope import kineto --json` against Python's json.load of the same file,
# in the same run, with peak RSS (GNU time). Usage: bench_kineto.sh SHARDSCOPE FILE [JOBS]
# Figures: docs/performance.md, section "Kineto".
set -euo pipefail
BIN=${1:?shardscope binary}
FILE=${2:?a Kineto trace (.json or .json.gz)}
bytes=$(python3 -c "import gzip,sys; f=sys.argv[1]; o=gzip.open(f) if f.endswith('.gz') else open(f,'rb'); print(sum(len(b) for b in iter(lambda: o.read(1<<24), b'')))" "$FILE")
cat "$FILE" >/dev/null  # warm the page cache for both
py=$( { /usr/bin/time -f "%e %M" python3 -c "import json,gzip,sys; f=sys.argv[1]; json.load(gzip.open(f) if f.endswith('.gz') else open(f,'rb'))" "$FILE"; } 2>&1 | tail -1)
ss=$( { /usr/bin/time -f "%e %M" "$BIN" import kineto "$FILE" --json >/dev/null; } 2>&1 | tail -1)
read -r py_s py_kb <<<"$py"
read -r ss_s ss_kb <<<"$ss"
python3 - "$bytes" "$py_s" "$py_kb" "$ss_s" "$ss_kb" <<'PY'
import sys
b, py_s, py_kb, ss_s, ss_kb = int(sys.argv[1]), *map(float, sys.argv[2:])
mb = b / 1e6
print("uncompressed JSON: %.1f MB" % mb)
print("python json.load:        %6.2f s  %7.1f MB/s  peak RSS %7.1f MB (%.2fx the JSON)" % (py_s, mb / py_s, py_kb / 1e3, py_kb * 1e3 / b))
print("shardscope import kineto: %6.2f s  %7.1f MB/s  peak RSS %7.1f MB (%.2fx the JSON)" % (ss_s, mb / ss_s, ss_kb / 1e3, ss_kb * 1e3 / b))
print("speed ratio shardscope / json.load: %.2fx" % (py_s / ss_s))
PY
