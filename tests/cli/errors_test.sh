#!/usr/bin/env bash
# Bad input: exit 2 and exactly one stderr line `shardscope: ...` naming the flag and the token.
source "$(dirname "$0")/lib.sh" "$@"

P=(plan --mesh 2x2 --shape 8x8 --from 'S(0),R' --to 'R,S(1)')

# Bad mesh.
expect_refused '--mesh' "'a'" -- plan --mesh 2xa --shape 8x8 --from 'S(0),R' --to 'R,R'
expect_refused '--mesh' '2x0' -- plan --mesh 2x0 --shape 8x8 --from 'S(0),R' --to 'R,R'
expect_refused '--mesh' -- plan --mesh 2x-2 --shape 8x8 --from 'S(0),R' --to 'R,R'
expect_refused '--mesh-names' "'dp'" -- plan --mesh 2x2 --mesh-names dp --shape 8x8 --from 'S(0),R' --to 'R,R'
expect_refused '--mesh-names' "'dp'" -- plan --mesh 2x2 --mesh-names dp,dp --shape 8x8 --from 'S(0),R' --to 'R,R'
expect_refused '--flatten' "'7'" -- plan --mesh 2x2 --flatten '0,7' --shape 8x8 --from 'S(0),R' --to 'R,R'
expect_refused '--flatten' -- plan --mesh 2x2 --flatten '0' --shape 8x8 --from 'S(0),R' --to 'R,R'

# Bad shape (zero extents are fine, negative or non-numeric are not; overflow is caught).
expect_refused '--shape' -- plan --mesh 2x2 --shape 8x-1 --from 'S(0),R' --to 'R,R'
expect_refused '--shape' "'q'" -- plan --mesh 2x2 --shape 8xq --from 'S(0),R' --to 'R,R'
expect_refused '4294967296' -- plan --mesh 2x2 --shape 4294967296x4294967296x4 --from 'S(0),R' --to 'R,R'
run_ok plan --mesh 2x2 --shape 0x8 --from 'S(0),R' --to 'R,R'
# Extents above 2^48 (layouts' and traces' limit) are named, not overflowed.
expect_refused '--shape' 'above 2^48 = 281474976710656' -- plan --mesh 2 --shape 9223372036854775807 --from 'S(0)' --to 'R'
run_ok plan --mesh 2 --shape 281474976710656 --from 'S(0)' --to 'R'

# Bad placement.
expect_refused '--from' "'Q'" -- plan --mesh 2x2 --shape 8x8 --from 'S(0),Q' --to 'R,R'
expect_refused '--to' 'S(x)' -- plan --mesh 2x2 --shape 8x8 --from 'S(0),R' --to 'R,S(x)'
expect_refused '--from' 'S(0,R' -- plan --mesh 2x2 --shape 8x8 --from 'S(0,R' --to 'R,R'
expect_refused '--from' 'mean' -- plan --mesh 2x2 --shape 8x8 --from 'P(mean),R' --to 'R,R'

# Dim out of range (the message from the issue, verbatim).
expect_refused "--from: 'S(3)' shards dim 3 but the tensor has 2 dims" -- plan --mesh 2x2 --shape 8x8 --from 'S(3),R' --to 'R,R'
expect_refused '--from' 'S(-3)' -- plan --mesh 2x2 --shape 8x8 --from 'S(-3),R' --to 'R,R'

# Placement count != mesh dims.
expect_refused '--from' 'S(0)' -- plan --mesh 2x2 --shape 8x8 --from 'S(0)' --to 'R,R'
expect_refused '--to' 'R,R,R' -- plan --mesh 2x2 --shape 8x8 --from 'R,R' --to 'R,R,R'

# Unsupported transitions (PyTorch raises too): S -> P, P(a) -> P(b), mixed Partial ops.
expect_refused '--to' 'S(0)' 'P(sum)' -- plan --mesh 2x2 --shape 8x8 --from 'S(0),R' --to 'P,R'
expect_refused '--to' 'P(max)' 'P(sum)' -- plan --mesh 2x2 --shape 8x8 --from 'P(max),R' --to 'P(sum),R'
expect_refused '--from' 'P(max)' -- plan --mesh 2x2 --shape 8x8 --from 'P(sum),P(max)' --to 'R,R'

# Bad order.
expect_refused '--src-order' -- plan --mesh 2x2 --shape 8x8 --from 'S(0),S(0)' --src-order '0:5' --to 'R,R'
expect_refused '--dst-order' -- plan --mesh 2x2 --shape 8x8 --from 'S(0),S(0)' --to 'S(0),S(0)' --dst-order '0:1'
expect_refused '--src-order' 'x:1,0' -- plan --mesh 2x2 --shape 8x8 --from 'S(0),S(0)' --src-order 'x:1,0' --to 'R,R'
expect_refused '--src-order' -- plan --mesh 2x2 --shape 8x8 --from 'S(0),S(0)' --src-order '0:1,0;4:1' --to 'R,R'
expect_refused '--order' -- layout --mesh 2x2 --shape 8x8 --placements 'S(0),S(1)' --order '0:1;1:0'

# Bad values of the other options.
expect_refused '--dtype' "'f8'" -- "${P[@]}" --dtype f8
expect_refused '--chunking' "'numpy'" -- "${P[@]}" --chunking numpy
expect_refused '--planner' "'astar'" -- "${P[@]}" --planner astar
expect_refused '--rank' "'4'" -- "${P[@]}" --rank 4
expect_refused '--rank' -- "${P[@]}" --rank -1
expect_refused '--rank' 'abc' -- "${P[@]}" --rank abc
expect_refused '--devices-per-host' -- "${P[@]}" --devices-per-host 0

# Bad flag, missing required flag, stray argument (CLI11 errors: one line, exit 2).
expect_refused '--bogus' -- "${P[@]}" --bogus
expect_refused '--mesh' -- plan --shape 8x8 --from 'S(0),R' --to 'R,R'
expect_refused '--placements' -- layout --mesh 2x2 --shape 8x8
run bench
expect_rc 2
run bench nosuch
expect_rc 2

# Unknown command and no command: usage plus the error, exit 2.
run frobnicate --mesh 2
expect_rc 2
case "$ERR" in *"unknown command 'frobnicate'"*) ;; *) fail "unknown command not named: $ERR" ;; esac
case "$ERR" in *"plan"*"layout"*) ;; *) fail "unknown command: no usage: $ERR" ;; esac
run
expect_rc 2
case "$ERR" in *"missing command"*) ;; *) fail "no command: $ERR" ;; esac

# Layout errors name --placements.
expect_refused "--placements: 'S(1)' shards dim 1 but the tensor has 1 dims" -- layout --mesh 4 --shape 8 --placements 'S(1)'

# Help exits 0 for every command.
for cmd in "" plan layout bench "bench plan"; do
  # shellcheck disable=SC2086
  run $cmd --help
  expect_rc 0
  expect_out_contains 'Example'
done

# SHARDSCOPE_BLOCK_CACHE_MIB (the freed-block cache of tensor buffers): a bad value is named once
# on stderr and the default kept; the run itself succeeds. 0 (cache off) is valid and silent.
SHARDSCOPE_BLOCK_CACHE_MIB=lots run bench redistribute --sizes 1M --iterations 1
expect_rc 0
CHECKS=$((CHECKS + 1))
[ "$(grep -c "SHARDSCOPE_BLOCK_CACHE_MIB='lots' is not a whole number of MiB" <<<"$ERR")" -eq 1 ] ||
  fail "$CMD: stderr should name the bad SHARDSCOPE_BLOCK_CACHE_MIB once: $ERR"
SHARDSCOPE_BLOCK_CACHE_MIB=0 run bench redistribute --sizes 1M --iterations 1
expect_rc 0
CHECKS=$((CHECKS + 1))
[ -z "$ERR" ] || fail "$CMD: unexpected stderr: $ERR"

finish
