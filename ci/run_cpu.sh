#!/usr/bin/env bash
# The main CI job (no GPU): installs what is missing of its own packages, configures as
# ci/test.sh does and builds the command only, runs the whole scenario suite with the
# distmetrics CLI on gloo at world sizes 1, 2 and 4, prints the summary table, writes
# build/reports/cpu.json and build/reports/cpu.xml (JUnit), and exits with the CLI's exit code;
# its last line says what each step took. `--help` for the options.
set -euo pipefail
DM_JOB=run_cpu  # read by ci/lib.sh
# shellcheck source=ci/lib.sh
source "$(dirname "$0")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ci/run_cpu.sh [options] [extra `distmetrics run` arguments, e.g. --filter 'core/*']

Installs the Debian packages of this job that are missing (ci/install-deps.sh build headers
python, and torch1.13 for --torch 1.13), makes or reuses the torch 2.x venv, builds the
distmetrics command only (in BUILD_DIR), then runs
  every scenario on gloo at world sizes 1, 2 and 4   -> REPORTS_DIR/cpu.{json,xml}
and prints the time of each step (install, venv, build, run).

Options:
  --dry-run          print the commands instead of running them (installs and builds nothing)
  --torch 2|1.13     the LibTorch: 2 (default: PyTorch 2.x from pip, in the venv that
                     ci/torch2-venv.sh makes or reuses) or 1.13 (Debian's libtorch-dev); also TORCH
  --build-dir DIR    build folder (default: $BUILD_DIR, else build for torch 2, build-torch1.13 for 1.13)
  --reports-dir DIR  reports folder (default: $REPORTS_DIR, else BUILD_DIR/reports)
  --skip-deps        leave out ci/install-deps.sh (also SKIP_DEPS=1)
  -h, --help         this text
  --                 everything after it goes to `distmetrics run`

Environment: JOBS (cores), SUITE_TIMEOUT (3000 s per run), DM_DRY_RUN=1 (as --dry-run).

Exit codes: 0 all passed; 1 a property failed (or a metric raised); 2 bad input; 3 a hang;
  4 a crash; 5 setup failed (configure or build); 6 a rank went past its memory limit.
USAGE
}

dm_parse_suite_args "$@"
cd "$DM_ROOT"
export REPORTS_DIR=${reports_dir:-$build_dir/reports}

# At the end, also when a step fails: what each step took (a fresh machine's cost, README).
trap dm_say_times EXIT
if [ "$skip_deps" != 1 ]; then
  # Only this job's packages (ci/install-deps.sh --list): the tests' browser, Slurm, Debian's
  # LibTorch for --torch 2 and the benchmarks come with ci/test.sh or the job that uses them.
  # shellcheck disable=SC2046
  dm_timed install dm_run bash ci/install-deps.sh $(dm_torch_sets "$torch")
fi
dm_timed venv dm_torch_setup "$torch" || exit "$DM_EXIT_SETUP"
dm_timed build dm_build "$build_dir" distmetrics "${DM_TORCH_CMAKE_ARGS[@]}" || exit "$DM_EXIT_SETUP"

dm_timed run dm_suite cpu "$build_dir/bin/distmetrics" run scenarios --backend gloo --world-sizes 1,2,4 \
  "${run_args[@]}"
if [ "$DM_DRY_RUN" = 1 ]; then
  dm_say "dry run: nothing was installed, built or run"
fi
exit "$DM_SUITE_CODE"
