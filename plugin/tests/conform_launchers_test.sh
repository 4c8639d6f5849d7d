#!/usr/bin/env bash
# `distmetrics conform` under external launchers, as `run` (harness/tests/engine_launchers_test.sh):
# started by mpirun (launcher mpi, detected) and by torchrun-style variables (--launcher env).
# Every process is a rank and loads the plugin; the variants of the launcher's world size run;
# rank 0 alone prints, writes the report and carries the exit code.
#   conform_launchers_test.sh BIN PLUGIN SCENARIO_DIR
set -euo pipefail
bin=$1 plugin=$2 scenarios=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "FAIL: $*"; exit 1; }
summary() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary'][sys.argv[2]])" "$1" "$2"; }
# How many variants the scenarios have at world size 2 on gloo, as `list` says.
expected=$("$bin" list "$scenarios" --world-sizes 2 --backend gloo | wc -l)
[ "$expected" -gt 0 ] || fail "no variant at world size 2 in $scenarios"

if command -v mpirun > /dev/null; then
  mpirun --oversubscribe -np 2 "$bin" conform --plugin "$plugin" "$scenarios" --backend gloo \
    --json "$tmp/mpi.json" > "$tmp/mpi.out" 2>&1 || { cat "$tmp/mpi.out"; fail "mpirun: exit $?"; }
  [ "$(summary "$tmp/mpi.json" pass)" = "$expected" ] && [ "$(summary "$tmp/mpi.json" total)" = "$expected" ] \
    || { cat "$tmp/mpi.out"; fail "mpirun: expected $expected passed variants"; }
  [ "$(grep -c '^distmetrics conform: plugin ' "$tmp/mpi.out")" = 1 ] || fail "mpirun: rank 0 alone must print"
  grep -q 'the launcher runs world size 2 only' "$tmp/mpi.out" || fail "mpirun: no note about the other world sizes"
  echo "mpi launcher: ok"
fi

port=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
pids=()
for rank in 0 1; do
  RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$bin" conform --plugin "$plugin" "$scenarios" --backend gloo --launcher env --json "$tmp/env$rank.json" \
    > "$tmp/env$rank.out" 2>&1 &
  pids+=($!)
done
codes=()
for pid in "${pids[@]}"; do
  rc=0
  wait "$pid" || rc=$?
  codes+=("$rc")
done
[ "${codes[*]}" = "0 0" ] || { cat "$tmp"/env*.out; fail "env: exit codes ${codes[*]}"; }
[ "$(summary "$tmp/env0.json" pass)" = "$expected" ] || { cat "$tmp/env0.out"; fail "env: expected $expected passed"; }
[ ! -e "$tmp/env1.json" ] && [ ! -s "$tmp/env1.out" ] || fail "env: rank 1 must neither print nor write reports"
echo "env launcher: ok"
