#!/usr/bin/env bash
# Programs (issue 7): every sample program runs and verifies against the global reference; the
# placements `run` prints per op are the ones the strategy rules give (derived by hand below);
# bad program files give one error line with file:line:col and exit 2.
source "$(dirname "$0")/lib.sh" "$@"

for prog in "$ROOT"/samples/programs/*.json; do
  name=$(basename "$prog" .json)
  run run "$prog" --verify --trace "$TMP/$name"
  expect_rc 0
  expect_out_lacks "NOT verified"
  # Its trace reads back: show prints the program, check finds the ranks consistent.
  run show "$TMP/$name"
  expect_rc 0
  expect_out_contains "program: "
  run check "$TMP/$name"
  expect_rc 0
  expect_out_contains "clean: "
done

# tp_mlp, by the rules of docs/program.md:
# linear(x R, w1 S(0)): w1 is [n,k] sharded on n, so the rhs-free strategy keeps it: h is S(1).
# linear(a S(1), w2 S(1)): both shard k, the contracting strategy: P(sum).
# add(P(sum), bias R): follows the partial, the bias becomes P(sum) locally (no collective).
# gelu(P(sum)): not linear, so its input is all_reduced to R first.
run_ok run "$ROOT/samples/programs/tp_mlp.json"
expect_out_contains "op linear(x, w1) -> h: S(1)"
expect_out_contains "op linear(a, w2) -> y_partial: P(sum)"
expect_out_contains "op add(y_partial, bias) -> y: P(sum)"
expect_out_contains "op gelu(y) -> y_act: R
      1 implicit redistribute; collectives: all_reducex1"
# domain_conv: the convs keep the spatial shards and exchange halos.
run run "$ROOT/samples/programs/domain_conv.json"
expect_out_contains "op conv(field, dim=1 kernel=[1,2,1]) -> smooth_h: S(1)S(2)
      0 implicit redistributes; collectives: halo_exchangex1"
# sp_layer_norm: outputs the mask leaves out are not printed; grad_w/grad_b are partial sums.
run run "$ROOT/samples/programs/sp_layer_norm.json"
expect_out_contains "-> grad_x: S(1)
"
expect_out_contains "-> grad_w: P(sum), grad_b: P(sum)"

# Bad programs: one line naming file:line:col and what is wrong, exit 2.
cat >"$TMP/bad_op.json" <<'JSON'
{"mesh": [2], "tensors": {"x": {"shape": [4, 4], "placements": ["R"]}},
 "steps": [{"op": "matmul", "inputs": ["x", "x"], "output": "y"}]}
JSON
expect_refused "bad_op.json:2:" "'matmul' is not an op" -- run "$TMP/bad_op.json"
cat >"$TMP/bad_shape.json" <<'JSON'
{"mesh": [2], "tensors": {"x": {"shape": [4, 3], "placements": ["R"]}},
 "steps": [{"op": "mm", "inputs": ["x", "x"], "output": "y"}]}
JSON
expect_refused "bad_shape.json:2:" "mm: inner dims differ" -- run "$TMP/bad_shape.json"
cat >"$TMP/bad_field.json" <<'JSON'
{"mesh": [2], "tensors": {"x": {"shape": [4, 3], "placements": ["R"]}},
 "steps": [{"op": "gelu", "inputs": ["x"], "output": "y", "dim": 0}]}
JSON
expect_refused "bad_field.json:2:" "field 'dim' does not apply to gelu" -- run "$TMP/bad_field.json"
cat >"$TMP/reuse.json" <<'JSON'
{"mesh": [2], "tensors": {"x": {"shape": [4, 3], "placements": ["R"]}},
 "steps": [{"op": "gelu", "inputs": ["x"], "output": "x"}]}
JSON
expect_refused "reuse.json:2:" "already exists" -- run "$TMP/reuse.json"
cat >"$TMP/unknown_input.json" <<'JSON'
{"mesh": [2], "tensors": {"x": {"shape": [4, 3], "placements": ["R"]}},
 "steps": [{"op": "gelu", "inputs": ["nope"], "output": "y"}]}
JSON
expect_refused "unknown_input.json:2:" "no tensor named 'nope'" -- run "$TMP/unknown_input.json"
# S->P is never an implicit step: add follows input 0's P(sum) on mesh dim 0, input 1 is S(0) there.
cat >"$TMP/s_to_p.json" <<'JSON'
{"mesh": [2, 2], "tensors": {"p": {"shape": [4], "placements": ["P(sum)", "S(0)"]},
                              "s": {"shape": [4], "placements": ["S(0)", "R"]}},
 "steps": [{"op": "add", "inputs": ["p", "s"], "output": "y"}]}
JSON
expect_refused "s_to_p.json:3:" "needs S->P" -- run "$TMP/s_to_p.json"
# Floating-point-only ops refuse integer tensors.
cat >"$TMP/int_softmax.json" <<'JSON'
{"mesh": [2], "tensors": {"x": {"shape": [4], "dtype": "i32", "placements": ["R"]}},
 "steps": [{"op": "softmax", "inputs": ["x"], "dim": 0, "output": "y"}]}
JSON
expect_refused "int_softmax.json:2:" "floating-point" -- run "$TMP/int_softmax.json"

finish
