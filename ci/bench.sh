#!/usr/bin/env bash
# The benchmarks: builds distmetrics_bench and the CLI, runs every benchmark once, and prints ONE
# table of ratios, each measured side by side in the same run (absolute times on a shared
# machine are noise; the ratios are the result). docs/performance.md explains every row. They
# make raw C++ Gloo groups, so they are built on Debian's LibTorch 1.13 (build-torch1.13), whose
# gloo headers match its gloo; the Python metric's row is also measured on the default torch 2.x
# build (build) when that is built, and the start-up table puts both builds side by side; then a
# small peer subset's phase table (peers/phases.py: where a Python variant's time goes).
#   Usage: ci/bench.sh [--quick] [--json FILE] [--build-dir DIR] [--no-build] [--explore] [--torch2-build-dir DIR] [-- benchmark flags]
#   --explore   also ci/bench_explore.sh: `distmetrics explore` on every example (opt-in, ~20 min)
#   --build-dir DIR         the torch 1.13 build (default build-torch1.13)
#   --torch2-build-dir DIR  a torch 2.x (pip) build (default build, when its CLI and example plugin
#               are built, as ci/test.sh builds them): the Python metric's per-variant cost there beside 1.13's
#   --quick     tiny sizes, one repetition, no whole-library run, no peer run (~30 s): checks that every
#               benchmark works (CI, ctest bench_quick); its numbers mean nothing
#   --json FILE the table as JSON (rows with value, baseline, ratio, bar, meets); the start-up table
#               (both builds side by side, bench/startup.py) is in BUILD_DIR/bench/startup.json
#   Google Benchmark's own output (with every counter) is kept in BUILD_DIR/bench/last.json.
# Exit 0 when every benchmark ran; 1 when one failed; 5 when the build failed. Bars are printed,
# never enforced.
set -euo pipefail
DM_JOB=bench  # read by ci/lib.sh
# shellcheck source=ci/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$DM_ROOT"

quick=0 json="" build_dir=${BUILD_DIR:-$(dm_torch_build_dir 1.13)} build=1 extra=() explore=0 torch2_dir=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --json) json=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --no-build) build=0 ;;
    --explore) explore=1 ;;  # also ci/bench_explore.sh (opt-in: ~20 min)
    --torch2-build-dir) torch2_dir=$2; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) dm_fail "unknown argument '$1' (see --help)"; exit 2 ;;
  esac
  shift
done

if [ "$build" = 1 ]; then
  dm_build "$build_dir" distmetrics_bench -DDISTMETRICS_BUILD_BENCHMARKS=ON >&2 || exit "$DM_EXIT_SETUP"
  # The C++ plugin the Python-metric row compares with (no-op when the build has no pyhost).
  if grep -q '^DISTMETRICS_PYTHON:' "$build_dir/CMakeCache.txt" 2>/dev/null; then
    dm_run cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" --target example_regression_metrics >&2 || exit "$DM_EXIT_SETUP"
  fi
fi
bench=$build_dir/bench/distmetrics_bench
[ -x "$bench" ] || { dm_fail "$bench is not built (configure with -DDISTMETRICS_BUILD_BENCHMARKS=ON)"; exit "$DM_EXIT_SETUP"; }
python=$(sed -n 's/^DISTMETRICS_PYTHON:FILEPATH=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
python=${python:-/usr/bin/python3}

raw=$build_dir/bench/last.json
flags=(--benchmark_out="$raw" --benchmark_out_format=json)
report_flags=()
if [ "$quick" = 1 ]; then
  export DISTMETRICS_BENCH_QUICK=1
  flags+=(--benchmark_filter='-cli/library' --benchmark_min_time=0.01)
  report_flags+=(--quick)
fi
[ -n "$json" ] && report_flags+=(--json "$json")

# The machine the numbers below were taken on (bench/machine.py): its wake-ups and plain CPU.
"$python" "$DM_ROOT/bench/machine.py" || { dm_fail "bench/machine.py failed"; exit 1; }
# Google Benchmark's console output goes to stderr's log; the table is what this prints.
log=$build_dir/bench/last.log
if ! "$bench" "${flags[@]}" "${extra[@]}" >"$log" 2>&1; then
  dm_fail "distmetrics_bench failed; its output:"
  tail -n 40 "$log" >&2
  exit 1
fi
# The Python-side rows (they run the CLI): a Python metric against the C++ plugin per variant, and
# pytest against the CLI on the scenario library (in --quick mode one repetition on one scenario
# file). Each writes a JSON file report.py reads; one that cannot run says why and is left out.
plugin=$build_dir/plugin/tests/libexample_regression_metrics.so
python_json=$build_dir/bench/python_overhead.json pytest_json=$build_dir/bench/pytest_vs_cli.json
rm -f "$python_json" "$pytest_json"
if [ -f "$plugin" ]; then
  repeat=5; [ "$quick" = 1 ] && repeat=1
  if ! "$python" "$DM_ROOT/bench/python_overhead.py" --bin "$build_dir/bin/distmetrics" --plugin "$plugin" \
       --repeat "$repeat" --json "$python_json" >>"$log" 2>&1; then
    dm_fail "bench/python_overhead.py failed; its output:"; tail -n 20 "$log" >&2; exit 1
  fi
  report_flags+=(--python-json "$python_json")
else
  echo "(no Python-metric row: $plugin is not built, or the build has no pyhost)" >&2
fi
# The same Python metric on the torch 2.x (pip) build (it has no distmetrics_bench: the benchmarks make
# raw C++ Gloo groups), beside this build's row. Not built here: ci/test.sh (or ci/run_cpu.sh) builds it.
torch2_json=$build_dir/bench/python_overhead_torch2.json
rm -f "$torch2_json"
default_torch2=$(dm_torch_build_dir 2)
if [ -z "$torch2_dir" ] && [ "$quick" != 1 ] && [ -x "$default_torch2/bin/distmetrics" ] &&
   grep -q '^DISTMETRICS_TORCH:STRING=pip' "$default_torch2/CMakeCache.txt" 2>/dev/null; then torch2_dir=$default_torch2; fi
if [ -n "$torch2_dir" ] && [ -f "$python_json" ]; then
  torch2_plugin=$torch2_dir/plugin/tests/libexample_regression_metrics.so
  torch2_python=$(sed -n 's/^DISTMETRICS_PYTHON:FILEPATH=//p' "$torch2_dir/CMakeCache.txt" 2>/dev/null || true)
  if [ -x "$torch2_dir/bin/distmetrics" ] && [ -f "$torch2_plugin" ] && [ -n "$torch2_python" ]; then
    repeat=3; [ "$quick" = 1 ] && repeat=1
    if ! "$torch2_python" "$DM_ROOT/bench/python_overhead.py" --bin "$torch2_dir/bin/distmetrics" --plugin "$torch2_plugin" \
         --repeat "$repeat" --no-sources --json "$torch2_json" >>"$log" 2>&1; then
      dm_fail "bench/python_overhead.py on $torch2_dir failed; its output:"; tail -n 20 "$log" >&2; exit 1
    fi
    report_flags+=(--python-json-torch2 "$torch2_json")
  else
    echo "(no torch 2.x row: $torch2_dir/bin/distmetrics or $torch2_plugin is not built; ci/test.sh builds them)" >&2
  fi
fi
pytest_paths=(scenarios); pytest_ws=1,2
[ "$quick" = 1 ] && pytest_paths=(scenarios/core/mean_absolute_error.toml) && pytest_ws=2
pytest_repeat=3; [ "$quick" = 1 ] && pytest_repeat=1
if ! "$python" "$DM_ROOT/tools/bench_pytest_vs_cli.py" --bin "$build_dir/bin/distmetrics" --world-sizes "$pytest_ws" \
     --repeat "$pytest_repeat" --json "$pytest_json" "${pytest_paths[@]}" >>"$log" 2>&1; then
  dm_fail "tools/bench_pytest_vs_cli.py failed; its output:"; tail -n 20 "$log" >&2; exit 1
fi
report_flags+=(--pytest-json "$pytest_json")

"$python" "$DM_ROOT/bench/report.py" "$raw" "${report_flags[@]}"

# Start-up of both builds side by side (bench/startup.py): `--version`, `list`, one trivial ws2
# variant's run over the variant's own cost, and 40 trivial variants in one run against
# spawn-per-test with each build's own torch (issue 36's bars). The torch 2.x build is the one the
# Python-metric row used, or the default build folder when it holds a pip build's CLI.
startup_builds=(--build "torch 1.13=$build_dir")
startup_torch2=$torch2_dir
if [ -z "$startup_torch2" ] && [ -x "$default_torch2/bin/distmetrics" ] &&
   grep -q '^DISTMETRICS_TORCH:STRING=pip' "$default_torch2/CMakeCache.txt" 2>/dev/null; then startup_torch2=$default_torch2; fi
[ -n "$startup_torch2" ] && [ -x "$startup_torch2/bin/distmetrics" ] && startup_builds+=(--build "torch 2.x=$startup_torch2")
rounds=5; [ "$quick" = 1 ] && rounds=1
echo
if ! "$python" "$DM_ROOT/bench/startup.py" "${startup_builds[@]}" --rounds "$rounds" --json "$build_dir/bench/startup.json" \
     2>>"$log"; then
  dm_fail "bench/startup.py failed; see $log"; exit 1
fi

# Where a Python variant's time goes (peers/phases.py; docs/performance.md): a small peer subset
# (classes that pass, hang and crash, every library, world sizes 1-4) on the torch 2.x build when
# there is one (the peer run's own), else on this one; its phase table. Left out with --quick.
if [ "$quick" != 1 ]; then
  phases_build=${startup_torch2:-$build_dir}
  phases_torch=2; [ "$phases_build" = "$build_dir" ] && phases_torch=1.13
  phases_dir=$build_dir/bench/peer-phases
  REPORTS_DIR=$phases_dir bash "$DM_ROOT/ci/run_peers.sh" --torch "$phases_torch" --skip-deps --skip-repros --no-build \
    --build-dir "$phases_build" -- --filter 'core/accuracy_binary:*' --filter 'core/precision_macro:*' \
    --filter 'core/roc_auc_compute_every:*' --filter 'regression/torchmetrics_813*' >"$build_dir/bench/peer-phases.log" 2>&1 || true
  echo
  # phases.py reads the runner's tables (outcomes, how a source is spelled) from this build's runner.
  case $phases_build in /*) phases_bin=$phases_build/bin/distmetrics ;; *) phases_bin=$DM_ROOT/$phases_build/bin/distmetrics ;; esac
  DISTMETRICS_BIN=$phases_bin /usr/bin/python3 "$DM_ROOT/peers/phases.py" --report "$phases_dir/peers.json" ||
    echo "(no phase table: the peer subset wrote no report; see $build_dir/bench/peer-phases.log)"
fi

# The peer run (ci/run_peers.sh: torchmetrics, Ignite and torcheval in one conform, world sizes
# 1-4, no repros): its wall time and variants per second. Left out with --quick. Its findings
# are ci/run_peers.sh's to judge; here only the time counts.
if [ "$quick" != 1 ]; then
  peers_dir=$build_dir/bench/peers
  start=$SECONDS
  REPORTS_DIR=$peers_dir bash "$DM_ROOT/ci/run_peers.sh" --torch 1.13 --skip-deps --skip-repros --build-dir "$build_dir" \
    >"$build_dir/bench/peers.log" 2>&1 || true
  if [ -s "$peers_dir/peers.json" ]; then
    "$python" -c 'import json, sys
r = json.load(open(sys.argv[1])); n = len(r["variants"]); t = float(sys.argv[2])
print(f"peer run (ci/run_peers.sh, 3 libraries, ws 1-4): {n} variants in {t:.0f} s wall time, "
      f"{n / max(t, 1e-9):.2f} variants/s (bar: <= 300 s on 2 cores)")' "$peers_dir/peers.json" "$((SECONDS - start))"
  else
    echo "(no peer-run row: ci/run_peers.sh wrote no report; see $build_dir/bench/peers.log)"
  fi
fi

# `distmetrics explore` on the examples (opt-in, not timed tests): ci/bench_explore.sh.
if [ "$explore" = 1 ]; then
  bash "$DM_ROOT/ci/bench_explore.sh" --build-dir "$build_dir" || true  # its bars printed, never enforced
fi
