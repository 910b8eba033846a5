#!/usr/bin/env bash
# Imported traces written compactly (docs/trace-format.md, "Version 2" and "Version 3"): `import fr -o` writes most
# Flight Recorder entries as collective_repeat lines and at most the dumps' bytes, and show and
# check say of the written trace exactly what they say of the dumps it came from (nothing lost);
# the same for a profiler trace (`import kineto -o`); both stay format version 2. A DebugMode import
# writes its ops and redistributes by `like` and in version 3's forms, under version 3 headers (a
# version-2 reader refuses it instead of ignoring those forms), and show reads it.

# header_version DIR: the format version of every rank file's header in DIR, one per line, unique.
header_version() {
  for f in "$1"/rank-*.jsonl; do head -n 1 "$f" | sed -n 's/^{"type":"header","format":"shardscope-trace","version":\([0-9]*\),.*/\1/p'; done | sort -u
}
expect_version() {
  CHECKS=$((CHECKS + 1))
  local got
  got=$(header_version "$2")
  [ "$got" = "$1" ] || fail "$3: header versions '$got', expected $1"
}
source "$(dirname "$0")/lib.sh" "$@"

bytes() { du -sb "$1" | cut -f1; }

# show/check TRACE says what show/check DUMPS says; only the header line (the trace's format and
# backend) and the readers' warnings about the dumps' own files may differ.
same_report() {
  local verb=$1 dumps=$2 trace=$3
  CHECKS=$((CHECKS + 1))
  "$BIN" "$verb" "$dumps" 2>/dev/null | grep -v '^trace: ' >"$TMP/a.txt"
  "$BIN" "$verb" "$trace" 2>/dev/null | grep -v '^trace: ' >"$TMP/b.txt"
  if ! cmp -s "$TMP/a.txt" "$TMP/b.txt"; then
    fail "$verb of the imported trace differs from $verb of its source:"$'\n'"$(diff "$TMP/a.txt" "$TMP/b.txt" | head -20)"
  fi
}

for format in pickle json; do
  dumps="$TMP/fr_$format"
  "$PYTHON" "$ROOT/tests/trace/make_fr_dumps.py" clean "$dumps" --ranks 16 --seqs 300 --format "$format" >/dev/null
  run import fr "$dumps" -o "$TMP/fr_$format.trace"
  expect_rc 0
  trace="$TMP/fr_$format.trace"
  expect_version 2 "$trace" "import fr ($format)"
  # 300 entries a rank, 4 kinds: 4 full lines, the other 296 repeat the same kind 4 entries back.
  CHECKS=$((CHECKS + 1))
  repeats=$(grep -c '"type":"collective_repeat"' "$trace/rank-3.jsonl")
  [ "$repeats" = 296 ] || fail "$format: rank 3 has $repeats collective_repeat lines, not 296"
  CHECKS=$((CHECKS + 1))
  grep -q '^{"type":"collective_repeat","back":4,"dt":\[4000000,4000000,4000000\],"did":\[4,0,4,4\]}$' \
    "$trace/rank-3.jsonl" || fail "$format: no repeat of the entry 4 back (4 ms later, seq/record/op ids + 4)"
  CHECKS=$((CHECKS + 1))
  [ "$(bytes "$trace")" -le "$(bytes "$dumps")" ] ||
    fail "$format: the trace ($(bytes "$trace") B) is larger than the dumps ($(bytes "$dumps") B)"
  same_report show "$dumps" "$trace"
  same_report check "$dumps" "$trace"
done

# A profiler trace: collectives with flight records repeat, CPU ops (no candidates) read back.
"$PYTHON" "$ROOT/tests/trace/make_kineto_traces.py" "$TMP/kineto" --ranks 2 --steps 20 >/dev/null
run import kineto "$TMP/kineto" -o "$TMP/kineto.trace"
expect_rc 0
expect_version 2 "$TMP/kineto.trace" "import kineto"
CHECKS=$((CHECKS + 1))
grep -q '"type":"collective_repeat"' "$TMP/kineto.trace/rank-0.jsonl" || fail "kineto: no collective_repeat line"
# show of the profiler trace itself and of the written trace agree: collectives and CPU ops (the
# "program" section; tests/cli/show_kineto_test.sh compares show, check and export in full).
run show "$TMP/kineto.trace"
expect_rc 0
CHECKS=$((CHECKS + 1))
"$BIN" show "$TMP/kineto" 2>/dev/null | grep -v -e '^trace: ' -e '^diagnostics:' -e 'unknown kinds skipped' -e '^$' >"$TMP/a.txt"
sed -e '/^trace: /d' -e '/^$/d' "$TMP/out" >"$TMP/b.txt"
cmp -s "$TMP/a.txt" "$TMP/b.txt" ||
  fail "kineto: show of the written trace differs:"$'\n'"$(diff "$TMP/a.txt" "$TMP/b.txt" | head -20)"
run check "$TMP/kineto.trace"
expect_rc 0

# DebugMode: the sample log three times over; its ops repeat by `like`, giving their rule's record
# line alone, and a replayed redistribute repeated whole is one redistribute_repeat line: its
# times keep the first replay's offsets (no dt), its tensor and imported plan's line its own.
for _ in 1 2 3; do cat "$ROOT/samples/pytorch/debugmode_tp.txt"; done >"$TMP/dm.txt"
run import debugmode "$TMP/dm.txt" --mesh 4x2 --flatten all -o "$TMP/dm.trace"
expect_rc 0
expect_version 3 "$TMP/dm.trace" "import debugmode"
CHECKS=$((CHECKS + 1))
grep -q '^{"type":"op","id":[0-9]*,"like":' "$TMP/dm.trace/rank-0.jsonl" || fail "debugmode: no op line with like"
CHECKS=$((CHECKS + 1))
grep -q '^{"type":"op","id":[0-9]*,"like":[0-9]*,.*"rule_number":' "$TMP/dm.trace/rank-0.jsonl" ||
  fail "debugmode: no op line giving its rule's number alone"
CHECKS=$((CHECKS + 1))
grep -q '^{"type":"redistribute_repeat","id":[0-9]*,"like":[0-9]*,"t_ns":[0-9]*,"tensor":"[^"]*",.*"imported":{"line":[0-9]*}}$' \
  "$TMP/dm.trace/rank-0.jsonl" || fail "debugmode: no redistribute_repeat with its own tensor and imported line"
CHECKS=$((CHECKS + 1))
[ "$(grep -c '"type":"redistribute_repeat".*"dt":' "$TMP/dm.trace/rank-0.jsonl")" = 0 ] ||
  fail "debugmode: a replay repeated on a shifted clock wrote its time offsets"
run show "$TMP/dm.trace"
expect_rc 0
# The sample's first op (aten::embedding, line 3) again in the third copy of the log: line 3 + 2 x 34.
CHECKS=$((CHECKS + 1))
grep -q '^op #16 aten::embedding(.*rule recorded by PyTorch DebugMode (line 71, module Model.embed); opaque' "$TMP/out" ||
  fail "debugmode: op #16 does not name log line 71"

# A shardscope that reads only version 2 would take the DebugMode trace's rule_number, linked and
# partial imported for unknown fields and ignore them; it stops at the header instead. Seen here
# as this shardscope sees a header one version past its own: the same message, naming file and line.
# relabelled VERSION WHAT PATTERN: the DebugMode trace's first rank file with its header's version
# replaced by VERSION must be refused, with a message matching PATTERN (grep).
relabelled() {
  mkdir -p "$TMP/dm_v$1"
  sed "1s/\"version\":3,/\"version\":$1,/" "$TMP/dm.trace/rank-0.jsonl" >"$TMP/dm_v$1/rank-0.jsonl"
  run show "$TMP/dm_v$1/rank-0.jsonl"
  CHECKS=$((CHECKS + 2))
  [ "$RC" -ne 0 ] || fail "show of $2 exited 0"
  grep -q "$3" "$TMP/err" || fail "show of $2: no expected message: $(head -3 "$TMP/err")"
}
relabelled 4 "a version-4 trace" \
  'rank-0.jsonl:1: trace format version 4 is newer than this shardscope reads (3); upgrade shardscope'
# The same trace relabelled version 2: its first version-3 form is named.
relabelled 2 "a DebugMode trace relabelled version 2" \
  "rank-0.jsonl:[0-9]*: .*needs trace format version 3\|rank-0.jsonl:[0-9]*: .*only trace format version 3 may leave it out"

finish
