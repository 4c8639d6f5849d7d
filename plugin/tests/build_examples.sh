#!/usr/bin/env bash
# Installs a distmetrics build to a fresh prefix and builds examples/plugins against it, as a
# user would (find_package(distmetrics)). Used by ctest as the fixture of plugin_examples_conform.
#   build_examples.sh BUILD_DIR EXAMPLES_SOURCE OUT GENERATOR CXX [Torch_DIR]
# Leaves OUT/prefix (the installation) and OUT/build (the example plugins).
set -euo pipefail
build_dir=$1 examples_src=$2 out=$3 generator=$4 cxx=$5 torch_dir=${6:-}

rm -rf "$out"
mkdir -p "$out"
cmake --install "$build_dir" --prefix "$out/prefix" > "$out/install.log"
echo "installed $build_dir to $out/prefix"

args=(-S "$examples_src" -B "$out/build" -G "$generator" -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$out/prefix")
if [[ -n "$torch_dir" ]]; then args+=(-DTorch_DIR="$torch_dir"); fi
if command -v ccache > /dev/null; then args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake "${args[@]}"
cmake --build "$out/build" -j "${JOBS:-2}"
ls "$out/build"/lib*.so
