#!/usr/bin/env bash
# Installs the Debian packages of the named package sets that are missing (no set: every set,
# what ci/test.sh needs). Idempotent: installs nothing when everything is there. As root it runs
# apt-get; otherwise it prints the exact command and exits non-zero. Each job names the sets it
# needs (ci/lib.sh: dm_torch_sets); the main job, ci/run_cpu.sh, needs build, headers and python
# only: on a fresh machine of this project's kind (Debian bookworm with cmake, g++ and
# python3-dev) 8 packages, 2 MB downloaded, where every set is 404 packages, 369 MB (1.6 GB
# installed; counted with apt-get install -s / --print-uris against that machine's package list).
#   ci/install-deps.sh [SET...]     install the sets (default: all of them)
#   ci/install-deps.sh --list       the table: each set, its packages and what needs them
#   ci/install-deps.sh --print SET...  the packages of the sets, one line, install nothing
set -euo pipefail

# The one table: set, whether apt's recommended packages come too, packages, what needs them.
# "no": checked that what the recommends add is used by nothing here (apt-get install -s with and
# without them on this machine kind's package list: docs, Fortran coarrays, matplotlib/sympy for
# scikit-learn, Slurm's optional plugins: hosts.sh uses slurm-wlm-basic-plugins' only).
# "yes": kept (Eigen headers for libtorch-dev, PIL for python3-torch, fonts and udev for Chromium).
SETS=(
  "build|no|cmake ninja-build ccache g++ pkg-config|configuring and compiling (every job)"
  "headers|no|libtomlplusplus-dev nlohmann-json3-dev libcli11-dev libgtest-dev zlib1g-dev|header-only libraries, GoogleTest (a configure registers the tests), zlib for .npz data files (every job)"
  "python|no|python3 python3-dev python3-venv|the torch 2.x venv over Debian's Python, the embedded CPython of Python metrics and of gloo through torch's binding (every job)"
  "torch1.13|yes|libtorch-dev libgloo-dev python3-torch pybind11-dev|--torch 1.13: Debian's LibTorch (CPU), the gloo headers its c10d Gloo needs, its Python build for Python metrics"
  "mpi|no|libopenmpi-dev openmpi-bin|the mpi backend and launcher (ci/run_mpi.sh, the tests)"
  "bench|yes|libbenchmark-dev python3-torch|the benchmarks (built on 1.13) and their spawn-per-test baseline"
  "pytest|no|python3-pytest python3-pytest-timeout python3-pytest-xdist python3-numpy python3-sklearn|the pytest suites and the independent reference values"
  "browser|yes|chromium chromium-driver python3-selenium|the HTML report checked in a headless browser"
  "package|no|python3-venv python3-pip python3-setuptools python3-wheel|installing the Python package offline (its test)"
  "hosts|no|iproute2 slurmd slurmctld slurm-client|the multi-host test bed (ci/hosts.sh: ip netns, veth, tc) and Slurm on it"
)

set_names=()
for row in "${SETS[@]}"; do set_names+=("${row%%|*}"); done

row_of() {  # row_of SET: the table's row of SET, or exit 2 naming the sets
  local row
  for row in "${SETS[@]}"; do
    [ "${row%%|*}" = "$1" ] && { echo "$row"; return 0; }
  done
  echo "install-deps: no package set '$1' (sets: ${set_names[*]}; --list shows them)" >&2
  exit 2
}

mode=install
case "${1:-}" in
  --list)
    for row in "${SETS[@]}"; do
      IFS='|' read -r name recommends packages what <<<"$row"
      printf '%-10s %s\n%-10s   (%s; recommends: %s)\n' "$name" "$packages" "" "$what" "$recommends"
    done
    exit 0 ;;
  --print) mode=print; shift ;;
  -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "install-deps: unknown option '$1' (--list, --print SET..., --help)" >&2; exit 2 ;;
esac
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=("${set_names[@]}")

# The missing packages, split by whether their set takes the recommends.
with_recommends=() without_recommends=() all=()
for name in "${wanted[@]}"; do
  row=$(row_of "$name")
  IFS='|' read -r _ recommends packages _ <<<"$row"
  for package in $packages; do
    case " ${all[*]} " in *" $package "*) continue ;; esac
    all+=("$package")
    [ "$mode" = print ] && continue
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      if [ "$recommends" = yes ]; then with_recommends+=("$package"); else without_recommends+=("$package"); fi
    fi
  done
done
if [ "$mode" = print ]; then
  echo "${all[*]}"
  exit 0
fi

missing=("${without_recommends[@]}" "${with_recommends[@]}")
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#all[@]} packages of ${wanted[*]} are installed"
  exit 0
fi

commands=()
[ ${#without_recommends[@]} -eq 0 ] || commands+=("apt-get install -y --no-install-recommends ${without_recommends[*]}")
[ ${#with_recommends[@]} -eq 0 ] || commands+=("apt-get install -y ${with_recommends[*]}")
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages of ${wanted[*]}; run as root:" >&2
  echo "  apt-get update$(printf ' && %s' "${commands[@]}")" >&2
  exit 1
fi

echo "install-deps: installing for ${wanted[*]}: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
if [ ${#without_recommends[@]} -gt 0 ]; then
  apt-get install -y -q --no-install-recommends "${without_recommends[@]}"
fi
if [ ${#with_recommends[@]} -gt 0 ]; then
  apt-get install -y -q "${with_recommends[@]}"
fi
