#!/usr/bin/env bash
# The README's test command (CI runs it through .ci/run). Installs what is missing (Debian
# packages; the torch 2.x venv of ci/torch2-venv.sh and the peers venv of peers/venv.sh, both
# outside the clone and reused), then tests both LibTorch builds:
#
#  1. PyTorch 2.x from pip, the default build (BUILD_DIR, default build): everything built, every
#     test through ctest (GoogleTest suites, the pytest suite, the package and install tests), then
#     the whole peer run on the current releases of torchmetrics, Ignite and torcheval
#     (ci/run_peers.sh: their findings against peers/<library>/expected.toml) and the repros;
#  2. Debian's LibTorch 1.13, a smoke subset (BUILD_DIR_1_13, default build-torch1.13): what only
#     that build compiles (gloo.cpp's C++ Gloo with the kept transport, the Python metrics sharing
#     the variant's C++ Gloo group, pybind11 2.10), the runtime's and pyhost's tests, the whole
#     scenario library at world sizes 1, 2 and 4 (ci/run_cpu.sh's job), and the repros of the
#     releases that run on torch 1.13. `--full-1.13` builds and tests all of it there as well.
#
#   JOBS (default: number of cores)   CTEST_ARGS (extra ctest flags, both builds)
#   --only 2 | --only 1.13            one of the two builds
set -euo pipefail
cd "$(dirname "$0")/.."

only="" full_113=0
while [ $# -gt 0 ]; do
  case "$1" in
    --only) [ $# -ge 2 ] || { echo "ci/test.sh: --only needs 2 or 1.13" >&2; exit 2; }; only=$2; shift ;;
    --full-1.13) full_113=1 ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ci/test.sh: unknown argument '$1' (--only 2|1.13, --full-1.13, --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$only" in "" | 2 | 1.13) ;; *) echo "ci/test.sh: --only takes 2 or 1.13, not '$only'" >&2; exit 2 ;; esac

started=$(date +%s)
say() { echo "[test.sh $(( $(date +%s) - started ))s] $*"; }
jobs=${JOBS:-$(nproc)}
status=0
# What failed, repeated at the end: CI keeps only the tail of a long log.
failures=()
failed() { status=1; failures+=("$1"); }
peer_verdict() {  # what decided a failed peer run (log $1): its errors, unexpected and missing findings, summary
  grep -E '^\[run_peers\] error:|^  (unexpected|expected but not seen):|^\[run_peers\] (torchmetrics|ignite|torcheval|repros|peers|conform):' "$1" \
    | cut -c1-400 | tail -n 40 | sed 's/^/    /' || true
}
peer_run_logged() {  # peer_run_logged LOG ARGS...: ci/run_peers.sh ARGS, its output also kept in LOG
  local log=$1
  shift
  mkdir -p "$(dirname "$log")"
  bash ci/run_peers.sh "$@" 2>&1 | tee "$log"
}
failed_tests() {  # the ctest names that failed in build folder $1, one line
  local log="$1/Testing/Temporary/LastTestsFailed.log"
  [ -s "$log" ] && cut -d: -f2- "$log" | tr '\n' ' '
}

bash ci/install-deps.sh
say "Debian packages ready"

if [ "$only" != 1.13 ]; then
  # 1. torch 2.x (pip): the whole suite. The venv is outside the clone and reused while
  # ci/requirements-torch2.txt is unchanged (a cold one is a ~3 GB download).
  python=$(bash ci/torch2-venv.sh | tail -n 1)
  say "torch 2.x venv: $python"
  build_dir=${BUILD_DIR:-build}
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDISTMETRICS_TORCH=pip "-DDISTMETRICS_PYTHON=$python"
  cmake --build "$build_dir" -j "$jobs"
  say "torch 2.x: built"
  # The multi-host tests (ctest launch_multihost, label multihost) need network namespaces (root,
  # iproute2); where this machine has none the test skips itself, and here is why.
  if why=$(bash ci/hosts.sh check); then echo "test.sh: multi-host tests run (network namespaces work here)"
  else echo "test.sh: multi-host tests skipped: $why"; fi
  # shellcheck disable=SC2086
  if ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" ${CTEST_ARGS:-}; then
    say "torch 2.x: ctest passed"
  else
    failed "torch 2.x ctest: $(failed_tests "$build_dir")"
    say "torch 2.x: ctest FAILED"
  fi
  # The real libraries' current releases: the whole peer run (every mapped class over the scenario
  # library at world sizes 1-4), its findings against peers/<library>/expected.toml, then the
  # reproductions of peers/repro/ (torch.distributed and each library alone): each must still
  # show its bug. Its log is kept (reports/run_peers.log) and its verdict lines repeated at the end.
  peer_log=$build_dir/reports/run_peers.log
  if peer_run_logged "$peer_log" --skip-deps --no-build --build-dir "$build_dir"; then
    say "torch 2.x: peer run passed"
  else
    failed "torch 2.x peer run:
$(peer_verdict "$peer_log")"
    say "torch 2.x: peer run FAILED"
  fi
fi

if [ "$only" != 2 ]; then
  # 2. torch 1.13 (Debian's LibTorch): a smoke subset, or everything with --full-1.13.
  build_dir=${BUILD_DIR_1_13:-build-torch1.13}
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
  smoke_status=0
  if [ "$full_113" = 1 ]; then
    cmake --build "$build_dir" -j "$jobs"
    # shellcheck disable=SC2086
    ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" ${CTEST_ARGS:-} \
      || { smoke_status=1; failed "torch 1.13 ctest: $(failed_tests "$build_dir")"; }
    peer_run_logged "$build_dir/reports/run_peers.log" --torch 1.13 --skip-deps --no-build --build-dir "$build_dir" \
      || { smoke_status=1; failed "torch 1.13 peer run:
$(peer_verdict "$build_dir/reports/run_peers.log")"; }
  else
    # The CLI, the runtime's collectives and rank pool (gloo.cpp and its kept transport, the
    # zygote) and the Python metrics on Debian's torch (the variant's C++ Gloo group shared with
    # torch.distributed, pybind11 2.10); the benchmarks are built on this build only.
    cmake --build "$build_dir" -j "$jobs" --target distmetrics comm_tests launch_tests distmetrics_bench
    say "torch 1.13: built the smoke targets"
    # shellcheck disable=SC2086
    ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" ${CTEST_ARGS:-} \
      -R '^(Collectives|SingleProcessComm|CollectivesOnCuda|RankPool|WorkerZygote|Backends/RankPoolTest|PoolStore|pyhost_python|pyhost_conform|bench_quick|torch_version)' \
      || { smoke_status=1; failed "torch 1.13 smoke ctest: $(failed_tests "$build_dir")"; }
    "$build_dir/bin/distmetrics" run scenarios --backend gloo --world-sizes 1,2,4 --quiet \
      --json "$build_dir/reports/cpu.json" || { smoke_status=1; failed "torch 1.13 scenario library run"; }
    peer_run_logged "$build_dir/reports/run_peers.log" --torch 1.13 --repros-only --skip-deps --build-dir "$build_dir" \
      || { smoke_status=1; failed "torch 1.13 repros:
$(peer_verdict "$build_dir/reports/run_peers.log")"; }
  fi
  say "torch 1.13 ($([ "$full_113" = 1 ] && echo everything || echo smoke subset)): $([ $smoke_status = 0 ] && echo passed || echo FAILED)"
fi
for what in "${failures[@]}"; do say "failed: $what"; done
say "done: exit $status"
exit "$status"
