#!/usr/bin/env bash
# `shardscope bench comm|redistribute` on the local backend: the columns and tables each prints.
# Figures are timings and never checked; the traffic bounds are, from their definition
# (docs/local-backend.md): 1 for all_gather and all_to_all, 2n/(n+1) for reduce_scatter against
# a memcpy of the n x count bytes each rank sends, 2/(n+1) for an all_reduce in which every
# member reduces every element, and 1 for a split one (from 256 KiB per rank: each element is
# reduced once, n reads, and stored into the n outputs, n writes, like n memcpys of count bytes).
# n = 2: 1.33, 0.67, 1.00.
source "$(dirname "$0")/lib.sh" "$@"

run_ok bench comm --ranks 2 --sizes 64K,1M --iterations 2
expect_out_contains 'vs memcpy   bound  of bound'
row() { grep -E "^$1 +$2 " <<<"$OUT" | awk '{print $(NF-1)}'; }
check_bound() {
  CHECKS=$((CHECKS + 1))
  [ "$(row "$1" "$2")" = "$3" ] || fail "$CMD: bound of $1 at $2 is '$(row "$1" "$2")', expected $3"
}
check_bound all_gather '64 KiB' 1.00
check_bound all_to_all '1 MiB' 1.00
check_bound reduce_scatter '64 KiB' 1.33
check_bound all_reduce '64 KiB' 0.67
check_bound all_reduce '1 MiB' 1.00
expect_out_contains 'small messages (local): rank 0'"'"'s time per call, median and [p10, p90] over 100 calls'
for kind in barrier all_gather all_to_all all_reduce; do
  CHECKS=$((CHECKS + 1))
  grep -qE "^$kind +(-|256 B) +[0-9.]+ +\[[0-9.]+, [0-9.]+\]$" <<<"$OUT" || fail "$CMD: no latency row for $kind"
done

# The known-vs-negotiated table: a 256 B shard per rank (S(1)->S(2) of [2, 16, 2n]: 2 x 16 x 2
# f32 on each rank after the split of the last dim), then one row per --sizes value.
run_ok bench redistribute --ranks 2 --sizes 64K --iterations 2 --trace-groups 3
expect_out_contains 'known us'
# Each case's trace cost and capture, with their intervals, over blocks of --iterations.
for kind in 'S\(0\)->R all_gather' 'S\(1\)->S\(2\) all_to_all' 'P->S\(0\) reduce_scatter'; do
  CHECKS=$((CHECKS + 1))
  grep -qE "^$kind .* [+-][0-9.]+% \+-[0-9.]+ +[+-][0-9.]+% \+-[0-9.]+ +-?[0-9.]+ +2$" <<<"$OUT" ||
    fail "$CMD: no trace cost row for $kind"$'\n'"$OUT"
done
CHECKS=$((CHECKS + 1))
! grep -q 'A/A: tracing off' <<<"$OUT" || fail "$CMD: an A/A row without --calibrate"$'\n'"$OUT"
CHECKS=$((CHECKS + 1))
grep -qE '^256 B +100 +[0-9.]+ +\[[0-9.]+, [0-9.]+\] +[0-9.]+ +\[[0-9.]+, [0-9.]+\] +[0-9.]+x$' <<<"$OUT" ||
  fail "$CMD: no 256 B known-vs-negotiated row"$'\n'"$OUT"

# --calibrate: under each case, its A/A row (the same measurement with tracing off in the traced
# blocks), then its A/B row (tracing off, 250 ns of busy work per rank and redistribute instead):
# the same size, no 'vs memcpy', a cost and a capture with their intervals.
run_ok bench redistribute --ranks 2 --sizes 64K --iterations 2 --trace-groups 3 --calibrate
expect_out_contains "with --calibrate, an 'A/A' row"
expect_out_contains "and an 'A/B' row with tracing off and instead every rank busy for 250 ns"
for kind in 'S\(0\)->R all_gather +64 KiB' 'S\(1\)->S\(2\) all_to_all +60 KiB' 'P->S\(0\) reduce_scatter +64 KiB'; do
  row=" +${kind##* +} +[0-9.]+ +[0-9.]+ +[+-][0-9.]+% \+-[0-9.]+ +[+-][0-9.]+% \+-[0-9.]+ +-?[0-9.]+ +2$"
  CHECKS=$((CHECKS + 1))
  grep -A1 -E "^$kind " <<<"$OUT" | tail -n 1 | grep -qE "^  A/A: tracing off$row" ||
    fail "$CMD: no A/A row under $kind"$'\n'"$OUT"
  CHECKS=$((CHECKS + 1))
  grep -A2 -E "^$kind " <<<"$OUT" | tail -n 1 | grep -qE "^  A/B: \+250 ns work$row" ||
    fail "$CMD: no A/B row under the A/A row of $kind"$'\n'"$OUT"
done
CHECKS=$((CHECKS + 1))
[ "$(grep -c '^  A/[AB]: ' <<<"$OUT")" = 6 ] || fail "$CMD: not one A/A and one A/B row per case"$'\n'"$OUT"

finish
