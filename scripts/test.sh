#!/usr/bin/env bash
# THE test command: installs missing packages, builds, runs the test suite.
# Arguments go to ctest, e.g. `scripts/test.sh -L engine` or `scripts/test.sh -R tst_tensor`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/build.sh

build_dir="${TSCOPE_BUILD_DIR:-build}"
exec ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" "$@"
