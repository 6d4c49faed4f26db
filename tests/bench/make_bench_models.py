#!/usr/bin/python3
"""Writes the full-size CPU-speed models of issue 21 (and the .tsg size figures of issue 26) with
fixed seeds and random weights, each with its input and PyTorch's output as .npy:

  resnet18     torchvision ResNet-18, 1x3x224x224 (47 MB)
  mobilenetv2  torchvision MobileNetV2, 1x3x224x224 (14 MB)
  transformer  nn.TransformerEncoder, 4 layers, d_model 256, 4 heads, ff 1024, sequence 128, batch 1

Run with Debian's python3-torch, python3-torchvision and python3-onnx:
    /usr/bin/python3 tests/bench/make_bench_models.py [OUT_DIR=/work/models]
The files are large, so they are not committed; bench_onnx_resnet runs them and
tests/bench/peers/bench_models_peers.py times PyTorch and ONNX Runtime on the same files."""
import pathlib
import sys
import warnings

import numpy as np
import onnx
import torch
from torch import nn
import torchvision


def randomize_batch_norms(module, generator):
    """Random affine parameters and running statistics (the defaults are the identity)."""
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                n = m.num_features
                m.weight.copy_(torch.empty(n).uniform_(0.5, 1.5, generator=generator))
                m.bias.copy_(torch.empty(n).uniform_(-0.2, 0.2, generator=generator))
                m.running_mean.copy_(torch.empty(n).uniform_(-0.2, 0.2, generator=generator))
                m.running_var.copy_(torch.empty(n).uniform_(0.5, 1.5, generator=generator))


def resnet18():
    torch.manual_seed(21)
    m = torchvision.models.resnet18(weights=None)
    randomize_batch_norms(m, torch.Generator().manual_seed(210))
    return m.eval()


def mobilenetv2():
    torch.manual_seed(22)
    m = torchvision.models.mobilenet_v2(weights=None)
    randomize_batch_norms(m, torch.Generator().manual_seed(220))
    return m.eval()


def transformer():
    # batch_first=False keeps PyTorch 1.13 off its fused fast path, which the exporter cannot trace.
    torch.manual_seed(23)
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0)
    model = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
    # The encoder deep-copies one layer, so its layers start equal (and the exporter would store
    # one set of weights): give each its own.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
            else:
                p.uniform_(-0.1, 0.1)
    return model.eval()


def image(seed):
    return torch.empty(1, 3, 224, 224).uniform_(-1, 1, generator=torch.Generator().manual_seed(seed))


MODELS = {
    # name -> (build, input, input name, output name)
    "resnet18": (resnet18, lambda: image(211), "image", "logits"),
    "mobilenetv2": (mobilenetv2, lambda: image(221), "image", "logits"),
    "transformer": (transformer,
                    lambda: torch.empty(128, 1, 256).uniform_(-1, 1, generator=torch.Generator().manual_seed(231)),
                    "src", "out"),
}


def build(name):
    """The module and its input (also used by the peers script)."""
    make, make_input, _, _ = MODELS[name]
    return make(), make_input()


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/work/models")
    out.mkdir(parents=True, exist_ok=True)
    for name, (_, _, input_name, output_name) in MODELS.items():
        model, x = build(name)
        with torch.no_grad():
            y = model(x)
        path = out / f"{name}.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), str(path), opset_version=13, do_constant_folding=True,
                              input_names=[input_name], output_names=[output_name])
        onnx.checker.check_model(onnx.load(str(path)))
        np.save(out / f"{name}.in0.npy", x.numpy().astype(np.float32), allow_pickle=False)
        np.save(out / f"{name}.out0.npy", y.numpy().astype(np.float32), allow_pickle=False)
        print(f"{name}: {path.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
