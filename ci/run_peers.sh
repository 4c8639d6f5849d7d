#!/usr/bin/env bash
# The real libraries, checked: the pinned torchmetrics, PyTorch-Ignite and torcheval (the current
# releases in the torch 2.x venv of ci/torch2-venv.sh; with --torch 1.13 the last releases that run
# on Debian's torch 1.13, in the peers venv of peers/venv.sh), builds distmetrics, runs every mapped
# metric (peers/<library>/metrics.py) over the scenario library at world sizes 1, 2, 3 and 4 on
# gloo, writes JSON, JUnit, Markdown and HTML into REPORTS_DIR (BUILD_DIR/reports/peers/), and
# compares each library's findings with peers/<library>/expected.toml (peers/expected.py: the
# entries of the release that ran). `--help` for the options.
set -euo pipefail
DM_JOB=run_peers  # read by ci/lib.sh
# shellcheck source=ci/lib.sh
source "$(dirname "$0")/lib.sh"

LIBRARIES=(torchmetrics ignite torcheval)

usage() {
  cat <<'USAGE'
Usage: ci/run_peers.sh [options] [extra `distmetrics conform` arguments, e.g. --filter 'accuracy*']

Installs the command's Debian packages that are missing (ci/install-deps.sh) and the pinned
libraries: on torch 2 (the default) the venv of ci/torch2-venv.sh (torch, torchmetrics,
pytorch-ignite and torcheval of ci/requirements-torch2.txt, in $DISTMETRICS_TORCH2_VENV or
~/.cache/distmetrics/torch2-<torch version>), on torch 1.13 the venv of peers/venv.sh (the releases
of peers/requirements-torch1.13.txt over Debian's torch, in $DISTMETRICS_PEERS_VENV or
~/.cache/distmetrics/peers-torch1.13); either is made once and reused. Builds distmetrics (in
BUILD_DIR, against that torch), writes the scenarios of the classes with no reference counterpart
(peers/scenarios.py: REPORTS_DIR/scenarios/<library>/<Class>.toml; torch 2 only), then runs every
library in ONE conform (each rank worker starts its interpreter and imports torch and the libraries
once for the whole run):
  distmetrics conform --python peers/torchmetrics/metrics.py --python peers/ignite/metrics.py \
    --python peers/torcheval/metrics.py scenarios REPORTS_DIR/scenarios --backend gloo --world-sizes 1,2,3,4
                                                -> REPORTS_DIR/peers.{json,xml,md,html}
names each variant's library class in the JSON (peers/classes.py), and compares each library's
findings with peers/LIB/expected.toml (the entries of the release that ran: the library's version
and torch's); then runs each reproduction of peers/repro/
(torch.distributed and the library alone, no distmetrics) under a deadline and checks that it
still shows its bug (a repro about other releases is counted apart). The last lines: one summary
per library (classes checked / public / not runnable here / not mapped, variants, findings expected /
unexpected / expected but not seen),
one for the repros, and the run's wall time.

The repros run on the python of that torch: the torch 2.x venv's, or Debian's /usr/bin/python3
with the peers venv's libraries.

Options:
  --library NAME     only this library (torchmetrics, ignite, torcheval); repeatable
  --world-sizes LIST default 1,2,3,4
  --dry-run          print the commands instead of running them (installs and builds nothing)
  --torch 2|1.13     the torch, and so the releases (default 2: the current ones); also TORCH
  --build-dir DIR    build folder (default: $BUILD_DIR, else build for torch 2, build-torch1.13 for 1.13)
  --no-build         use the build folder as it is (configure and build nothing)
  --reports-dir DIR  reports folder (default: $REPORTS_DIR, else BUILD_DIR/reports/peers)
  --skip-deps        leave out ci/install-deps.sh (also SKIP_DEPS=1)
  --skip-repros      leave out the reproductions of peers/repro/
  --repros-only      only the reproductions (no conform run, no build)
  --deadline S       seconds each variant may take (default 15: a hang costs that much)
  -h, --help         this text
  --                 everything after it goes to `distmetrics conform`

Environment: JOBS (cores), SUITE_TIMEOUT (seconds for the conform run, a backstop: 1800; the run
  takes about 5 minutes on 2 cores), DISTMETRICS_PEERS_VENV, DISTMETRICS_TORCH2_VENV.

Exit codes: 0 every library's findings are exactly the expected ones; 1 a difference (named);
  2 bad input; 5 setup failed (venv, configure or build).
USAGE
}

build_dir=${BUILD_DIR:-}
torch=${TORCH:-2}
build=1
reports_dir=${REPORTS_DIR:-}
skip_deps=${SKIP_DEPS:-0}
world_sizes=1,2,3,4
deadline=15
skip_repros=0
repros_only=0
selected=()
conform_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dry-run) DM_DRY_RUN=1 ;;
    --library)
      dm_need_value "$@"
      case " ${LIBRARIES[*]} " in
        *" $2 "*) selected+=("$2") ;;
        *) dm_fail "--library: unknown library '$2' (known: ${LIBRARIES[*]})"; exit "$DM_EXIT_BAD_INPUT" ;;
      esac
      shift ;;
    --world-sizes) dm_need_value "$@"; world_sizes=$2; shift ;;
    --build-dir) dm_need_value "$@"; build_dir=$2; shift ;;
    --torch) dm_need_value "$@"; torch=$2; shift ;;
    --torch2) torch=2 ;;  # the default; kept for the command lines of earlier docs
    --no-build) build=0 ;;
    --reports-dir) dm_need_value "$@"; reports_dir=$2; shift ;;
    --skip-deps) skip_deps=1 ;;
    --skip-repros) skip_repros=1 ;;
    --repros-only) repros_only=1 ;;
    --deadline) dm_need_value "$@"; deadline=$2; shift ;;
    --) shift; conform_args+=("$@"); break ;;
    *) conform_args+=("$1") ;;
  esac
  shift
done
[ ${#selected[@]} -gt 0 ] || selected=("${LIBRARIES[@]}")
cd "$DM_ROOT"
dm_check_torch "$torch" || exit "$DM_EXIT_BAD_INPUT"
[ -n "$build_dir" ] || build_dir=$(dm_torch_build_dir "$torch")
reports=${reports_dir:-$build_dir/reports/peers}

if [ "$skip_deps" != 1 ]; then
  # shellcheck disable=SC2046
  dm_run bash ci/install-deps.sh $(dm_torch_sets "$torch")
fi
# The python the repros run on: the torch 2.x venv's, which the 2.x build's embedded interpreter
# starts as, or Debian's (with the peers venv's libraries, peers/repro/common.py).
dm_torch_setup "$torch" || exit "$DM_EXIT_SETUP"
repro_python=$DM_TORCH_PYTHON
if [ "$torch" = 1.13 ]; then
  dm_run bash peers/venv.sh || { dm_fail "the peers venv could not be made (see above)"; exit "$DM_EXIT_SETUP"; }
fi
if [ "$repros_only" != 1 ] && [ "$build" = 1 ]; then
  dm_build "$build_dir" distmetrics "${DM_TORCH_CMAKE_ARGS[@]}" || exit "$DM_EXIT_SETUP"
fi
[ "$DM_DRY_RUN" = 1 ] || mkdir -p "$reports"

codes=()
summaries=()
[ "$repros_only" = 1 ] && selected=()
started=$SECONDS
if [ ${#selected[@]} -gt 0 ]; then
  sources=()
  for library in "${selected[@]}"; do sources+=(--python "peers/$library/metrics.py"); done
  # The classes with no reference counterpart run on scenarios generated for each of them
  # (peers/scenarios.py, from the mappings' Own rows), beside the scenario library. They were
  # triaged on the current releases only: the torch 1.13 run leaves them out.
  scenario_paths=(scenarios)
  if [ "$torch" != 1.13 ]; then
    generated=()
    for library in "${selected[@]}"; do generated+=(--library "$library"); done
    dm_run "$repro_python" peers/scenarios.py --out "$reports" "${generated[@]}" ||
      { dm_fail "peers/scenarios.py could not write the scenarios of the classes checked against themselves"; exit "$DM_EXIT_BAD_INPUT"; }
    scenario_paths+=("$reports/scenarios")
  fi
  dm_say "${selected[*]}: one conform over ${scenario_paths[*]} on gloo"
  code=0
  suite_timeout=${SUITE_TIMEOUT:-1800}
  # --allow-python: the generated scenarios name scikit-learn references of this project's own
  # package ([reference] python = "distmetrics.references:...").
  dm_run timeout --kill-after=30 "$suite_timeout" "$build_dir/bin/distmetrics" conform --allow-python \
    "${sources[@]}" "${scenario_paths[@]}" --backend gloo --world-sizes "$world_sizes" --deadline "$deadline" --quiet \
    --json "$reports/peers.json" --junit "$reports/peers.xml" --markdown "$reports/peers.md" \
    --html "$reports/peers.html" "${conform_args[@]}" || code=$?
  conform_seconds=$((SECONDS - started))
  # Where the conform run's time went, per library, world size and outcome (peers/phases.py; docs/performance.md).
  [ "$DM_DRY_RUN" = 1 ] || [ ! -s "$reports/peers.json" ] || /usr/bin/python3 peers/phases.py --report "$reports/peers.json" || true
  if [ "$DM_DRY_RUN" != 1 ]; then
    if [ "$code" = 2 ] || [ ! -s "$reports/peers.json" ]; then
      dm_fail "conform gave exit code $code and no report (bad input: see above)"
      codes+=("$DM_EXIT_BAD_INPUT")
      summaries+=("peers: no report (exit code $code)")
    else
      # A variant whose rank could not make its torch.distributed group never reached the library
      # (a harness limitation seen under heavy load: docs/peers.md): rerun once, alone, printed.
      "$repro_python" peers/rerun.py --report "$reports/peers.json" --distmetrics "$build_dir/bin/distmetrics" ||
        dm_fail "peers/rerun.py (set-up failures): see above"
      # Each variant names the library class it ran ("class": "module:Class"), from the mappings.
      "$repro_python" peers/classes.py --report "$reports/peers.json" --distmetrics "$build_dir/bin/distmetrics" ||
        dm_fail "peers/classes.py could not name the classes in $reports/peers.json (see above)"
      # The findings decide, not conform's exit code (which is non-zero whenever a library has one).
      for library in "${selected[@]}"; do
        # A variant whose outcome disagrees with expected.toml is rerun once, alone (peers/rerun.py
        # --disagreeing): a finding that comes and goes with the load is a timing, not an assertion;
        # the first comparison and each rerun are printed, the comparison after them decides.
        disagreeing=$reports/disagreeing-$library.json
        check=0
        out=$(/usr/bin/python3 peers/expected.py --library "$library" --report "$reports/peers.json" \
          --disagreeing "$disagreeing") || check=$?
        if [ "$check" = 1 ]; then
          echo "$out" | sed 's/^/  first comparison: /'
          "$repro_python" peers/rerun.py --report "$reports/peers.json" --distmetrics "$build_dir/bin/distmetrics" \
            --disagreeing "$disagreeing" || dm_fail "peers/rerun.py (variants that disagreed with expected.toml): see above"
        fi
        check=0
        out=$(/usr/bin/python3 peers/expected.py --library "$library" --report "$reports/peers.json" \
          --markdown "$reports/peers.md") || check=$?
        echo "$out"
        if [ "$check" = 2 ]; then
          summaries+=("$library: not compared (peers/expected.py: bad input, see above)")
        else
          summaries+=("$(echo "$out" | tail -n 1)")
        fi
        codes+=("$check")
      done
      summaries+=("conform: ${#selected[@]} libraries at world sizes $world_sizes in ${conform_seconds} s wall time")
    fi
  fi
fi
# The reproductions without distmetrics: each exits 0 while its bug shows (peers/repro/common.py).
if [ "$skip_repros" != 1 ]; then
  shown=0
  gone=()
  other_release=()
  for repro in peers/repro/*.py; do
    name=${repro##*/}
    [ "$name" = common.py ] && continue
    out_file=$reports/${name%.py}.txt
    if [ "$DM_DRY_RUN" = 1 ]; then
      dm_run timeout --kill-after=10 180 "$repro_python" "$repro"
      continue
    fi
    repro_code=0
    timeout --kill-after=10 180 "$repro_python" "$repro" >"$out_file" 2>&1 || repro_code=$?
    if [ "$repro_code" = 0 ]; then
      shown=$((shown + 1))
      dm_say "$(tail -n 1 "$out_file")"
    elif [ "$repro_code" = 77 ]; then  # about other releases (peers/repro/common.py, requires)
      other_release+=("$name")
    else
      gone+=("$repro")
      dm_fail "$repro: $(tail -n 1 "$out_file")"
    fi
  done
  if [ "$DM_DRY_RUN" != 1 ]; then
    if [ ${#gone[@]} -gt 0 ]; then
      summaries+=("repros: ${#gone[@]} no longer show their bug (fixed upstream? update docs/peers.md): ${gone[*]}")
      codes+=("$DM_EXIT_FAIL")
    else
      summaries+=("repros: all $shown show their bug (outputs: $reports/<repro>.txt)")
    fi
    [ ${#other_release[@]} -eq 0 ] ||
      summaries+=("repros: ${#other_release[@]} about other releases, not run: ${other_release[*]}")
  fi
fi
if [ "$DM_DRY_RUN" = 1 ]; then
  dm_say "dry run: nothing was installed, built or run"
  exit 0
fi
[ ${#selected[@]} -eq 0 ] || dm_say "reports: $reports/peers.{json,xml,md,html}"
summaries+=("peer run: $((SECONDS - started)) s wall time in all")
for line in "${summaries[@]}"; do
  dm_say "$line"
done
exit "$(dm_worst_code "${codes[@]}")"
