#!/usr/bin/env bash
# Produces the README's screenshots of the main views in docs/screenshots/, each with
# `tensorscope FILE --screenshot OUT.png` and the window's options:
#   graph.png                the example graph as it opens
#   expanded_group.png       the same with every group expanded into a cluster
#   inspector_histogram.png  the inspector on a weight matrix: statistics, histogram, slice table
#   rewrite_history.png      the rewrite history with one rewrite selected: before | after
#   side_by_side.png         the original and the optimized graph side by side
#   debugger_nan_guard.png   the debugger paused by NanGuard: the alert banner, the Alerts dock and
#                            the root-cause chain on the graph (examples/nan_hunt's replay file)
#   debugger_health_pills.png the debugger paused at a breakpoint: current / executed / next
#                            nodes and a health pill on every computed edge
#   profile_heat_map.png     a fast_run profile as a heat map, groups coloured inclusively, legend
#   profile_timeline.png     the timeline and memory chart with a time range selected
#   profile_diff.png         diff mode: the fast_run profile against mode none (blue faster)
#   params_*_{before,after}_{fit,zoom}.png  with TSCOPE_BENCH_MODELS=DIR: the full-size ResNet-18
#                            and transformer with parameters as boxes (before issue 24) and badges
# Runs under xvfb-run when it is installed (a real X server: fonts and antialiasing as users see
# them), else on Qt's offscreen platform. Settings come from a fresh temporary directory, so the
# user's window layout and group states do not leak into the pictures.
#   TSCOPE_BUILD_DIR      build directory (default: build); the script builds tensorscope first
#   TSCOPE_SCREENSHOTS    output directory (default: docs/screenshots)
#   TSCOPE_OFFSCREEN=1    use the offscreen platform even when xvfb-run exists
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

build_dir="${TSCOPE_BUILD_DIR:-build}"
out="${TSCOPE_SCREENSHOTS:-docs/screenshots}"
tensorscope="$build_dir/gui/tensorscope"
cmake --build "$build_dir" --target tensorscope example_nan_hunt >/dev/null

# The example with scopes: an encoder, its gradient and the SGD updates. Its fallback (the MLP)
# has no groups and other names.
example="examples/graphs/scoped_model.tsg"
group="encoder/block1/attention"  # the group expanded_group.png opens ...
focus="block1.attention_weights"  # ... centred on this node
weights="block1.W1"               # the weight matrix the inspector shows
output="probs"                    # the node side_by_side.png selects
if [[ ! -f "$example" ]]; then
  example="examples/graphs/mlp.tsg" group="" focus="" weights="W1" output="cost"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export XDG_CONFIG_HOME="$work/config"
mkdir -p "$out"

optimized="$work/$(basename "${example%.tsg}")_optimized.tsg"
"$tensorscope" optimize "$example" -o "$optimized" >/dev/null
# Profiles for the profiler's shots (fast_run, and mode none for the diff), saved with the graph.
profiled="$work/profiled.tsg"
profiled_none="$work/profiled_none.tsg"
"$tensorscope" profile "$example" --runs 20 --memory -o "$profiled" >/dev/null
"$tensorscope" profile "$example" --runs 20 --memory --mode none -o "$profiled_none" >/dev/null

# The rewrite to show: the first one that removes and adds nodes (a fusion or an algebraic
# rewrite, not a bare merge), found in the optimized file's log.
step=0
if command -v python3 >/dev/null 2>&1; then
  step="$(python3 - "$optimized" <<'EOF'
import json, sys
log = json.load(open(sys.argv[1])).get("rewrites", [])
pick = next((i for i, r in enumerate(log)
             if r.get("added") and len(r.get("removed") or []) >= 2), 0)
print(pick)
EOF
)"
fi

if [[ -z "${TSCOPE_OFFSCREEN:-}" ]] && command -v xvfb-run >/dev/null 2>&1; then
  runner=(xvfb-run -a -s "-screen 0 1920x1200x24")
  export QT_QPA_PLATFORM=xcb
else
  runner=()
  export QT_QPA_PLATFORM=offscreen
fi

shot() {
  local name="$1"
  shift
  "${runner[@]}" "$tensorscope" --window-size 1600x1000 --screenshot "$out/$name.png" "$@"
}

shot graph "$example" --expand none
if [[ -n "$group" ]]; then
  shot expanded_group "$example" --expand "$group" --select "$focus" --zoom 100
else
  shot expanded_group "$example" --expand all
fi
shot inspector_histogram "$optimized" --expand none --dock inspector --select "$weights" --zoom 100
shot rewrite_history "$optimized" --dock history --history-step "$step" --zoom 100
shot side_by_side "$optimized" --side-by-side --expand none --select "$output" --zoom 100
# The debugger: examples/nan_hunt writes replayable failures (their inputs as test values).
nan_hunt="$(find "$build_dir/examples" -name example_nan_hunt -type f -perm -u+x | head -n 1)"
"$nan_hunt" "$work/nan_hunt" >/dev/null
shot debugger_nan_guard "$work/nan_hunt/log_negative.tsg" --debug nan-collect --expand all \
  --zoom 100
shot debugger_health_pills "examples/graphs/mlp.tsg" --debug run --debug-break "op:Dot#2" \
  --expand all --zoom 100
# The profiler: the profiles saved above, opened coloured.
shot profile_heat_map "$profiled" --profile-view expand=none --profile-view docks=profile
shot profile_timeline "$profiled" --profile-view expand=none --profile-view docks=timeline \
  --profile-view range=0.2:0.6
shot profile_diff "$profiled" --profile-view expand=none --profile-view docks=profile \
  --profile-view "compare=$profiled_none"
# Parameters before and after issue 24 (docs/gui.md, "Parameters"): the full-size models of
# tests/bench/make_bench_models.py, when TSCOPE_BENCH_MODELS names their folder, drawn by bench_gui
# (the only place the old placement is still built) fitted and at 50 % at the top.
if [[ -n "${TSCOPE_BENCH_MODELS:-}" ]]; then
  cmake --build "$build_dir" --target bench_gui >/dev/null
  mkdir -p "$work/params"
  QT_QPA_PLATFORM=offscreen "$build_dir/tests/bench/bench_gui" --only full \
    --models "$TSCOPE_BENCH_MODELS" --shots "$work/params" >/dev/null
  for model in resnet18 transformer; do
    for view in fit top; do
      name="$view"
      [[ "$view" == top ]] && name=zoom
      cp "$work/params/${model}_full,_boxes,_old_placement_${view}.png" \
        "$out/params_${model}_before_${name}.png"
      cp "$work/params/${model}_full,_badges_${view}.png" "$out/params_${model}_after_${name}.png"
    done
  done
fi
echo "screenshots: $(ls "$out"/*.png | wc -l) images in $out"
