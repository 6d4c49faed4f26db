#!/usr/bin/python3
"""Writes the PyTorch-exported model fixtures of tests/onnx/tst_onnx_models.cpp.

The generated files are committed, so building and testing need no Python; run this only to change
the fixtures (Debian's python3-torch 1.13, python3-torchvision 0.14, python3-onnx 1.12, numpy):

    /usr/bin/python3 tests/data/onnx/make_model_fixtures.py

Per fixture NAME (Note [ONNX fixture layout] in tests/onnx/onnx_fixture.h) it writes into
tests/data/onnx/models/: NAME.onnx, the reference inputs NAME.in<i>.npy (in the order of the
model's non-initializer graph inputs), PyTorch's outputs NAME.out<i>.npy (in the order of the graph
outputs) and a NAME.json sidecar with the tolerance.

The models, all float32 with random weights from fixed seeds, in eval mode:
  mlp                          Linear-BatchNorm1d-ReLU-Linear-GELU-Linear, dynamic batch axis
  lenet5                       LeNet-5 (tanh, average pooling), dynamic batch axis
  resnet18                     torchvision's ResNet with BasicBlock [2, 2, 2, 2] at reduced widths
                               16/32/64/128 instead of 64/128/256/512 (ReducedResNet18 below:
                               a subclass that rebuilds the stem, the four stages and the head), so
                               the file stays near 2.8 MB; input 1x3x64x64, 10 classes
  lstm                         a 2-layer LSTM, batch_first=False, static sequence length, with
                               initial states as inputs
  transformer_encoder          torch.nn.TransformerEncoderLayer (d_model 32, 4 heads), opset 13:
                               LayerNorm exports decomposed (ReduceMean, Sub, Pow, Sqrt, Div)
  transformer_encoder_opset17  the same layer at opset 17: LayerNormalization nodes
  transformer_encoder_opset9   the same layer at opset 9: Split/Softmax in their old forms
  lstm_opset9                  the LSTM at opset 9: Slice/Squeeze with attributes
Everything is exported at opset 13 unless the name says otherwise, with do_constant_folding=True.
In eval mode PyTorch's exporter folds each BatchNorm2d that follows a Conv into the Conv's weights,
so the ResNet's ONNX graph has no BatchNormalization node (the MLP's BatchNorm1d stays one).

The batch norms get random affine parameters and running statistics, so they are not identities.
Running the script twice writes identical files.
"""
import json
import pathlib
import warnings

import numpy as np
import onnx
import torch
from torch import nn
from torchvision.models.resnet import BasicBlock, ResNet

HERE = pathlib.Path(__file__).resolve().parent
OUT_DIR = HERE / "models"

# Float32 through a few dozen layers: PyTorch's kernels and the engine's sum in different orders.
RTOL = 1e-4
ATOL = 1e-5


def randomize_batch_norms(module, generator):
    """Gives every batch norm random affine parameters and running statistics (defaults are identity)."""
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                n = m.num_features
                m.weight.copy_(torch.empty(n).uniform_(0.5, 1.5, generator=generator))
                m.bias.copy_(torch.empty(n).uniform_(-0.2, 0.2, generator=generator))
                m.running_mean.copy_(torch.empty(n).uniform_(-0.2, 0.2, generator=generator))
                m.running_var.copy_(torch.empty(n).uniform_(0.5, 1.5, generator=generator))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.bn = nn.BatchNorm1d(64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        h = torch.relu(self.bn(self.fc1(x)))
        h = nn.functional.gelu(self.fc2(h))
        return self.fc3(h)


class LeNet5(nn.Module):
    """LeNet-5 as LeCun et al. 1998 describe it: 32x32 input, tanh, average pooling."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.pool1 = nn.AvgPool2d(2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool2 = nn.AvgPool2d(2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool1(torch.tanh(self.conv1(x)))
        x = self.pool2(torch.tanh(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = torch.tanh(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.fc3(x)


class ReducedResNet18(ResNet):
    """torchvision's ResNet-18 (BasicBlock, [2, 2, 2, 2]) with stage widths `widths` instead of
    64/128/256/512. torchvision hard-codes the widths in ResNet.__init__, so this rebuilds the
    modules that depend on them with ResNet's own _make_layer and initialises them as ResNet does;
    the module names (conv1, bn1, layer1.0.conv1, ..., fc) and the forward pass are torchvision's."""

    def __init__(self, widths=(16, 32, 64, 128), num_classes=10):
        super().__init__(BasicBlock, [2, 2, 2, 2], num_classes=num_classes)
        self.inplanes = widths[0]
        self.conv1 = nn.Conv2d(3, widths[0], kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(widths[0])
        self.layer1 = self._make_layer(BasicBlock, widths[0], 2)
        self.layer2 = self._make_layer(BasicBlock, widths[1], 2, stride=2)
        self.layer3 = self._make_layer(BasicBlock, widths[2], 2, stride=2)
        self.layer4 = self._make_layer(BasicBlock, widths[3], 2, stride=2)
        self.fc = nn.Linear(widths[3] * BasicBlock.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=8, hidden_size=16, num_layers=2, batch_first=False)

    def forward(self, x, h0, c0):
        y, (hn, cn) = self.lstm(x, (h0, c0))
        return y, hn, cn


def transformer_encoder():
    # batch_first=False keeps PyTorch 1.13 off its fused fast path (_transformer_encoder_layer_fwd),
    # which the exporter cannot trace; dropout 0 so eval and train agree anyway.
    return nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0)


def build_resnet18():
    """The ResNet-18 fixture's module with its weights (also used by tests/bench/peers/resnet18_torch.py)."""
    torch.manual_seed(3)
    model = ReducedResNet18()
    randomize_batch_norms(model, torch.Generator().manual_seed(30))
    return model.eval()


def resnet18_input():
    """The ResNet-18 fixture's input (resnet18.in0.npy)."""
    return torch.empty(1, 3, 64, 64).uniform_(-1, 1, generator=torch.Generator().manual_seed(31))


# name -> (build the eval-mode model, inputs, input names, output names, dynamic axes, opset, note)
def fixtures():
    def mlp():
        torch.manual_seed(1)
        m = Mlp()
        randomize_batch_norms(m, torch.Generator().manual_seed(10))
        return m

    def lenet5():
        torch.manual_seed(2)
        return LeNet5()

    def lstm():
        torch.manual_seed(4)
        return Lstm()

    def transformer():
        torch.manual_seed(5)
        return transformer_encoder()

    def inputs(seed, *shapes):
        g = torch.Generator().manual_seed(seed)
        return tuple(torch.empty(s).uniform_(-1, 1, generator=g) for s in shapes)

    batch = {0: "batch"}
    lstm_in = inputs(14, (5, 2, 8), (2, 2, 16), (2, 2, 16))
    tf_in = inputs(15, (6, 2, 32))
    return {
        "mlp": (mlp, inputs(11, (4, 32)), ["x"], ["logits"], {"x": batch, "logits": batch}, 13,
                "MLP 32-64-64-10 with BatchNorm1d and GELU; dynamic batch axis"),
        "lenet5": (lenet5, inputs(12, (2, 1, 32, 32)), ["image"], ["logits"],
                   {"image": batch, "logits": batch}, 13, "LeNet-5 (tanh, average pooling); dynamic batch"),
        "resnet18": (build_resnet18, (resnet18_input(),), ["image"], ["logits"], None, 13,
                     "torchvision ResNet-18 at widths 16/32/64/128, random weights"),
        "lstm": (lstm, lstm_in, ["x", "h0", "c0"], ["y", "h_n", "c_n"], None, 13,
                 "2-layer LSTM, sequence 5, batch 2, input 8, hidden 16"),
        "lstm_opset9": (lstm, lstm_in, ["x", "h0", "c0"], ["y", "h_n", "c_n"], None, 9,
                        "the lstm fixture at opset 9"),
        "transformer_encoder": (transformer, tf_in, ["src"], ["out"], None, 13,
                                "TransformerEncoderLayer d_model 32, 4 heads, ff 64; sequence 6, batch 2"),
        "transformer_encoder_opset17": (transformer, tf_in, ["src"], ["out"], None, 17,
                                        "the transformer_encoder fixture at opset 17 (LayerNormalization)"),
        "transformer_encoder_opset9": (transformer, tf_in, ["src"], ["out"], None, 9,
                                       "the transformer_encoder fixture at opset 9"),
    }


def write_fixture(name, build, args, input_names, output_names, dynamic_axes, opset, note):
    model = build().eval()
    with torch.no_grad():
        outputs = model(*args)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    path = OUT_DIR / f"{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on batch_first and constant folding
        torch.onnx.export(model, args, str(path), opset_version=opset, do_constant_folding=True,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    graph_inputs = [i.name for i in proto.graph.input]
    graph_outputs = [o.name for o in proto.graph.output]
    assert graph_inputs == input_names, (name, graph_inputs)
    assert graph_outputs == output_names, (name, graph_outputs)
    for i, a in enumerate(args):
        np.save(OUT_DIR / f"{name}.in{i}.npy", a.numpy().astype(np.float32), allow_pickle=False)
    for i, o in enumerate(outputs):
        np.save(OUT_DIR / f"{name}.out{i}.npy", o.numpy().astype(np.float32), allow_pickle=False)
    sidecar = {"rtol": RTOL, "atol": ATOL, "export": True, "note": f"{note}; opset {opset}"}
    (OUT_DIR / f"{name}.json").write_text(json.dumps(sidecar, indent=2) + "\n")
    ops = sorted({n.op_type for n in proto.graph.node})
    print(f"{name}: opset {opset}, {path.stat().st_size} bytes, {len(proto.graph.node)} nodes: {' '.join(ops)}")


def main():
    OUT_DIR.mkdir(exist_ok=True)
    for name, spec in fixtures().items():
        write_fixture(name, *spec)
    total = sum(p.stat().st_size for p in OUT_DIR.iterdir())
    print(f"{OUT_DIR}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
