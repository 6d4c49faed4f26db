#!/usr/bin/env bash
# THE main-job command: installs missing packages, builds, runs tensorscope.
#   scripts/run.sh                   the default: describe the example graph
#   scripts/run.sh --offscreen       the same without a display (QT_QPA_PLATFORM=offscreen)
#   scripts/run.sh ARGS...           run `tensorscope ARGS...` instead, e.g. `scripts/run.sh info x.tsg`
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

offscreen=0
args=()
for arg in "$@"; do
  case "$arg" in
    --offscreen) offscreen=1 ;;
    *) args+=("$arg") ;;
  esac
done

if ((offscreen)); then
  export QT_QPA_PLATFORM=offscreen
fi

scripts/build.sh

build_dir="${TSCOPE_BUILD_DIR:-build}"
tensorscope="$build_dir/gui/tensorscope"
example_graph="examples/graphs/mlp_forward.tsg"

ensure_example_graph() {
  if [[ ! -f "$example_graph" ]]; then
    mkdir -p "$(dirname "$example_graph")"
    "$build_dir/examples/example_mlp_forward" "$example_graph"
  fi
}

run_default() {
  ensure_example_graph
  # Later: open the main window on the example graph (with --offscreen, write a screenshot).
  "$tensorscope" info "$example_graph"
  "$tensorscope" print "$example_graph"
}

if ((${#args[@]} == 0)); then
  run_default
else
  exec "$tensorscope" "${args[@]}"
fi
