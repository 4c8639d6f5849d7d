#!/usr/bin/env bash
# The main CI job (no GPU): installs what is missing, configures and builds as ci/test.sh does,
# runs the whole scenario suite with the distmetrics CLI on gloo at world sizes 1, 2 and 4,
# prints the summary table, writes build/reports/cpu.json and build/reports/cpu.xml (JUnit), and
# exits with the CLI's exit code (0 pass, 1 failed property/error, 2 bad input, 3 hang, 4 crash;
# 5 when the build failed).
#   Usage: ci/run_cpu.sh [extra `distmetrics run` arguments, e.g. --filter 'core/*']
#   BUILD_DIR (build)  JOBS (cores)  REPORTS_DIR (BUILD_DIR/reports)  SKIP_DEPS=1 (no install step)
#   DM_DRY_RUN=1 (print the build and run commands, run none)
set -euo pipefail
DM_JOB=run_cpu  # read by ci/lib.sh
# shellcheck source=ci/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$DM_ROOT"

build_dir=${BUILD_DIR:-build}
export REPORTS_DIR=${REPORTS_DIR:-$build_dir/reports}

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  bash ci/install-deps.sh
fi
dm_build "$build_dir" distmetrics || exit "$DM_EXIT_SETUP"

dm_suite cpu "$build_dir/bin/distmetrics" run scenarios --backend gloo --world-sizes 1,2,4 "$@"
exit "$DM_SUITE_CODE"
