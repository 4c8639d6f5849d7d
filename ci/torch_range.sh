#!/usr/bin/env bash
# The declared torch 2.x range, measured (issue 36; not run by CI: each version is a ~3 GB venv
# and a cold build). For each end of the range of cmake/DistmetricsTorchVersion.cmake, or each
# version given: makes or reuses a venv with that torch, builds the command and the collective
# tests in a build folder of its own, runs a smoke subset and prints one table row per version.
# docs/gpu.md ("The torch range") has what it measured.
set -euo pipefail
DM_JOB=torch_range  # read by ci/lib.sh
# shellcheck source=ci/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=ci/pinned_venv.sh
source "$DM_ROOT/ci/pinned_venv.sh"

usage() {
  cat <<'USAGE'
Usage: ci/torch_range.sh [options] [VERSION...]

Builds distmetrics against each torch 2.x VERSION (X.Y: the newest X.Y.* on PyPI, or X.Y.Z;
default: both ends of the range declared in cmake/DistmetricsTorchVersion.cmake) and runs a
smoke subset on it:
  venv       the torch's CUDA wheel from PyPI (it runs on the CPU too) with numpy 1.26.4, over
             Debian's python (--system-site-packages: pytest, scikit-learn), outside the clone in
             $DISTMETRICS_TORCH_RANGE_VENVS/torch-range-VERSION (default ~/.cache/distmetrics),
             made once and reused; then the peer libraries of ci/requirements-torch2.txt, each
             only if it installs against that torch. The version of ci/requirements-torch2.txt
             takes the venv of ci/torch2-venv.sh instead.
  build      the targets distmetrics and comm_tests, in BUILD_ROOTVERSION (default
             build-torchVERSION); a version outside the declared range is configured with
             -DDISTMETRICS_ALLOW_UNTESTED_TORCH=ON (that is how a candidate is measured)
  ctest      the torch_version checks and the collectives (Collectives*, SingleProcessComm*)
  scenarios  distmetrics run scenarios --backend gloo --world-sizes 1,2
  examples   distmetrics conform of examples/python/correct_*.py on examples/python/scenarios,
             gloo, world sizes 1,2
  peers      distmetrics conform of the installed peer libraries (peers/*/metrics.py) on
             scenarios/devices, gloo, world sizes 1,2; their findings compared by
             peers/expected.py with those triaged on the torch of ci/requirements-torch2.txt
Then one table: torch version, the wheel's pybind11, build time, each step's result and time.
Logs: BUILD_DIR/torch_range/*.log (the last lines of a failed step's log are printed).

Options:
  --venv-only        make (or check) the venvs only: no build, no smoke (prefetch the wheels
                     while something else builds)
  --skip-peers       leave out the peers step
  --build-root PFX   build folders are PFXVERSION (default build-torch, e.g. build-torch2.11)
  --dry-run          print the commands instead of running them (installs and builds nothing)
  -h, --help         this text

Environment: JOBS (build and ctest parallelism; default: number of cores),
  DISTMETRICS_TORCH_RANGE_VENVS (where the venvs go), DISTMETRICS_TORCH_RANGE_INSTALL_TIMEOUT
  (seconds for one pip install, default 2400), DISTMETRICS_TORCH_RANGE_BUILD_TIMEOUT (seconds for
  one build, default 7200), STEP_TIMEOUT (seconds for one smoke step, default 1800).

Exit codes: 0 every version built and passed every step; 1 a smoke step failed; 2 bad input;
  5 a venv or a build failed (the table says which).
USAGE
}

versions=()
venv_only=0
skip_peers=0
build_root=build-torch
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dry-run) DM_DRY_RUN=1 ;;
    --venv-only) venv_only=1 ;;
    --skip-peers) skip_peers=1 ;;
    --build-root) dm_need_value "$@"; build_root=$2; shift ;;
    -*) dm_fail "unknown argument '$1' (see --help)"; exit "$DM_EXIT_BAD_INPUT" ;;
    *)
      if ! [[ $1 =~ ^2\.[0-9]+(\.[0-9]+)?$ ]]; then
        dm_fail "a version is 2.X or 2.X.Y (a torch 2.x release on PyPI), got '$1'"
        exit "$DM_EXIT_BAD_INPUT"
      fi
      versions+=("$1") ;;
  esac
  shift
done
cd "$DM_ROOT"

range_file=cmake/DistmetricsTorchVersion.cmake
oldest=$(sed -n 's/^set(DISTMETRICS_TORCH_2X_OLDEST \([0-9.]*\)).*/\1/p' "$range_file")
newest=$(sed -n 's/^set(DISTMETRICS_TORCH_2X_NEWEST \([0-9.]*\)).*/\1/p' "$range_file")
if [ -z "$oldest" ] || [ -z "$newest" ]; then
  dm_fail "$range_file has no set(DISTMETRICS_TORCH_2X_OLDEST X.Y) and set(DISTMETRICS_TORCH_2X_NEWEST X.Y)"
  exit "$DM_EXIT_BAD_INPUT"
fi
[ ${#versions[@]} -gt 0 ] || versions=("$oldest" "$newest")
pinned=$(sed -n 's/^torch==\([0-9.]*\)$/\1/p' ci/requirements-torch2.txt)
pinned_mm=${pinned%.*}
# The peer libraries' pins, from the file the 2.x venv is made of: name==version lines.
peer_pins() { grep -E "^($1)==" ci/requirements-torch2.txt | tr '\n' ' '; }
venvs=${DISTMETRICS_TORCH_RANGE_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/distmetrics}
step_timeout=${STEP_TIMEOUT:-1800}
jobs=${JOBS:-$(nproc)}
dm_say "declared 2.x range: $oldest to $newest ($range_file); measuring: ${versions[*]}"

mm() { echo "$1" | cut -d. -f1,2; }
in_range() {  # X.Y[.Z] inside the declared range?
  local v; v=$(mm "$1")
  [ "$(printf '%s\n%s\n' "$oldest" "$v" | sort -V | head -n 1)" = "$oldest" ] &&
    [ "$(printf '%s\n%s\n' "$v" "$newest" | sort -V | head -n 1)" = "$v" ]
}

# make_venv VERSION: sets py (the venv's python) and peers (the libraries it has, as --python
# sources); returns non-zero if torch itself could not be installed.
make_venv() {
  local version=$1
  if [ "$version" = "$pinned" ] || [ "$version" = "$pinned_mm" ]; then
    dm_run bash ci/torch2-venv.sh || return 1
    py=$(bash ci/torch2-venv.sh --path 2>/dev/null) || py="<the venv of ci/torch2-venv.sh>/bin/python"
    peers="torchmetrics ignite torcheval"
    return 0
  fi
  local venv=$venvs/torch-range-$version spec=torch==$version
  [[ $version =~ ^2\.[0-9]+$ ]] && spec="torch==$version.*"
  local reqs=$venvs/torch-range-$version.requirements.txt
  if [ "$DM_DRY_RUN" != 1 ]; then
    mkdir -p "$venvs"
    printf '# ci/torch_range.sh: torch %s (the peer libraries are installed after it, each where it fits)\n%s\n%s' \
      "$version" "$spec" "$(grep -E '^numpy==' ci/requirements-torch2.txt)" >"$reqs"
  fi
  pinned_venv_init ci/torch_range.sh "$reqs" "$venv" 2>/dev/null || want=dry-run
  py=$venv/bin/python
  if [ "$DM_DRY_RUN" != 1 ] && pinned_venv_ready; then
    dm_say "torch $version: $venv is up to date with $reqs: nothing installed"
  else
    local install_timeout=${DISTMETRICS_TORCH_RANGE_INSTALL_TIMEOUT:-2400}
    local pip=(timeout "$install_timeout" nice -n 15 "$py" -m pip install --disable-pip-version-check
               --no-input --no-cache-dir --timeout 60)
    if [ "$DM_DRY_RUN" = 1 ]; then
      dm_run "$base_python" -m venv --system-site-packages "$venv"
    else
      pinned_venv_fresh
    fi
    dm_run "${pip[@]}" -r "$reqs" || { dm_fail "torch $version: pip could not install $spec (see above)"; return 1; }
    # The venv must import its own torch, not Debian's 1.13 from the site-packages below it.
    if [ "$DM_DRY_RUN" != 1 ] && ! "$py" - "$venv" <<'PY'; then
import os, sys, torch
if not torch.__file__.startswith(os.path.realpath(sys.argv[1])):
    sys.exit(f"ci/torch_range.sh: {sys.argv[1]} imports torch {torch.__version__} from {torch.__file__}, not its own")
PY
      return 1
    fi
    # Each peer library where it installs against this torch (pytorch-ignite 0.5.5 needs torch
    # >= 2.2): the constraint keeps pip from replacing the torch.
    local constraint=$venvs/torch-range-$version.constraint.txt torch_exact=$version
    [ "$DM_DRY_RUN" = 1 ] || { torch_exact=$("$py" -c 'import torch; print(torch.__version__.split("+")[0])')
                               echo "torch==$torch_exact" >"$constraint"; }
    local library have=()
    for library in torchmetrics ignite torcheval; do
      local pins
      case $library in
        torchmetrics) pins=$(peer_pins 'torchmetrics|lightning-utilities') ;;
        ignite) pins=$(peer_pins pytorch-ignite) ;;
        torcheval) pins=$(peer_pins torcheval) ;;
      esac
      # shellcheck disable=SC2086
      if dm_run "${pip[@]}" -c "$constraint" $pins; then have+=("$library")
      else dm_say "torch $version: $library ($pins) does not install against torch $torch_exact: left out"; fi
    done
    [ "$DM_DRY_RUN" = 1 ] || { echo "${have[*]}" >"$venv/.distmetrics-peers"; pinned_venv_stamp; }
  fi
  peers=$(cat "$venv/.distmetrics-peers" 2>/dev/null || echo "torchmetrics ignite torcheval")
}

# The pybind11 a torch wheel ships (pyhost and the gloo-through-Python group compile against it).
wheel_pybind11() {
  "$1" - <<'PY' 2>/dev/null || echo "?"
import os, re, torch
text = open(os.path.join(os.path.dirname(torch.__file__), "include/pybind11/detail/common.h")).read()
print(".".join(re.search(rf"#define PYBIND11_VERSION_{p} (\S+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH")))
PY
}

# step NAME [--findings] COMMAND...: one smoke step under the step timeout, its output in
# LOGS/NAME.log; records "pass Ns" or "FAIL (exit C) Ns" in result[NAME] (with --findings, conform's
# exits for a library's finding, 1 failed, 3 hang, 4 crash and 6 memory, are "findings Ns").
declare -A result
step() {
  local name=$1 started=$SECONDS code=0 findings_ok=0
  shift
  [ "$1" = --findings ] && { findings_ok=1; shift; }
  if [ "$DM_DRY_RUN" = 1 ]; then
    dm_run timeout --kill-after=30 "$step_timeout" "$@"
    result[$name]="dry run"
    return 0
  fi
  dm_say "torch $version: $name"
  dm_run timeout --kill-after=30 "$step_timeout" "$@" >"$logs/$name.log" 2>&1 || code=$?
  if [ "$code" = 0 ]; then
    result[$name]="pass $((SECONDS - started))s"
  elif [ "$findings_ok" = 1 ] && [[ $code =~ ^(1|3|4|6)$ ]]; then
    result[$name]="findings $((SECONDS - started))s"
  else
    result[$name]="FAIL (exit $code) $((SECONDS - started))s"
    dm_fail "torch $version: $name gave exit code $code; the end of $logs/$name.log:"
    tail -n 25 "$logs/$name.log" >&2
    worst=$(( worst > 1 ? worst : 1 ))
  fi
}

# peers_step BIN: the installed peer libraries over scenarios/devices, each library's findings
# against peers/LIB/expected.toml as triaged on the pinned torch (the report's torch version is
# read as that one: the same findings are expected on every torch of the range).
peers_step() {
  local bin=$1 library sources=() libs=()
  for library in $peers; do sources+=(--python "peers/$library/metrics.py"); libs+=("$library"); done
  if [ ${#libs[@]} = 0 ]; then result[peers]="none installed"; return 0; fi
  local report=$reports/peers.json
  # conform exits non-zero whenever a library has a finding: expected.py decides.
  step peers-conform --findings "$bin" conform "${sources[@]}" scenarios/devices --backend gloo \
    --world-sizes 1,2 --deadline 15 --quiet --json "$report"
  [ "$DM_DRY_RUN" = 1 ] && { result[peers]="dry run"; return 0; }
  if [ ! -s "$report" ]; then result[peers]="${result[peers-conform]}: no report"; worst=$(( worst > 1 ? worst : 1 )); return 0; fi
  /usr/bin/python3 - "$report" "$reports/peers-as-$pinned_mm.json" "$pinned_mm.0" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for plugin in report.get("plugins") or [report.get("plugin") or {}]:
    plugin["torch_version"] = sys.argv[3]
report["torch_version"] = sys.argv[3]
json.dump(report, open(sys.argv[2], "w"))
PY
  local differ=()
  for library in "${libs[@]}"; do
    if ! /usr/bin/python3 peers/expected.py --library "$library" --report "$reports/peers-as-$pinned_mm.json" \
        >>"$logs/peers-expected.log" 2>&1; then differ+=("$library"); fi
  done
  if [ ${#differ[@]} = 0 ]; then
    result[peers]="${libs[*]}: as on $pinned_mm (${result[peers-conform]##* })"
  else
    result[peers]="FAIL ${differ[*]} differ from $pinned_mm (${result[peers-conform]##* })"
    dm_fail "torch $version: the findings of ${differ[*]} differ from those triaged on torch $pinned_mm:"
    tail -n 25 "$logs/peers-expected.log" >&2
    worst=$(( worst > 1 ? worst : 1 ))
  fi
}

worst=0
rows=()
for version in "${versions[@]}"; do
  dm_say "=== torch $version ($(in_range "$version" && echo "inside the declared range" || echo "outside the declared range: a candidate"))"
  result=()
  py="" peers=""
  if ! make_venv "$version"; then
    rows+=("$version|-|-|venv FAILED|-|-|-|-")
    worst=5
    continue
  fi
  exact=$version pybind='?'
  if [ "$DM_DRY_RUN" != 1 ]; then
    exact=$("$py" -c 'import torch; print(torch.__version__)')
    pybind=$(wheel_pybind11 "$py")
  fi
  dm_say "torch $version: $py (torch $exact, its pybind11 $pybind; peer libraries: ${peers:-none})"
  if [ "$venv_only" = 1 ]; then
    rows+=("$version|$exact|$pybind|-|-|-|-|${peers:-none}")
    continue
  fi

  build_dir=$build_root$version
  logs=$build_dir/torch_range reports=$build_dir/reports/torch_range
  [ "$DM_DRY_RUN" = 1 ] || mkdir -p "$logs" "$reports"
  flags=(-DDISTMETRICS_TORCH=pip "-DDISTMETRICS_PYTHON=$py")
  in_range "$version" || flags+=(-DDISTMETRICS_ALLOW_UNTESTED_TORCH=ON)
  started=$SECONDS code=0
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  # -k 0: every translation unit that does not compile, not only the first.
  keep_going=()
  [ ${#generator[@]} -gt 0 ] && keep_going=(-- -k 0)
  if [ "$DM_DRY_RUN" = 1 ]; then
    dm_run cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${flags[@]}"
    dm_run nice -n 10 cmake --build "$build_dir" -j "$jobs" --target distmetrics comm_tests "${keep_going[@]}"
  else
    dm_say "torch $version: configure and build in $build_dir (log: $logs/build.log)"
    { dm_run cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${flags[@]}" &&
      dm_run timeout --kill-after=30 "${DISTMETRICS_TORCH_RANGE_BUILD_TIMEOUT:-7200}" \
        nice -n 10 cmake --build "$build_dir" -j "$jobs" --target distmetrics comm_tests "${keep_going[@]}"
    } >"$logs/build.log" 2>&1 || code=$?
  fi
  build_time="$((SECONDS - started))s"
  if [ "$code" != 0 ]; then
    dm_fail "torch $version: the build failed (exit $code) after $build_time; its errors ($logs/build.log):"
    grep -E "error|Error" "$logs/build.log" | grep -v "^FAILED" | head -n 40 >&2 || tail -n 40 "$logs/build.log" >&2
    rows+=("$version|$exact|$pybind|FAILED $build_time|-|-|-|-")
    worst=5
    continue
  fi
  dm_say "torch $version: built in $build_time"

  bin=$build_dir/bin/distmetrics
  step ctest ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" \
    -R '^(torch_version|Collectives|SingleProcessComm)'
  step scenarios "$bin" run scenarios --backend gloo --world-sizes 1,2 --quiet --json "$reports/scenarios.json"
  step examples "$bin" conform --python examples/python/correct_torchmetrics.py \
    --python examples/python/correct_ignite.py --python examples/python/correct_torcheval.py \
    examples/python/scenarios --backend gloo --world-sizes 1,2 --quiet --json "$reports/examples.json"
  if [ "$skip_peers" = 1 ]; then result[peers]="skipped (--skip-peers)"; else peers_step "$bin"; fi
  rows+=("$version|$exact|$pybind|$build_time|${result[ctest]}|${result[scenarios]}|${result[examples]}|${result[peers]}")
done

echo
fmt='%-8s %-14s %-9s %-14s %-18s %-18s %-18s %s\n'
# shellcheck disable=SC2059
printf "$fmt" torch exact pybind11 build ctest "scenarios ws1,2" "examples/python" "peers (scenarios/devices)"
for row in "${rows[@]}"; do
  IFS='|' read -r -a cells <<<"$row"
  # shellcheck disable=SC2059
  printf "$fmt" "${cells[@]}"
done
dm_say "exit code $worst"
exit "$worst"
