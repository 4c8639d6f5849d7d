# shellcheck shell=bash disable=SC2034
# Shared by ci/run_cpu.sh, ci/run_mpi.sh and ci/run_2gpu.sh (sourced, not run):
# saying what happens, running (or, in a dry run, only printing) commands, building, and
# folding several runs' exit codes into one.
#   TORCH        the LibTorch to build against: 2 (default: PyTorch 2.x from pip, the venv of
#                ci/torch2-venv.sh) or 1.13 (Debian's libtorch-dev); also --torch
#   BUILD_DIR    build folder (each script has its default; run_cpu/run_mpi: build for torch 2,
#                build-torch1.13 for 1.13)
#   JOBS         build parallelism (default: number of cores)
#   REPORTS_DIR  where JSON and JUnit reports go (default: $BUILD_DIR/reports)
#   SUITE_TIMEOUT  seconds one `distmetrics run` may take before timeout(1) ends it (default 3000);
#                  a backstop only: the runner's own deadlines end a hung variant long before.

DM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DM_JOB=${DM_JOB:-ci}
DM_DRY_RUN=${DM_DRY_RUN:-0}

# The runner's exit codes (docs/cli-contract.md) and the ones these scripts add.
DM_EXIT_OK=0 DM_EXIT_FAIL=1 DM_EXIT_BAD_INPUT=2 DM_EXIT_HANG=3 DM_EXIT_CRASH=4 DM_EXIT_MEMORY=6
DM_EXIT_SETUP=5   # the job could not be set up: no LibTorch, configure or build failed
DM_EXIT_SKIP=77   # the machine lacks what the job needs (e.g. 2 GPUs); nothing was run

dm_say() { echo "[$DM_JOB] $*"; }
dm_fail() { echo "[$DM_JOB] error: $*" >&2; }

# dm_need_value "$@": the option in $1 must have a value in $2; else exit 2 with a message.
dm_need_value() {
  if [ $# -lt 2 ] || [ -z "$2" ]; then
    dm_fail "$1 needs a value (see --help)"
    exit "$DM_EXIT_BAD_INPUT"
  fi
}

# The flags run_cpu.sh and run_mpi.sh share. Sets torch, build_dir, reports_dir, skip_deps and
# run_args (the rest, for `distmetrics run`); --help prints the calling script's usage().
dm_parse_suite_args() {
  torch=${TORCH:-2}
  build_dir=${BUILD_DIR:-}
  reports_dir=${REPORTS_DIR:-}
  skip_deps=${SKIP_DEPS:-0}
  run_args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      -h | --help) usage; exit 0 ;;
      --dry-run) DM_DRY_RUN=1 ;;
      --torch) dm_need_value "$@"; torch=$2; shift ;;
      --build-dir) dm_need_value "$@"; build_dir=$2; shift ;;
      --reports-dir) dm_need_value "$@"; reports_dir=$2; shift ;;
      --skip-deps) skip_deps=1 ;;
      --) shift; run_args+=("$@"); break ;;
      *) run_args+=("$1") ;;
    esac
    shift
  done
  dm_check_torch "$torch" || exit "$DM_EXIT_BAD_INPUT"
  [ -n "$build_dir" ] || build_dir=$(dm_torch_build_dir "$torch")
}

# --- Which LibTorch -------------------------------------------------------------------------------
# PyTorch 2.x from pip is the default (what users have); Debian's LibTorch 1.13 is the other build.

# dm_check_torch VERSION: 2 or 1.13, else a message and non-zero.
dm_check_torch() {
  case "$1" in
    2 | 1.13) return 0 ;;
    *) dm_fail "--torch must be 2 (PyTorch 2.x from pip, ci/requirements-torch2.txt) or 1.13 (Debian's libtorch-dev), got '$1'"; return 1 ;;
  esac
}

# dm_torch_build_dir VERSION: the build folder a script uses by default for it.
dm_torch_build_dir() {
  if [ "$1" = 1.13 ]; then echo build-torch1.13; else echo build; fi
}

# dm_torch_setup VERSION (run in DM_ROOT): for 2, makes (or reuses) the venv of ci/torch2-venv.sh (printed, and not
# made in a dry run); sets DM_TORCH_CMAKE_ARGS (the configure flags) and DM_TORCH_PYTHON (the
# interpreter with that torch: the venv's, or Debian's /usr/bin/python3 for 1.13).
dm_torch_setup() {
  DM_TORCH_CMAKE_ARGS=()
  DM_TORCH_PYTHON=/usr/bin/python3
  [ "$1" = 1.13 ] && return 0
  dm_run bash ci/torch2-venv.sh || { dm_fail "the torch 2.x venv could not be made (see above)"; return "$DM_EXIT_SETUP"; }
  DM_TORCH_PYTHON=$(bash ci/torch2-venv.sh --path 2>/dev/null) ||
    DM_TORCH_PYTHON="<the venv's python: ci/torch2-venv.sh --path>"
  DM_TORCH_CMAKE_ARGS=(-DDISTMETRICS_TORCH=pip "-DDISTMETRICS_PYTHON=$DM_TORCH_PYTHON")
}

# dm_torch_sets VERSION: the package sets of ci/install-deps.sh that building the command needs
# (the main job's: build, headers, python; Debian's LibTorch and its Python build for 1.13). A
# job adds its own (run_mpi.sh: mpi); ci/test.sh installs every set.
dm_torch_sets() {
  if [ "$1" = 1.13 ]; then echo build headers python torch1.13; else echo build headers python; fi
}

# Steps timed by dm_timed, printed by dm_say_times: what a fresh machine costs, step by step.
DM_STEP_TIMES=()
DM_STEPS_STARTED=$SECONDS
# dm_timed STEP COMMAND...: runs COMMAND and records its wall time under STEP (not in a dry run);
# returns COMMAND's status.
dm_timed() {
  local step=$1 started=$SECONDS code=0
  shift
  "$@" || code=$?
  [ "$DM_DRY_RUN" = 1 ] || DM_STEP_TIMES+=("$step $((SECONDS - started)) s")
  return "$code"
}
# Prints the recorded steps and the time since the script began, on one line.
dm_say_times() {
  [ ${#DM_STEP_TIMES[@]} -gt 0 ] || return 0
  local joined
  joined=$(printf '%s, ' "${DM_STEP_TIMES[@]}")
  dm_say "time per step: ${joined%, }; in all $((SECONDS - DM_STEPS_STARTED)) s"
}

# dm_skip REASON: the machine lacks what the job needs: say so and exit 77. A dry run calls it
# after printing the commands it would run, so they show on any machine.
dm_skip() {
  dm_say "SKIP: $*"
  if [ "$DM_DRY_RUN" = 1 ]; then
    dm_say "dry run: on this machine the commands above would not run: exit code $DM_EXIT_SKIP (skipped)."
  else
    dm_say "Nothing was run: exit code $DM_EXIT_SKIP (skipped)."
  fi
  exit "$DM_EXIT_SKIP"
}

# One word as a person would type it: bare when safe, else in single quotes.
dm_quote() {
  if [[ -z $1 || $1 =~ [^A-Za-z0-9_./:=,@%+-] ]]; then
    printf "'%s'" "${1//\'/\'\\\'\'}"
  else
    printf '%s' "$1"
  fi
}

# Prints a command (quoted so that it can be pasted back) and runs it unless this is a dry run.
dm_run() {
  printf '+'
  local word
  for word in "$@"; do
    printf ' %s' "$(dm_quote "$word")"
  done
  printf '\n'
  if [ "$DM_DRY_RUN" != 1 ]; then
    "$@"
  fi
}

# dm_build BUILD_DIR TARGET [cmake configure arguments...]: configures as ci/test.sh does
# (Ninja when there is one, Release) and builds TARGET ("all" for everything).
dm_build() {
  local build_dir=$1 target=$2
  shift 2
  local generator=()
  if command -v ninja >/dev/null 2>&1 || [ "$DM_DRY_RUN" = 1 ]; then
    generator=(-G Ninja)
  fi
  dm_run cmake -S "$DM_ROOT" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" ||
    { dm_fail "configuring $build_dir failed (see above)"; return "$DM_EXIT_SETUP"; }
  local targets=()
  if [ "$target" != all ]; then
    targets=(--target "$target")
  fi
  dm_run cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" "${targets[@]}" ||
    { dm_fail "building $build_dir failed (see above)"; return "$DM_EXIT_SETUP"; }
}

# Maps an exit status that is not the runner's own to what it means: timeout(1) gave up
# (124, or 137 after its KILL) = a hang; a death by signal or another status = a crash.
dm_normalize_code() {
  case "$1" in
    0 | 1 | 2 | 3 | 4 | 6) echo "$1" ;;
    124 | 137) echo "$DM_EXIT_HANG" ;;
    *) echo "$DM_EXIT_CRASH" ;;
  esac
}

# The exit code of several runs: the highest-priority one, 2 > 4 > 6 > 3 > 1 > 0 (as the runner's).
dm_worst_code() {
  local worst=0 code
  for code in "$@"; do
    for rank in 2 4 6 3 1; do
      if [ "$code" = "$rank" ] || [ "$worst" = "$rank" ]; then
        worst=$rank
        break
      fi
    done
  done
  echo "$worst"
}

# dm_suite NAME COMMAND...: runs one `distmetrics run` command line (COMMAND, which ends with the
# run's own arguments) under the timeout backstop, with --json/--junit reports named NAME in
# REPORTS_DIR. Sets DM_SUITE_CODE to its normalized exit code; never fails itself.
dm_suite() {
  local name=$1
  shift
  local reports=${REPORTS_DIR:?}
  [ "$DM_DRY_RUN" = 1 ] || mkdir -p "$reports"
  local code=0
  dm_run timeout --kill-after=30 "${SUITE_TIMEOUT:-3000}" "$@" \
    --json "$reports/$name.json" --junit "$reports/$name.xml" || code=$?
  DM_SUITE_CODE=$(dm_normalize_code "$code")
  if [ "$DM_DRY_RUN" != 1 ]; then
    dm_say "$name: exit code $DM_SUITE_CODE; reports: $reports/$name.json $reports/$name.xml"
  fi
}
