#!/usr/bin/env bash
# Installs missing packages, configures the build directory once, then builds incrementally:
# everything, or only the targets given (`scripts/build.sh tensorscope`, as scripts/run.sh does).
#   TSCOPE_BUILD_DIR   build directory (default: <repo>/build; relative paths are taken from the repo root)
#   TSCOPE_CMAKE_ARGS  extra arguments for the first configure, e.g. "-DTSCOPE_FUZZ=ON"
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/deps.sh

build_dir="${TSCOPE_BUILD_DIR:-build}"

if [[ ! -f "$build_dir/CMakeCache.txt" || ! -f "$build_dir/build.ninja" ]]; then
  extra_args=()
  if [[ -n "${TSCOPE_CMAKE_ARGS:-}" ]]; then
    read -r -a extra_args <<<"$TSCOPE_CMAKE_ARGS"
  fi
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${extra_args[@]}"
fi

targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
