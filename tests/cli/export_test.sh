#!/usr/bin/env bash
# `shardscope export --format chrome`: the output is Chrome Trace Event JSON that Perfetto reads
# (docs/trace-tools.md; field rules from Perfetto's JSON parser). The structure is validated with
# python3's json module; counts follow from the traces (the two-rank fixture and a scenario run).
source "$(dirname "$0")/lib.sh" "$@"

# Structure checks shared by every export: $1 = file, $2 = expected world.
validate() {
  CHECKS=$((CHECKS + 1))
  "$PYTHON" - "$1" "$2" >"$TMP/validate.out" 2>&1 <<'PY' || fail "export $1: $(cat "$TMP/validate.out")"
import json, sys
doc = json.load(open(sys.argv[1]))
world = int(sys.argv[2])
assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list), "object form with traceEvents"
assert "displayTimeUnit" not in doc, "displayTimeUnit must be omitted (ts is always us)"
evs = doc["traceEvents"]
names = {}
slices = {}
flows = {}
for e in evs:
    ph = e["ph"]
    assert isinstance(ph, str) and len(ph) == 1, e
    assert isinstance(e["pid"], int) and 0 <= e["pid"] < world, e
    assert all(ord(c) < 128 for c in json.dumps(e, ensure_ascii=False)), "ASCII only"
    if ph == "M":
        assert e["name"] in ("process_name", "thread_name"), e
        assert isinstance(e["args"]["name"], str)
        if e["name"] == "process_name":
            names[e["pid"]] = e["args"]["name"]
        else:
            assert isinstance(e["tid"], int)
    elif ph == "X":
        for k in ("name", "cat", "tid", "ts", "dur", "args"):
            assert k in e, (k, e)
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        assert e["cat"] in ("redistribute", "step", "collective"), e
        slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e))
    elif ph in ("s", "f"):
        assert isinstance(e["id"], int), "flow ids are numbers (strings are parsed as hex)"
        assert e["cat"] == "flow" and e["name"] == "collective" and isinstance(e["tid"], int), e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if ph == "f":
            assert e["bp"] == "e", e
        flows.setdefault(e["id"], {})[ph] = e
    else:
        raise AssertionError("unexpected phase %r" % ph)
assert sorted(names) == list(range(world)), ("one named pid per rank", names)
assert min(s[0] for v in slices.values() for s in v) == 0, "timestamps relative to the earliest event"
# Slices on one (pid, tid) never overlap partially (Perfetto's nesting rule).
for key, v in slices.items():
    v.sort(key=lambda s: (s[0], -s[1]))
    for a, b in zip(v, v[1:]):
        assert b[0] >= a[1] - 1e-6 or b[1] <= a[1] + 1e-6, ("overlap", key, a[2]["name"], b[2]["name"])
# Every flow has both ends, each inside a collective slice of its (pid, tid).
for fid, ends in flows.items():
    assert set(ends) == {"s", "f"}, (fid, ends)
    for e in ends.values():
        assert any(s[0] - 1e-6 <= e["ts"] <= s[1] + 1e-6 and s[2]["cat"] == "collective"
                   for s in slices.get((e["pid"], e["tid"]), [])), ("unbound flow end", e)
    assert ends["s"]["pid"] != ends["f"]["pid"], "flows join two ranks"
counts = {}
for e in evs:
    counts[e["ph"] + ":" + e.get("cat", "")] = counts.get(e["ph"] + ":" + e.get("cat", ""), 0) + 1
print(json.dumps(counts, sort_keys=True))
PY
  COUNTS=$(cat "$TMP/validate.out")
}

# The hand-written two-rank fixture: 2 redistributes x 2 ranks, 1 step each, 3 collectives per
# rank (an all_gather, a shape_exchange and an all_to_all), one flow per collective call.
run_ok export --format chrome "$ROOT/tests/golden/trace/two_rank" -o "$TMP/two.json"
expect_out_contains "wrote "
validate "$TMP/two.json" 2
CHECKS=$((CHECKS + 1))
[ "$COUNTS" = '{"M:": 8, "X:collective": 6, "X:redistribute": 4, "X:step": 4, "f:flow": 3, "s:flow": 3}' ] ||
  fail "two_rank export counts: $COUNTS"
# Details travel in args; ts is (t_ns - earliest t_ns) / 1000: rank 1's redistribute #0 began at
# 1050 ns, the earliest event is at 1000 ns, so ts = 0.05 us; its all_gather lasted 12000 ns = 12 us.
run_ok export --format chrome "$ROOT/tests/golden/trace/two_rank" -o -
expect_json '[e["ts"] for e in j["traceEvents"] if e["ph"] == "X" and e["pid"] == 1 and e["cat"] == "redistribute"][0] == 0.05'
expect_json '[e["dur"] for e in j["traceEvents"] if e["ph"] == "X" and e["pid"] == 1 and e["name"] == "all_gather"] == [12.0]'
expect_json '[e["args"]["bytes_sent"] for e in j["traceEvents"] if e["ph"] == "X" and e["pid"] == 0 and e["name"] == "all_gather"] == [[0, 36]]'
expect_json '[e["args"]["notation"] for e in j["traceEvents"] if e["ph"] == "X" and e["pid"] == 0 and e["cat"] == "redistribute"] == ["S(0)->R[dp]", "S(0)->S(1)[dp]"]'
expect_json 'j["metadata"]["world"] == 2'

# A real run: fsdp_tp on a 2x4 mesh (8 ranks). Every collective call of a group of n ranks has
# n - 1 flows from its lowest rank.
"$BIN" run "$ROOT/samples/fsdp_tp.json" --trace "$TMP/fsdp" >/dev/null || fail "run fsdp_tp"
run_ok export --format chrome "$TMP/fsdp" -o "$TMP/fsdp.json"
validate "$TMP/fsdp.json" 8
run show "$TMP/fsdp" --json
CALLS=$("$PYTHON" -c 'import json,sys; print(sum(c["calls"] for r in json.load(sys.stdin)["redistributes"] for c in r["collectives"]))' <<<"$OUT" 2>/dev/null || echo "?")
CHECKS=$((CHECKS + 1))
case "$COUNTS" in
  *"\"X:collective\": $CALLS,"*) ;;
  *) fail "fsdp export: $CALLS collective calls in show, export counts $COUNTS" ;;
esac

# Bad input.
expect_refused "no such trace" -- export --format chrome "$TMP/nowhere" -o "$TMP/x.json"
expect_refused "--format" "'svg'" -- export --format svg "$TMP/fsdp" -o "$TMP/x.json"
run export --format chrome "$TMP/fsdp"
expect_rc 2
run export --format chrome "$TMP/fsdp" -o "$TMP"
expect_rc 2

finish
