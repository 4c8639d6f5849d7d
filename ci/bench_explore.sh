#!/usr/bin/env bash
# `distmetrics explore` against the examples (docs/explore.md), from no scenario file: each broken
# example (examples/python/broken/, examples/plugins/broken/) must be found, each correct one and
# each reference metric listed must show no failure. Prints time to first failure, the shrunk
# size, the search's variants/s, and the library run's variants/s beside it. Opt-in (`ci/bench.sh
# --explore`, or this script alone): a 60 s budget per example is about 20 minutes on 2 cores.
#   Usage: ci/bench_explore.sh [--budget SECONDS] [--build-dir DIR] [--seed N] [--only REGEX] [--no-library]
#   --only REGEX  only the rows whose name matches (e.g. 'python/broken')
#   --no-library  leave out the library run that gives the throughput to compare with
# Exit 0 when every row meets its expectation, 1 otherwise (a bench: printed, never a test).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
budget=60 build_dir="$root/build" seed=1 only="" library=1
while [ $# -gt 0 ]; do
  case $1 in
    --budget) budget=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --no-library) library=0; shift ;;
    *) echo "bench_explore: unknown option $1" >&2; exit 2 ;;
  esac
done
python=${DISTMETRICS_PYTHON:-/usr/bin/python3}
dm="$build_dir/bin/distmetrics"
plugins=(explore_no_sync explore_overwrite_state explore_raises_alone explore_state_not_saved explore_sum_for_max
         example_regression_metrics)
cmake --build "$build_dir" --target distmetrics "${plugins[@]}" >/dev/null || exit 5
so() { find "$build_dir" -name "lib$1.so" | head -1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

rows=()
# name | expectation (found|clean) | explore arguments
add() { rows+=("$1|$2|$3"); }
for f in "$root"/examples/python/broken/*.py; do
  metric=$(grep -o 'register("[A-Za-z]*"' "$f" | head -1 | cut -d'"' -f2)
  add "python/broken/$(basename "$f")" found "--python $f --metric $metric"
done
for f in "$root"/examples/python/correct_*.py; do
  for metric in $(grep -o 'register("[A-Za-z]*"' "$f" | cut -d'"' -f2 | sort -u); do
    add "python/$(basename "$f") $metric" clean "--python $f --metric $metric"
  done
done
for p in no_sync overwrite_state raises_alone state_not_saved sum_for_max; do
  metric=MeanAbsoluteError; [ $p = sum_for_max ] && metric=MaximumAbsoluteError
  add "plugins/broken/$p" found "--plugin $(so explore_$p) --metric $metric"
done
for metric in MeanAbsoluteError MaximumAbsoluteError; do
  add "plugins/correct $metric" clean "--plugin $(so example_regression_metrics) --metric $metric"
done
for metric in MeanAbsoluteError Accuracy Precision RocAuc MeanSquaredError R2Score; do
  add "reference $metric" clean "--metric $metric"
done

met=0 total=0
printf '%-44s %-6s %-7s %9s %-46s %8s %7s\n' example want got first_s "shrunk to" "var/s" total_s
for row in "${rows[@]}"; do
  IFS='|' read -r name want args <<<"$row"
  [[ -n "$only" && ! "$name" =~ $only ]] && continue
  total=$((total + 1))
  json="$out/$total.json"
  # shellcheck disable=SC2086
  "$dm" explore $args --budget "$budget" --seed "$seed" --json "$json" --quiet >"$out/$total.log" 2>&1
  read -r got first shrunk rate took < <("$python" - "$json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("error - - - -"); sys.exit()
f = r["findings"]
got = "found" if f else "clean"
first = "%.1f" % min(x["found_after_seconds"] for x in f) if f else "-"
shrunk = f[0]["shrunk_size"].replace(" ", "_") if f else "-"
print(got, first, shrunk, "%.1f" % r["variants_per_second"], "%.1f" % r["seconds"])
PY
)
  [ "$got" = "$want" ] && met=$((met + 1))
  printf '%-44s %-6s %-7s %9s %-46s %8s %7s\n' "$name" "$want" "$got" "$first" "${shrunk//_/ }" "$rate" "$took"
  if [ "$got" != "$want" ]; then
    echo "    (see the log: $(tail -3 "$out/$total.log" | tr '\n' ' '))"
  fi
done

# The library run's throughput, for the bar "search throughput >= the library run's variants/s".
[ "$library" = 1 ] && "$dm" run "$root/scenarios/core" --world-sizes 1,2,3,4 --json "$out/library.json" --quiet >/dev/null 2>&1
[ "$library" = 1 ] && "$python" - "$out/library.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n = len(r["variants"])
s = r.get("seconds") or r.get("summary", {}).get("seconds") or 0
print("library run (scenarios/core, ws 1-4): %d variants in %.1f s: %.1f variants/s" % (n, s, n / s if s else 0))
PY
echo "bench_explore: $met of $total rows as expected"
[ "$met" = "$total" ]
