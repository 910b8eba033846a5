#!/usr/bin/env bash
# I/O errors while reading inputs are clean errors (exit 2, one line naming the file or directory),
# never a crash (exit 3, "internal error") nor an error passed off as the end of a file:
# - a read error in a rank file (/proc/self/mem fails every read with EIO, as a failing disk
#   would): that file's error names it and the errno text, never "empty" or "torn last line";
# - a read error in a Flight Recorder dump (faults/fread_fault.c, loaded with LD_PRELOAD, fails
#   every read of one dump with EIO): the command's error names the dump and the errno text,
#   never a dump cut short ("truncated", "not a valid");
# - a directory listing that fails in the middle (faults/readdir_fault.c, loaded with LD_PRELOAD,
#   fails the Nth listing of one directory after its first entry): every command that lists an
#   input directory answers exit 0 (the listing was not needed) or 2 with "cannot list", for N
#   from 1 to 6, and at least one N reaches the reader's own listing.
source "$(dirname "$0")/lib.sh" "$@"

CLEAN="$ROOT/tests/golden/check/clean"

# ---- read errors ---------------------------------------------------------------------------------
mkdir -p "$TMP/eio"
cp "$CLEAN"/rank-*.jsonl "$TMP/eio/"
ln -sf /proc/self/mem "$TMP/eio/rank-1.jsonl"
expect_refused "rank-1.jsonl" "read error" "Input/output error" -- show "$TMP/eio/rank-1.jsonl"
# In a directory a rank file that cannot be read costs that rank (docs/trace-format.md), and the
# warning says why: the read error, not an empty file.
run_ok show "$TMP/eio"
expect_out_contains "trace: world 4, 3 rank file(s)"
expect_err_contains "rank-1.jsonl: skipped rank 1: read error after 0 bytes: Input/output error"
expect_err_lacks "empty"  # a read error passed for the end of the file
expect_err_lacks "torn"

# ---- listings that fail part way -------------------------------------------------------------------
SHIM="$TMP/readdir_fault.so"
if ! ${CC:-cc} -shared -fPIC -o "$SHIM" "$ROOT/tests/cli/faults/readdir_fault.c" -ldl 2>"$TMP/cc_err"; then
  fail "cannot build the readdir fault shim: $(cat "$TMP/cc_err")"
  finish
fi

# listing_faults DIR ARGS...: runs ARGS with the Nth listing of DIR failing, N = 1..6.
listing_faults() {
  local dir=$1 n refused=0
  shift
  for n in 1 2 3 4 5 6; do
    SHARDSCOPE_FAULT_DIR="$dir" SHARDSCOPE_FAULT_LISTING=$n LD_PRELOAD="$SHIM" run "$@"
    CHECKS=$((CHECKS + 1))
    case "$RC" in
      0 | 1) ;;
      2)
        refused=$((refused + 1))
        expect_one_error_line "cannot list '" "Input/output error"
        ;;
      *) fail "$CMD with listing $n of $dir failing: exit $RC, expected 0, 1 or 2; stderr: $ERR" ;;
    esac
  done
  CHECKS=$((CHECKS + 1))
  [ "$refused" -gt 0 ] || fail "$CMD: no failing listing of $dir was reported (is the shim loaded?)"
}

mkdir -p "$TMP/trace"
cp "$CLEAN"/rank-*.jsonl "$TMP/trace/"
listing_faults "$TMP/trace" show "$TMP/trace"
listing_faults "$TMP/trace" check "$TMP/trace"

"$PYTHON" "$ROOT/tests/trace/make_fr_dumps.py" clean "$TMP/fr" || fail "make_fr_dumps.py clean"

# A read error in one Flight Recorder dump, for each command that reads dumps.
FREAD_SHIM="$TMP/fread_fault.so"
if ${CC:-cc} -shared -fPIC -o "$FREAD_SHIM" "$ROOT/tests/cli/faults/fread_fault.c" -ldl 2>"$TMP/cc_err"; then
  dump=$(find "$TMP/fr" -type f | sort | head -1)
  for cmd in show check triage "import fr"; do
    # shellcheck disable=SC2086 # "import fr" is two words
    SHARDSCOPE_FAULT_FILE="$dump" LD_PRELOAD="$FREAD_SHIM" expect_refused "$(basename "$dump")" "read error" \
      "Input/output error" -- $cmd "$TMP/fr"
  done
else
  fail "cannot build the fread fault shim: $(cat "$TMP/cc_err")"
fi
listing_faults "$TMP/fr" show "$TMP/fr"
listing_faults "$TMP/fr" triage "$TMP/fr"
listing_faults "$TMP/fr" import fr "$TMP/fr"
# The -o directory holds an old trace: listing it (to replace its rank files) fails.
mkdir -p "$TMP/old_trace"
cp "$CLEAN"/rank-*.jsonl "$TMP/old_trace/"
listing_faults "$TMP/old_trace" import fr "$TMP/fr" -o "$TMP/old_trace" --force

"$PYTHON" "$ROOT/tests/trace/make_kineto_traces.py" "$TMP/kineto" --ranks 2 --steps 1 || fail "make_kineto_traces.py"
listing_faults "$TMP/kineto" import kineto "$TMP/kineto"

finish
