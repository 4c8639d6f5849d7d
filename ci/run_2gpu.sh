#!/usr/bin/env bash
# The 2-GPU job: builds distmetrics against a CUDA LibTorch in its own build folder, checks that
# the node has at least 2 GPUs, runs the nccl backend at world size 2 with every placement and
# the gloo backend with CUDA tensors, and writes JSON and JUnit reports. See docs/gpu.md.
set -euo pipefail
DM_JOB=run_2gpu  # read by ci/lib.sh
# shellcheck source=ci/lib.sh
source "$(dirname "$0")/lib.sh"

usage() {
  cat <<'USAGE'
Usage: ci/run_2gpu.sh [options] [-- extra `distmetrics run` arguments]

Builds distmetrics against a CUDA LibTorch (in build-2gpu/), checks for at least 2 GPUs, then runs
  nccl at world size 2, every placement      -> REPORTS_DIR/2gpu-nccl.{json,xml}
  gloo at world size 2 with CUDA tensors     -> REPORTS_DIR/2gpu-gloo-cuda.{json,xml}
and with --plugin or --python, `distmetrics conform` of that plugin or Python source on both
                                             -> REPORTS_DIR/2gpu-conform-{nccl,gloo-cuda}.{json,xml}

Options:
  --dry-run          check the machine (GPUs, LibTorch), then print the commands instead of
                     running them; on a machine with too few GPUs it prints them too, then
                     says it would skip (exit 77)
  --build-dir DIR    build folder (default: build-2gpu)
  --reports-dir DIR  reports folder (default: BUILD_DIR/reports)
  --torch-dir DIR    folder of a CUDA LibTorch's TorchConfig.cmake (default: $Torch_DIR, else the
                     CMake prefix path of the torch package of $PYTHON); must exist
  --plugin PATH      also check this plugin (lib<name>.so, built against this build) with
                     `distmetrics conform` on the GPUs; must exist
  --python SOURCE    or check these Python metrics (pkg.module:factory, pkg.module or file.py;
                     docs/python.md) with `distmetrics conform --python` on the GPUs; may be
                     given several times (the three peer libraries: peers/*/metrics.py)
  --conform-scenarios PATH
                     the scenario files or folders conform checks (default: scenarios); may be
                     given several times, e.g. scenarios/devices for the device placements only
  --deps-dir DIR     prefix holding include/ (nlohmann/json, toml++, CLI11) and googletest/ for
                     a node without those packages (default: $DISTMETRICS_DEPS_DIR)
  --min-gpus N       GPUs required (default 2); with 1, a one-GPU node runs what fits on it
                     (nccl at world sizes 1 and 2, gloo with CUDA tensors; the CLI skips variants
                     that need 2 GPUs)
  --skip-build       use the existing build in the build folder
  --with-tests       also build the GoogleTest and pytest suites and run ctest
  -h, --help         this text

Environment: PYTHON (python3), JOBS (cores), SUITE_TIMEOUT (3000 s per run),
  GLOO_CUDA_PLACEMENTS (the placements that put gloo's tensors on a GPU:
  cuda,cuda0,cpu_state_cuda_input,mixed),
  DISTMETRICS_GPU_COUNT (use this GPU count instead of asking nvidia-smi or torch).

Exit codes: 0 all passed; 1 a property failed (or a metric raised); 2 bad input (scenario files,
  flags, or this script's arguments); 3 a hang; 4 a crash; 5 setup failed (no CUDA LibTorch,
  configure or build failed); 6 a rank went past its memory limit;
  77 skipped: fewer GPUs than --min-gpus, nothing was run.
  When several runs end differently, the highest-priority code wins: 2 > 4 > 6 > 3 > 1.
USAGE
}

build_dir=build-2gpu
reports_dir=
torch_dir=${Torch_DIR:-}
deps_dir=${DISTMETRICS_DEPS_DIR:-}
min_gpus=2
skip_build=0
with_tests=0
plugin=
python_sources=()
conform_scenarios=()
run_args=()

while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dry-run) DM_DRY_RUN=1 ;;
    --build-dir) dm_need_value "$@"; build_dir=$2; shift ;;
    --reports-dir) dm_need_value "$@"; reports_dir=$2; shift ;;
    --torch-dir) dm_need_value "$@"; torch_dir=$2; shift ;;
    --deps-dir) dm_need_value "$@"; deps_dir=$2; shift ;;
    --plugin) dm_need_value "$@"; plugin=$2; shift ;;
    --python) dm_need_value "$@"; python_sources+=("$2"); shift ;;
    --conform-scenarios) dm_need_value "$@"; conform_scenarios+=("$2"); shift ;;
    --min-gpus)
      dm_need_value "$@"
      if ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
        dm_fail "--min-gpus wants a positive whole number, got '$2'"
        exit "$DM_EXIT_BAD_INPUT"
      fi
      min_gpus=$2; shift ;;
    --skip-build) skip_build=1 ;;
    --with-tests) with_tests=1 ;;
    --) shift; run_args=("$@"); break ;;
    *) dm_fail "unknown argument '$1' (see --help)"; exit "$DM_EXIT_BAD_INPUT" ;;
  esac
  shift
done
# What `conform` checks on the GPUs: a plugin or a Python source, not both.
conform_source=()
if [ -n "$plugin" ] && [ ${#python_sources[@]} -gt 0 ]; then
  dm_fail "give --plugin or --python, not both"
  exit "$DM_EXIT_BAD_INPUT"
fi
if [ -n "$plugin" ]; then
  if [ ! -f "$plugin" ]; then
    dm_fail "--plugin $plugin: no such file (the plugin's shared library, lib<name>.so)"
    exit "$DM_EXIT_BAD_INPUT"
  fi
  plugin=$(cd "$(dirname "$plugin")" && pwd)/${plugin##*/}
  conform_source=(--plugin "$plugin")
fi
for python_source in "${python_sources[@]}"; do
  python_file=${python_source%%:*}
  if [[ $python_file == *.py ]]; then  # a file: absolute, since the runs start in the repository
    if [ ! -f "$python_file" ]; then
      dm_fail "--python $python_source: no such file"
      exit "$DM_EXIT_BAD_INPUT"
    fi
    python_source=$(cd "$(dirname "$python_file")" && pwd)/${python_source##*/}
  fi
  conform_source+=(--python "$python_source")
done
for i in "${!conform_scenarios[@]}"; do  # absolute, as the Python files above
  path=${conform_scenarios[$i]}
  if [ ! -e "$path" ]; then
    dm_fail "--conform-scenarios $path: no such file or folder"
    exit "$DM_EXIT_BAD_INPUT"
  fi
  conform_scenarios[$i]=$(cd "$(dirname "$path")" && pwd)/${path##*/}
done
[ ${#conform_scenarios[@]} -gt 0 ] || conform_scenarios=(scenarios)
cd "$DM_ROOT"
python=${PYTHON:-python3}
export REPORTS_DIR=${reports_dir:-$build_dir/reports}

# --- GPUs: nvidia-smi, else torch; CUDA_VISIBLE_DEVICES narrows what the ranks can see ----------
# Sets gpus and gpu_source (where the number came from).
count_gpus() {
  local count
  if [ -n "${DISTMETRICS_GPU_COUNT:-}" ]; then
    count=$DISTMETRICS_GPU_COUNT gpu_source="DISTMETRICS_GPU_COUNT"
  elif command -v nvidia-smi >/dev/null 2>&1; then
    if count=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | grep -c '[0-9]'); then
      gpu_source="nvidia-smi"
    else
      count=0 gpu_source="nvidia-smi, which found no GPU or no driver"
    fi
  elif count=$("$python" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null); then
    gpu_source="torch.cuda.device_count() of $python"
  else
    count=0 gpu_source="no nvidia-smi, and $python has no torch"
  fi
  if [ "${CUDA_VISIBLE_DEVICES+set}" = set ]; then
    local visible
    visible=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c '[^[:space:]]' || true)
    if [ "$visible" -lt "$count" ]; then
      count=$visible
    fi
    gpu_source="$gpu_source; CUDA_VISIBLE_DEVICES='$CUDA_VISIBLE_DEVICES'"
  fi
  gpus=$count
}
count_gpus
if ! [[ $gpus =~ ^[0-9]+$ ]]; then
  dm_fail "could not count the GPUs: got '$gpus' from $gpu_source"
  exit "$DM_EXIT_SETUP"
fi
too_few_gpus=
if [ "$gpus" -lt "$min_gpus" ]; then
  too_few_gpus="found $gpus GPU(s) ($gpu_source); this job needs at least $min_gpus."
fi
skip_for_gpus() {
  if [ "$min_gpus" -ge 2 ]; then
    dm_say "NCCL refuses two ranks on one GPU. On a one-GPU node, 'ci/run_2gpu.sh --min-gpus 1'"
    dm_say "still builds against CUDA LibTorch and runs what fits on one GPU (docs/gpu.md)."
  fi
  dm_skip "$too_few_gpus"
}
if [ -n "$too_few_gpus" ] && [ "$DM_DRY_RUN" != 1 ]; then
  skip_for_gpus
fi
if [ -z "$too_few_gpus" ]; then
  dm_say "found $gpus GPU(s) ($gpu_source)"
fi

# --- CUDA LibTorch ------------------------------------------------------------------------------
cmake_args=(-DDISTMETRICS_WITH_NCCL=ON)
# A machine with too few GPUs, in a dry run, gets a placeholder for a LibTorch it lacks: it
# prints the commands, then says it would skip.
no_libtorch() {
  if [ -n "$too_few_gpus" ]; then
    dm_say "no CUDA LibTorch here either: $*"
    cmake_args+=("-DCMAKE_PREFIX_PATH=<a CUDA LibTorch>")
    return 0
  fi
  dm_fail "$@"
  exit "$DM_EXIT_SETUP"
}
if [ -n "$torch_dir" ]; then
  if [ ! -d "$torch_dir" ]; then
    no_libtorch "--torch-dir/Torch_DIR $torch_dir: no such folder (the LibTorch folder holding TorchConfig.cmake)"
  elif [ ! -f "$torch_dir/TorchConfig.cmake" ] && [ ! -f "$torch_dir/torch-config.cmake" ]; then
    no_libtorch "--torch-dir/Torch_DIR $torch_dir holds no TorchConfig.cmake: give the LibTorch's share/cmake/Torch folder"
  else
    cmake_args+=("-DTorch_DIR=$torch_dir")
    dm_say "LibTorch: $torch_dir"
  fi
elif [ "$skip_build" != 1 ]; then
  probe='import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.version.cuda or ""); print(torch.__version__)'
  if ! answer=$("$python" -c "$probe" 2>&1); then
    no_libtorch "no CUDA LibTorch: set Torch_DIR (or --torch-dir) to a LibTorch's cmake folder, or" \
      "use a PYTHON whose torch package has CUDA ($python: ${answer##*$'\n'})"
  else
    { read -r prefix; read -r cuda; read -r version; } <<<"$answer"
    if [ -z "$cuda" ]; then
      no_libtorch "torch $version of $python is a CPU build; NCCL needs a CUDA LibTorch (set Torch_DIR)"
    else
      # The torch of a Python package: built as the pip build is (docs/gpu.md), so the embedded
      # interpreter (Python metrics, gloo through torch's binding) starts as that python.
      cmake_args+=(-DDISTMETRICS_TORCH=pip "-DDISTMETRICS_PYTHON=$(command -v "$python")")
      dm_say "LibTorch: torch $version (CUDA $cuda) of $python: $prefix"
    fi
  fi
fi
if [ -n "$deps_dir" ]; then
  cmake_args+=("-DDISTMETRICS_DEPS_DIR=$deps_dir")
fi

# --- build ----------------------------------------------------------------------------------------
if [ "$skip_build" != 1 ]; then
  if [ "$with_tests" = 1 ]; then
    dm_build "$build_dir" all "${cmake_args[@]}" -DDISTMETRICS_BUILD_TESTS=ON || exit "$DM_EXIT_SETUP"
  else
    dm_build "$build_dir" distmetrics "${cmake_args[@]}" -DDISTMETRICS_BUILD_TESTS=OFF ||
      exit "$DM_EXIT_SETUP"
  fi
fi
runner=$build_dir/bin/distmetrics
if [ "$DM_DRY_RUN" != 1 ] && [ ! -x "$runner" ]; then
  dm_fail "$runner is missing: build it (leave out --skip-build)"
  exit "$DM_EXIT_SETUP"
fi

# --- runs -----------------------------------------------------------------------------------------
codes=()
if [ "$with_tests" = 1 ]; then
  ctest_code=0
  dm_run ctest --test-dir "$build_dir" --output-on-failure -j "${JOBS:-$(nproc)}" || ctest_code=$?
  codes+=("$([ "$ctest_code" = 0 ] && echo 0 || echo "$DM_EXIT_FAIL")")
fi
# Two GPUs: NCCL at world size 2. One GPU: world size 1 too (the NCCL path on one device).
nccl_sizes=2
if [ "$gpus" -lt 2 ]; then
  nccl_sizes=1,2
fi
dm_suite 2gpu-nccl "$runner" run scenarios --backend nccl --world-sizes "$nccl_sizes" \
  "${run_args[@]}"
codes+=("$DM_SUITE_CODE")
dm_suite 2gpu-gloo-cuda "$runner" run scenarios --backend gloo --world-sizes 2 \
  --placement "${GLOO_CUDA_PLACEMENTS:-cuda,cuda0,cpu_state_cuda_input,mixed}" "${run_args[@]}"
codes+=("$DM_SUITE_CODE")
if [ ${#conform_source[@]} -gt 0 ]; then
  # The plugin's (or Python source's) metrics on every scenario that names them, on the GPUs.
  dm_suite 2gpu-conform-nccl "$runner" conform "${conform_source[@]}" "${conform_scenarios[@]}" --backend nccl \
    --world-sizes "$nccl_sizes" "${run_args[@]}"
  codes+=("$DM_SUITE_CODE")
  dm_suite 2gpu-conform-gloo-cuda "$runner" conform "${conform_source[@]}" "${conform_scenarios[@]}" --backend gloo \
    --world-sizes 2 --placement "${GLOO_CUDA_PLACEMENTS:-cuda,cuda0,cpu_state_cuda_input,mixed}" \
    "${run_args[@]}"
  codes+=("$DM_SUITE_CODE")
fi
if [ -n "$too_few_gpus" ]; then
  skip_for_gpus
fi

code=$(dm_worst_code "${codes[@]}")
if [ "$DM_DRY_RUN" = 1 ]; then
  dm_say "dry run: nothing was built or run"
else
  dm_say "exit code $code (per run: ${codes[*]}); reports in $REPORTS_DIR"
fi
exit "$code"
