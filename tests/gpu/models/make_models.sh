#!/bin/bash
# Converts the ONNX fixtures tst_cuda_models runs on the GPU to .tsg files (the GPU machines have
# no protobuf to read .onnx): the original graph as imported, weights included. Run from the
# repository root after a build with ONNX:
#   tests/gpu/models/make_models.sh [build/gui/tensorscope]
set -euo pipefail
tensorscope=${1:-build/gui/tensorscope}
here=$(dirname "$0")
# (Not the detection fixtures: their TopK and NMS would load as ONNX-backed nodes. The MobileNet
# comes from make_mobilenet.py, which makes its .onnx with PyTorch first.)
for fixture in tests/data/onnx/models/resnet18.onnx tests/data/onnx/models/transformer_encoder.onnx; do
  name=$(basename "$fixture" .onnx)
  "$tensorscope" optimize "$fixture" -o "$here/$name.tsg" --mode none
  echo "$here/$name.tsg: $(stat -c %s "$here/$name.tsg") bytes"
done
