#!/usr/bin/env bash
# The Open MPI CI job: builds as ci/run_cpu.sh does, then runs the scenario suite under mpirun
# at 2 and 4 ranks (oversubscribed, so 4 ranks run on 2 cores; allowed as root), one
# `distmetrics run --launcher mpi` per size, with reports build/reports/mpi-np<N>.{json,xml}.
# Exits with the highest-priority code of the runs (2 > 4 > 3 > 1 > 0, as the CLI's; 5 when the
# build failed).
#   Usage: ci/run_mpi.sh [extra `distmetrics run` arguments]
#   BUILD_DIR (build)  JOBS (cores)  REPORTS_DIR (BUILD_DIR/reports)  SKIP_DEPS=1
#   MPI_SIZES ("2 4")  MPI_BACKENDS (mpi: the backends run under mpirun)  MPIRUN (mpirun)
#   DM_DRY_RUN=1 (print the build and run commands, run none)
set -euo pipefail
DM_JOB=run_mpi  # read by ci/lib.sh
# shellcheck source=ci/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$DM_ROOT"

build_dir=${BUILD_DIR:-build}
export REPORTS_DIR=${REPORTS_DIR:-$build_dir/reports}
# CI runs as root, which Open MPI refuses unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  bash ci/install-deps.sh
fi
dm_build "$build_dir" distmetrics || exit "$DM_EXIT_SETUP"

codes=()
for np in ${MPI_SIZES:-2 4}; do
  dm_suite "mpi-np$np" "${MPIRUN:-mpirun}" -np "$np" --oversubscribe \
    "$build_dir/harness/distmetrics" run scenarios --launcher mpi \
    --backend "${MPI_BACKENDS:-mpi}" --world-sizes "$np" "$@"
  codes+=("$DM_SUITE_CODE")
done
code=$(dm_worst_code "${codes[@]}")
dm_say "exit code $code (per size: ${codes[*]})"
exit "$code"
