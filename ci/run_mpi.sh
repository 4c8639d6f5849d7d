#!/usr/bin/env bash
# The Open MPI CI job: builds as ci/run_cpu.sh does, then runs the scenario suite on the mpi
# backend at 2 and 4 ranks, oversubscribed (4 ranks run on 2 cores) and allowed as root, one
# `distmetrics run` per size, with reports build/reports/mpi-np<N>.{json,xml}.
# Exits with the highest-priority code of the runs (2 > 4 > 3 > 1 > 0, as the CLI's; 5 when the
# build failed).
#
# Two ways to start the ranks (MPI_LAUNCH):
#   mpirun  (default) this script runs `mpirun -np N --oversubscribe distmetrics run --launcher mpi`:
#           every rank is a runner, rank 0 reports; a hang ends the run after it is reported;
#   local   the runner's supervised rank pool starts them as `mpiexec -np N --oversubscribe`
#           itself, ends them by pid on a hang, respawns, and goes on with the next variant.
#
#   Usage: ci/run_mpi.sh [extra `distmetrics run` arguments]
#   BUILD_DIR (build)  JOBS (cores)  REPORTS_DIR (BUILD_DIR/reports)  SKIP_DEPS=1
#   MPI_SIZES ("2 4")  MPI_LAUNCH (mpirun)  MPIRUN (mpirun)
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

launch=${MPI_LAUNCH:-mpirun}
case "$launch" in
  local | mpirun) ;;
  *) dm_fail "MPI_LAUNCH must be local or mpirun, got '$launch'"; exit "$DM_EXIT_BAD_INPUT" ;;
esac

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  bash ci/install-deps.sh
fi
dm_build "$build_dir" distmetrics || exit "$DM_EXIT_SETUP"

runner=$build_dir/bin/distmetrics
codes=()
for np in ${MPI_SIZES:-2 4}; do
  if [ "$launch" = mpirun ]; then
    dm_suite "mpi-np$np" "${MPIRUN:-mpirun}" -np "$np" --oversubscribe \
      "$runner" run scenarios --launcher mpi --backend mpi --world-sizes "$np" "$@"
  else
    dm_suite "mpi-np$np" "$runner" run scenarios --backend mpi --world-sizes "$np" "$@"
  fi
  codes+=("$DM_SUITE_CODE")
done
code=$(dm_worst_code "${codes[@]}")
dm_say "exit code $code (per size: ${codes[*]})"
exit "$code"
