#!/usr/bin/env bash
# The Open MPI CI job: builds as ci/run_cpu.sh does, then runs the scenario suite on the mpi
# backend at 2 and 4 ranks, oversubscribed (4 ranks run on 2 cores) and allowed as root, one
# `distmetrics run` per size, with reports build/reports/mpi-np<N>.{json,xml}. `--help` for the
# options and the two ways it starts the ranks.
set -euo pipefail
DM_JOB=run_mpi  # read by ci/lib.sh
# shellcheck source=ci/lib.sh
source "$(dirname "$0")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ci/run_mpi.sh [options] [extra `distmetrics run` arguments]

Installs the Debian packages of this job that are missing (ci/install-deps.sh: the command's
sets and mpi), builds distmetrics (in BUILD_DIR), then runs the scenarios on the mpi backend,
oversubscribed and allowed as root:
  at each size N of MPI_SIZES (2 4)   -> REPORTS_DIR/mpi-np<N>.{json,xml}

Two ways to start the ranks (MPI_LAUNCH):
  mpirun  (default) `mpirun -np N --oversubscribe distmetrics run --launcher mpi`: every rank is
          a runner, rank 0 reports; a hang ends the run after it is reported;
  local   the runner's supervised rank pool starts them as `mpiexec -np N --oversubscribe`
          itself, ends them by pid on a hang, respawns, and goes on with the next variant.

Options:
  --dry-run          print the commands instead of running them (installs and builds nothing);
                     on a machine without mpirun it then says the job would skip
  --torch 2|1.13     the LibTorch: 2 (default: PyTorch 2.x from pip, in the venv that
                     ci/torch2-venv.sh makes or reuses) or 1.13 (Debian's libtorch-dev); also TORCH
  --build-dir DIR    build folder (default: $BUILD_DIR, else build for torch 2, build-torch1.13 for 1.13)
  --reports-dir DIR  reports folder (default: $REPORTS_DIR, else BUILD_DIR/reports)
  --skip-deps        leave out ci/install-deps.sh (also SKIP_DEPS=1)
  -h, --help         this text
  --                 everything after it goes to `distmetrics run`

Environment: MPI_SIZES ("2 4"), MPI_LAUNCH (mpirun), MPIRUN (mpirun), JOBS (cores),
  SUITE_TIMEOUT (3000 s per run), DM_DRY_RUN=1 (as --dry-run).

Exit codes: the highest-priority code of the runs (2 > 4 > 6 > 3 > 1 > 0, as the CLI's); 5 setup
  failed (configure or build); 77 skipped: no mpirun on this machine, nothing was run.
USAGE
}

dm_parse_suite_args "$@"
cd "$DM_ROOT"
export REPORTS_DIR=${reports_dir:-$build_dir/reports}
# CI runs as root, which Open MPI refuses unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

launch=${MPI_LAUNCH:-mpirun}
case "$launch" in
  local | mpirun) ;;
  *) dm_fail "MPI_LAUNCH must be local or mpirun, got '$launch'"; exit "$DM_EXIT_BAD_INPUT" ;;
esac

if [ "$skip_deps" != 1 ]; then
  # shellcheck disable=SC2046
  dm_run bash ci/install-deps.sh $(dm_torch_sets "$torch") mpi
fi
dm_torch_setup "$torch" || exit "$DM_EXIT_SETUP"
dm_build "$build_dir" distmetrics "${DM_TORCH_CMAKE_ARGS[@]}" || exit "$DM_EXIT_SETUP"

# The hardware of this job is an MPI launcher. A dry run prints its commands first.
launcher_tool=${MPIRUN:-mpirun}
if [ "$launch" = local ]; then
  launcher_tool=mpiexec
fi
missing=
if ! command -v "$launcher_tool" > /dev/null 2>&1; then
  missing="no $launcher_tool on this machine (Debian: openmpi-bin, which ci/install-deps.sh installs)"
  if [ "$DM_DRY_RUN" != 1 ]; then
    dm_skip "$missing"
  fi
fi

runner=$build_dir/bin/distmetrics
codes=()
for np in ${MPI_SIZES:-2 4}; do
  if [ "$launch" = mpirun ]; then
    dm_suite "mpi-np$np" "${MPIRUN:-mpirun}" -np "$np" --oversubscribe \
      "$runner" run scenarios --launcher mpi --backend mpi --world-sizes "$np" "${run_args[@]}"
  else
    dm_suite "mpi-np$np" "$runner" run scenarios --backend mpi --world-sizes "$np" "${run_args[@]}"
  fi
  codes+=("$DM_SUITE_CODE")
done
if [ "$DM_DRY_RUN" = 1 ]; then
  if [ -n "$missing" ]; then
    dm_skip "$missing"
  fi
  dm_say "dry run: nothing was installed, built or run"
  exit 0
fi
code=$(dm_worst_code "${codes[@]}")
dm_say "exit code $code (per size: ${codes[*]})"
exit "$code"
