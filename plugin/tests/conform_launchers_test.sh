#!/usr/bin/env bash
# `distmetrics conform` under external launchers, as `run` (harness/tests/engine_launchers_test.sh):
# started by mpirun (launcher mpi, detected) and by torchrun-style variables (--launcher env).
# Every process is a rank and loads the plugin; the variants of the launcher's world size run;
# rank 0 alone prints, writes the report and carries the exit code.
# With a misbehaving plugin and its scenarios: under mpirun a rank that segfaults is a crash
# report blamed on it (exit 4, not mpirun's 139), and a rank that never returns a hang (exit 3)
# within a bound, rank 0 reporting both.
# With the verdict test plugin and its scenarios: under mpirun, on gloo and on mpi, a rank that
# issues an extra barrier at world size 2 (an even split) is blamed by the single-process run.
#   conform_launchers_test.sh BIN PLUGIN SCENARIO_DIR [MISBEHAVING_PLUGIN MISBEHAVING_SCENARIO_DIR
#                             [VERDICT_PLUGIN VERDICT_SCENARIO_DIR]]
set -euo pipefail
bin=$1 plugin=$2 scenarios=$3 misbehaving=${4:-} misbehaving_scenarios=${5:-} verdict=${6:-} verdict_scenarios=${7:-}
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
  if [ -n "$misbehaving" ]; then
    for case in "RootMeanSquaredError rmse_segfaults_on_rank1 4 crash" "R2Score r2_hangs_on_rank0 3 hang"; do
      read -r metric file code kind <<< "$case"
      rc=0
      timeout 120 mpirun --oversubscribe -np 2 "$bin" conform --plugin "$misbehaving" --metric "$metric" \
        "$misbehaving_scenarios/$file.toml" --json "$tmp/$file.json" > "$tmp/$file.out" 2>&1 || rc=$?
      [ "$rc" = "$code" ] || { cat "$tmp/$file.out"; fail "mpirun, $file: exit $rc, expected the runner's $code"; }
      [ "$(summary "$tmp/$file.json" "$kind")" = 1 ] || { cat "$tmp/$file.out"; fail "mpirun, $file: no $kind in the report"; }
    done
    grep -q 'rank 1 to blame: rank 1 crashed (killed by signal 11 (SIGSEGV))' "$tmp/rmse_segfaults_on_rank1.out" \
      || { cat "$tmp/rmse_segfaults_on_rank1.out"; fail "mpirun: the crash is not blamed on rank 1 with its signal"; }
    grep -q 'rank 0 to blame' "$tmp/r2_hangs_on_rank0.out" \
      || { cat "$tmp/r2_hangs_on_rank0.out"; fail "mpirun: the hang is not blamed on rank 0"; }
    # The same segfault on the mpi backend (the task runs in the rank's MPI agent), when built.
    mkdir "$tmp/mpi_backend"
    sed 's/^backends = .*/backends = ["mpi"]/' "$misbehaving_scenarios/rmse_segfaults_on_rank1.toml" \
      > "$tmp/mpi_backend/rmse_segfaults_on_rank1.toml"
    if "$bin" list "$tmp/mpi_backend" --world-sizes 2 | grep -q ':mpi-ws2'; then
      rc=0
      timeout 120 mpirun --oversubscribe -np 2 "$bin" conform --plugin "$misbehaving" --metric RootMeanSquaredError \
        "$tmp/mpi_backend/rmse_segfaults_on_rank1.toml" --json "$tmp/mpi_crash.json" > "$tmp/mpi_crash.out" 2>&1 || rc=$?
      [ "$rc" = 4 ] || { cat "$tmp/mpi_crash.out"; fail "mpirun, mpi backend segfault: exit $rc, expected the runner's 4"; }
      [ "$(summary "$tmp/mpi_crash.json" crash)" = 1 ] || { cat "$tmp/mpi_crash.out"; fail "mpirun, mpi backend: no crash in the report"; }
      grep -q 'rank 1 to blame: rank 1 crashed (killed by signal 11 (SIGSEGV))' "$tmp/mpi_crash.out" \
        || { cat "$tmp/mpi_crash.out"; fail "mpirun, mpi backend: the crash is not blamed on rank 1 with its signal"; }
      echo "mpi launcher, mpi backend crash: ok"
    fi
    # A rank past its --rank-memory (rank 1 asks for 64 GiB): memory_exceeded blamed on rank 1,
    # exit 6, in the gloo task's process and, when built, in the MPI agent. 8 GiB: a rank of a
    # CUDA LibTorch 2.x with torch.distributed imported has about 3 GiB of address space mapped.
    mkdir "$tmp/memory"
    sed -e 's/^name = .*/name = "PearsonCorrelation"/' "$misbehaving_scenarios/rmse_segfaults_on_rank1.toml" \
      > "$tmp/memory/allocates_on_rank1.toml"
    sed -e 's/^backends = .*/backends = ["mpi"]/' "$tmp/memory/allocates_on_rank1.toml" > "$tmp/memory/allocates_on_rank1_mpi.toml"
    for file in allocates_on_rank1 allocates_on_rank1_mpi; do
      "$bin" list "$tmp/memory/$file.toml" --world-sizes 2 | grep -q ':.*-ws2' || continue
      rc=0
      timeout 120 mpirun --oversubscribe -np 2 "$bin" conform --plugin "$misbehaving" --metric PearsonCorrelation \
        "$tmp/memory/$file.toml" --rank-memory 8 --json "$tmp/$file.json" > "$tmp/$file.out" 2>&1 || rc=$?
      [ "$rc" = 6 ] || { cat "$tmp/$file.out"; fail "mpirun, $file: exit $rc, expected 6 (memory_exceeded)"; }
      [ "$(summary "$tmp/$file.json" memory_exceeded)" = 1 ] || { cat "$tmp/$file.out"; fail "mpirun, $file: no memory_exceeded"; }
      grep -q 'rank 1 to blame: rank 1 went past its memory limit of 8.0 GiB' "$tmp/$file.out" \
        || { cat "$tmp/$file.out"; fail "mpirun, $file: the memory limit is not blamed on rank 1"; }
      echo "mpi launcher, $file: ok"
    done
    echo "mpi launcher, faults: ok"
  fi
  if [ -n "$verdict" ]; then
    for backend in gloo mpi; do
      "$bin" list "$verdict_scenarios/mse_extra_barrier_on_rank1.toml" --world-sizes 2 --backend "$backend" \
        | grep -q ":$backend-ws2" || continue
      rc=0
      timeout 120 mpirun --oversubscribe -np 2 "$bin" conform --plugin "$verdict" --metric MeanSquaredError \
        "$verdict_scenarios/mse_extra_barrier_on_rank1.toml" --backend "$backend" --json "$tmp/even_split_$backend.json" \
        > "$tmp/even_split_$backend.out" 2>&1 || rc=$?
      [ "$rc" = 3 ] || { cat "$tmp/even_split_$backend.out"; fail "mpirun, $backend even split: exit $rc, expected 3 (hang)"; }
      grep -q "rank 1 to blame: rank 1 deviated from the metric's sequence in compute 1 (script step 2): in the single-process run" \
        "$tmp/even_split_$backend.out" \
        || { cat "$tmp/even_split_$backend.out"; fail "mpirun, $backend: the even split is not blamed on rank 1 by the single-process run"; }
      echo "mpi launcher, $backend even split: ok"
    done
  fi
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
