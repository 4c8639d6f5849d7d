#!/usr/bin/env bash
# The torch 2.x (pip) build and the part of the suite that has been run on it (docs/gpu.md,
# "PyTorch 2.x from pip"): makes or reuses the venv (ci/torch2-venv.sh), configures BUILD_DIR
# against its torch (-DDISTMETRICS_TORCH=pip), builds the subset's targets, runs the subset's
# ctest tests, then checks the CLI: `distmetrics --version` names the torch it was built against,
# and `conform --python` of examples/python and one real torchmetrics metric at world sizes 1 and 2;
# --peers: then the whole peer run on this build (ci/run_peers.sh --torch2: the current releases of
# torchmetrics, Ignite and torcheval, ws 1-4, compared with their expected findings; 30+ min).
# Not part of ci/test.sh or .ci/run (the lead decides); nothing here installs Debian packages
# (ci/install-deps.sh does).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

usage() {
  cat <<'EOF'
Usage: ci/test_torch2.sh [--build-dir DIR] [--jobs N] [--skip-venv] [--no-build] [--no-cli] [--full] [--ctest-regex RE] [--route-check] [--peers]
  --build-dir DIR    the 2.x build folder (default: $BUILD_DIR or build-torch2)
  --jobs N           build and ctest parallelism (default: $JOBS or the number of cores)
  --skip-venv        use the venv as it is (ci/torch2-venv.sh --path), install nothing
  --no-build         reuse the build as it is
  --no-cli           only the ctest subset, not the CLI checks
  --full             build the whole tree and run the whole ctest suite (not only the subset)
  --ctest-regex RE   the ctest tests to run (default: the subset run on 2.x so far, see below)
  --route-check      first build and run ci/torch2_gloo_route_check.cpp (the gloo route without
                     distmetrics, 2 ranks, Python started after and before the fork; ~4 min to compile)
  --peers            last, the peer run on this build: ci/run_peers.sh --torch2 (the current releases
                     of the real libraries, ws 1-4, their expected findings and repros; docs/peers.md)
  -h, --help         this text
Environment: DISTMETRICS_TORCH2_VENV (the venv's folder), NICE (default 19: the build machines are shared).
The default subset: the runtime's suites (comm_tests: every collective on gloo and mpi at world
sizes 1 to 4; the pool store; the rank pool, its gloo warm-up included), the CLI's version and
conform --python. Exit: 0 all passed, 1 a test or check failed, 5 the venv, configure or build
failed.
EOF
}

build_dir=${BUILD_DIR:-build-torch2}
jobs=${JOBS:-$(nproc)}
skip_venv=0 build=1 cli=1 route_check=0 full=0 peers=0
ctest_regex='Collectives|SingleProcessComm|PoolStore|RankPool'
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --build-dir) [ $# -ge 2 ] || { echo "ci/test_torch2.sh: --build-dir needs a value" >&2; exit 2; }; build_dir=$2; shift ;;
    --jobs) [ $# -ge 2 ] || { echo "ci/test_torch2.sh: --jobs needs a value" >&2; exit 2; }; jobs=$2; shift ;;
    --ctest-regex) [ $# -ge 2 ] || { echo "ci/test_torch2.sh: --ctest-regex needs a value" >&2; exit 2; }; ctest_regex=$2; shift ;;
    --skip-venv) skip_venv=1 ;;
    --no-build) build=0 ;;
    --no-cli) cli=0 ;;
    --route-check) route_check=1 ;;
    --full) full=1 ;;
    --peers) peers=1 ;;
    *) echo "ci/test_torch2.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
cd "$root"
nice=(nice -n "${NICE:-19}")
started=$(date +%s)
say() { echo "[test_torch2 $(( $(date +%s) - started ))s] $*"; }

if [ "$skip_venv" = 1 ]; then
  python=$(bash ci/torch2-venv.sh --path) || { echo "ci/test_torch2.sh: the venv is not ready: run ci/torch2-venv.sh" >&2; exit 5; }
else
  python=$(bash ci/torch2-venv.sh | tail -n 1) || exit 5
fi
torch_version=$("$python" -c 'import torch; print(torch.__version__.split("+")[0])') || exit 5
say "venv: $python (torch $torch_version)"

if [ "$route_check" = 1 ]; then
  read -r torch_dir py_include py_lib < <("$python" -c 'import os, sysconfig, torch; print(os.path.dirname(torch.__file__), sysconfig.get_paths()["include"], sysconfig.get_config_var("LDLIBRARY")[3:].split(".so")[0])')
  mkdir -p "$build_dir"
  "${nice[@]}" g++ -std=c++20 -O1 -DPYEXE="\"$python\"" -isystem "$torch_dir/include" \
    -isystem "$torch_dir/include/torch/csrc/api/include" -isystem "$py_include" ci/torch2_gloo_route_check.cpp \
    -o "$build_dir/torch2_gloo_route_check" -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" \
    -ltorch_python -ltorch -ltorch_cpu -lc10 -l"$py_lib" || exit 5
  for parent_py in "" 1; do
    ROUTE_PARENT_PY=$parent_py timeout 120 "$build_dir/torch2_gloo_route_check" || { echo "ci/test_torch2.sh: the gloo route check failed" >&2; exit 1; }
  done
  say "gloo route check: passed"
fi

if [ "$build" = 1 ]; then
  "${nice[@]}" cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DDISTMETRICS_TORCH=pip -DDISTMETRICS_PYTHON="$python" || exit 5
  say "configured"
  targets=(comm_tests launch_tests)
  [ "$cli" = 1 ] && targets+=(distmetrics example_regression_metrics)
  [ "$peers" = 1 ] && targets+=(distmetrics)
  [ "$full" = 1 ] && targets=(all)
  "${nice[@]}" cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}" || exit 5
  say "built: ${targets[*]}"
fi

status=0
if [ "$full" = 1 ]; then
  "${nice[@]}" ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" || status=1
  say "ctest (the whole suite): $([ $status = 0 ] && echo passed || echo FAILED)"
else
  "${nice[@]}" ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" -R "$ctest_regex" || status=1
  say "ctest -R '$ctest_regex': $([ $status = 0 ] && echo passed || echo FAILED)"
fi

if [ "$cli" = 1 ]; then
  cli_bin=$build_dir/bin/distmetrics
  version=$("$cli_bin" --version)
  echo "$version"
  if [[ $version != *"LibTorch $torch_version"* ]]; then
    echo "ci/test_torch2.sh: '$cli_bin --version' does not name LibTorch $torch_version" >&2
    status=1
  fi
  # The Python metrics are run by the embedded interpreter, which starts as the venv's python.
  for source in examples/python/correct_torchmetrics.py examples/python/correct_ignite.py \
                examples/python/correct_torcheval.py; do
    "${nice[@]}" "$cli_bin" conform --python "$source" --backend gloo --world-sizes 1,2 --quiet || status=1
    say "conform --python $source: $([ $status = 0 ] && echo passed || echo FAILED)"
  done
  "${nice[@]}" "$cli_bin" conform --python peers/torchmetrics/metrics.py --metric MeanAbsoluteError \
    --backend gloo --world-sizes 1,2 --quiet || status=1
  say "conform --python peers/torchmetrics/metrics.py --metric MeanAbsoluteError: $([ $status = 0 ] && echo passed || echo FAILED)"
fi
if [ "$peers" = 1 ]; then
  # The venv and the build are this script's; the peer run compares each library's findings with
  # the entries of its release (peers/expected.py).
  DISTMETRICS_TORCH2_VENV=$(dirname "$(dirname "$python")") "${nice[@]}" bash ci/run_peers.sh --torch2 --skip-deps \
    --no-build --build-dir "$build_dir" || status=1
  say "peer run (ci/run_peers.sh --torch2): $([ $status = 0 ] && echo passed || echo FAILED)"
fi
say "done: exit $status"
exit "$status"
