#!/usr/bin/env bash
# The README's test command: installs what is missing, configures, builds, and runs every test
# (GoogleTest suites and the pytest suite) through ctest.
#   BUILD_DIR (default build)   JOBS (default: number of cores)   CTEST_ARGS (extra ctest flags)
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh

build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$jobs"
# shellcheck disable=SC2086
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" ${CTEST_ARGS:-}
