#!/usr/bin/env bash
# `distmetrics explore` end to end (docs/explore.md): bad input is refused before anything runs;
# a seeded search finds the planted bug of examples/plugins/broken/sum_for_max.cpp (MAX reduced
# with SUM) and shrinks it the same way twice; the shrunk scenario validates and reproduces with
# `distmetrics conform`, and the correct example plugin passes it.
#   explore_cli_test.sh DISTMETRICS BROKEN_PLUGIN CORRECT_PLUGIN
set -euo pipefail
dm=$1 broken=$2 correct=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Bad input: exit 2 with a message naming the problem, before any rank starts.
expect_bad() {
  local want=$1; shift
  set +e; out=$("$dm" explore "$@" 2>&1); code=$?; set -e
  [[ $code == 2 ]] || fail "explore $* exited $code, not 2: $out"
  grep -q -- "$want" <<<"$out" || fail "explore $*: no '$want' in: $out"
}
expect_bad "did you mean 'MeanAbsoluteError'" --metric MeanAbsolutError --budget 5
expect_bad "no parameter 'sum_dtyp'" --metric MeanAbsoluteError --param sum_dtyp=float64 --budget 5
expect_bad "budget must be a positive" --metric MeanAbsoluteError --budget 0
expect_bad "is not a world size this machine's local pool can host" --metric MeanAbsoluteError --budget 5 --world-sizes 2,99
expect_bad "no metric 'Accuracy'" --plugin "$broken" --metric Accuracy --budget 5
expect_bad "no such file" --plugin "$work/none.so" --metric MeanAbsoluteError --budget 5

# The seeded search: a case count, not the clock, decides how far it goes.
search() {
  "$dm" explore --plugin "$broken" --metric MaximumAbsoluteError --budget 600 --max-cases 24 --seed 11 \
    --world-sizes 1,2,3 --save "$1" --json "$1/summary.json" --log "$1/cases.jsonl" --quiet >"$1/out.txt" 2>&1 || true
}
mkdir -p "$work/a" "$work/b"
search "$work/a"
search "$work/b"
cat "$work/a/out.txt"
python3 - "$work" <<'PY'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
a = json.loads((work / "a/summary.json").read_text())
b = json.loads((work / "b/summary.json").read_text())
assert a["cases"] == 24, a["cases"]
sigs = [f["signature"] for f in a["findings"]]
assert any("equal_to_single" in s for s in sigs), sigs
assert len(sigs) == len(set(sigs)), "a signature reported twice: %s" % sigs
# Deterministic: the same seed finds the same failures and shrinks them to the same scenarios.
assert [f["scenario"] for f in a["findings"]] == [f["scenario"] for f in b["findings"]]
# Every tried case is a line of the log.
lines = [json.loads(l) for l in (work / "a/cases.jsonl").read_text().splitlines()]
assert sum(1 for l in lines if l["phase"] == "search") == 24
assert all("scenario" in l for l in lines)
# The sum-for-max bug needs two ranks and one sample each at most: the shrunk case is that small.
f = next(f for f in a["findings"] if f["properties"] == ["equal_to_single"] and f["outcome"] == "fail")
assert f["shrunk_size"].startswith("world size 2,"), f["shrunk_size"]
samples = int(f["shrunk_size"].split(", ")[1].split()[0])
assert samples <= 4, f["shrunk_size"]
# Several world sizes, the first batch at 2 or 3 ranks (explore draws it distributed and small).
sizes = [k for k in a["coverage"] if k.startswith("world_size=")]
assert len(sizes) >= 2 and ("world_size=2" in sizes or "world_size=3" in sizes), a["coverage"]
print(f["saved"])
(work / "saved.txt").write_text(f["saved"])
PY
saved=$(cat "$work/saved.txt")
"$dm" validate "$saved" >/dev/null || fail "the shrunk scenario does not validate"
set +e; "$dm" conform --plugin "$broken" --metric MaximumAbsoluteError "$saved" --json "$work/repro.json" --quiet >/dev/null 2>&1; code=$?; set -e
[[ $code == 1 ]] || fail "conform of the shrunk scenario exited $code, not 1"
python3 - "$work/repro.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["variants"][0]
failed = [p["name"] for p in v["properties"] if p["outcome"] == "fail" and p["consequence_of"] is None]
assert v["outcome"] == "fail" and failed == ["equal_to_single"], (v["outcome"], failed)
PY
"$dm" conform --plugin "$correct" --metric MaximumAbsoluteError "$saved" --quiet >/dev/null || fail "the correct plugin fails the shrunk scenario"
echo "explore_cli: ok"
