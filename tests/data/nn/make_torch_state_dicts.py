#!/usr/bin/env python3
"""Writes the PyTorch fixtures of tests/engine/nn/tst_nn_torch_parity.cpp.

For each small model: <name>_state.npz holds its state_dict (PyTorch's keys, np.savez, float32;
int64 for num_batches_tracked) and <name>_io.npz an input and PyTorch's outputs on it ("input",
"output", then "h_n", "c_n" or "weights" where the module returns them). The models are in eval
mode (BatchNorm with running statistics gathered by a few training batches).

Needs Debian's python3-torch (apt-get install python3-torch); run it with that Python:
    /usr/bin/python3 tests/data/nn/make_torch_state_dicts.py [OUT_DIR]
The test never needs torch: only these files, which are committed (a few KB each).
"""

import os
import sys

import numpy as np
import torch
from torch import nn


def save(out_dir, name, model, inputs, outputs):
    state = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    np.savez(os.path.join(out_dir, name + "_state.npz"), **state)
    np.savez(os.path.join(out_dir, name + "_io.npz"),
             **{k: v.detach().cpu().numpy() for k, v in {**inputs, **outputs}.items()})


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(20261207)
    torch.set_num_threads(1)
    with torch.no_grad():
        mlp = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
        x = torch.randn(4, 6)
        save(out_dir, "mlp", mlp, {"input": x}, {"output": mlp(x)})

        cnn = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                            nn.MaxPool2d(2), nn.Conv2d(4, 6, 3), nn.AvgPool2d(2))
        cnn.train()
        for _ in range(3):
            cnn(torch.randn(5, 3, 10, 10) * 2 + 0.5)  # running statistics away from 0 and 1
        cnn.eval()
        x = torch.randn(2, 3, 10, 10)
        save(out_dir, "cnn", cnn, {"input": x}, {"output": cnn(x)})

        ln = nn.Sequential(nn.Linear(5, 8), nn.LayerNorm(8), nn.GELU()).eval()
        with torch.no_grad():
            ln[1].weight.uniform_(0.5, 1.5)
            ln[1].bias.uniform_(-0.5, 0.5)
        x = torch.randn(3, 5)
        save(out_dir, "ln_gelu", ln, {"input": x}, {"output": ln(x)})

        lstm = nn.LSTM(5, 7, num_layers=2).eval()
        x = torch.randn(6, 3, 5)
        y, (h, c) = lstm(x)
        save(out_dir, "lstm", lstm, {"input": x}, {"output": y, "h_n": h, "c_n": c})

        gru = nn.GRU(5, 7, num_layers=2).eval()
        x = torch.randn(6, 3, 5)
        y, h = gru(x)
        save(out_dir, "gru", gru, {"input": x}, {"output": y, "h_n": h})

        mha = nn.MultiheadAttention(8, 2).eval()
        with torch.no_grad():
            mha.in_proj_bias.uniform_(-0.3, 0.3)
            mha.out_proj.bias.uniform_(-0.3, 0.3)
        q, kv = torch.randn(4, 3, 8), torch.randn(5, 3, 8)
        y, w = mha(q, kv, kv)
        save(out_dir, "mha", mha, {"query": q, "key": kv}, {"output": y, "weights": w})

        emb = nn.Embedding(10, 4).eval()
        idx = torch.tensor([[1, 9], [0, 3], [3, 7]], dtype=torch.int64)
        save(out_dir, "embedding", emb, {"input": idx}, {"output": emb(idx)})


if __name__ == "__main__":
    main()
