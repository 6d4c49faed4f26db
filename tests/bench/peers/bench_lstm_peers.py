#!/usr/bin/python3
"""The PyTorch peer of bench_lstm: words per second of a two-layer torch.nn.LSTM, forward and
forward + backward (the gradients of output.sum() wrt the parameters and the input), at Zaremba's
small (200 units, 20 steps) and medium (650 units, 35 steps) sizes, batch 20, float32, on the CPU
with one thread. Prints the median over 7 runs, of wall time and of the process's CPU time (one
thread: on a busy machine the CPU figure is the one to compare with bench_lstm's words/s).   /usr/bin/python3 bench_lstm_peers.py"""
import statistics
import time

import torch
from blas_threads import limit_blas_threads

torch.set_num_threads(1)
limit_blas_threads(1)  # the products run on OpenBLAS's own pool (blas_threads.py)
torch.manual_seed(1)
BATCH = 20

for name, hidden, steps in (("small", 200, 20), ("medium", 650, 35)):
    lstm = torch.nn.LSTM(hidden, hidden, num_layers=2)
    x = torch.empty(steps, BATCH, hidden).uniform_(-1, 1).requires_grad_()
    params = [x] + list(lstm.parameters())
    for backward in (False, True):
        def call():
            if backward:
                y, _ = lstm(x)
                return torch.autograd.grad(y.sum(), params)
            with torch.no_grad():
                return lstm(x)
        calls = 20 if hidden == 200 else 5
        for _ in range(3):
            call()
        runs, cpu = [], []
        for _ in range(7):
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(calls):
                call()
            runs.append((time.perf_counter() - t0) / calls)
            cpu.append((time.process_time() - c0) / calls)
        t, c = statistics.median(runs), statistics.median(cpu)
        label = "fwd+bwd" if backward else "fwd"
        print(f"torch {torch.__version__} LSTM {name} {label}: wall {t * 1e3:.2f} ms per call, "
              f"{steps * BATCH / t:.0f} words/s; CPU {c * 1e3:.2f} ms, {steps * BATCH / c:.0f} "
              f"words/s (median of 7)")
