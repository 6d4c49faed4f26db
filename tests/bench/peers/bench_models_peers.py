#!/usr/bin/python3
"""The peers of bench_onnx_resnet on the models of tests/bench/make_bench_models.py: PyTorch eager
(Debian's python3-torch) and, when it imports, ONNX Runtime (PyPI, in a venv), timed on the same
.onnx files, inputs and thread count in one run. Prints one line per model and runtime: the median
and the minimum of N steady-state calls, in ms.

With --paired BENCH (the path of build/tests/bench/bench_onnx_resnet) it runs ROUNDS rounds per
model instead; each round times Tensorscope (BENCH, fast_run only), ONNX Runtime and PyTorch one
after the other, N calls each, and keeps the round's ratios. It prints the median ratio with its
quartiles: on a shared machine whose speed drifts by 30 % from minute to minute, the ratio of two
runs a second apart is steadier than the ratio of two medians taken minutes apart.

    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 tests/bench/peers/bench_models_peers.py \
        [--dir /work/models] [--threads 1] [--runs 100] [--ort-python /work/venv-ort/bin/python]

Debian's python3-torch and PyPI's onnxruntime live in different interpreters, so the ONNX Runtime
half runs in a child process of the interpreter given by --ort-python (this same file with
--ort-only), one model after the other with PyTorch's."""
import argparse
import json
import os
import pathlib
import re
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
    from blas_threads import check_threads, limit_blas_threads
    torch.set_num_threads(threads)
    limit_blas_threads(threads)  # its matrix products run on OpenBLAS's own pool
    model, _ = models.build(name)
    x = torch.from_numpy(np.load(directory / f"{name}.in0.npy"))
    expected = np.load(directory / f"{name}.out0.npy")
    with torch.no_grad():
        got = model(x).numpy()
        if not np.allclose(got, expected, rtol=1e-4, atol=1e-5):
            raise SystemExit(f"{name}: the rebuilt module does not match {name}.out0.npy")
        busy = check_threads(lambda: model(x), threads)
        if busy > 1.3 * threads:
            print(f"warning: PyTorch kept {busy:.1f} CPUs busy on {name} at {threads} thread(s)",
                  file=sys.stderr)
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


def ort_child(args, directory, name, runs):
    out = subprocess.run([args.ort_python, __file__, "--ort-only", "--dir", str(directory),
                          "--threads", str(args.threads), "--runs", str(runs),
                          "--models", name], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"onnxruntime failed: {out.stderr.strip().splitlines()[-1:]}")
    return tuple(json.loads(out.stdout)[name])


def ours(args, directory, name, runs):
    env = dict(os.environ, BENCH_FAST_ONLY="1", TSCOPE_NUM_THREADS=str(args.threads))
    out = subprocess.run([args.paired, str(runs), str(directory / f"{name}.onnx")],
                         capture_output=True, text=True, env=env)
    match = re.search(r"steady-state inference, fast_run:\s+([0-9.]+) ms \(median of \d+, "
                      r"min ([0-9.]+)\)", out.stdout)
    if out.returncode != 0 or not match:
        raise RuntimeError(f"{args.paired} failed: {(out.stderr or out.stdout).strip()[-300:]}")
    return float(match.group(1)), float(match.group(2))


def quartiles(values):
    q = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return statistics.median(values), q[0], q[-1]


def paired(args, directory, names):
    for name in names:
        rows = []
        runners = [lambda: ours(args, directory, name, args.runs),
                   lambda: ort_child(args, directory, name, args.runs),
                   lambda: time_torch(name, directory, args.threads, args.runs)]
        for r in range(args.rounds):
            # Each round starts with another runtime, so a drift of the host within a round does
            # not always fall on the same one.
            row = [None] * 3
            for k in range(3):
                i = (r + k) % 3
                row[i] = runners[i]()
            rows.append(row)
        for label, k in (("tensorscope", 0), ("onnxruntime", 1), ("pytorch", 2)):
            m, lo, hi = quartiles([r[k][0] for r in rows])
            best = min(r[k][1] for r in rows)
            print(f"{name:12s} {label:12s} {m:8.3f} ms (median of {args.rounds} rounds' medians, "
                  f"quartiles {lo:.3f}-{hi:.3f}; fastest call {best:.3f}), "
                  f"{args.threads} thread(s)")
        for label, k in (("onnxruntime", 1), ("pytorch", 2)):
            m, lo, hi = quartiles([r[0][0] / r[k][0] for r in rows])
            mm, mlo, mhi = quartiles([r[0][1] / r[k][1] for r in rows])
            print(f"{name:12s} tensorscope / {label:11s} {m:.3f} (quartiles {lo:.3f}-{hi:.3f}, "
                  f"{args.rounds} paired rounds of {args.runs} calls); of the rounds' fastest "
                  f"calls {mm:.3f} ({mlo:.3f}-{mhi:.3f})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default="/work/models")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--ort-python", default="/work/venv-ort/bin/python")
    parser.add_argument("--ort-only", action="store_true")
    parser.add_argument("--paired", metavar="BENCH", help="build/tests/bench/bench_onnx_resnet")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    directory = pathlib.Path(args.dir)
    names = args.models.split(",")
    if args.ort_only:
        print(json.dumps({n: time_ort(n, directory, args.threads, args.runs) for n in names}))
        return
    if args.paired:
        paired(args, directory, names)
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
