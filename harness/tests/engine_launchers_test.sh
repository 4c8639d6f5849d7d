#!/usr/bin/env bash
# `distmetrics run` under external launchers: started by mpirun (launcher mpi, detected from the
# environment) and by torchrun-style variables (launcher env). Every process is a rank; the
# variants of the launcher's world size run, each on a fresh process group; rank 0 alone reports
# and carries the exit code.
#   engine_launchers_test.sh BIN SCENARIO_DIR [PYTHON]
set -euo pipefail
bin=$1
scenarios=$2
python=${3:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "FAIL: $*"; exit 1; }
# summary FILE KEY: one number from a JSON report's summary.
summary() { "$python" -c "import json,sys; print(json.load(open(sys.argv[1]))['summary'][sys.argv[2]])" "$1" "$2"; }

# A scenario whose expected failure never happens: the run must fail (exit 1) through the launcher.
mkdir -p "$tmp/scenarios"
cat > "$tmp/scenarios/held.toml" <<'TOML'
description = "An expected failure of ranks_agree, which holds: the variant fails."
[metric]
name = "Average"
[data]
generator = "values"
seed = 1
num_samples = 20
batch_size = 3
[variants]
world_sizes = [2]
backends = ["gloo"]
[expect]
fail = ["ranks_agree"]
reason = "it never fails: this scenario checks exit codes"
TOML

if command -v mpirun > /dev/null; then
  # 2 ranks: the 4 shard policies x 2 backends of accuracy_binary at world size 2.
  mpirun --oversubscribe -np 2 "$bin" run "$scenarios/core/accuracy_binary.toml" --json "$tmp/mpi.json" \
    > "$tmp/mpi.out" 2>&1 || { cat "$tmp/mpi.out"; fail "mpirun: exit $?"; }
  [ "$(summary "$tmp/mpi.json" pass)" = 8 ] && [ "$(summary "$tmp/mpi.json" total)" = 8 ] \
    || { cat "$tmp/mpi.out"; fail "mpirun: expected 8 passed variants"; }
  [ "$(grep -c '^distmetrics: .* passed' "$tmp/mpi.out")" = 1 ] || fail "mpirun: rank 0 alone must print the summary"
  grep -q 'launcher mpi runs world size 2 only' "$tmp/mpi.out" || fail "mpirun: no note about the other world sizes"
  rc=0
  mpirun --oversubscribe -np 2 "$bin" run "$tmp/scenarios/held.toml" > "$tmp/held.out" 2>&1 || rc=$?
  [ "$rc" = 1 ] || { cat "$tmp/held.out"; fail "mpirun: a failed property must exit 1, got $rc"; }
  echo "mpi launcher: ok"
fi

# torchrun-style: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT.
port=$("$python" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
pids=()
for rank in 0 1; do
  RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$bin" run "$scenarios/core/psnr.toml" --backend gloo --launcher env --json "$tmp/env$rank.json" \
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
[ "$(summary "$tmp/env0.json" pass)" = 3 ] || { cat "$tmp/env0.out"; fail "env: expected 3 passed variants"; }
[ ! -e "$tmp/env1.json" ] && [ ! -s "$tmp/env1.out" ] || fail "env: rank 1 must neither print nor write reports"
echo "env launcher: ok"
