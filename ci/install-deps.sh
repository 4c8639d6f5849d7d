#!/usr/bin/env bash
# Installs the Debian packages distmetrics needs that are missing. Idempotent: installs nothing
# when everything is there. As root it runs apt-get; otherwise it prints the exact command and
# exits non-zero.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache g++ pkg-config
  libtorch-dev libgloo-dev            # LibTorch 1.13 (CPU) and the headers its c10d Gloo needs
  libopenmpi-dev openmpi-bin          # the mpi backend and launcher
  libgtest-dev libbenchmark-dev       # tests and benchmarks
  libtomlplusplus-dev nlohmann-json3-dev libcli11-dev   # header-only
  zlib1g-dev                          # np.savez_compressed data files (optional)
  python3 python3-pytest python3-pytest-timeout python3-pytest-xdist   # pytest orchestration
  python3-numpy python3-sklearn       # independent reference values
  chromium chromium-driver python3-selenium   # the HTML report checked in a headless browser
  python3-torch                       # the spawn-per-test baseline of the benchmarks
  python3-venv python3-pip python3-setuptools python3-wheel   # installing the Python package offline (its test)
  python3-dev pybind11-dev            # Python metrics (pyhost/): embedded CPython with torch
  iproute2                            # the multi-host test bed (ci/hosts.sh: ip netns, veth, tc)
  slurmd slurmctld slurm-client       # Slurm on that bed (ci/hosts.sh slurm)
)

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages are installed"
  exit 0
fi

command="apt-get install -y ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages; run as root:" >&2
  echo "  apt-get update && $command" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# With recommends, as on the machines this was tested on (the recommended set is what was measured).
apt-get install -y -q "${missing[@]}"
