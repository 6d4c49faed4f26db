#!/usr/bin/python3
"""The peers of bench_onnx_resnet on the models of tests/bench/make_bench_models.py: PyTorch eager
(Debian's python3-torch) and, when it imports, ONNX Runtime (PyPI, in a venv), timed on the same
.onnx files, inputs and thread count in one run. Prints one line per model and runtime: the median
and the minimum of N steady-state calls, in ms.

    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 tests/bench/peers/bench_models_peers.py \
        [--dir /work/models] [--threads 1] [--runs 100] [--ort-python /work/venv-ort/bin/python]

Debian's python3-torch and PyPI's onnxruntime live in different interpreters, so the ONNX Runtime
half runs in a child process of the interpreter given by --ort-python (this same file with
--ort-only), one model after the other with PyTorch's."""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
MODELS = ["resnet18", "mobilenetv2", "transformer"]


def steady(fn, runs):
    for _ in range(5):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times)


def time_torch(name, directory, threads, runs):
    import torch
    sys.path.insert(0, str(HERE.parent))
    import make_bench_models as models
    torch.set_num_threads(threads)
    model, _ = models.build(name)
    x = torch.from_numpy(np.load(directory / f"{name}.in0.npy"))
    expected = np.load(directory / f"{name}.out0.npy")
    with torch.no_grad():
        got = model(x).numpy()
        if not np.allclose(got, expected, rtol=1e-4, atol=1e-5):
            raise SystemExit(f"{name}: the rebuilt module does not match {name}.out0.npy")
        return steady(lambda: model(x), runs)


def time_ort(name, directory, threads, runs):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(directory / f"{name}.onnx"), options,
                                   providers=["CPUExecutionProvider"])
    x = np.load(directory / f"{name}.in0.npy")
    feed = {session.get_inputs()[0].name: x}
    return steady(lambda: session.run(None, feed), runs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default="/work/models")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--ort-python", default="/work/venv-ort/bin/python")
    parser.add_argument("--ort-only", action="store_true")
    args = parser.parse_args()
    directory = pathlib.Path(args.dir)
    names = args.models.split(",")
    if args.ort_only:
        print(json.dumps({n: time_ort(n, directory, args.threads, args.runs) for n in names}))
        return
    for name in names:
        median, best = time_torch(name, directory, args.threads, args.runs)
        print(f"{name:12s} pytorch      {median:8.3f} ms (median of {args.runs}, min {best:.3f}), {args.threads} thread(s)")
        if pathlib.Path(args.ort_python).exists():
            out = subprocess.run([args.ort_python, __file__, "--ort-only", "--dir", str(directory),
                                  "--threads", str(args.threads), "--runs", str(args.runs),
                                  "--models", name], capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{name:12s} onnxruntime  failed: {out.stderr.strip().splitlines()[-1:]}")
                continue
            median, best = json.loads(out.stdout)[name]
            print(f"{name:12s} onnxruntime  {median:8.3f} ms (median of {args.runs}, min {best:.3f}), {args.threads} thread(s)")


if __name__ == "__main__":
    main()
