#!/usr/bin/env bash
# THE main-job command: installs missing packages, builds, runs tensorscope.
#   scripts/run.sh                   the default: open the window on the example graph
#   scripts/run.sh --offscreen       without a display: write a screenshot of that window to
#                                    build/screenshot.png instead (QT_QPA_PLATFORM=offscreen)
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

# Only the window and what it links: the tests and benchmarks are scripts/test.sh's business.
scripts/build.sh tensorscope

build_dir="${TSCOPE_BUILD_DIR:-build}"
tensorscope="$build_dir/gui/tensorscope"
# The example with name scopes (groups to open and close); the MLP until it exists.
example_graph="examples/graphs/scoped_model.tsg"
[[ -f "$example_graph" ]] || example_graph="examples/graphs/mlp.tsg"
screenshot="$build_dir/screenshot.png"

run_default() {
  if [[ ! -f "$example_graph" ]]; then
    echo "run: $example_graph is missing (it is checked in; restore it with git)" >&2
    exit 1
  fi
  if ((offscreen)); then
    "$tensorscope" "$example_graph" --screenshot "$screenshot" --window-size 1600x1000
    echo "run: the window on $example_graph is in $screenshot"
  else
    exec "$tensorscope" "$example_graph"
  fi
}

if ((${#args[@]} == 0)); then
  run_default
else
  exec "$tensorscope" "${args[@]}"
fi
