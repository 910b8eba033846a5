# Shared helpers for the CLI tests (sourced; not a test itself). Usage in a test:
#   source "$(dirname "$0")/lib.sh" "$@"      # $1 = shardscope binary, $2 = repo root
# Checks accumulate; `finish` exits 1 if any failed. Expected values in the tests come from the
# definitions (PyTorch rules, the reference's worked examples), never from this binary's output.
set -u
BIN=${1:?usage: $0 <path-to-shardscope> <repo-root>}
ROOT=${2:?usage: $0 <path-to-shardscope> <repo-root>}
GOLDEN_DIR="$ROOT/tests/golden/cli"
# The system python starts much faster than a version-manager shim (pyenv) when both exist.
PYTHON=python3
[ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
FAILURES=0
CHECKS=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}

# run ARGS...: runs the binary; sets OUT (stdout), ERR (stderr), RC, CMD.
run() {
  flush_json
  CMD="shardscope $*"
  "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
}

# run_ok ARGS...: run, expecting exit 0.
run_ok() {
  run "$@"
  expect_rc 0
}

# check_that DESCRIPTION COMMAND...: COMMAND must succeed (a check of a file, a directory, a count).
check_that() {
  CHECKS=$((CHECKS + 1))
  local what=$1
  shift
  "$@" || fail "$what"
}

expect_rc() {
  CHECKS=$((CHECKS + 1))
  [ "$RC" -eq "$1" ] || fail "$CMD: exit $RC, expected $1; stderr: $ERR"
}

# expect_text NAME TEXT contains|lacks NEEDLE DETAIL: one check that TEXT (stdout or stderr, called
# NAME) contains or lacks NEEDLE literally; DETAIL ends the failure message.
expect_text() {
  CHECKS=$((CHECKS + 1))
  case "$2" in
    *"$4"*) [ "$3" = contains ] || fail "$CMD: $1 unexpectedly contains '$4'$5" ;;
    *) [ "$3" = lacks ] || fail "$CMD: $1 lacks '$4'$5" ;;
  esac
}

# expect_out_contains NEEDLE / expect_out_lacks NEEDLE: stdout contains / lacks NEEDLE literally.
expect_out_contains() { expect_text stdout "$OUT" contains "$1" $'\n'"--- stdout:"$'\n'"$OUT"; }
expect_out_lacks() { expect_text stdout "$OUT" lacks "$1" ""; }

# expect_err_contains NEEDLE / expect_err_lacks NEEDLE: stderr contains / lacks NEEDLE literally.
expect_err_contains() { expect_text stderr "$ERR" contains "$1" ": $ERR"; }
expect_err_lacks() { expect_text stderr "$ERR" lacks "$1" ": $ERR"; }

# expect_one_error_line NEEDLE...: stderr is exactly one line starting "shardscope: " and
# containing every NEEDLE; stdout is empty.
expect_one_error_line() {
  CHECKS=$((CHECKS + 1))
  local lines
  lines=$(printf '%s\n' "$ERR" | grep -c '')
  [ -n "$ERR" ] && [ "$lines" -eq 1 ] || { fail "$CMD: expected one stderr line, got $lines: $ERR"; return; }
  case "$ERR" in
    "shardscope: "*) ;;
    *) fail "$CMD: stderr does not start with 'shardscope: ': $ERR" ;;
  esac
  [ -z "$OUT" ] || fail "$CMD: stdout not empty on error: $OUT"
  local needle
  for needle in "$@"; do
    case "$ERR" in
      *"$needle"*) ;;
      *) fail "$CMD: stderr lacks '$needle': $ERR" ;;
    esac
  done
}

# expect_refused NEEDLE... -- ARGS...: runs ARGS; exit 2 (bad input) and exactly one stderr line
# "shardscope: ..." containing every NEEDLE, nothing on stdout.
expect_refused() {
  local needles=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    needles+=("$1")
    shift
  done
  shift
  run "$@"
  expect_rc 2
  expect_one_error_line "${needles[@]}"
}

# expect_json PYTHON_EXPR: evaluates EXPR with j = the parsed stdout; must be true. Checks are
# batched per run (one python3 start per command, not per check) and evaluated at the next
# `run` or at `finish`.
PENDING_JSON=()
expect_json() {
  CHECKS=$((CHECKS + 1))
  PENDING_JSON+=("$1")
}

flush_json() {
  [ ${#PENDING_JSON[@]} -eq 0 ] && return
  local report
  report=$(printf '%s' "$OUT" | "$PYTHON" -c '
import json, sys
try:
    j = json.load(sys.stdin)
except Exception as e:
    print("stdout is not JSON: %r" % e); sys.exit(1)
bad = 0
for expr in sys.argv[1:]:
    try:
        ok = eval(expr)
        why = ""
    except Exception as e:
        ok, why = False, " raised %r" % e
    if not ok:
        bad += 1
        print("JSON check failed: %s%s" % (expr, why))
sys.exit(1 if bad else 0)' "${PENDING_JSON[@]}" 2>&1)
  if [ $? -ne 0 ]; then
    while IFS= read -r line; do fail "$CMD: $line"; done <<<"$report"
  fi
  PENDING_JSON=()
}

# expect_golden FILE: stdout equals tests/golden/cli/FILE. SHARDSCOPE_UPDATE_GOLDEN=1 rewrites
# the file, except the hand-derived ones listed in HAND_DERIVED.
expect_golden() {
  CHECKS=$((CHECKS + 1))
  local file="$GOLDEN_DIR/$1"
  if [ "${SHARDSCOPE_UPDATE_GOLDEN:-0}" = 1 ]; then
    if grep -qx "$1" "$GOLDEN_DIR/HAND_DERIVED"; then
      echo "note: $1 is hand-derived; not regenerated" >&2
    else
      printf '%s\n' "$OUT" >"$file"
      echo "updated $1" >&2
      return
    fi
  fi
  if ! diff -u "$file" <(printf '%s\n' "$OUT") >"$TMP/diff"; then
    fail "$CMD: output differs from golden $1:"$'\n'"$(cat "$TMP/diff")"
  fi
}

finish() {
  flush_json
  if [ "$FAILURES" -ne 0 ]; then
    echo "$FAILURES of $CHECKS checks failed" >&2
    exit 1
  fi
  echo "all $CHECKS checks passed"
  exit 0
}
