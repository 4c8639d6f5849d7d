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
  --release X.Y.Z    another release of the one --library, from PyPI (exact), instead of the pinned one
  --from PATH        a local checkout (its package folder in front, as it is) or a wheel, instead
                     (both: peers/release.py, a layer in front of the torch venv on PYTHONPATH,
                     installed --no-deps, in ~/.cache/distmetrics/releases/; the rows whose class
                     or constructor argument the release lacks are "not in this release"; the
                     findings compared with the baseline's entries, not an exact match; no repros)
  --baseline REL     the triaged release those findings are compared with (default: the pinned one,
                     "<version> on torch <major.minor>"); peers/LIB/release.md: the report for a PR
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
release=
release_from=
baseline=
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
    --release) dm_need_value "$@"; release=$2; shift ;;
    --from) dm_need_value "$@"; release_from=$2; shift ;;
    --baseline) dm_need_value "$@"; baseline=$2; shift ;;
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
# The peer scripts read the runner's tables (python/distmetrics/tables.py: `distmetrics tables --json`).
case $build_dir in /*) DISTMETRICS_BIN=$build_dir/bin/distmetrics ;; *) DISTMETRICS_BIN=$PWD/$build_dir/bin/distmetrics ;; esac
export DISTMETRICS_BIN

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
# --- Another release, a checkout or a wheel (--release, --from; peers/release.py) ------------------
# The release goes in front of the torch venv on PYTHONPATH (the embedded interpreter of the build
# is the torch venv's python, and honours it), for conform and every script after it; its findings
# are compared with the baseline's entries of expected.toml (new / not seen / unchanged), and the
# repros (about the pinned releases) are left out.
other_release=0
if [ -n "$release" ] || [ -n "$release_from" ]; then
  other_release=1
  if [ -n "$release" ] && [ -n "$release_from" ]; then
    dm_fail "--release and --from exclude each other"; exit "$DM_EXIT_BAD_INPUT"
  fi
  if [ ${#selected[@]} -ne 1 ]; then
    dm_fail "--release and --from take one library: add --library NAME (${LIBRARIES[*]})"; exit "$DM_EXIT_BAD_INPUT"
  fi
  [ "$repros_only" != 1 ] || { dm_fail "--repros-only runs the pinned releases' repros: it takes no --release or --from"; exit "$DM_EXIT_BAD_INPUT"; }
  release_args=(--library "${selected[0]}" --python "$repro_python" --torch "$torch")
  if [ -n "$release" ]; then release_args+=(--release "$release"); else release_args+=(--from "$release_from"); fi
  if [ "$torch" = 1.13 ]; then  # the libraries' own requirements (lightning-utilities...) from the peers venv
    release_args+=(--extra-path "$(/usr/bin/python3 -c "import sys; print(sys.argv[1] + '/lib/python%d.%d/site-packages' % sys.version_info[:2])" "${DISTMETRICS_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/distmetrics/peers-torch1.13}")")
  fi
  if [ -z "$baseline" ]; then
    pinned_version=$("$repro_python" peers/release.py pinned --library "${selected[0]}" --torch "$torch") ||
      exit "$DM_EXIT_BAD_INPUT"
    if [ "$torch" = 1.13 ]; then baseline="$pinned_version on torch 1.13"
    else baseline="$pinned_version on torch $(sed -n 's/^torch==\([0-9]*\.[0-9]*\).*$/\1/p' ci/requirements-torch2.txt)"; fi
  fi
  skip_repros=1
  release_front=
  if [ "$DM_DRY_RUN" = 1 ]; then
    dm_run timeout --kill-after=10 1200 "$repro_python" peers/release.py prepare "${release_args[@]}"
    release_front="<the layer peers/release.py prints>"
  else
    dm_say "$(dm_quote "$repro_python") peers/release.py prepare ${release_args[*]}"
    release_log=$(mktemp)
    release_code=0
    timeout --kill-after=10 1200 "$repro_python" peers/release.py prepare "${release_args[@]}" >"$release_log" || release_code=$?
    sed '$d' "$release_log"
    release_front=$(tail -n 1 "$release_log")
    rm -f "$release_log"
    if [ "$release_code" != 0 ]; then
      dm_fail "${selected[0]} ${release:-$release_from}: not set up (peers/release.py, exit $release_code: above)"
      [ "$release_code" = 124 ] && release_code=$DM_EXIT_SETUP
      exit "$release_code"
    fi
  fi
  export PYTHONPATH="$release_front${PYTHONPATH:+:$PYTHONPATH}"
  # This checkout's distmetrics package (the rows' register_own and Own), whichever tree's build runs.
  export DISTMETRICS_PYTHONPATH=${DISTMETRICS_PYTHONPATH:-$DM_ROOT/python}
  dm_say "${selected[0]}: ${release:+release $release}${release_from:+from $release_from} in front of the torch venv (PYTHONPATH=$release_front); findings against \"$baseline\""
fi
# --- end of the release block ------------------------------------------------------------------
if [ "$repros_only" != 1 ] && [ "$build" = 1 ]; then
  dm_build "$build_dir" distmetrics "${DM_TORCH_CMAKE_ARGS[@]}" || exit "$DM_EXIT_SETUP"
fi
[ "$DM_DRY_RUN" = 1 ] || mkdir -p "$reports"

codes=()
summaries=()
[ "$repros_only" = 1 ] && selected=()
# The machine's speed at what a peer run does most (wake-ups across processes, plain CPU), measured
# before the run starts, so that its seconds are read against the machine (bench/machine.py).
if [ "$DM_DRY_RUN" != 1 ]; then
  machine=$(timeout 60 /usr/bin/python3 bench/machine.py 2>&1 | tail -n 1) || machine="machine: not measured ($machine)"
  dm_say "$machine"
  summaries+=("$machine")
fi
started=$SECONDS

# The reproductions without distmetrics: each exits 0 while its bug shows (peers/repro/common.py).
# peers/run_repros.py runs them all from one interpreter that imports torch and the libraries once,
# each script in a fork of it (its ranks forked in turn: each repro its own group and processes),
# as many at once as there are cores, each under a 180 s deadline. They start once the findings
# are compared (the reruns of peers/rerun.py are timings: they run alone), in the background while
# judged.py and page.py read the report; their output is printed when they are done.
repro_pid=
repro_summary=$reports/repros.tsv
repro_log=$reports/repros.log
start_repros() {
  [ "$skip_repros" != 1 ] && [ -z "$repro_pid" ] || return 0
  repro_started=$SECONDS
  if [ "$DM_DRY_RUN" = 1 ]; then
    dm_run timeout --kill-after=10 900 "$repro_python" peers/run_repros.py --reports "$reports" \
      --summary "$repro_summary" --deadline 180 --brief
    repro_pid=dry-run
    return 0
  fi
  rm -f "$repro_summary"
  dm_say "$(dm_quote "$repro_python") peers/run_repros.py --reports $(dm_quote "$reports") --summary $(dm_quote "$repro_summary") --deadline 180 --brief (output: $repro_log)"
  timeout --kill-after=10 900 "$repro_python" peers/run_repros.py --reports "$reports" \
    --summary "$repro_summary" --deadline 180 --brief >"$repro_log" 2>&1 &
  repro_pid=$!
}
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
      # A run of one --library has one source: its report names it once ("plugin"), not per variant;
      # peers/classes.py and peers/judged.py find a library's variants by their "source".
      [ ${#selected[@]} -ne 1 ] || /usr/bin/python3 - "$reports/peers.json" <<'PY' || dm_fail "could not name the variants' source in $reports/peers.json"
import json, sys
report = json.load(open(sys.argv[1]))
source = (report.get("plugin") or {}).get("path")
if source and not any("source" in v for v in report.get("variants", [])):
    for v in report.get("variants", []):
        v["source"] = source
    json.dump(report, open(sys.argv[1], "w"), indent=1)
PY
      # A variant whose rank could not make its torch.distributed group never reached the library
      # (a harness limitation seen under heavy load: docs/peers.md): rerun once, alone, printed.
      "$repro_python" peers/rerun.py --report "$reports/peers.json" --distmetrics "$build_dir/bin/distmetrics" ||
        dm_fail "peers/rerun.py (set-up failures): see above"
      # Each variant names the library class it ran ("class": "module:Class"), from the mappings:
      # on torch 2 peers/judged.py does it below (--name-classes), in the interpreter that imports
      # the libraries for its census anyway; nothing before it reads the classes.
      if [ "$torch" = 1.13 ]; then
        "$repro_python" peers/classes.py --report "$reports/peers.json" --distmetrics "$build_dir/bin/distmetrics" ||
          dm_fail "peers/classes.py could not name the classes in $reports/peers.json (see above)"
      fi
      # The findings decide, not conform's exit code (which is non-zero whenever a library has one).
      for library in "${selected[@]}"; do
        # A variant whose outcome disagrees with expected.toml is rerun once, alone (peers/rerun.py
        # --disagreeing): a finding that comes and goes with the load is a timing, not an assertion;
        # the first comparison and each rerun are printed, the comparison after them decides.
        # With no disagreement the first comparison is the one that decides: its Markdown (kept
        # apart until then, since expected.py appends) goes into peers.md and it is not run again.
        disagreeing=$reports/disagreeing-$library.json
        first_markdown=$reports/expected-$library.md
        check=0
        baseline_args=()
        [ -z "$baseline" ] || baseline_args=(--baseline "$baseline" --pr-markdown "$reports/release-$library.md")
        rm -f "$first_markdown"
        out=$(/usr/bin/python3 peers/expected.py --library "$library" --report "$reports/peers.json" \
          --disagreeing "$disagreeing" --markdown "$first_markdown" "${baseline_args[@]}") || check=$?
        if [ "$check" = 1 ]; then
          echo "$out" | sed 's/^/  first comparison: /'
          "$repro_python" peers/rerun.py --report "$reports/peers.json" --distmetrics "$build_dir/bin/distmetrics" \
            --disagreeing "$disagreeing" || dm_fail "peers/rerun.py (variants that disagreed with expected.toml): see above"
          check=0
          out=$(/usr/bin/python3 peers/expected.py --library "$library" --report "$reports/peers.json" \
            --markdown "$reports/peers.md" "${baseline_args[@]}") || check=$?
        elif [ -s "$first_markdown" ]; then
          cat "$first_markdown" >>"$reports/peers.md"
        fi
        rm -f "$first_markdown"
        echo "$out"
        if [ "$check" = 2 ]; then
          summaries+=("$library: not compared (peers/expected.py: bad input, see above)")
        elif [ -n "$baseline" ]; then  # the run's own line, then the one against the baseline
          summaries+=("$(echo "$out" | tail -n 2 | head -n 1)" "$(echo "$out" | tail -n 1)")
          summaries+=("$library: the report for a pull request: $reports/release-$library.md")
        else
          summaries+=("$(echo "$out" | tail -n 1)")
        fi
        codes+=("$check")
      done
      start_repros
      # What the run judged, class by class (peers/judged.py, from this report, not from the rows):
      # one line per library; the per-class table in judged.md, the same as data in judged.json.
      if [ "$torch" != 1.13 ]; then
        judged_libraries=()
        for library in "${selected[@]}"; do judged_libraries+=(--library "$library"); done
        judged_out=$(PYTHONWARNINGS=ignore "$repro_python" peers/judged.py --report "$reports/peers.json" \
          --name-classes "$build_dir/bin/distmetrics" "${judged_libraries[@]}" --markdown "$reports/judged.md" \
          --json "$reports/judged.json") ||
          dm_fail "peers/judged.py could not read $reports/peers.json (run it by hand to see why)"
        while IFS= read -r line; do [ -z "$line" ] || summaries+=("$line"); done <<<"$judged_out"
      fi
      # The page a maintainer opens (peers/page.py): what is new first, then per library and domain.
      page_args=(--report "$reports/peers.json" --out "$reports/page"); [ "$torch" = 1.13 ] || page_args+=(--judged "$reports/judged.json")
      [ -z "$baseline" ] || page_args+=(--baseline "$baseline")  # another release: new against the baseline's entries
      if page_out=$(/usr/bin/python3 peers/page.py "${page_args[@]}"); then summaries+=("$page_out"); else dm_fail "peers/page.py could not write $reports/page (run it by hand to see why)"; fi
      if [ "$other_release" = 1 ]; then  # the classes of this release, and the rows not in it
        release_out=$(PYTHONWARNINGS=ignore timeout 300 "$repro_python" peers/release.py summary \
          --library "${selected[0]}" --report "$reports/peers.json" --details) ||
          dm_fail "peers/release.py summary failed (run it by hand to see why)"
        echo "$release_out" | sed '$d'
        summaries+=("$(echo "$release_out" | tail -n 1)")
      fi
      summaries+=("conform: ${#selected[@]} libraries at world sizes $world_sizes in ${conform_seconds} s wall time")
    fi
  fi
fi
[ "$other_release" = 0 ] || summaries+=("repros: not run (they show the pinned releases' bugs; --release and --from leave them out)")
if [ "$skip_repros" != 1 ]; then
  shown=0
  gone=()
  about_other_releases=()
  repro_run=0
  start_repros
  if [ "$DM_DRY_RUN" != 1 ]; then
    wait "$repro_pid" || repro_run=$?
    cat "$repro_log"
    if [ ! -s "$repro_summary" ]; then
      gone+=("peers/run_repros.py")
      dm_fail "peers/run_repros.py gave exit code $repro_run and no summary (see above)"
    fi
    while IFS=$'\t' read -r name repro_code _; do
      repro=peers/repro/$name
      out_file=$reports/${name%.py}.txt
      if [ "$repro_code" = 0 ]; then
        shown=$((shown + 1))
        dm_say "$(tail -n 1 "$out_file")"
      elif [ "$repro_code" = 77 ]; then  # about other releases (peers/repro/common.py, requires)
        about_other_releases+=("$name")
      else
        gone+=("$repro")
        dm_fail "$repro: $(tail -n 1 "$out_file")"
      fi
    done < <([ -s "$repro_summary" ] && cat "$repro_summary")
    repro_seconds=$((SECONDS - repro_started))
    if [ ${#gone[@]} -gt 0 ]; then
      summaries+=("repros: ${#gone[@]} no longer show their bug (fixed upstream? update docs/peers.md): ${gone[*]} (${repro_seconds} s wall time)")
      codes+=("$DM_EXIT_FAIL")
    else
      summaries+=("repros: all $shown show their bug in ${repro_seconds} s wall time (outputs: $reports/<repro>.txt)")
    fi
    [ ${#about_other_releases[@]} -eq 0 ] ||
      summaries+=("repros: ${#about_other_releases[@]} about other releases, not run: ${about_other_releases[*]}")
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
