#!/usr/bin/env bash
# Installs the Debian (bookworm) packages Tensorscope needs that are not installed yet.
# Idempotent: when everything is present it only says so.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libgl1-mesa-dev
  libgraphviz-dev graphviz
  libeigen3-dev nlohmann-json3-dev libbenchmark-dev libopenblas-dev libdnnl-dev
  ocl-icd-opencl-dev
  libonnx-dev libprotobuf-dev
  libmimalloc-dev libedit-dev
  xvfb xauth
  clang libclang-rt-14-dev clang-format
  fonts-dejavu-core
)
# Note: ocl-icd-opencl-dev is only a Recommends of libdnnl-dev, yet its dnnl-config.cmake
# find_package(OpenCL REQUIRED)s it, so configuring fails without it.
# Note: bookworm has no libqt6svg6-dev; qt6-svg-dev is the package that ships Qt6Svg's CMake files.

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "deps: missing packages (${missing[*]}) and neither root nor sudo is available to install them" >&2
  exit 1
fi

echo "deps: installing ${#missing[@]} missing package(s): ${missing[*]}"
"${as_root[@]}" apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"
