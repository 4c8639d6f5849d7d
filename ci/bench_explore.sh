#!/usr/bin/env bash
# `distmetrics explore` against the examples (docs/explore.md), from no scenario file: each broken
# example (examples/python/broken/, examples/plugins/broken/) must be found, each correct one and
# each reference metric listed must show no failure. Prints time to first failure, the shrunk
# size, the search's variants/s over the whole run, and, kind by kind (reference, plugin, Python),
# the library run's variants/s beside the search's median (`run` or `conform` over scenarios/).
# Opt-in (`ci/bench.sh --explore`, or this script alone): 60 s per row is about 25 minutes here.
#   Usage: ci/bench_explore.sh [--budget SECONDS] [--build-dir DIR] [--seed N] [--only REGEX] [--no-library] [--world-sizes LIST]
#   --only REGEX  only the rows whose name matches (e.g. 'python/broken')
#   --no-library  leave out the library run that gives the throughput to compare with
#   --world-sizes LIST  explore's world sizes (default: its own, 1 to 8); a variant's cost grows
#                 with its world size past the machine's cores, so the throughput line gives each
#                 side's mean world size, and `--world-sizes 1,2,4` compares at the library's
# Exit 0 when every row meets its expectation, 1 otherwise (a bench: printed, never a test).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
budget=60 build_dir="$root/build" seed=1 only="" library=1 sizes=()
while [ $# -gt 0 ]; do
  case $1 in
    --budget) budget=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --no-library) library=0; shift ;;
    --world-sizes) sizes=(--world-sizes "$2"); shift 2 ;;
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
  metric=$(grep -oE '(register|metric)\("[A-Za-z]*"' "$f" | head -1 | cut -d'"' -f2)
  add "python/broken/$(basename "$f")" found "--python $f --metric $metric"
done
for f in "$root"/examples/python/correct_*.py; do
  for metric in $(grep -oE '(register|metric)\("[A-Za-z]*"' "$f" | cut -d'"' -f2 | sort -u); do
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

met=0 total=0 rates=()
printf '%-44s %-6s %-7s %9s %-46s %8s %7s\n' example want got first_s "shrunk to" "var/s" total_s
for row in "${rows[@]}"; do
  IFS='|' read -r name want args <<<"$row"
  [[ -n "$only" && ! "$name" =~ $only ]] && continue
  total=$((total + 1))
  json="$out/$total.json"
  # shellcheck disable=SC2086
  "$dm" explore $args "${sizes[@]}" --budget "$budget" --seed "$seed" --json "$json" --quiet >"$out/$total.log" 2>&1
  read -r got first shrunk rate took mean_ws < <("$python" - "$json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("error - - - - -"); sys.exit()
f = r["findings"]
got = "found" if f else "clean"
first = "%.1f" % min(x["found_after_seconds"] for x in f) if f else "-"
shrunk = f[0]["shrunk_size"].replace(" ", "_") if f else "-"
# The mean world size of the cases tried (coverage: "world_size=3" -> cases).
sizes = {int(k.split("=")[1]): n for k, n in r.get("coverage", {}).items() if k.startswith("world_size=")}
mean = sum(w * n for w, n in sizes.items()) / sum(sizes.values()) if sizes else float("nan")
print(got, first, shrunk, "%.1f" % r["variants_per_second"], "%.1f" % r["seconds"], "%.2f" % mean)
PY
)
  [ "$got" = "$want" ] && met=$((met + 1))
  kind=reference; [[ $name == plugins/* ]] && kind=plugin; [[ $name == python/* ]] && kind=python
  [ "$rate" != "-" ] && rates+=("$kind=$rate=$mean_ws")
  printf '%-44s %-6s %-7s %9s %-46s %8s %7s\n' "$name" "$want" "$got" "$first" "${shrunk//_/ }" "$rate" "$took"
  if [ "$got" != "$want" ]; then
    echo "    (see the log: $(tail -3 "$out/$total.log" | tr '\n' ' '))"
  fi
done

# The library runs' throughput, for the bar "search throughput >= the library run's variants/s",
# kind by kind: `run` over scenarios/ for the reference metrics, `conform` over scenarios/ for the
# correct plugin and a correct Python source (their variants that ran: skips take no time).
if [ "$library" = 1 ]; then
  "$dm" run "$root/scenarios" --json "$out/library_reference.json" --quiet >/dev/null 2>&1
  "$dm" conform --plugin "$(so example_regression_metrics)" "$root/scenarios" --json "$out/library_plugin.json" --quiet >/dev/null 2>&1
  "$dm" conform --python "$root/examples/python/correct_torchmetrics.py" "$root/scenarios" --json "$out/library_python.json" \
    --quiet >/dev/null 2>&1
  "$python" - "$out" "${rates[@]}" <<'PY'
import json, sys, statistics
out, rows = sys.argv[1], sys.argv[2:]
search, search_ws = {}, {}
for r in rows:  # kind=rate=mean world size
    kind, rate, ws = r.split("=")
    search.setdefault(kind, []).append(float(rate))
    search_ws.setdefault(kind, []).append(float(ws))
for kind, what in (("reference", "run scenarios/"), ("plugin", "conform --plugin correct scenarios/"),
                   ("python", "conform --python correct_torchmetrics.py scenarios/")):
    if kind not in search:
        continue  # no row of this kind ran (--only): nothing to compare
    try:
        r = json.load(open("%s/library_%s.json" % (out, kind)))
    except Exception as e:
        print("library %-9s (%s): no report (%s)" % (kind, what, e)); continue
    ran = [v for v in r["variants"] if v.get("outcome") != "skip"]
    s = r.get("seconds") or r.get("summary", {}).get("seconds") or 0
    lib = len(ran) / s if s else 0
    lib_ws = statistics.mean(v["world_size"] for v in ran) if ran else float("nan")
    mine, mine_ws = statistics.median(search[kind]), statistics.mean(search_ws[kind])
    print("library %-9s (%s): %d variants run in %.1f s: %.1f variants/s at a mean world size of %.2f; explore's "
          "median over its rows: %.1f variants/s at %.2f (%s)" % (kind, what, len(ran), s, lib, lib_ws, mine, mine_ws,
                                                                 "met" if mine >= lib else "NOT met"))
PY
fi
echo "bench_explore: $met of $total rows as expected"
[ "$met" = "$total" ]
