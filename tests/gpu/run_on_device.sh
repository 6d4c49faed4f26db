#!/usr/bin/env bash
# The GPU suite on a GPU machine (issue 22, docs/gpu.md): configures only the engine, the profiler,
# the CUDA backend and tests/gpu (no Qt, no Debian packages: Eigen's and nlohmann-json's headers
# come from a folder), builds them, runs `ctest -L gpu` and the CUDA figures, and writes a summary.
# Sized for about 6 minutes on 16 cores.
#
#   tests/gpu/run_on_device.sh [DEPS_DIR]      on the GPU machine; DEPS_DIR or $TSCOPE_GPU_DEPS
#                                              (default: shared/gpu-deps) holds Eigen/,
#                                              unsupported/ and nlohmann/
#   tests/gpu/run_on_device.sh --pack DIR      on a machine with the packages: fills DIR with them
#   tests/gpu/run_on_device.sh --configure-only [DEPS_DIR]   the configure alone (checked without
#                                              Qt and without a GPU on the development machines)
#
# Environment: TSCOPE_GPU_BUILD_DIR (default build-gpu), TSCOPE_GPU_CMAKE_ARGS (more configure
# arguments, e.g. -DCMAKE_DISABLE_FIND_PACKAGE_Qt6=ON to check the configure without Qt), OUT (when set, summary.txt and the logs
# are copied there), TSCOPE_CUDA_ARCH (default: native when a GPU is visible, else 90).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

if [[ "${1:-}" == "--pack" ]]; then
  dir="${2:?usage: run_on_device.sh --pack DIR}"
  mkdir -p "$dir"
  cp -r /usr/include/eigen3/Eigen /usr/include/eigen3/unsupported "$dir"/
  cp -r /usr/include/nlohmann "$dir"/
  echo "packed Eigen and nlohmann-json headers into $dir ($(du -sh "$dir" | cut -f1))"
  exit 0
fi
configure_only=0
if [[ "${1:-}" == "--configure-only" ]]; then
  configure_only=1
  shift
fi

deps="${1:-${TSCOPE_GPU_DEPS:-$root/shared/gpu-deps}}"
build="${TSCOPE_GPU_BUILD_DIR:-$root/build-gpu}"
[[ "$build" = /* ]] || build="$root/$build"
logs="$build/gpu-logs"
mkdir -p "$logs"
summary="$logs/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start)) s"; }

for tool in cmake ninja; do
  command -v "$tool" >/dev/null || { say "missing: $tool"; exit 2; }
done
nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
[[ -x "$nvcc" ]] || { say "missing: nvcc (CUDA toolkit)"; exit 2; }
[[ -f "$deps/Eigen/Core" && -f "$deps/nlohmann/json.hpp" ]] ||
  { say "expected Eigen/ and nlohmann/ headers in $deps (make them with --pack DIR)"; exit 2; }

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  say "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
  arch="${TSCOPE_CUDA_ARCH:-native}"
else
  say "device: none visible (nvidia-smi)"
  arch="${TSCOPE_CUDA_ARCH:-90}"
fi
say "cuda: $("$nvcc" --version | tail -1)"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DTSCOPE_HEADER_DEPS="$deps" -DTSCOPE_BUILD_GUI=OFF -DTSCOPE_BUILD_TESTS=OFF \
  -DTSCOPE_BUILD_BENCHMARKS=OFF -DTSCOPE_WITH_ONNX=OFF -DTSCOPE_WITH_DNNL=OFF \
  -DTSCOPE_EIGEN_USE_BLAS=OFF -DTSCOPE_USE_MIMALLOC=OFF ${TSCOPE_GPU_CMAKE_ARGS:-} \
  >"$logs/configure.log" 2>&1
rc=$?
sed -n '/features have been enabled/,/^-- Configuring/p' "$logs/configure.log" |
  grep -E '^ \* (CUDA|CUPTI|cuDNN|header-deps)' >>"$summary"
if [[ $rc -ne 0 ]]; then
  say "configure FAILED ($(elapsed)); see $logs/configure.log"
  tail -20 "$logs/configure.log"
  exit 1
fi
say "configure ok ($(elapsed))"
[[ $configure_only -eq 1 ]] && exit 0

targets=(tscope_engine tscope_profiling tscope_cuda tst_cuda_parity tst_cuda_ops_parity
  tst_cuda_end_to_end tst_cuda_models bench_cuda)
grep -q "tst_cupti_source" "$build/build.ninja" && targets+=(tst_cupti_source)
grep -q "tst_cudnn_parity" "$build/build.ninja" && targets+=(tst_cudnn_parity)
build_args=()
for t in "${targets[@]}"; do build_args+=(--target "$t"); done
if ! cmake --build "$build" -j "$(nproc)" "${build_args[@]}" >"$logs/build.log" 2>&1; then
  say "build FAILED ($(elapsed)); see $logs/build.log"
  grep -E "error|Error" "$logs/build.log" | head -20 | tee -a "$summary"
  exit 1
fi
say "build ok ($(elapsed))"

ctest --test-dir "$build" -L gpu -V --timeout 300 >"$logs/ctest.log" 2>&1
ctest_rc=$?
grep -E "Test +#|tests passed|tests failed|Skipped|\*\*\*" "$logs/ctest.log" | tee -a "$summary"
# The parity suite's sections and its "N passed, N failed" line.
sed 's/^[0-9]*: //' "$logs/ctest.log" |
  grep -E "^[a-z0-9 ()]+ +(ok|FAILED)$|^  [a-z_]+: (ok|FAILED)$|passed, [0-9]+ failed|allocator:|^device:|CHECK failed|exception|SKIP" |
  tee -a "$summary"
say "ctest -L gpu: exit $ctest_rc ($(elapsed))"

if [[ -x "$build/tests/gpu/bench_cuda" ]]; then
  timeout 150 "$build/tests/gpu/bench_cuda" >"$logs/bench.log" 2>&1
  say "bench_cuda: exit $? ($(elapsed))"
  cat "$logs/bench.log" | tee -a "$summary" >/dev/null
  sed 's/^/  /' "$logs/bench.log"
fi

if [[ -n "${OUT:-}" ]]; then
  mkdir -p "$OUT"
  cp "$logs"/*.log "$summary" "$OUT"/ 2>/dev/null
fi
echo "summary: $summary"
exit $ctest_rc
