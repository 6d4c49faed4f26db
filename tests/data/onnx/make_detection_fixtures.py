#!/usr/bin/python3
"""Writes the detection-model fixtures of tests/onnx/tst_onnx_detection.cpp (issue 25).

The generated files are committed, so building and testing need no Python; run this only to change
the fixtures (Debian's python3-torch 1.13, python3-torchvision 0.14, python3-onnx 1.12, numpy):

    /usr/bin/python3 tests/data/onnx/make_detection_fixtures.py
    /usr/bin/python3 tests/data/onnx/make_detection_fixtures.py --full /tmp/detection-full

The second writes torchvision's full-size models (FULL_SIZE; 14 MB and 78 MB, not committed) in the
same layout, to compare by hand (docs/onnx.md, "Detection models").

Per fixture NAME (Note [ONNX fixture layout] in tests/onnx/onnx_fixture.h) it writes into
tests/data/onnx/detection/: NAME.onnx, the image NAME.in0.npy, PyTorch's detections NAME.out<i>.npy
in the model's output order (SSD: boxes, scores, labels; Faster R-CNN: boxes, labels, scores; boxes
float32 (n, 4), scores float32 (n,), labels int64 (n,)) and a NAME.json sidecar with the tolerance.

The models are torchvision's detection models built from torchvision's own classes as its builders
build them, with MobileNetV3-Large backbones at reduced width so the files stay small, random
weights from fixed seeds, in eval mode, exported by PyTorch 1.13 at opset 11 (what torchvision's
detection models export at; its NMS and RoIAlign symbolics need opset 11):
  ssdlite       ssdlite320_mobilenet_v3_large: SSD with an SSDLiteHead over
                SSDLiteFeatureExtractorMobileNet, backbone (reduced tail) and extra layers at width
                0.25 (torchvision: 1.0), 21 classes (torchvision: 91); the transform resizes to
                320x320
  fasterrcnn    fasterrcnn_mobilenet_v3_large_320_fpn: FasterRCNN over BackboneWithFPN with the
                backbone at width 0.25, FPN channels 64 (torchvision: 256) and a TwoMLPHead of 64
                (torchvision: 1024), 21 classes; the transform resizes to 320 on the short side
The image is 3x96x128, smooth, values in [0, 1] (the transform's Resize brings it to the model's
size).

Detections are only comparable when the model's choices do not hinge on rounding. With
torchvision's initialisation the signal fades layer by layer, many scores tie, and NMS and TopK may
keep other boxes of equal score (ONNX Runtime kept 32 boxes where PyTorch kept 37 on the full-size
Faster R-CNN). So the weights are He-normal, the batch norms are calibrated on the images, the
heads are scaled per fixture (initialize, calibrate_batch_norms), and each fixture is checked
before it is written (check_stable):
  - the kept scores, sorted, differ pairwise by more than twice the test's tolerance, so no two
    can trade places while each stays within it;
  - the model run in float64 keeps as many detections with the same labels in the same order, and
    its boxes and scores differ from float32's by at most STABILITY of the test's tolerance: no
    decision is as close as float32 rounding, so an implementation that rounds differently makes
    the same ones and stays within the tolerance.
Running the script twice writes identical files.
"""
import argparse
import json
import math
import pathlib
import warnings

import numpy as np
import onnx
import torch
from torch import nn
from torchvision.models import detection, mobilenetv3
from torchvision.models.detection import _utils as det_utils
from torchvision.models.detection.anchor_utils import AnchorGenerator, DefaultBoxGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.faster_rcnn import FasterRCNN, FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.ssd import SSD
from torchvision.models.detection.ssdlite import SSDLiteFeatureExtractorMobileNet, SSDLiteHead
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

HERE = pathlib.Path(__file__).resolve().parent
OUT_DIR = HERE / "detection"
OPSET = 11
RTOL = 1e-4
ATOL = 1e-5
NUM_CLASSES = 21
WIDTH = 0.25
IMAGE_SHAPE = (3, 96, 128)
CALIBRATION_IMAGES = 16
STABILITY = 0.25


def stage_indices(features):
    """The indices of the strided blocks, as torchvision's _mobilenet_extractor finds them."""
    return [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]


def build_ssdlite(score_thresh):
    """torchvision's ssdlite320_mobilenet_v3_large as built without pretrained weights (reduced
    tail, its batch norm, its anchors, transform and post-processing), with the backbone and the
    extra layers at WIDTH and the given score threshold."""
    norm_layer = lambda c: nn.BatchNorm2d(c, eps=0.001, momentum=0.03)  # noqa: E731
    backbone = mobilenetv3.mobilenet_v3_large(weights=None, norm_layer=norm_layer, reduced_tail=True,
                                              width_mult=WIDTH)
    features = backbone.features
    extractor = SSDLiteFeatureExtractorMobileNet(features, stage_indices(features)[-2], norm_layer,
                                                 width_mult=WIDTH)
    size = (320, 320)
    anchors = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    out_channels = det_utils.retrieve_out_channels(extractor, size)
    head = SSDLiteHead(out_channels, anchors.num_anchors_per_location(), NUM_CLASSES, norm_layer)
    return SSD(extractor, anchors, size, NUM_CLASSES, head=head, score_thresh=score_thresh,
               nms_thresh=0.55, detections_per_img=300, topk_candidates=300, image_mean=[0.5, 0.5, 0.5],
               image_std=[0.5, 0.5, 0.5])


def build_fasterrcnn(score_thresh):
    """torchvision's fasterrcnn_mobilenet_v3_large_320_fpn as built without pretrained weights
    (nn.BatchNorm2d, its anchors, its 320 settings), with the backbone at WIDTH, fewer FPN
    channels, a smaller box head and the given box score threshold."""
    fpn_channels, representation = 64, 64
    backbone = mobilenetv3.mobilenet_v3_large(weights=None, norm_layer=nn.BatchNorm2d, width_mult=WIDTH)
    features = backbone.features
    stages = stage_indices(features)
    returned = [len(stages) - 2, len(stages) - 1]
    body = BackboneWithFPN(features, {f"{stages[k]}": str(v) for v, k in enumerate(returned)},
                           [features[stages[i]].out_channels for i in returned], fpn_channels,
                           extra_blocks=LastLevelMaxPool())
    anchor_sizes = ((32, 64, 128, 256, 512,),) * 3
    anchors = AnchorGenerator(anchor_sizes, ((0.5, 1.0, 2.0),) * len(anchor_sizes))
    box_head = TwoMLPHead(fpn_channels * 7 * 7, representation)
    return FasterRCNN(body, num_classes=None, rpn_anchor_generator=anchors, box_head=box_head,
                      box_predictor=FastRCNNPredictor(representation, NUM_CLASSES), min_size=320,
                      max_size=640, rpn_pre_nms_top_n_test=150, rpn_post_nms_top_n_test=150,
                      rpn_score_thresh=0.05, box_score_thresh=score_thresh)


def initialize(model, generator, head_scale, regression_scale):
    """Random weights under which float32 rounding stays far from every decision the model makes
    (the module docstring): convolutions and linear layers He-normal (biases uniform in
    [-0.1, 0.1]), so activations keep their scale through the network; the heads scaled by
    head_scale and their box regressions by regression_scale as well, since a regression delta is
    multiplied by an anchor of up to 512 pixels; batch norms with random affine parameters.
    torchvision's initialisation instead shrinks the signal layer by layer, so the deep features
    are nearly constant and many scores tie."""
    with torch.no_grad():
        for name, m in model.named_modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                std = math.sqrt(2.0 / m.weight[0].numel())
                if "head" in name or "box_predictor" in name:
                    std *= head_scale
                if "bbox" in name or "regression" in name:
                    std *= regression_scale
                m.weight.copy_(torch.randn(m.weight.shape, generator=generator) * std)
                if m.bias is not None:
                    m.bias.copy_(torch.empty(m.bias.shape).uniform_(-0.1, 0.1, generator=generator))
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(torch.empty(m.num_features).uniform_(0.5, 1.5, generator=generator))
                m.bias.copy_(torch.empty(m.num_features).uniform_(-0.2, 0.2, generator=generator))


def calibrate_batch_norms(model, images):
    """Running statistics measured on `images` (one training-mode pass of the backbone and, for
    SSD, the head), so every batch norm normalizes the activations it sees; a channel's variance
    is kept at least a tenth of its layer's mean, so a channel that barely varies over the images
    (the 1x1 maps of SSD's last extra layers) is not amplified."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None  # a plain average
    model.eval()
    with torch.no_grad():
        batch, _ = model.transform(images)
        model.backbone.train()
        features = model.backbone(batch.tensors)
        if isinstance(model, SSD):
            model.head.train()
            model.head(list(features.values()))
        model.eval()
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_var.copy_(torch.maximum(m.running_var, 0.1 * m.running_var.mean()))


def smooth_image(generator, shape):
    """An image of `shape` with values in [0, 1]: random 12x16 cells per channel interpolated
    bicubically, so the transform's Resize does not turn float32 rounding of its sampling positions
    into large value differences, as it does for pixel noise."""
    cells = torch.rand((1, shape[0], 12, 16), generator=generator)
    image = nn.functional.interpolate(cells, size=shape[1:], mode="bicubic", align_corners=False)
    return image[0].clamp(0, 1)


def full_ssdlite(score_thresh):
    """torchvision's ssdlite320_mobilenet_v3_large itself (91 classes), for --full."""
    model = detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
    model.score_thresh = score_thresh
    return model


def full_fasterrcnn(score_thresh):
    """torchvision's fasterrcnn_mobilenet_v3_large_320_fpn itself (91 classes), for --full."""
    model = detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None)
    model.roi_heads.score_thresh = score_thresh
    return model


# name -> (builder, score threshold, seed, head scale, regression scale, image shape): the model's
# own random state is seeded with seed, the weights with seed + 1, the images with seed + 2. The
# values are ones check_stable accepts; the score threshold (torchvision: 0.001 for SSD-lite, 0.05
# for Faster R-CNN) keeps the detections above the first pair of scores too close to compare.
FIXTURES = {
    "ssdlite": (build_ssdlite, 0.77, 49, 2.0, 0.1, IMAGE_SHAPE),
    "fasterrcnn": (build_fasterrcnn, 0.39, 90, 1.0, 0.01, IMAGE_SHAPE),
}
# The full-size models (--full DIR; 14 MB and 78 MB, not committed) on a 3x320x320 image.
FULL_SIZE = {
    "ssdlite": (full_ssdlite, 0.3915, 40, 1.0, 0.1, (3, 320, 320)),
    "fasterrcnn": (full_fasterrcnn, 0.18, 90, 1.0, 0.01, (3, 320, 320)),
}


def detect(model, image):
    """The detections for one image: {"boxes", "scores", "labels"} in the model's order (SSD's
    boxes, scores, labels; Faster R-CNN's boxes, labels, scores), which the export keeps."""
    with torch.no_grad():
        return model([image])[0]


def check_stable(name, model, image, outputs):
    """Raises unless the detections are well separated (the module docstring)."""
    boxes, labels, scores = outputs["boxes"], outputs["labels"], outputs["scores"]
    if len(scores) < 2:
        raise SystemExit(f"{name}: only {len(scores)} detections")
    s = np.sort(scores.numpy().astype(np.float64))[::-1]
    tolerance = ATOL + RTOL * s[:-1]
    margins = (s[:-1] - s[1:]) / (2 * tolerance)
    if margins.min() <= 1:
        k = int(margins.argmin())
        raise SystemExit(f"{name}: kept scores {k} and {k + 1} ({s[k]:.6f}, {s[k + 1]:.6f}) are "
                         "within twice the tolerance of each other")
    out64 = detect(model.double(), image.double())
    b64, l64, s64 = out64["boxes"], out64["labels"], out64["scores"]
    model.float()
    if not torch.equal(l64, labels) or b64.shape != boxes.shape:
        raise SystemExit(f"{name}: float64 keeps {len(l64)} detections, float32 {len(labels)}, "
                         "or other labels")
    for what, a, b in (("boxes", b64, boxes), ("scores", s64, scores)):
        excess = (np.abs(a.numpy() - b.double().numpy()) / (ATOL + RTOL * np.abs(a.numpy()))).max()
        if excess > STABILITY:
            raise SystemExit(f"{name}: float64 and float32 {what} differ by {excess:.2f} of the "
                             f"tolerance (rtol {RTOL}, atol {ATOL}); at most {STABILITY}")
    return margins.min()


def write_fixture(out_dir, name, build, score_thresh, seed, head_scale, regression_scale, shape):
    torch.manual_seed(seed)
    model = build(score_thresh)
    initialize(model, torch.Generator().manual_seed(seed + 1), head_scale, regression_scale)
    images = torch.Generator().manual_seed(seed + 2)
    image = smooth_image(images, shape)
    calibrate_batch_norms(model, [image] + [smooth_image(images, shape) for _ in range(CALIBRATION_IMAGES - 1)])
    outputs = detect(model, image)
    gap = check_stable(name, model, image, outputs)
    path = out_dir / f"{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's tracer warnings on the detection code
        torch.onnx.export(model, ([image],), str(path), opset_version=OPSET, do_constant_folding=True,
                          input_names=["image"], output_names=list(outputs))
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    assert [i.name for i in proto.graph.input] == ["image"], name
    assert [o.name for o in proto.graph.output] == list(outputs), name
    np.save(out_dir / f"{name}.in0.npy", image.numpy(), allow_pickle=False)
    for i, o in enumerate(outputs.values()):
        np.save(out_dir / f"{name}.out{i}.npy", o.numpy(), allow_pickle=False)
    note = (f"torchvision {name} (MobileNetV3-Large backbone at width {WIDTH}), random weights; "
            f"{len(outputs['scores'])} detections, sorted scores at least {gap:.1f} times twice the "
            f"tolerance apart; opset {OPSET}")
    sidecar = {"rtol": RTOL, "atol": ATOL, "export": False, "note": note}
    (out_dir / f"{name}.json").write_text(json.dumps(sidecar, indent=2) + "\n")
    ops = sorted({n.op_type for n in proto.graph.node})
    print(f"{name}: {path.stat().st_size} bytes, {len(proto.graph.node)} nodes, "
          f"{len(outputs['scores'])} detections, score gaps >= {gap:.1f} x twice the tolerance: "
          f"{' '.join(ops)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", metavar="DIR", type=pathlib.Path,
                        help="write the full-size models into DIR instead of the fixtures")
    args = parser.parse_args()
    out_dir, specs = (args.full, FULL_SIZE) if args.full else (OUT_DIR, FIXTURES)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, spec in specs.items():
        write_fixture(out_dir, name, *spec)
    total = sum(p.stat().st_size for p in out_dir.iterdir())
    print(f"{out_dir}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
