#!/usr/bin/env bash
# The README's test command: installs what is missing (Debian packages, the peers venv),
# configures, builds, runs every test (GoogleTest suites and the pytest suite) through ctest, then
# the whole peer run and the reproductions of the real libraries' bugs (ci/run_peers.sh).
#   BUILD_DIR (default build)   JOBS (default: number of cores)   CTEST_ARGS (extra ctest flags)
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh
# The real metric libraries (torchmetrics, Ignite, torcheval) in a venv outside the clone, reused
# while peers/requirements-torch1.13.txt is unchanged: the pyhost_peers tests and the peer run use it.
bash peers/venv.sh

build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$jobs"
# The multi-host tests (ctest launch_multihost, label multihost) need network namespaces (root,
# iproute2); where this machine has none the test skips itself, and here is why.
if why=$(bash ci/hosts.sh check); then echo "test.sh: multi-host tests run (network namespaces work here)"
else echo "test.sh: multi-host tests skipped: $why"; fi
# shellcheck disable=SC2086
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" ${CTEST_ARGS:-}
# The real libraries: the whole peer run (every mapped class over the scenario library at world
# sizes 1-4, about 5 minutes on 2 cores), its findings compared with peers/<library>/expected.toml,
# then the reproductions of peers/repro/ (torch.distributed and each library alone, no
# distmetrics): each must still show its bug.
bash ci/run_peers.sh --skip-deps --build-dir "$build_dir"
