#!/usr/bin/python3
"""The PyTorch peer of bench_onnx_resnet: the ResNet-18 fixture's module (torchvision's ResNet-18 at
widths 16/32/64/128, input 1x3x64x64), rebuilt by tests/data/onnx/make_model_fixtures.py with the
same seeds and so the same weights (checked against resnet18.out0.npy), on the CPU with one thread.
Prints the same figures: building the module (the analogue of loading the .onnx), the first
inference and the steady-state inference time (median of N calls), in eager mode and as a frozen
TorchScript module (torch.jit.trace + freeze + optimize_for_inference, the analogue of compiling
in fast_run).
    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 tests/bench/peers/resnet18_torch.py [N=200]"""
import pathlib
import statistics
import sys
import time

import numpy as np
import torch
from blas_threads import limit_blas_threads

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "data" / "onnx"))
import make_model_fixtures as fixtures  # noqa: E402

MODELS = ROOT / "tests" / "data" / "onnx" / "models"


def ms_since(start):
    return (time.perf_counter() - start) * 1e3


def steady_state(fn, x, n):
    for _ in range(5):
        fn(x)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn(x)
        times.append(ms_since(start))
    return statistics.median(times), min(times)


def worst_relative_error(actual, expected):
    return float(np.max(np.abs(actual - expected) / (1e-5 + np.abs(expected))))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    torch.set_num_threads(1)
    limit_blas_threads(1)  # the products run on OpenBLAS's own pool (blas_threads.py)
    x = torch.from_numpy(np.load(MODELS / "resnet18.in0.npy"))
    expected = np.load(MODELS / "resnet18.out0.npy")
    assert torch.equal(x, fixtures.resnet18_input()), "resnet18.in0.npy is not the script's input"

    with torch.inference_mode():
        start = time.perf_counter()
        model = fixtures.build_resnet18()
        build_ms = ms_since(start)
        start = time.perf_counter()
        first = model(x)
        first_ms = ms_since(start)
        eager = steady_state(model, x, n)

    with torch.no_grad():
        start = time.perf_counter()
        scripted = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, x)))
        script_ms = ms_since(start)
        start = time.perf_counter()
        script_first = scripted(x)
        script_first_ms = ms_since(start)
        script = steady_state(scripted, x, n)

    print(f"torch {torch.__version__}, 1 thread; model: ReducedResNet18 (input {tuple(x.shape)})")
    print(f"build module (seeded weights):               {build_ms:8.2f} ms")
    print(f"first inference (eager):                     {first_ms:8.2f} ms")
    print(f"trace + freeze + optimize_for_inference:     {script_ms:8.2f} ms")
    print(f"first inference (TorchScript):               {script_first_ms:8.2f} ms")
    print(f"steady-state inference, eager:               {eager[0]:8.3f} ms (median of {n}, min {eager[1]:.3f})")
    print(f"steady-state inference, TorchScript:         {script[0]:8.3f} ms (median of {n}, min {script[1]:.3f})")
    print(f"worst relative error vs resnet18.out0.npy: eager {worst_relative_error(first.numpy(), expected):.2g}, "
          f"TorchScript {worst_relative_error(script_first.numpy(), expected):.2g}")


if __name__ == "__main__":
    main()
