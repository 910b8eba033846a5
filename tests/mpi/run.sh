#!/usr/bin/env bash
# MPI suite driver (ctest label `mpi`). Exit 77 (ctest: skipped) with a message when mpirun is
# missing.
#   run.sh property MPIEXEC TEST_EXE [CASES]   property subset + chunking + error consistency
#   run.sh large    MPIEXEC LARGE_EXE [ELEMENTS] a broadcast of more than 2^31 elements (np 2; skipped
#                                               when less than 16 GiB of memory is available)
#   run.sh samples  MPIEXEC SHARDSCOPE SRC_DIR  every sample and program: --backend mpi --verify --trace, then the
#                                               trace must equal the local backend's apart from timing
#   run.sh stuck    MPIEXEC SHARDSCOPE              a SIGSTOPped rank: the others name it after the
#                                               watchdog (2 s), and check does not call the trace clean
#                                               and blames the stopped rank alone
set -u
mode=$1
mpiexec=${2:-}
if [ -z "$mpiexec" ] || ! command -v "$mpiexec" >/dev/null 2>&1; then
  mpiexec=$(command -v mpirun || true)
fi
if [ -z "$mpiexec" ]; then
  echo "SKIP: mpirun not found; the MPI suite needs Open MPI's launcher (apt-get install openmpi-bin)"
  exit 77
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun_np() { "$mpiexec" -np "$1" --oversubscribe --allow-run-as-root "${@:2}"; }

case "$mode" in
  property)
    exe=$3
    cases=${4:-300}
    mpirun_np 4 "$exe" "$cases"
    ;;
  large)
    # Peak memory: about 10 GiB on rank 0 and 5 GiB on rank 1 (mpi_large_count_test.cpp).
    avail_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
    if [ "${avail_kib:-0}" -lt $((16 * 1024 * 1024)) ]; then
      echo "SKIP: the >2^31-element transfer needs 16 GiB of available memory; $((${avail_kib:-0} / 1024 / 1024)) GiB available"
      exit 77
    fi
    mpirun_np 2 "$3" "${4:-}"
    ;;
  samples)
    shardscope=$3
    src=$4
    here=$(cd "$(dirname "$0")" && pwd)
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    status=0
    for sample in "$src"/samples/*.json "$src"/samples/programs/*.json; do
      rel=${sample#"$src"/samples/}
      name=${rel%.json}
      name=${name//\//_}
      np=$(python3 -c 'import json,sys,math; print(math.prod(json.load(open(sys.argv[1]))["mesh"]))' "$sample")
      echo "== $name ($np ranks)"
      if ! mpirun_np "$np" "$shardscope" run "$sample" --backend mpi --verify --trace "$work/mpi-$name" \
          >"$work/$name.mpi.out" 2>&1; then
        echo "FAIL: mpi run of $name"; cat "$work/$name.mpi.out"; status=1; continue
      fi
      grep -E "^clock|^total" "$work/$name.mpi.out"
      if grep -q "NOT verified" "$work/$name.mpi.out"; then
        echo "FAIL: $name not verified"; status=1; continue
      fi
      if ! "$shardscope" run "$sample" --backend local --verify --trace "$work/local-$name" >"$work/$name.local.out" 2>&1; then
        echo "FAIL: local run of $name"; cat "$work/$name.local.out"; status=1; continue
      fi
      python3 "$here/compare_traces.py" "$work/local-$name" "$work/mpi-$name" || status=1
    done
    exit $status
    ;;
  stuck)
    shardscope=$3
    # TCP between the ranks: with shared memory a stopped process can stall a peer inside Open MPI's
    # own queues, where no watchdog sees it, and the trace would then point at that peer.
    export OMPI_MCA_btl=self,tcp
    work=$(mktemp -d)
    stopped=""
    trap '[ -n "$stopped" ] && kill -KILL "$stopped" 2>/dev/null; rm -rf "$work"' EXIT
    cat >"$work/loop.json" <<'JSON'
{"mesh": [4], "tensors": {"x": {"shape": [64, 8], "placements": ["S(0)"]}},
 "steps": [{"redistribute": "x", "to": ["R"]}, {"redistribute": "x", "to": ["S(0)"]}]}
JSON
    mpirun_np 4 "$shardscope" run "$work/loop.json" --backend mpi --timeout 2 --repeat 1000000 \
      --trace "$work/t" >"$work/out" 2>&1 &
    job=$!
    # Wait until rank 2 has written some redistributes (its group communicators exist), then stop it.
    for _ in $(seq 1 300); do
      [ -f "$work/t/rank-2.jsonl" ] && [ "$(wc -l <"$work/t/rank-2.jsonl")" -gt 50 ] && break
      sleep 0.1
    done
    stopped=$(head -1 "$work/t/rank-2.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
    kill -STOP "$stopped"
    for _ in $(seq 1 600); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$job" 2>/dev/null; then
      echo "FAIL: the job did not end within 60 s of rank 2 being stopped"; kill -KILL "$job"; exit 1
    fi
    wait "$job"
    rc=$?
    cat "$work/out"
    status=0
    [ "$rc" -ne 0 ] || { echo "FAIL: the job exited 0 with rank 2 stopped"; status=1; }
    grep -q "rank(s) 2 did not answer a roll call" "$work/out" || { echo "FAIL: the stopped rank 2 is not named"; status=1; }
    "$shardscope" check "$work/t" >"$work/check.out" 2>&1
    crc=$?
    cat "$work/check.out"
    [ "$crc" -eq 1 ] || { echo "FAIL: check exited $crc on the trace of a failed job (expected 1)"; status=1; }
    grep -q "^clean" "$work/check.out" && { echo "FAIL: check calls the failed job's trace clean"; status=1; }
    # Where the job first went wrong, only the stopped rank is to blame: its peers failed waiting for
    # it (or were killed inside it). Mismatches come in trace order; the first one names that place.
    # (Later ones may follow from the job's end: a resumed rank 2 going on alone, say.)
    first_id=$(grep "\[culprit: " "$work/check.out" | head -1 | grep -o "redistribute #[0-9]*" | head -1)
    if grep "$first_id[ )]" "$work/check.out" | grep -o "\[culprit: [^]]*\]" | grep -qv "^\[culprit: rank 2\]$"; then
      echo "FAIL: at $first_id, where the job first went wrong, check blames a rank other than the stopped rank 2"
      status=1
    fi
    exit $status
    ;;
  *)
    echo "usage: run.sh property|samples|large|stuck ..." >&2
    exit 2
    ;;
esac
