#!/usr/bin/env bash
# The engine's layer order (docs/architecture.md): core <- plan <- exec <- ops, with comm (the
# Communicator funnel and backends) on core alone, used by exec and ops. Every #include of an
# engine layer, public ("shardscope/engine/<layer>/...") or private ("<layer>/..."), in every
# source of a layer (engine/src/<layer>/ and engine/include/shardscope/engine/<layer>/, CUDA
# files included) must name that layer or one it may use. Reads sources only; the binary is unused.
source "$(dirname "$0")/lib.sh" "$@"

declare -A MAY_USE=(
  [core]="core"
  [plan]="core plan"
  [comm]="core comm"
  [exec]="core plan comm exec"
  [ops]="core plan comm exec ops"
)

for layer in core plan comm exec ops; do
  dirs=()
  for d in "$ROOT/engine/src/$layer" "$ROOT/engine/include/shardscope/engine/$layer"; do
    [ -d "$d" ] && dirs+=("$d")
  done
  CHECKS=$((CHECKS + 1))
  [ ${#dirs[@]} -gt 0 ] || { fail "engine layer '$layer' has no source directory"; continue; }
  while IFS= read -r hit; do
    [ -n "$hit" ] || continue
    used=$(printf '%s\n' "$hit" | sed -E 's/^[^:]*:[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]*\/)?(core|plan|comm|exec|ops)\/.*/\2/')
    CHECKS=$((CHECKS + 1))
    case " ${MAY_USE[$layer]} " in
      *" $used "*) ;;
      *) fail "${hit#"$ROOT"/}: the $layer layer includes a header of layer $used (it may use: ${MAY_USE[$layer]})" ;;
    esac
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]*/)?(core|plan|comm|exec|ops)/' \
             --include='*.hpp' --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' "${dirs[@]}")
done

finish
