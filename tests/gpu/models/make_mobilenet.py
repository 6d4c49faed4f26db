#!/usr/bin/python3
"""The MobileNet of tst_cuda_models: torchvision's MobileNetV2 at width 0.25 with 10 classes on a
1x3x64x64 image (depthwise and 1x1 convolutions, ReLU6, residual adds, batch norms folded by the
exporter), random weights and batch-norm statistics from fixed seeds. Writes mobilenetv2.onnx to
a temporary folder, converts it to mobilenetv2.tsg next to this file with tensorscope (the GPU
machines cannot read ONNX), and saves the input and PyTorch's output as mobilenetv2.in0.npy and
mobilenetv2.out0.npy here.
    /usr/bin/python3 tests/gpu/models/make_mobilenet.py [build/gui/tensorscope]"""
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "bench"))
from make_bench_models import randomize_batch_norms  # noqa: E402


def main():
    tensorscope = sys.argv[1] if len(sys.argv) > 1 else "build/gui/tensorscope"
    torch.manual_seed(24)
    model = torchvision.models.mobilenet_v2(weights=None, width_mult=0.25, num_classes=10)
    randomize_batch_norms(model, torch.Generator().manual_seed(240))
    model.eval()
    x = torch.empty(1, 3, 64, 64).uniform_(-1, 1, generator=torch.Generator().manual_seed(241))
    with torch.no_grad():
        y = model(x)
    with tempfile.TemporaryDirectory() as tmp:
        onnx = pathlib.Path(tmp) / "mobilenetv2.onnx"
        torch.onnx.export(model, x, str(onnx), input_names=["image"], output_names=["logits"],
                          opset_version=13)
        subprocess.run([tensorscope, "optimize", str(onnx), "-o", str(HERE / "mobilenetv2.tsg"),
                        "--mode", "none"], check=True, capture_output=True)
    np.save(HERE / "mobilenetv2.in0.npy", x.numpy())
    np.save(HERE / "mobilenetv2.out0.npy", y.numpy())
    print(f"{HERE / 'mobilenetv2.tsg'}: {(HERE / 'mobilenetv2.tsg').stat().st_size} bytes")


if __name__ == "__main__":
    main()
