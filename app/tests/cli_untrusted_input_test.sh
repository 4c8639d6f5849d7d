#!/usr/bin/env bash
# What a scenario file, its name or a flag can make `distmetrics` do (issue 12):
# - a metric "Name@/path/lib.so" in a scenario loads nothing unless that plugin was given with
#   --plugin: validate, list and run say so with file, line and field and exit 2 (never abort);
# - the reproduce line (console, JSON, JUnit) pasted into a shell runs nothing else, however
#   hostile the scenario's path, and reproduces the failure;
# - --deadline takes only a sane number of seconds (exit 2 at parse time).
#   cli_untrusted_input_test.sh BIN CANARY_SO PLUGIN_SO PYTHON
set -euo pipefail
bin=$1
canary=$2
plugin=$3
python=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export DISTMETRICS_CANARY_MARK="$tmp/canary-was-loaded"

# scenario FILE METRIC
scenario() {
  cat > "$1" <<TOML
description = "untrusted input"
[metric]
name = "$2"
[data]
generator = "values"
seed = 1
num_samples = 20
batch_size = 3
[variants]
world_sizes = [2]
backends = ["gloo"]
TOML
}

# expect CODE_WANTED TEXT... -- COMMAND...: exit code and each text in stderr+stdout.
expect() {
  local want=$1; shift
  local texts=()
  while [ "$1" != "--" ]; do texts+=("$1"); shift; done
  shift
  local rc=0
  "$@" > out.txt 2>&1 || rc=$?
  [ "$rc" = "$want" ] || { cat out.txt; fail "$* : exit $rc, wanted $want"; }
  for t in "${texts[@]}"; do grep -qF -- "$t" out.txt || { cat out.txt; fail "$* : no '$t' in the output"; }; done
}

# 1. Plugins named by a scenario.
printf 'not an ELF file\n' > not-an-elf.so
for named in "$canary" "$tmp/missing.so" "$tmp/not-an-elf.so"; do
  scenario named.toml "Average@$named"
  for command in validate list run; do
    expect 2 "named.toml:3" "metric.name" "not given with --plugin" -- "$bin" $command named.toml
  done
done
[ ! -e "$DISTMETRICS_CANARY_MARK" ] || fail "a scenario file made distmetrics load a library"
# Given with --plugin, a metric the plugin lacks is a clean error too.
scenario lacking.toml "NoSuchMetric@$plugin"
expect 2 "lacking.toml:3" "metric.name" "has no metric 'NoSuchMetric'" -- "$bin" conform --plugin "$plugin" lacking.toml
echo "plugins named by scenarios: ok"

# 2. The reproduce line, with a hostile path. The variant fails on purpose (an expected failure
#    that never happens), so that every report carries the line.
hostile="$tmp/it's a \$(touch PWNED1) \`touch PWNED2\` \"dir\"; touch PWNED3"
mkdir -p "$hostile"
scenario "$hostile/held.toml" Average
cat >> "$hostile/held.toml" <<'TOML'
[expect]
fail = ["ranks_agree"]
reason = "it never fails: this scenario has a failure to reproduce"
TOML
expect 1 "FAIL" -- "$bin" run "$hostile/held.toml" --json report.json --junit report.xml --deadline 30
cp out.txt console.txt
mkdir -p shim
printf '#!/bin/sh\nexec "%s" "$@"\n' "$bin" > shim/distmetrics
chmod +x shim/distmetrics
"$python" - console.txt report.json report.xml > lines.txt <<'PY'
import json, sys, xml.etree.ElementTree as ET
console, report, junit = sys.argv[1:]
lines = [l.split("reproduce: ", 1)[1].rstrip("\n") for l in open(console) if "reproduce: " in l]
lines += [v["reproduce"] for v in json.load(open(report))["variants"] if v.get("reproduce")]
for failure in ET.parse(junit).iter("failure"):
    lines += [l.split("reproduce: ", 1)[1] for l in failure.text.splitlines() if "reproduce: " in l]
assert len(lines) >= 3, lines  # at least one from each report
print("\n".join(sorted(set(lines))))  # each distinct line pasted once
PY
while IFS= read -r line; do
  rc=0
  PATH="$tmp/shim:$PATH" sh -c "$line" > again.txt 2>&1 || rc=$?
  [ "$rc" = 1 ] || { cat again.txt; fail "the pasted line exited $rc, not 1: $line"; }
  grep -q "FAIL .*held" again.txt || { cat again.txt; fail "the pasted line did not reproduce the failure: $line"; }
  grep -q "1 failed" again.txt || { cat again.txt; fail "the pasted line ran more than the variant: $line"; }
done < lines.txt
for mark in PWNED1 PWNED2 PWNED3; do
  [ ! -e "$mark" ] && [ ! -e "$hostile/$mark" ] || fail "pasting a reproduce line ran '$mark'"
done
echo "reproduce lines: ok ($(wc -l < lines.txt) distinct line(s) pasted)"

# 3. Deadlines.
for bad in inf nan 1e308 1e-9 -1 abc; do
  expect 2 "is not a deadline" -- "$bin" run "$hostile/held.toml" --deadline "$bad"
done
expect 2 "is not a deadline" -- "$bin" conform --plugin "$plugin" --deadline inf
echo "deadlines: ok"
