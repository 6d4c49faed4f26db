#!/usr/bin/env bash
# The layering rule of DESIGN.md ("Layers and folders"), checked on the includes of the sources:
#   - engine/ and profiling/ include no Qt header (<Q...>, <QtCore/...>) and nothing of
#     visualizers/ or gui/;
#   - engine/ includes nothing of profiling/;
#   - tscope_engine (engine/ outside session/ and io/onnx/) includes nothing of engine/session/ or
#     engine/io/onnx/ (those libraries link it, not the other way round; the engine builds without
#     ONNX);
#   - profiling/ includes nothing of visualizers/ or gui/; visualizers/ nothing of gui/;
#   - a CUDA header (cuda*.h, cublas*, cudnn*, nvrtc*, cupti*) appears in no header outside
#     engine/backends/cuda/ and profiling/cupti/ (no CUDA type in a public header).
# Prints each offending file:line with the rule it breaks and exits 1; exits 0 when all hold.
#
#   check_layering.sh SOURCE_DIR    checks the tree at SOURCE_DIR
#   check_layering.sh --self-test   checks that every rule catches a planted include, and that a
#                                   clean tree passes (CTest runs both)
set -u

check() {
  local root=$1 bad=0
  # rule NAME FOLDER REGEX [EXCLUDED_PATH_REGEX] [FILE_GLOB...]: the includes in FOLDER matching REGEX.
  rule() {
    local why=$1 folder=$2 pattern=$3 exclude=${4:-} hits
    shift 4
    local globs=("$@")
    [ ${#globs[@]} -eq 0 ] && globs=('*.h' '*.hpp' '*.cpp' '*.cc' '*.cu' '*.cuh')
    [ -d "$root/$folder" ] || return 0
    local includes=()
    for g in "${globs[@]}"; do includes+=(--include="$g"); done
    hits=$(cd "$root" && grep -rnE "${includes[@]}" "^[[:space:]]*#[[:space:]]*include[[:space:]]*$pattern" "$folder" || true)
    [ -n "$exclude" ] && hits=$(printf '%s\n' "$hits" | grep -vE "$exclude" || true)
    if [ -n "$hits" ]; then
      while IFS= read -r line; do
        [ -z "$line" ] && continue
        # file:line: the include  (why)
        echo "${line%%:*}:$(echo "$line" | cut -d: -f2): $(echo "$line" | cut -d: -f3- | sed 's/^[[:space:]]*//')  ($why)"
      done <<< "$hits"
      bad=1
    fi
  }
  local qt='<Q[A-Za-z0-9_]*(/|>|\.h>)'
  rule "no Qt in engine/" engine "$qt" ""
  rule "no Qt in profiling/" profiling "$qt" ""
  rule "engine/ uses no layer below it" engine '"(profiling|visualizers|gui)/' ""
  rule "profiling/ uses no layer below it" profiling '"(visualizers|gui)/' ""
  rule "visualizers/ uses no layer below it" visualizers '"gui/' ""
  rule "tscope_engine builds without tscope_session and tscope_onnx" engine '"engine/(session|io/onnx)/' \
    '^engine/(session|io/onnx)/'
  local folder
  for folder in engine profiling visualizers gui examples tests; do
    rule "no CUDA header in a header outside engine/backends/cuda/ and profiling/cupti/" "$folder" \
      '[<"](cuda[A-Za-z0-9_]*\.h|cublas|cudnn|nvrtc|cupti)' '^(engine/backends/cuda|profiling/cupti)/' \
      '*.h' '*.hpp' '*.cuh'
  done
  return $bad
}

self_test() {
  local status=0
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp"/{engine/graph,engine/session,engine/io/onnx,engine/backends/cuda,profiling/cupti,visualizers/model,gui/app}
  # A clean tree: every allowed include.
  printf '#include "engine/graph/op.h"\n#include <vector>\n' > "$tmp/engine/graph/op.h"
  printf '#include "engine/io/onnx/onnx_import.h"\n' > "$tmp/engine/session/graph_file.cpp"
  printf '#include <cuda_runtime.h>\n#include <cublas_v2.h>\n' > "$tmp/engine/backends/cuda/device.h"
  printf '#include <cupti.h>\n' > "$tmp/profiling/cupti/source.h"
  printf '#include "engine/graph/op.h"\n' > "$tmp/profiling/report.h"
  printf '#include "profiling/report.h"\n#include <QColor>\n' > "$tmp/visualizers/model/view.h"
  printf '#include "visualizers/model/view.h"\n#include <QWidget>\n' > "$tmp/gui/app/window.h"
  printf '// #include <QObject> in a comment is not an include\n' > "$tmp/engine/graph/note.h"
  if ! out=$(check "$tmp"); then
    echo "self-test: a clean tree was refused:"; echo "$out"; status=1
  fi
  # One planted violation per rule: each must be reported with its file and line.
  plant() {
    local file=$1 text=$2 expect=$3 out
    mkdir -p "$(dirname "$tmp/$file")"
    printf '// line 1\n%s\n' "$text" > "$tmp/$file"
    if out=$(check "$tmp"); then
      echo "self-test: not refused: $file: $text"; status=1
    elif ! printf '%s\n' "$out" | grep -qF "$file:2: $text  ($expect"; then
      echo "self-test: $file: $text: expected '$file:2: ... ($expect', got:"; echo "$out"; status=1
    fi
    rm -f "$tmp/$file"
  }
  plant engine/graph/bad.h '#include <QObject>' "no Qt in engine/"
  plant engine/vm/bad.cpp '#include <QtCore/QString>' "no Qt in engine/"
  plant profiling/bad.cpp '#include <QElapsedTimer>' "no Qt in profiling/"
  plant engine/graph/bad.cpp '#include "profiling/report.h"' "engine/ uses no layer below it"
  plant engine/graph/bad2.cpp '#include "visualizers/model/view.h"' "engine/ uses no layer below it"
  plant engine/graph/bad3.cpp '#include "gui/app/window.h"' "engine/ uses no layer below it"
  plant profiling/bad.h '#include "gui/app/window.h"' "profiling/ uses no layer below it"
  plant profiling/bad2.h '#include "visualizers/model/view.h"' "profiling/ uses no layer below it"
  plant visualizers/model/bad.cpp '#include "gui/app/window.h"' "visualizers/ uses no layer below it"
  plant engine/compile/bad.cpp '#include "engine/session/run_graph.h"' "tscope_engine builds without"
  plant engine/io/bad.cpp '#include "engine/io/onnx/onnx_import.h"' "tscope_engine builds without"
  plant engine/tensor/bad.h '#include <cuda_runtime.h>' "no CUDA header in a header"
  plant engine/tensor/bad2.h '#include "cublas_v2.h"' "no CUDA header in a header"
  plant profiling/bad3.h '#include <cupti.h>' "no CUDA header in a header"
  plant gui/app/bad.h '#include <nvrtc.h>' "no CUDA header in a header"
  plant visualizers/model/bad2.h '#include <cudnn.h>' "no CUDA header in a header"
  [ $status -eq 0 ] && echo "self-test: every rule refuses its planted include; the clean tree passes"
  return $status
}

if [ "${1:-}" = "--self-test" ]; then
  self_test
  exit $?
fi
root=${1:?usage: check_layering.sh SOURCE_DIR | --self-test}
if out=$(check "$root"); then
  echo "layering: every include respects DESIGN.md's layers"
  exit 0
fi
echo "layering: includes that break DESIGN.md's layers (\"Layers and folders\"):"
echo "$out"
exit 1
