#!/usr/bin/env bash
# Fuzzes the scenario parser for longer than CI does (ctest runs 20 s with a fixed seed).
#   tools/fuzz_scenarios.sh [SECONDS] [SEED] [BUILD_DIR]
# New crashers are written to harness/tests/scenarios/fuzz/ as crash-<hash>.toml: keep them
# (commit them) once the parser is fixed; they are loaded first by every later run. An input
# that killed the process is left there as current.toml.
set -euo pipefail
seconds=${1:-600}
seed=${2:-$(date +%s)}
build=${3:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
cmake --build "$build" --target scenario_fuzz
out="$root/harness/tests/scenarios/fuzz"
rc=0
bin=$(find "$build" -name scenario_fuzz -type f -perm -u+x | head -n 1)
"$bin" --corpus "$root/scenarios" --corpus "$root/harness/tests/scenarios/bad" \
  --regressions "$out" --crashers "$out" --keep-current 1 --seconds "$seconds" --seed "$seed" || rc=$?
if [ "$rc" -gt 1 ]; then
  echo "fuzz_scenarios: the fuzzer died (exit $rc): the input that killed it is $out/current.toml; rename it crash-<something>.toml to keep it"
else
  rm -f "$out/current.toml"
fi
exit "$rc"
