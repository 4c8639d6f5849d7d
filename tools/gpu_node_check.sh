#!/usr/bin/env bash
# What a one-GPU node shows, in one command (docs/gpu.md, "On a one-GPU node"): the machine (GPU,
# compiler, torch), the threads each import starts (a thread in the supervisor keeps rank workers
# from being forked with the sources imported: docs/runtime.md), then ci/run_2gpu.sh --min-gpus 1
# built against the node's CUDA torch with the three peer libraries on scenarios/devices, then the
# start-up of the command. Everything it prints goes to OUT/node-check.log and the reports to
# OUT/reports.tar.xz (OUT default: build-2gpu/node-check).
#
#   tools/gpu_node_check.sh [--deps-dir DIR] [--wheels DIR]
#     --deps-dir DIR   header-only dependencies, as ci/run_2gpu.sh --deps-dir (a node without Debian's packages)
#     --wheels DIR     wheels to put on PYTHONPATH first (pytorch-ignite, torcheval where the node lacks them)
# Environment: PYTHON (python3), SUITE_TIMEOUT (120 s per run), RUN_2GPU_TIMEOUT (400 s in all).
set -u -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps_dir="" wheels=""
while [ $# -gt 0 ]; do
  case "$1" in
    --deps-dir) deps_dir=$2; shift ;;
    --wheels) wheels=$2; shift ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "tools/gpu_node_check.sh: unknown argument '$1' (--deps-dir, --wheels, --help)" >&2; exit 2 ;;
  esac
  shift
done
cd "$root"
out=${OUT:-$root/build-2gpu/node-check}
mkdir -p "$out"
python=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
exec > >(tee -a "$out/node-check.log") 2>&1
t0=$(date +%s)
step() { echo "=== [$(($(date +%s) - t0))s] $*"; }

step machine
nproc
nvidia-smi -L || echo "no nvidia-smi"
g++ --version | head -1
cmake --version | head -1
"$python" -c 'import torch, sys; print(sys.executable, "torch", torch.__version__, "CUDA", torch.version.cuda, "GPUs", torch.cuda.device_count())'
env | grep -E '^(OMP|OPENBLAS|MKL|GOTO|BLIS)_' || echo "no thread-pool variables set"
if [ -n "$wheels" ]; then
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpu-node-check-site "$wheels"/*.whl &&
    export PYTHONPATH=/tmp/gpu-node-check-site${PYTHONPATH:+:$PYTHONPATH}
fi

step "threads after each import"
"$python" - <<'PY'
import importlib.metadata as md
import os
import time

def threads():
    names = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            name = f.read().strip()
        names[name] = names.get(name, 0) + 1
    return names

for module in ("numpy", "torch", "torch.distributed", "torchmetrics", "ignite", "torcheval"):
    start = time.time()
    try:
        __import__(module)
    except ImportError as e:
        print(f"{module:18s} not importable: {e}")
        continue
    print(f"{module:18s} {time.time() - start:6.2f} s, threads {threads()}")
for package in ("torchmetrics", "pytorch-ignite", "torcheval", "numpy"):
    try:
        print(package, md.version(package))
    except md.PackageNotFoundError:
        print(package, "not installed")
PY

step "ci/run_2gpu.sh --min-gpus 1, the three peer libraries on scenarios/devices"
export SUITE_TIMEOUT=${SUITE_TIMEOUT:-120}
deps=()
[ -n "$deps_dir" ] && deps=(--deps-dir "$deps_dir")
timeout -k 10 "${RUN_2GPU_TIMEOUT:-400}" bash ci/run_2gpu.sh --min-gpus 1 "${deps[@]}" \
  --python peers/torchmetrics/metrics.py --python peers/ignite/metrics.py --python peers/torcheval/metrics.py \
  --conform-scenarios scenarios/devices
echo "ci/run_2gpu.sh: exit $?"

step "start-up of the command"
TIMEFORMAT="%R s"
for _ in 1 2 3; do
  echo -n "--version: "
  { time build-2gpu/bin/distmetrics --version >/dev/null; } 2>&1
done
echo -n "run of scenarios/core/mean_absolute_error.toml, world size 2, even shards: "
{ time build-2gpu/bin/distmetrics run scenarios/core/mean_absolute_error.toml --world-sizes 2 --shard even \
    --quiet >"$out/startup-run.txt" 2>&1; } 2>&1
tail -n 1 "$out/startup-run.txt"

step reports
tar -C build-2gpu/reports -cJf "$out/reports.tar.xz" . && ls -la "$out"
step done
