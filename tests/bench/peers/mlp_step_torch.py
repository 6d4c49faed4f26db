#!/usr/bin/python3
"""The PyTorch peer of bench_vm's BM_MlpSgdStep: one SGD step of an MLP 784-500-10 (tanh,
softmax cross-entropy) at batch 128 in float32, on the CPU with one thread (as the engine runs).
Prints the median step time in ms over 7 runs of 200 steps.  python3 mlp_step_torch.py"""
import statistics
import time

import torch
from blas_threads import limit_blas_threads

torch.set_num_threads(1)
limit_blas_threads(1)  # the products run on OpenBLAS's own pool (blas_threads.py)
torch.manual_seed(1)
W1 = torch.empty(784, 500).uniform_(-0.07, 0.07).requires_grad_()
b1 = torch.zeros(500, requires_grad=True)
W2 = torch.empty(500, 10).uniform_(-0.1, 0.1).requires_grad_()
b2 = torch.zeros(10, requires_grad=True)
x = torch.empty(128, 784).uniform_(-1, 1)
y = torch.arange(128) % 10
params = [W1, b1, W2, b2]


def step():
    loss = torch.nn.functional.cross_entropy(torch.tanh(x @ W1 + b1) @ W2 + b2, y)
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p, g in zip(params, grads):
            p -= 0.01 * g
    return loss


for _ in range(50):
    step()
runs = []
for _ in range(7):
    t0 = time.perf_counter()
    for _ in range(200):
        step()
    runs.append((time.perf_counter() - t0) / 200 * 1e3)
print(f"torch {torch.__version__}: MLP SGD step {statistics.median(runs):.3f} ms (median of 7 x 200 steps)")
