#!/usr/bin/env bash
# An import's -o trace directory is written whole or not at all (docs/cli.md "Outputs"): the rank
# files go to a staging directory inside it and are moved into place only once all are written and
# flushed. For `import fr`, `import kineto` and `import debugmode`:
# - success: the directory holds exactly the new rank files (no lock, no staging directory), the
#   same bytes whether it was absent, empty or held an older trace of more ranks (--force), and a
#   file of the user's beside them is kept;
# - a write that fails part way (a file size limit, setrlimit(RLIMIT_FSIZE); the CLI ignores SIGXFSZ, so
#   write(2) fails with EFBIG; ENOSPC and EIO from faults/write_fault.c, loaded with LD_PRELOAD,
#   which fails writes below the -o directory only), a failed fsync, a failed rename while moving
#   the files into place: exit 2, one line naming the directory and the OS's reason, and the
#   directory byte for byte as it was (absent stays absent, an old trace stays) with no staging
#   directory left in it or beside it;
# - the staging directory of an import that was killed is removed by the next claim.
# And `run --trace`, whose live writer cannot stage: a failed write says the directory holds a
# partial trace.
source "$(dirname "$0")/lib.sh" "$@"


SHIM="$TMP/write_fault.so"
if ! ${CC:-cc} -shared -fPIC -o "$SHIM" "$ROOT/tests/cli/faults/write_fault.c" -ldl -lpthread 2>"$TMP/cc_err"; then
  fail "cannot build the write fault shim: $(cat "$TMP/cc_err")"
  finish
fi

"$PYTHON" "$ROOT/tests/trace/make_fr_dumps.py" clean "$TMP/fr" || fail "make_fr_dumps.py clean"
# No unknown events: the import prints no warning before its one error line.
"$PYTHON" "$ROOT/tests/trace/make_kineto_traces.py" "$TMP/kineto" --ranks 2 --steps 1 --unknown-cat 0 ||
  fail "make_kineto_traces.py"
DM="$ROOT/samples/pytorch/debugmode_tp.txt"

# import_args KIND: the import command of KIND, without -o, in ARGS.
import_args() {
  case $1 in
    fr) ARGS=(import fr "$TMP/fr") ;;
    kineto) ARGS=(import kineto "$TMP/kineto") ;;
    debugmode) ARGS=(import debugmode "$DM" --mesh 4x2 --mesh-names dp,tp) ;;
  esac
}

# snapshot DIR: every entry below DIR with its type, mode and (for files) checksum; "absent" when
# DIR does not exist.
snapshot() {
  if [ ! -e "$1" ]; then
    echo absent
    return
  fi
  (cd "$1" && find . -printf '%p %y %m\n' | sort && find . -type f -print0 | sort -z | xargs -0r sha256sum)
}

# rank_files DIR: the names and bytes of DIR's rank files, less what DebugMode's replay measures
# anew in every import: the header's pid and host, and the times.
rank_files() {
  (cd "$1" && for f in rank-*.jsonl; do
    echo "== $f"
    sed -E '1s/"pid":[0-9]*//; 1s/"host":"[^"]*"//; s/"(t_ns|start_ns|end_ns)":[0-9]+//g; s/"dt":\[[0-9,]*\]//g' "$f"
  done)
}

# no_staging PARENT: no staging or temporary directory below PARENT.
no_staging() {
  CHECKS=$((CHECKS + 1))
  local left
  left=$(find "$1" -name '.shardscope-tmp-*' -o -name '*.tmp-*')
  [ -z "$left" ] || fail "$CMD: left behind: $left"
}

# An old trace of 8 ranks, with a file of the user's beside it.
OLD="$TMP/old_template"
cat >"$TMP/eight.json" <<'JSON'
{"mesh": [8], "tensors": {"x": {"shape": [16], "placements": ["S(0)"]}},
 "steps": [{"redistribute": "x", "to": ["R"]}]}
JSON
run_ok run "$TMP/eight.json" --trace "$OLD"
echo "my notes" >"$OLD/notes.txt"
# fresh_old NAME: a copy of the old trace at $TMP/NAME.
fresh_old() {
  rm -rf "${TMP:?}/$1"
  cp -a "$OLD" "$TMP/$1"
}

# --- 1. success: the same rank files into an absent, an empty and an old trace's directory ---
for kind in fr kineto debugmode; do
  import_args $kind
  run_ok "${ARGS[@]}" -o "$TMP/$kind.new"
  check_that "$kind: the new directory holds rank files only" \
    bash -c "! ls -A '$TMP/$kind.new' | grep -qv '^rank-[0-9]*\.jsonl$'"
  no_staging "$TMP"
  mkdir "$TMP/$kind.empty"
  run_ok "${ARGS[@]}" -o "$TMP/$kind.empty"
  check_that "$kind: an empty directory gets the same rank files" \
    diff <(rank_files "$TMP/$kind.new") <(rank_files "$TMP/$kind.empty")
  fresh_old $kind.old
  run "${ARGS[@]}" -o "$TMP/$kind.old"
  expect_rc 2
  expect_one_error_line "-o: '$TMP/$kind.old' already holds a trace (8 rank files" "--force replaces it"
  run_ok "${ARGS[@]}" -o "$TMP/$kind.old" --force
  check_that "$kind: --force leaves the new rank files, none of the old trace's" \
    diff <(rank_files "$TMP/$kind.new") <(rank_files "$TMP/$kind.old")
  check_that "$kind: --force keeps the user's file and adds nothing else" \
    test "$(ls -A "$TMP/$kind.old" | grep -v '^rank-')" = notes.txt -a "$(cat "$TMP/$kind.old/notes.txt")" = "my notes"
  no_staging "$TMP"
done
# Flight Recorder and Kineto imports are a function of their input: byte for byte the same again.
for kind in fr kineto; do
  import_args $kind
  run_ok "${ARGS[@]}" -o "$TMP/$kind.again"
  check_that "$kind: a second import writes the same bytes" diff -r "$TMP/$kind.new" "$TMP/$kind.again"
done

# --- 2. a failed write leaves the directory as it was ---
# expect_unchanged KIND DIR BEFORE REASON: the last command failed naming DIR and REASON, and DIR
# is as BEFORE (a snapshot) with no staging directory anywhere.
expect_unchanged() {
  expect_rc 2
  expect_one_error_line "-o: '$2': " "$4" "the old trace, if any, is unchanged"
  CHECKS=$((CHECKS + 1))
  [ "$(snapshot "$2")" = "$3" ] || fail "$1: $CMD changed '$2':"$'\n'"$(diff <(echo "$3") <(snapshot "$2"))"
  no_staging "$TMP"
}

# with_fsize_limit ARGS...: run ARGS with files limited to 2 KiB (each kind's rank files are
# larger), as a user's `ulimit -f` does: the CLI ignores SIGXFSZ itself, so the write past the
# limit fails with EFBIG instead of the signal killing it.
with_fsize_limit() {
  flush_json
  CMD="shardscope $* (ulimit -f 2)"
  (
    ulimit -f 2
    exec "$BIN" "$@"
  ) >"$TMP/out" 2>"$TMP/err"
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
}

for kind in fr kineto debugmode; do
  import_args $kind
  for target in absent empty old; do
    dir="$TMP/$kind.fail.$target"
    rm -rf "$dir"
    case $target in
      empty) mkdir "$dir" ;;
      old) fresh_old "$kind.fail.$target" ;;
    esac
    force=()
    [ $target = old ] && force=(--force)
    before=$(snapshot "$dir")
    # The kernel's own limit (DebugMode's replay also writes scratch traces in $TMPDIR: the shim
    # below is the case that fails the output alone).
    if [ $kind != debugmode ]; then
      with_fsize_limit "${ARGS[@]}" -o "$dir" "${force[@]}"
      expect_unchanged $kind "$dir" "$before" "write failed: File too large"
    fi
    # A full disk after the first 1000 bytes of a rank file: the first file is cut part way.
    SHARDSCOPE_FAULT_UNDER="$dir" SHARDSCOPE_FAULT_BYTES=1000 LD_PRELOAD="$SHIM" run "${ARGS[@]}" -o "$dir" "${force[@]}"
    expect_unchanged $kind "$dir" "$before" "write failed: No space left on device"
    # A failing disk at the first write.
    SHARDSCOPE_FAULT_UNDER="$dir" SHARDSCOPE_FAULT_BYTES=0 SHARDSCOPE_FAULT_ERRNO=EIO LD_PRELOAD="$SHIM" \
      run "${ARGS[@]}" -o "$dir" "${force[@]}"
    expect_unchanged $kind "$dir" "$before" "write failed: Input/output error"
    # Everything written, but the flush to disk fails.
    SHARDSCOPE_FAULT_UNDER="$dir" SHARDSCOPE_FAULT_FSYNC=1 LD_PRELOAD="$SHIM" run "${ARGS[@]}" -o "$dir" "${force[@]}"
    expect_unchanged $kind "$dir" "$before" "write failed: Input/output error"
  done
done

# Moving into place fails part way: every rename made is undone. The old trace has 8 rank files
# (renames 1-8 move them aside) and the FR import 4 (renames 9-12 move them in).
for k in 1 5 9 11 12; do
  dir="$TMP/fr.rename.$k"
  fresh_old "fr.rename.$k"
  before=$(snapshot "$dir")
  SHARDSCOPE_FAULT_UNDER="$dir" SHARDSCOPE_FAULT_RENAME=$k LD_PRELOAD="$SHIM" run import fr "$TMP/fr" -o "$dir" --force
  expect_unchanged fr "$dir" "$before" "Input/output error"
  if [ $k -le 8 ]; then
    expect_err_contains "cannot move the old rank files aside"
  else
    expect_err_contains "cannot move the new rank files into place"
  fi
done
# Undoing fails too (every rename from the 10th on fails): the old files that are not back stay in
# the staging directory's old/, which the message names and no later claim removes.
dir="$TMP/fr.rename.undo"
fresh_old "fr.rename.undo"
SHARDSCOPE_FAULT_UNDER="$dir" SHARDSCOPE_FAULT_RENAME=10+ LD_PRELOAD="$SHIM" run import fr "$TMP/fr" -o "$dir" --force
expect_rc 2
expect_one_error_line "-o: '$dir': cannot move the new rank files into place: Input/output error; undoing the moves failed too" \
  "the old ones missing from it are in '$dir/.shardscope-tmp-"
check_that "the old rank files that could not be put back are kept" \
  test "$(ls "$dir"/.shardscope-tmp-*/old | tr '\n' ' ')" = "rank-0.jsonl rank-1.jsonl rank-2.jsonl rank-3.jsonl rank-4.jsonl rank-5.jsonl rank-6.jsonl rank-7.jsonl "
run_ok import fr "$TMP/fr" -o "$dir" --force
expect_err_contains "/old' holds rank files of an older trace that an import could not put back"
check_that "a later import leaves them alone" test -d "$(echo "$dir"/.shardscope-tmp-*)/old"
rm -rf "$dir"

dir="$TMP/fr.rename.absent"
SHARDSCOPE_FAULT_UNDER="$TMP" SHARDSCOPE_FAULT_RENAME=2 LD_PRELOAD="$SHIM" run import fr "$TMP/fr" -o "$dir"
expect_unchanged fr "$dir" absent "cannot move the new rank files into place: Input/output error"
# A failure that is not a write (a dump that cannot be read) also leaves an absent directory absent.
run import fr "$TMP/no_such_dumps" -o "$TMP/fr.unread"
expect_rc 2
check_that "a failed read left no directory" test ! -e "$TMP/fr.unread"
no_staging "$TMP"
# Parents that the claim created go too.
with_fsize_limit import fr "$TMP/fr" -o "$TMP/a/b/c"
expect_unchanged fr "$TMP/a/b/c" absent "write failed: File too large"
check_that "the parents the claim made are gone" test ! -e "$TMP/a"

# --- 3. what a killed import leaves is removed by the next claim ---
fresh_old killed
mkdir -p "$TMP/killed/.shardscope-tmp-AbC123"
cp "$TMP/fr.new/rank-0.jsonl" "$TMP/killed/.shardscope-tmp-AbC123/"
run_ok import fr "$TMP/fr" -o "$TMP/killed" --force
expect_err_contains "removed '$TMP/killed/.shardscope-tmp-AbC123', left by an import that was killed"
no_staging "$TMP"
# ... except old rank files that a failed commit could not put back: maybe their only copy.
mkdir -p "$TMP/killed/.shardscope-tmp-XyZ789/old"
run_ok import fr "$TMP/fr" -o "$TMP/killed" --force
expect_err_contains "'$TMP/killed/.shardscope-tmp-XyZ789/old' holds rank files of an older trace"
check_that "the old rank files a failed commit left are kept" test -d "$TMP/killed/.shardscope-tmp-XyZ789/old"
rm -rf "$TMP/killed"

# --- 4. run --trace: the live writer cannot stage; a failed write names the partial trace ---
cat >"$TMP/long.json" <<'JSON'
{"mesh": [4], "tensors": {"x": {"shape": [4096], "placements": ["S(0)"]}},
 "steps": [{"redistribute": "x", "to": ["R"]}, {"redistribute": "x", "to": ["S(0)"]}]}
JSON
with_fsize_limit run "$TMP/long.json" --repeat 200 --trace "$TMP/live"
expect_rc 2
expect_one_error_line "trace: write to '$TMP/live/rank-" "failed, leaving a partial trace in '$TMP/live': File too large"
check_that "the failed run released its lock" test ! -e "$TMP/live/.shardscope-lock"

finish
