#!/usr/bin/env bash
# Nothing a user owns is ever destroyed (issue 39): -o never replaces a device, a FIFO, a symlink or
# an input; one job per trace directory; every command that writes a trace refuses an old one
# without --force; write errors on standard output are errors; special files as inputs are refused
# without blocking; --json survives bytes that are not UTF-8; a tiny trace over a huge claimed
# world costs what its files hold. Devices and FIFOs are private ones made in $TMP (mknod of the
# major/minor of /dev/full and /dev/null), never the system's.
source "$(dirname "$0")/lib.sh" "$@"

# Every command here runs under a hang guard: a FIFO must never block the tool.
run_t() {
  flush_json
  CMD="shardscope $*"
  timeout 60 "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
  [ "$RC" -ne 124 ] || fail "$CMD: hung (killed after 60 s)"
}
expect_err_contains() {
  CHECKS=$((CHECKS + 1))
  case "$ERR" in
    *"$1"*) ;;
    *) fail "$CMD: stderr lacks '$1': $ERR" ;;
  esac
}

SMALL="$TMP/small.json"
cat >"$SMALL" <<'JSON'
{"mesh": [2], "tensors": {"x": {"shape": [4], "placements": ["S(0)"]}},
 "steps": [{"redistribute": "x", "to": ["R"]}]}
JSON
T="$TMP/t"
run_ok run "$SMALL" --trace "$T"
check_that "a finished run leaves no lock file in its trace directory" test ! -e "$T/.shardscope-lock"

DEVICES=1
if ! mknod "$TMP/full" c 1 7 2>/dev/null || ! mknod "$TMP/null" c 1 3 2>/dev/null; then
  echo "note: mknod not permitted here; the private device cases are skipped" >&2
  DEVICES=0
fi

# --- 1. -o never destroys what it does not own ---
if [ "$DEVICES" = 1 ]; then
  # A full device: the write fails, the command says so and the device stays a device.
  run_t export "$T" -o "$TMP/full"
  expect_rc 2
  expect_one_error_line "-o: '$TMP/full'" "write failed" "No space left on device"
  check_that "export -o FULL-DEVICE left it a character device" test -c "$TMP/full"
  # A null device is written in place, not replaced by a regular file.
  run_t export "$T" -o "$TMP/null"
  expect_rc 0
  check_that "export -o NULL-DEVICE left it a character device" test -c "$TMP/null"
fi
mkfifo "$TMP/out.fifo"
run_t export "$T" -o "$TMP/out.fifo"
expect_rc 2
expect_one_error_line "-o: '$TMP/out.fifo'" "no reader"
check_that "export -o FIFO (no reader) left it a FIFO" test -p "$TMP/out.fifo"
# A FIFO that someone reads is written in place.
timeout 60 cat "$TMP/out.fifo" >"$TMP/fifo.got" &
reader=$!
sleep 0.2
run_t export "$T" -o "$TMP/out.fifo"
expect_rc 0
wait "$reader"
check_that "export -o FIFO (read) left it a FIFO" test -p "$TMP/out.fifo"
check_that "the FIFO's reader got the Chrome JSON" grep -q '"traceEvents"' "$TMP/fifo.got"
# A symlink is followed: its target gets the new content, the link stays a link.
echo old >"$TMP/real.json"
ln -s real.json "$TMP/link.json"
run_t export "$T" -o "$TMP/link.json"
expect_rc 0
check_that "export -o SYMLINK kept the symlink" test -L "$TMP/link.json"
check_that "export -o SYMLINK wrote its target" grep -q '"traceEvents"' "$TMP/real.json"
ln -s missing.json "$TMP/dangling.json"
run_t export "$T" -o "$TMP/dangling.json"
expect_rc 2
expect_one_error_line "symlink to a missing file"
mkdir "$TMP/adir"
run_t export "$T" -o "$TMP/adir"
expect_rc 2
expect_one_error_line "-o: '$TMP/adir' is a directory"
# A regular file is replaced whole and keeps its permissions.
echo old >"$TMP/perm.json"
chmod 640 "$TMP/perm.json"
run_t export "$T" -o "$TMP/perm.json"
expect_rc 0
check_that "export -o FILE kept mode 640" test "$(stat -c %a "$TMP/perm.json")" = 640
# An output that is one of the inputs is refused and the input left as it was.
"$PYTHON" "$ROOT/tests/trace/make_fr_dumps.py" clean "$TMP/fr" || fail "make_fr_dumps.py clean"
cp "$TMP/fr/nccl_trace_rank_0" "$TMP/dump0.copy"
run_t export "$TMP/fr" -o "$TMP/fr/nccl_trace_rank_0"
expect_rc 2
expect_one_error_line "inside the input directory '$TMP/fr'"
check_that "the refused export left the dump as it was" cmp -s "$TMP/fr/nccl_trace_rank_0" "$TMP/dump0.copy"
cp "$T/rank-0.jsonl" "$TMP/rank0.copy"
run_t export "$T/rank-0.jsonl" -o "$T/rank-0.jsonl"
expect_rc 2
expect_one_error_line "is the input"
run_t export "$T" -o "$T/rank-1.jsonl"
expect_rc 2
check_that "the refused export left the rank file as it was" cmp -s "$T/rank-0.jsonl" "$TMP/rank0.copy"

# --- 2. one job per trace directory ---
LONG="$TMP/long.json"
cat >"$LONG" <<'JSON'
{"mesh": [2], "tensors": {"x": {"shape": [4], "placements": ["S(0)"]}},
 "steps": [{"redistribute": "x", "to": ["R"]}, {"redistribute": "x", "to": ["S(0)"]}]}
JSON
"$BIN" run "$LONG" --repeat 100000000 --trace "$TMP/busy" >/dev/null 2>&1 &
first=$!
trap 'kill "$first" 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 1 200); do [ -s "$TMP/busy/.shardscope-lock" ] && break; sleep 0.05; done
run_t run "$SMALL" --trace "$TMP/busy"
expect_rc 2
expect_one_error_line "--trace: '$TMP/busy' is being written by another job (pid $first on host"
# Also with --force: the other job's files are not ours to remove.
run_t run "$SMALL" --trace "$TMP/busy" --force
expect_rc 2
expect_err_contains "pid $first"
run_t import fr "$TMP/fr" -o "$TMP/busy" --force
expect_rc 2
expect_err_contains "is being written by another job (pid $first"
kill "$first" 2>/dev/null
wait "$first" 2>/dev/null
# A job killed without leaving (SIGKILL above leaves its lock file behind: SIGTERM too, as the
# file's kernel lock dies with the process) is recognised as stale and taken over.
printf 'job=pid:gone:999999 pid=999999 host=gone since=2026-01-01T00:00:00Z\n' >"$TMP/busy/.shardscope-lock"
run_t run "$SMALL" --trace "$TMP/busy" --force
expect_rc 0
expect_err_contains "stale lock of a job that ended (pid 999999 on host gone"
check_that "the run removed the stale lock file when done" test ! -e "$TMP/busy/.shardscope-lock"

# --- 3. every command that writes a trace refuses an old one without --force ---
run_t import fr "$TMP/fr" -o "$T"
expect_rc 2
expect_one_error_line "-o: '$T' already holds a trace (2 rank files" "--force replaces it"
check_that "the refused import left the trace as it was" cmp -s "$T/rank-0.jsonl" "$TMP/rank0.copy"
run_t import fr "$TMP/fr" -o "$TMP/frt"
expect_rc 0
run_t import fr "$TMP/fr" -o "$TMP/frt" --force
expect_rc 0
run_t import fr "$TMP/fr" -o "$TMP/fr"
expect_rc 2
expect_one_error_line "is the dump input"
DM="$ROOT/samples/pytorch/debugmode_tp.txt"
run_t import debugmode "$DM" --mesh 4x2 --mesh-names dp,tp -o "$T"
expect_rc 2
expect_one_error_line "-o: '$T' already holds a trace"
run_t import debugmode "$DM" --mesh 4x2 --mesh-names dp,tp -o "$TMP/dmt"
expect_rc 0
run_t import debugmode "$DM" --mesh 4x2 --mesh-names dp,tp -o "$TMP/dmt" --force
expect_rc 0

# --- 5. write errors on standard output ---
if [ "$DEVICES" = 1 ]; then
  for args in "show $T" "check $T" "show $T --json" "export $T -o -" "run $SMALL" \
    "plan --mesh 2 --shape 4 --from S(0) --to R --json"; do
    # shellcheck disable=SC2086
    timeout 60 "$BIN" $args >"$TMP/full" 2>"$TMP/err"
    rc=$?
    CHECKS=$((CHECKS + 1))
    [ "$rc" -eq 2 ] || fail "shardscope $args >FULL: exit $rc, expected 2"
    grep -q "writing standard output failed" "$TMP/err" || fail "shardscope $args >FULL: stderr: $(cat "$TMP/err")"
  done
fi

# --- 7. special files as inputs: refused at once, never waited on ---
mkfifo "$TMP/in.fifo"
for cmd in show check export; do
  extra=()
  [ "$cmd" = export ] && extra=(-o "$TMP/x.json")
  run_t "$cmd" "$TMP/in.fifo" "${extra[@]}"
  expect_rc 2
  expect_one_error_line "'$TMP/in.fifo' is a FIFO, not a regular file"
done
run_t diff "$T" "$TMP/in.fifo"
expect_rc 2
expect_err_contains "is a FIFO"
run_t import fr "$TMP/in.fifo"
expect_rc 2
expect_one_error_line "import fr: '$TMP/in.fifo' is a FIFO, not a dump file or directory"
run_t import debugmode "$TMP/in.fifo" --mesh 2
expect_rc 2
expect_one_error_line "dump '$TMP/in.fifo' is a FIFO, not a regular file"
# A FIFO named like a rank file inside a trace directory costs that rank, with a diagnostic.
mkdir "$TMP/tf"
cp "$T/rank-0.jsonl" "$TMP/tf/"
mkfifo "$TMP/tf/rank-1.jsonl"
run_t show "$TMP/tf"
expect_rc 0
expect_err_contains "rank-1.jsonl' is a FIFO, not a regular file"
if [ "$DEVICES" = 1 ]; then
  run_t show "$TMP/null"
  expect_rc 2
  expect_one_error_line "is a character device, not a regular file"
fi

# --- 8. --json with bytes that are not UTF-8: replaced, never an internal error ---
run_t plan --mesh 2 --mesh-names $'d\xff' --shape 4 --from 'S(0)' --to R --json
expect_rc 0
expect_json "j['mesh']['dim_names'] == ['d\ufffd']"
BAD=$'\xfe'
cp -r "$T" "$TMP/t$BAD"
run_t show "$TMP/t$BAD" --json
expect_rc 0
expect_json "isinstance(j, dict)"
run_t check "$TMP/t$BAD" --json
expect_rc 0
expect_json "isinstance(j, dict)"

# --- 9. an infinite Flight Recorder duration: imported and read back, no rank dropped ---
"$PYTHON" - "$TMP/fr" "$TMP/frinf" <<'PY' || fail "writing the inf-duration dumps"
import os, pickle, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
shutil.copytree(src, dst)
path = os.path.join(dst, "nccl_trace_rank_1")
with open(path, "rb") as f:
    d = pickle.load(f)
d["entries"][0]["duration_ms"] = float("inf")
with open(path, "wb") as f:
    pickle.dump(d, f, protocol=2)
PY
run_t import fr "$TMP/frinf" -o "$TMP/frinf_trace"
expect_rc 0
check_that "import fr wrote no null duration" bash -c "! grep -q '\"duration_ms\":null' '$TMP/frinf_trace'/rank-*.jsonl"
run_t show "$TMP/frinf_trace" --json
expect_rc 0
expect_json "len(j['ranks']) == 4"
check_that "reading the imported trace skipped no rank" test -z "$ERR"
# A trace written before the fix (duration_ms null) is read with the duration unknown.
sed -i '0,/"duration_ms":0.5/s//"duration_ms":null/' "$TMP/frt/rank-1.jsonl"
check_that "the null-duration fixture has a null" grep -q '"duration_ms":null' "$TMP/frt/rank-1.jsonl"
run_t show "$TMP/frt" --json
expect_rc 0
expect_json "len(j['ranks']) == 4"
check_that "a null duration drops no rank" test -z "$ERR"

# --- 6. a tiny trace over a world of 2^20 ranks: work follows the files, not the claim ---
"$PYTHON" - "$TMP/amp" <<'PY' || fail "writing the 2^20-rank trace"
import json, os, sys
W = 1 << 20
out = sys.argv[1]
os.makedirs(out)
L = [{"type": "header", "format": "shardscope-trace", "version": 2, "rank": 0, "world": W,
      "mesh": {"shape": [W], "dim_names": ["dp"]}, "backend": "local", "host": "h", "pid": 1,
      "clock": {"name": "steady", "offset_ns": 0}},
     {"type": "redistribute_begin", "id": 0, "tensor": "x", "global_shape": [W, 3], "dtype": "f32",
      "src_placements": ["S(0)"], "dst_placements": ["R"], "planner": "greedy", "planner_reason": "default",
      "notation": "S(0)->R[dp]", "raw_plan": [{"mesh_dims": [0], "src": "S(0)", "dst": "R",
      "comm": "all_gather", "logical_shape": [W, 3], "cost_us": 4.5}], "cost_us": 4.5, "t_ns": 1000},
     {"type": "step_begin", "redistribute_id": 0, "step": 0, "local_shape_before": [1, 3],
      "global_offset_before": [0, 0], "t_ns": 1100},
     {"type": "collective", "redistribute_id": 0, "step": 0, "bytes_sent": 12, "bytes_recv": 12,
      "start_ns": 1200, "end_ns": 3200},
     {"type": "step_end", "redistribute_id": 0, "step": 0, "local_shape_after": [W, 3],
      "global_offset_after": [0, 0], "t_ns": 3300},
     {"type": "redistribute_end", "id": 0, "t_ns": 3400}]
L += [{"type": "redistribute_repeat", "id": i, "like": 0, "t_ns": 1000 + i * 10000,
       "dt": [100, 200, 2200, 2300, 2400]} for i in range(1, 101)]
with open(os.path.join(out, "rank-0.jsonl"), "w") as f:
    f.writelines(json.dumps(l, separators=(",", ":")) + "\n" for l in L)
PY
run_t check "$TMP/amp"
expect_rc 1
# Ranks 1..1048575 have no file: 64 named one by one, the other 1048575 - 64 = 1048511 in one report.
expect_out_contains "missing_rank_file: rank 1 of world 1048576 has no trace file"
run_t check "$TMP/amp" --json --max-reports 100
expect_rc 1
expect_json "j['mismatch_count'] == 65"
expect_json "'1048511 more ranks of world 1048576 (65..1048575)' in j['mismatches'][64]['message']"
run_t export "$TMP/amp" -o "$TMP/amp.json"
expect_rc 0
"$PYTHON" - "$TMP/amp.json" <<'PY' || fail "export of the 2^20-rank trace: collective slices not bounded"
import json, sys
j = json.load(open(sys.argv[1]))
cols = [e for e in j["traceEvents"] if e.get("cat") == "collective"]
assert len(cols) == 101, len(cols)
for e in cols:
    a = e["args"]
    assert a["group_size"] == 1 << 20 and len(a["group"]) == 64, a
    assert a["bytes_sent_per_peer"] == 12 and "bytes_sent" not in a, a
    assert a["bytes_sent_total"] == 12 * ((1 << 20) - 1), a
PY
run_t show "$TMP/amp"
expect_rc 0

# --- 5b. the GUI's screenshot on a full device: reported, exit 2 (skipped without the GUI or Xvfb) ---
GUI="$(dirname "$BIN")/shardscope-gui"
if [ "$DEVICES" = 1 ] && [ -x "$GUI" ] && command -v xvfb-run >/dev/null 2>&1; then
  CMD="shardscope-gui $T --screenshot FULL"
  timeout 120 xvfb-run -a -s "-screen 0 1280x800x24" "$GUI" "$T" --screenshot "$TMP/full" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  ERR=$(cat "$TMP/err")
  expect_rc 2
  expect_err_contains "writing $TMP/full failed: No space left on device"
  check_that "the screenshot left the device a device" test -c "$TMP/full"
else
  echo "note: GUI screenshot case skipped (no shardscope-gui, xvfb-run or mknod)" >&2
fi

finish
