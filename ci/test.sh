#!/usr/bin/env bash
# The README's test command: installs what is missing (Debian packages, the peers venv),
# configures, builds, runs every test (GoogleTest suites and the pytest suite) through ctest, then
# the peer run (ci/run_peers.sh) over the real libraries.
#   BUILD_DIR (default build)   JOBS (default: number of cores)   CTEST_ARGS (extra ctest flags)
#   PEERS_ARGS (ci/run_peers.sh's selection; default --world-sizes 2)
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
# shellcheck disable=SC2086
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" ${CTEST_ARGS:-}
# The real libraries through conform (docs/peers.md): every mapped class on every scenario at world
# size 2 on gloo, the findings compared with peers/<library>/expected.toml, and every
# reproduction of peers/repro/ checked to still show its bug.
# shellcheck disable=SC2086
bash ci/run_peers.sh --skip-deps --build-dir "$build_dir" ${PEERS_ARGS:---world-sizes 2}
