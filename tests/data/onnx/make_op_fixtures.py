#!/usr/bin/python3
"""Regenerates tests/data/onnx/ops/: one tiny ONNX model per op (and per opset form where the op
changed), with reference inputs and outputs as .npy (Note [ONNX fixture layout] in
tests/onnx/onnx_fixture.h).

Models are built with onnx.helper and checked with onnx.checker (full check, which runs ONNX's
shape inference against the declared output shapes) except for opset 18, newer than the onnx 1.12
this script runs with. onnx 1.12 has no reference evaluator, so the reference outputs come from
numpy, or torch.nn.functional in float64 (convolution, pooling), or a plain numpy loop (LSTM,
GRU). Inputs and parameters are float32 drawn from a fixed seed, so reruns give identical files.
When written, every fixture was also run with onnxruntime 1.32 and matched its reference within
the fixture's tolerance (not needed to regenerate).

Run:  /usr/bin/python3 tests/data/onnx/make_op_fixtures.py   (CI never runs it; commit the files)
"""
import json
import math
import os
import shutil

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, mapping, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops")
rng = np.random.default_rng(20240505)
names = set()


f32 = lambda *shape, lo=-1.0, hi=1.0: rng.uniform(lo, hi, size=shape).astype(np.float32)
i64 = lambda *shape, lo=0, hi=10: rng.integers(lo, hi, size=shape).astype(np.int64)
arr = lambda values, dtype=np.int64: np.array(values, dtype=dtype)


def save(name, nodes, inputs, outputs, inits=None, opset=13, rtol=None, atol=None, export=True,
         note=None, dims=None):
    """Writes fixture `name`. nodes: (op, inputs, outputs, attrs) tuples; inputs/outputs:
    (name, array) in graph order; inits: name -> array; dims: input name -> shape with symbolic
    dims (strings) replacing the array's."""
    assert name not in names, name
    names.add(name)
    inits = inits or {}
    counts = {}
    made = []
    for op, ins, outs, attrs in nodes:
        k = counts.get(op, 0)
        counts[op] = k + 1
        made.append(helper.make_node(op, ins, outs, name="/%s%s" % (op, "_%d" % k if k else ""), **attrs))

    def info(n, a, shape=None):
        return helper.make_tensor_value_info(n, mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], list(shape or a.shape))

    graph = helper.make_graph(
        made, name, [info(n, a, (dims or {}).get(n)) for n, a in inputs], [info(n, a) for n, a in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()])
    model = helper.make_model(graph, producer_name="make_op_fixtures.py",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if opset <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    for i, (_, a) in enumerate(inputs):
        np.save(os.path.join(OUT, "%s.in%d.npy" % (name, i)), a)
    for i, (_, a) in enumerate(outputs):
        np.save(os.path.join(OUT, "%s.out%d.npy" % (name, i)), a)
    side = {k: v for k, v in (("rtol", rtol), ("atol", atol), ("note", note)) if v is not None}
    if not export:
        side["export"] = False
    if opset > onnx.defs.onnx_opset_version():
        side["note"] = (side.get("note", "") + " opset %d: not checked by onnx 1.12" % opset).strip()
    if side:
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(side, f, indent=1, sort_keys=True)
            f.write("\n")


def one(name, op, ins, out, attrs=None, inits=None, opset=13, **kw):
    """A single node whose graph inputs are `ins` (name -> array, minus initializers) and whose
    only output "out" is `out`."""
    inits = inits or {}
    save(name, [(op, list(ins) + list(inits), ["out"], attrs or {})], list(ins.items()),
         [("out", out)], inits, opset, **kw)


def ref32(fn, *xs):
    """fn on float64 copies of the float32 arrays, the result cast back to float32."""
    return np.asarray(fn(*[x.astype(np.float64) for x in xs])).astype(np.float32)


# ----------------------------------------------------------------------------------------------
# Elementwise math
def elementwise():
    a, b, v = f32(3, 4), f32(3, 4), f32(4)
    one("add_broadcast", "Add", {"a": a, "b": v}, a + v)
    x, y = f32(2, 1, 4), f32(3, 1)
    one("add_v7", "Add", {"a": x, "b": y}, x + y, opset=7)
    one("add_v6", "Add", {"a": a, "b": b}, a + b, opset=6)  # no broadcasting before 7 (legacy attribute)
    ai, bi = i64(2, 3, lo=-5), i64(3, lo=-5)
    one("add_int64", "Add", {"a": ai, "b": bi}, ai + bi)
    c = f32(3, 1)
    one("sub_broadcast", "Sub", {"a": a, "b": c}, a - c)
    s = arr(2.5, np.float32)
    one("mul_scalar_init", "Mul", {"a": a}, a * s, inits={"s": s})
    ci = i64(3, 4, lo=-4, hi=4).astype(np.int32)
    one("mul_int32", "Mul", {"a": ci, "b": ci[:1]}, ci * ci[:1])
    d = f32(3, 4, lo=0.5, hi=2.0) * np.where(f32(3, 4) > 0, 1, -1).astype(np.float32)
    one("div", "Div", {"a": a, "b": d}, ref32(np.divide, a, d))
    di, dd = i64(6, lo=0, hi=50), i64(6, lo=1, hi=7)
    one("div_int64", "Div", {"a": di, "b": dd}, di // dd, note="non-negative operands: C and numpy agree")
    p, e = f32(3, 4, lo=0.5, hi=2.0), f32(3, 4, lo=-2, hi=2)
    one("pow", "Pow", {"x": p, "y": e}, ref32(np.power, p, e))
    one("pow_v7", "Pow", {"x": p, "y": e[0]}, ref32(np.power, p, e[0]), opset=7)
    n = arr([2, 3, 0, 1], np.int64)
    one("pow_int_exponent", "Pow", {"x": b}, ref32(lambda q: np.power(q, n), b), inits={"n": n})
    m = f32(2, 3, 4, lo=-3, hi=3)
    pos = f32(2, 3, 4, lo=0.1, hi=4)
    unary = [("neg", "Neg", m, np.negative), ("abs", "Abs", m, np.abs), ("exp", "Exp", m, np.exp),
             ("log", "Log", pos, np.log), ("sqrt", "Sqrt", pos, np.sqrt),
             ("reciprocal", "Reciprocal", pos * np.sign(m), np.reciprocal),
             ("erf", "Erf", m, lambda t: torch.erf(torch.from_numpy(t)).numpy()),
             ("tanh", "Tanh", m, np.tanh), ("sigmoid", "Sigmoid", m, lambda t: 1 / (1 + np.exp(-t))),
             ("softplus", "Softplus", m, lambda t: np.log1p(np.exp(t))),
             ("relu", "Relu", m, lambda t: np.maximum(t, 0))]
    for name, op, x, fn in unary:
        one(name, op, {"x": x}, ref32(fn, x))
    sg = np.array([-2, -0.5, 0, 0.25, 3, 0], np.float32)
    one("sign", "Sign", {"x": sg}, np.sign(sg))
    ni = i64(5, lo=-9, hi=9)
    one("neg_int64", "Neg", {"x": ni}, -ni)
    one("abs_int32", "Abs", {"x": ni.astype(np.int32)}, np.abs(ni).astype(np.int32))
    one("exp_v6", "Exp", {"x": m}, ref32(np.exp, m), opset=6)
    one("relu_v6", "Relu", {"x": m}, ref32(lambda t: np.maximum(t, 0), m), opset=6)
    one("relu_symbolic_dim", "Relu", {"x": m}, np.maximum(m, 0), dims={"x": ["N", 3, "W"]})
    one("leakyrelu", "LeakyRelu", {"x": m}, ref32(lambda t: np.where(t > 0, t, 0.1 * t), m),
        {"alpha": 0.1})
    one("leakyrelu_default", "LeakyRelu", {"x": m}, ref32(lambda t: np.where(t > 0, t, 0.01 * t), m))
    slope = f32(3, 1, 1, lo=0, hi=0.5)
    pr = f32(2, 3, 2, 2)
    one("prelu_channel", "PRelu", {"x": pr}, ref32(lambda t, q: np.where(t > 0, t, q * t), pr, slope),
        inits={"slope": slope})
    s1 = arr([0.25], np.float32)
    one("prelu_scalar_slope", "PRelu", {"x": m}, ref32(lambda t, q: np.where(t > 0, t, q * t), m, s1),
        inits={"slope": s1}, opset=9)
    one("elu", "Elu", {"x": m}, ref32(lambda t: np.where(t > 0, t, 0.5 * np.expm1(t)), m), {"alpha": 0.5})
    al, ga = 1.67326319217681884765625, 1.05070102214813232421875
    one("selu", "Selu", {"x": m}, ref32(lambda t: ga * np.where(t > 0, t, al * np.expm1(t)), m))
    one("shrink", "Shrink", {"x": m},
        ref32(lambda t: np.where(t < -1.5, t + 0.5, np.where(t > 1.5, t - 0.5, 0)), m),
        {"lambd": 1.5, "bias": 0.5})
    one("shrink_default", "Shrink", {"x": m}, ref32(lambda t: np.where(np.abs(t) > 0.5, t, 0), m))
    gelu()
    one("clip_v6", "Clip", {"x": m}, np.clip(m, -0.5, 0.5), {"min": -0.5, "max": 0.5}, opset=6)
    cl = {"lo": arr(-0.5, np.float32), "hi": arr(0.5, np.float32)}
    one("clip_v11", "Clip", {"x": m}, np.clip(m, -0.5, 0.5), inits=cl, opset=11)
    one("clip_v13_min_only", "Clip", {"x": m}, np.maximum(m, -0.5), inits={"lo": cl["lo"]})
    one("clip_v6_default", "Clip", {"x": m}, m, opset=6)
    ci8 = i64(6, lo=-20, hi=20).astype(np.int32)
    save("clip_v12_int32", [("Clip", ["x", "lo", "hi"], ["y"], {})], [("x", ci8)],
         [("y", np.clip(ci8, -5, 7))], {"lo": arr(-5, np.int32), "hi": arr(7, np.int32)}, 12)
    x1, x2, x3 = f32(2, 3), f32(3), f32(1, 3)
    for op, fn in (("Min", np.minimum), ("Max", np.maximum), ("Sum", np.add)):
        save(op.lower() + "_3_broadcast", [(op, ["a", "b", "c"], ["y"], {})], [("a", x1), ("b", x2), ("c", x3)],
             [("y", ref32(lambda p, q, r: fn(fn(p, q), r), x1, x2, x3))])
    one("max_single", "Max", {"a": x1}, x1)
    save("mean_2_broadcast", [("Mean", ["a", "b"], ["y"], {})], [("a", x1), ("b", x2)],
         [("y", ref32(lambda p, q: (p + q) / 2, x1, x2))])
    save("sum_v6", [("Sum", ["a", "b"], ["y"], {})], [("a", x1), ("b", -x1)], [("y", x1 + -x1)], opset=6)
    save("max_int64", [("Max", ["a", "b"], ["y"], {})], [("a", ai), ("b", bi)], [("y", np.maximum(ai, bi))])


def gelu():
    """GELU as torch.onnx.export writes it for opset <= 17 (the erf form and the tanh form)."""
    x = f32(2, 3, 5, lo=-3, hi=3)
    c = lambda n, v: ("Constant", [], [n], {"value": numpy_helper.from_array(arr(v, np.float32), n)})
    erf = [c("k_sqrt2", 1.4142135381698608), ("Div", ["x", "k_sqrt2"], ["t0"], {}), ("Erf", ["t0"], ["t1"], {}),
           c("k_one", 1.0), ("Add", ["t1", "k_one"], ["t2"], {}), ("Mul", ["x", "t2"], ["t3"], {}),
           c("k_half", 0.5), ("Mul", ["t3", "k_half"], ["y"], {})]
    ref = ref32(lambda t: F.gelu(torch.from_numpy(t)).numpy(), x)
    save("gelu_erf", erf, [("x", x)], [("y", ref)], note="torch.nn.GELU() as torch.onnx.export writes it")
    tanh = [c("k3", 3.0), ("Pow", ["x", "k3"], ["t0"], {}), c("kc", 0.044715), ("Mul", ["t0", "kc"], ["t1"], {}),
            ("Add", ["x", "t1"], ["t2"], {}), c("ks", math.sqrt(2 / math.pi)), ("Mul", ["t2", "ks"], ["t3"], {}),
            ("Tanh", ["t3"], ["t4"], {}), c("k1", 1.0), ("Add", ["t4", "k1"], ["t5"], {}),
            ("Mul", ["x", "t5"], ["t6"], {}), c("kh", 0.5), ("Mul", ["t6", "kh"], ["y"], {})]
    ref = ref32(lambda t: F.gelu(torch.from_numpy(t), approximate="tanh").numpy(), x)
    save("gelu_tanh", tanh, [("x", x)], [("y", ref)], note="GELU(approximate='tanh') decomposed")


# ----------------------------------------------------------------------------------------------
# Logic, selection, cast
def logic():
    a, b = f32(3, 4), f32(4)
    a[0, :2] = b[:2]
    ai, bi = i64(3, 4, hi=4), i64(4, hi=4)
    for op, fn in (("Equal", np.equal), ("Less", np.less), ("Greater", np.greater)):
        one(op.lower(), op, {"a": a, "b": b}, fn(a, b))
        one(op.lower() + "_int64", op, {"a": ai, "b": bi}, fn(ai, bi))
    one("equal_v7", "Equal", {"a": ai, "b": bi}, np.equal(ai, bi), opset=7)
    one("less_v9", "Less", {"a": a, "b": b}, np.less(a, b), opset=9)
    p, q = f32(2, 3) > 0, f32(3) > 0
    one("not", "Not", {"x": p}, ~p)
    one("and", "And", {"a": p, "b": q}, p & q)
    one("or", "Or", {"a": p, "b": q}, p | q)
    one("or_v7", "Or", {"a": p, "b": q}, p | q, opset=7)
    x, y = f32(2, 3), f32(3)
    one("where", "Where", {"c": p, "x": x, "y": y}, np.where(p, x, y), opset=9)
    one("where_v16_int64", "Where", {"c": q, "x": ai[:2, :3], "y": arr(-1)}, np.where(q, ai[:2, :3], -1), opset=16)
    v = f32(3, 4, lo=-5, hi=5)
    v[0, 0], v[0, 1] = 0.0, -0.0
    for to, np_t in ((TensorProto.INT32, np.int32), (TensorProto.INT64, np.int64), (TensorProto.BOOL, np.bool_),
                     (TensorProto.DOUBLE, np.float64), (TensorProto.FLOAT16, np.float16)):
        one("cast_float_to_%s" % np.dtype(np_t).name, "Cast", {"x": v}, v.astype(np_t), {"to": to})
    one("cast_int64_to_float", "Cast", {"x": ai}, ai.astype(np.float32), {"to": TensorProto.FLOAT})
    one("cast_bool_to_float", "Cast", {"x": p}, p.astype(np.float32), {"to": TensorProto.FLOAT})
    one("cast_int64_to_int8", "Cast", {"x": ai}, ai.astype(np.int8), {"to": TensorProto.INT8})
    one("cast_v6", "Cast", {"x": v}, v.astype(np.int64), {"to": TensorProto.INT64}, opset=6)


# ----------------------------------------------------------------------------------------------
# MatMul, Gemm
def blas():
    for name, sa, sb in (("matmul_2d", (3, 4), (4, 5)), ("matmul_batched", (2, 3, 4), (4, 5)),
                         ("matmul_broadcast_4d", (2, 1, 3, 4), (3, 4, 2)), ("matmul_vec_mat", (4,), (4, 3)),
                         ("matmul_mat_vec", (3, 4), (4,))):
        a, b = f32(*sa), f32(*sb)
        one(name, "MatMul", {"a": a, "b": b}, ref32(np.matmul, a, b))
    a, b = f32(2, 3), f32(3, 4)
    w = f32(4, 3)
    one("matmul_weight_init", "MatMul", {"a": a}, ref32(np.matmul, a, w.T.copy()), inits={"w": w.T.copy()})
    c = f32(4)
    one("gemm_transb_bias", "Gemm", {"a": a}, ref32(lambda p, q, r: p @ q.T + r, a, w, c), {"transB": 1},
        inits={"w": w, "c": c})
    at, c2 = f32(3, 2), f32(2, 1)
    one("gemm_transa_alpha_beta", "Gemm", {"a": at, "b": b, "c": c2},
        ref32(lambda p, q, r: 0.5 * p.T @ q + 2.0 * r, at, b, c2), {"transA": 1, "alpha": 0.5, "beta": 2.0})
    one("gemm_no_c_v11", "Gemm", {"a": a, "b": b}, ref32(np.matmul, a, b), opset=11)
    c3 = f32(2, 4)
    one("gemm_v7", "Gemm", {"a": a, "b": b, "c": c3}, ref32(lambda p, q, r: p @ q + r, a, b, c3), opset=7)
    one("gemm_v9_scalar_c", "Gemm", {"a": a, "b": b}, ref32(lambda p, q: p @ q + 0.75, a, b),
        inits={"c": arr([0.75], np.float32)}, opset=9)


# ----------------------------------------------------------------------------------------------
# Convolution and pooling (references: torch.nn.functional in float64)
t64 = lambda a: torch.from_numpy(np.asarray(a, np.float64))


def same_pads(size, k, s, d, mode):
    """ONNX auto_pad pads ([begins..., ends...]) for spatial `size`."""
    if mode == "VALID":
        return [0] * (2 * len(size))
    tot = [max(0, (-(-n // st) - 1) * st + (kk - 1) * dd + 1 - n) for n, kk, st, dd in zip(size, k, s, d)]
    small = [t // 2 for t in tot]
    big = [t - t // 2 for t in tot]
    return small + big if mode == "SAME_UPPER" else big + small


def pad_nd(x, pads, value):
    nd = len(pads) // 2
    spec = []
    for i in reversed(range(nd)):
        spec += [pads[i], pads[nd + i]]
    return F.pad(x, spec, value=value)


def conv_ref(x, w, b, s, p, d, g):
    nd = x.ndim - 2
    y = [F.conv1d, F.conv2d, F.conv3d][nd - 1](pad_nd(t64(x), p, 0.0), t64(w), None if b is None else t64(b),
                                               stride=s, dilation=d, groups=g)
    return y.numpy().astype(np.float32)


def conv():
    cases = [  # name, x shape, w shape, strides, pads (or auto_pad), dilations, group, bias, opset
        ("conv_1d", (1, 2, 9), (3, 2, 3), [1], [1, 1], [1], 1, True, 13),
        ("conv_1d_stride2_asym", (2, 2, 10), (4, 2, 3), [2], [0, 2], [1], 1, False, 11),
        ("conv_2d", (1, 3, 6, 6), (4, 3, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, True, 13),
        ("conv_2d_v6", (1, 3, 5, 5), (2, 3, 3, 3), [1, 1], [0, 0, 0, 0], [1, 1], 1, True, 6),
        ("conv_2d_stride2_pads_asym", (2, 2, 7, 8), (3, 2, 3, 2), [2, 2], [1, 0, 0, 1], [1, 1], 1, True, 13),
        ("conv_2d_dil2", (1, 2, 8, 8), (2, 2, 3, 3), [1, 1], [2, 2, 2, 2], [2, 2], 1, False, 13),
        ("conv_2d_group2", (1, 4, 5, 5), (6, 2, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 2, True, 13),
        ("conv_2d_depthwise", (1, 3, 6, 5), (3, 1, 3, 3), [1, 2], [1, 1, 1, 1], [1, 1], 3, True, 13),
        ("conv_2d_1x1", (2, 4, 3, 3), (5, 4, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, True, 13),
        ("conv_2d_same_upper", (1, 2, 7, 6), (2, 2, 4, 3), [2, 2], "SAME_UPPER", [1, 1], 1, True, 11),
        ("conv_2d_same_lower", (1, 2, 7, 6), (2, 2, 4, 3), [2, 2], "SAME_LOWER", [1, 1], 1, False, 11),
        ("conv_2d_valid", (1, 2, 7, 6), (2, 2, 3, 3), [2, 1], "VALID", [1, 1], 1, True, 11),
        ("conv_3d", (1, 2, 4, 5, 4), (3, 2, 3, 3, 3), [1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 1], 1, True, 13),
        ("conv_3d_group2_dil2", (1, 4, 6, 6, 5), (4, 2, 2, 3, 2), [1, 2, 1], [1, 0, 1, 1, 2, 0], [2, 1, 2], 2,
         True, 13),
        ("conv_3d_same_upper_stride2", (1, 1, 5, 6, 4), (2, 1, 3, 2, 3), [2, 2, 2], "SAME_UPPER", [1, 1, 1], 1,
         True, 13),
    ]
    for name, xs, ws, s, p, d, g, bias, opset in cases:
        x, w = f32(*xs), f32(*ws) * 0.5
        b = f32(ws[0]) if bias else None
        attrs = {"strides": s, "dilations": d, "group": g, "kernel_shape": list(ws[2:])}
        if isinstance(p, str):
            attrs["auto_pad"] = p
            p = same_pads(xs[2:], ws[2:], s, d, p)
        else:
            attrs["pads"] = p
        inits = {"w": w} if b is None else {"w": w, "b": b}
        one(name, "Conv", {"x": x}, conv_ref(x, w, b, s, p, d, g), attrs, inits, opset)
    x, w = f32(1, 2, 5, 5), f32(3, 2, 3, 3)
    one("conv_2d_weight_input", "Conv", {"x": x, "w": w}, conv_ref(x, w, None, [1, 1], [0] * 4, [1, 1], 1))


def convtranspose_ref(x, w, b, s, p, d, g, op):
    nd = x.ndim - 2
    fn = [F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][nd - 1]
    y = fn(t64(x), t64(w), None, stride=s, dilation=d, groups=g)
    y = pad_nd(y, [0] * nd + list(op), 0.0)  # output_padding adds rows at the end only
    y = y[(slice(None), slice(None)) + tuple(slice(p[i], y.shape[2 + i] - p[nd + i]) for i in range(nd))]
    if b is not None:
        y = y + t64(b).reshape([1, -1] + [1] * nd)
    return y.numpy().astype(np.float32)


def convtranspose():
    cases = [  # name, x, w (Cin, Cout/g, k...), strides, pads, dilations, group, output_padding, extra
        ("convtranspose_1d", (1, 2, 5), (2, 3, 3), [1], [0, 0], [1], 1, [0], {}),
        ("convtranspose_1d_stride2_pads", (2, 2, 4), (2, 2, 3), [2], [1, 0], [1], 1, [0], {}),
        ("convtranspose_2d", (1, 3, 4, 4), (3, 2, 3, 3), [1, 1], [0] * 4, [1, 1], 1, [0, 0], {}),
        ("convtranspose_2d_stride2_outpad", (1, 2, 3, 4), (2, 3, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 1, [1, 1], {}),
        ("convtranspose_2d_group2_dil2", (1, 4, 3, 3), (4, 1, 3, 2), [1, 2], [0, 1, 1, 0], [2, 1], 2, [0, 0], {}),
        ("convtranspose_2d_same_upper", (1, 2, 3, 4), (2, 2, 4, 4), [2, 2], "SAME_UPPER", [1, 1], 1, [0, 0], {}),
        ("convtranspose_2d_output_shape", (1, 2, 3, 3), (2, 1, 4, 4), [2, 2], [1, 1, 1, 1], [1, 1], 1, [0, 0],
         {"output_shape": [6, 6]}),
        ("convtranspose_3d_group2", (1, 2, 2, 3, 2), (2, 2, 2, 2, 3), [2, 1, 2], [0, 0, 1, 0, 0, 1], [1, 1, 1], 2,
         [1, 0, 0], {}),
    ]
    for name, xs, ws, s, p, d, g, op, extra in cases:
        x, w, b = f32(*xs), f32(*ws) * 0.5, f32(ws[1] * g)
        attrs = {"strides": s, "dilations": d, "group": g, "kernel_shape": list(ws[2:])}
        if any(op):
            attrs["output_padding"] = op
        if p == "SAME_UPPER":
            # k=4, s=2: total padding 2 per axis, split evenly, so the SAME_UPPER/LOWER convention
            # (which ONNX versions and runtimes disagree on) does not matter.
            attrs["auto_pad"] = p
            p = [1] * (2 * (len(xs) - 2))
        elif extra:
            attrs.update(extra)  # output_shape implies the pads; the ones given are the same
        else:
            attrs["pads"] = p
        one(name, "ConvTranspose", {"x": x}, convtranspose_ref(x, w, b, s, p, d, g, op), attrs,
            {"w": w, "b": b}, 13 if "3d" not in name else 11)


def pool_ref(x, kind, k, s, p, d, ceil, include_pad):
    nd = x.ndim - 2
    t = t64(x)
    if kind == "max":
        fn = [F.max_pool1d, F.max_pool2d, F.max_pool3d][nd - 1]
        return fn(pad_nd(t, p, -math.inf), k, s, 0, d, ceil_mode=ceil).numpy().astype(np.float32)
    fn = [F.avg_pool1d, F.avg_pool2d, F.avg_pool3d][nd - 1]
    # Sum over the window / count of the elements that count (padding included or not); windows
    # that ceil mode lets run past the padding count only what they cover.
    ones = torch.ones_like(t)
    num = fn(pad_nd(t, p, 0.0), k, s, 0, ceil_mode=ceil)
    den = fn(pad_nd(ones, p, 1.0 if include_pad else 0.0), k, s, 0, ceil_mode=ceil)
    return (num / den).numpy().astype(np.float32)


def pool():
    cases = [  # name, x, kernel, strides, pads (or auto_pad), dilations, ceil, count_include_pad, opset
        ("maxpool_1d", (1, 2, 9), [3], [2], [1, 1], None, 0, 0, 13),
        ("maxpool_2d", (1, 2, 6, 6), [2, 2], [2, 2], [0] * 4, None, 0, 0, 13),
        ("maxpool_2d_v8", (2, 1, 5, 5), [3, 3], [1, 1], [1, 1, 1, 1], None, 0, 0, 8),
        ("maxpool_2d_pads_asym", (1, 2, 5, 6), [3, 2], [2, 1], [1, 0, 0, 1], None, 0, 0, 12),
        ("maxpool_2d_ceil", (1, 1, 6, 7), [3, 3], [2, 2], [0] * 4, None, 1, 0, 11),
        ("maxpool_2d_dil2", (1, 2, 7, 7), [2, 2], [1, 1], [0] * 4, [2, 2], 0, 0, 12),
        ("maxpool_2d_same_upper", (1, 1, 5, 6), [3, 2], [2, 2], "SAME_UPPER", None, 0, 0, 11),
        ("maxpool_3d", (1, 2, 4, 5, 4), [2, 3, 2], [2, 1, 2], [0, 1, 0, 0, 1, 0], None, 0, 0, 13),
        ("averagepool_1d", (1, 2, 8), [3], [1], [0, 0], None, 0, 0, 13),
        ("averagepool_2d", (1, 2, 6, 6), [2, 2], [2, 2], [0] * 4, None, 0, 0, 13),
        ("averagepool_2d_v7", (1, 2, 5, 5), [3, 3], [1, 1], [1, 1, 1, 1], None, 0, 0, 7),
        ("averagepool_2d_pads_exclude", (1, 2, 5, 5), [3, 3], [2, 2], [1, 1, 1, 1], None, 0, 0, 11),
        ("averagepool_2d_pads_include", (1, 2, 5, 5), [3, 3], [2, 2], [1, 1, 1, 1], None, 0, 1, 11),
        ("averagepool_2d_pads_asym_include", (1, 1, 4, 5), [2, 3], [1, 2], [0, 1, 1, 2], None, 0, 1, 13),
        ("averagepool_2d_ceil", (1, 1, 6, 7), [3, 3], [2, 2], [0] * 4, None, 1, 0, 11),
        ("averagepool_2d_same_upper", (1, 1, 5, 6), [3, 2], [2, 2], "SAME_UPPER", None, 0, 0, 11),
        ("averagepool_3d", (1, 2, 4, 4, 6), [2, 2, 3], [2, 2, 3], [0] * 6, None, 0, 0, 13),
        ("averagepool_3d_pads_include", (1, 1, 3, 4, 4), [2, 3, 3], [1, 2, 2], [1, 1, 1, 0, 1, 1], None, 0, 1, 13),
    ]
    for name, xs, k, s, p, d, ceil, inc, opset in cases:
        x = f32(*xs)
        kind = "max" if name.startswith("max") else "avg"
        attrs = {"kernel_shape": k, "strides": s}
        if isinstance(p, str):
            attrs["auto_pad"] = p
            p = same_pads(xs[2:], k, s, [1] * len(k), p)
        else:
            attrs["pads"] = p
        if d:
            attrs["dilations"] = d
        if ceil:
            attrs["ceil_mode"] = 1
        if inc:
            attrs["count_include_pad"] = 1
        ref = pool_ref(x, kind, k, s, p, d or [1] * len(k), bool(ceil), bool(inc))
        one(name, "MaxPool" if kind == "max" else "AveragePool", {"x": x}, ref, attrs, opset=opset)
    for shape in ((2, 3, 4, 5), (1, 2, 3, 4, 2), (2, 3, 7)):
        x = f32(*shape)
        one("globalaveragepool_%dd" % (len(shape) - 2), "GlobalAveragePool", {"x": x},
            ref32(lambda t: t.mean(axis=tuple(range(2, t.ndim)), keepdims=True), x))


# ----------------------------------------------------------------------------------------------
# Normalisation, dropout, softmax
def norms():
    for name, shape, opset, attrs in (("batchnormalization_v9", (2, 3, 4, 4), 9, {}),
                                      ("batchnormalization_v7", (2, 3, 3, 3), 7, {}),
                                      ("batchnormalization_v15", (2, 3, 4, 2), 15, {"epsilon": 1e-3}),
                                      ("batchnormalization_1d", (2, 4, 5), 14, {}),
                                      ("batchnormalization_3d", (1, 2, 3, 2, 3), 15, {})):
        c = shape[1]
        x, sc, bi, mu, var = f32(*shape), f32(c, lo=0.5, hi=1.5), f32(c), f32(c), f32(c, lo=0.2, hi=2)
        eps = attrs.get("epsilon", 1e-5)
        r = lambda a: a.reshape([1, c] + [1] * (len(shape) - 2))
        ref = ref32(lambda t, g, b, m, v: (t - r(m)) / np.sqrt(r(v) + eps) * r(g) + r(b), x, sc, bi, mu, var)
        one(name, "BatchNormalization", {"x": x}, ref, attrs, {"scale": sc, "bias": bi, "mean": mu, "var": var},
            opset, atol=1e-4)

    def layernorm(t, g, b, axis, eps):
        ax = tuple(range(axis % t.ndim, t.ndim))
        y = (t - t.mean(axis=ax, keepdims=True)) / np.sqrt(t.var(axis=ax, keepdims=True) + eps) * g
        return y if b is None else y + b

    x = f32(2, 3, 8)
    g, b = f32(8, lo=0.5, hi=1.5), f32(8)
    one("layernormalization", "LayerNormalization", {"x": x}, ref32(lambda t: layernorm(t, g, b, -1, 1e-5), x),
        inits={"g": g, "b": b}, opset=17)
    g2 = f32(3, 8, lo=0.5, hi=1.5)
    one("layernormalization_axis1_no_bias", "LayerNormalization", {"x": x},
        ref32(lambda t: layernorm(t, g2, None, 1, 1e-3), x), {"axis": 1, "epsilon": 1e-3}, {"g": g2}, opset=17)
    for shape in ((2, 3, 4, 5), (2, 4, 6)):
        c = shape[1]
        x, sc, bi = f32(*shape), f32(c, lo=0.5, hi=1.5), f32(c)
        r = lambda a: a.reshape([1, c] + [1] * (len(shape) - 2))
        ax = tuple(range(2, len(shape)))
        ref = ref32(lambda t: (t - t.mean(axis=ax, keepdims=True)) / np.sqrt(t.var(axis=ax, keepdims=True) + 1e-5)
                    * r(sc) + r(bi), x)
        one("instancenormalization_%dd" % (len(shape) - 2), "InstanceNormalization", {"x": x}, ref, {},
            {"scale": sc, "bias": bi}, atol=1e-4)
    x = f32(3, 4)  # Dropout at inference: the identity (and an all-true mask)
    one("dropout_v7", "Dropout", {"x": x}, x, {"ratio": 0.3}, opset=7)
    one("dropout_v10", "Dropout", {"x": x}, x, opset=10)
    save("dropout_v13_mask", [("Dropout", ["x", "ratio"], ["y", "mask"], {})], [("x", x)],
         [("y", x), ("mask", np.ones(x.shape, np.bool_))], {"ratio": arr(0.5, np.float32)})

    def softmax(t, axis, coerce, log):
        shape = t.shape
        if coerce:  # opset < 13: flatten to 2-D at axis
            t = t.reshape(int(np.prod(shape[:axis])), -1)
            axis = 1
        t = t - t.max(axis=axis, keepdims=True)
        y = t - np.log(np.exp(t).sum(axis=axis, keepdims=True)) if log else np.exp(t) / np.exp(t).sum(
            axis=axis, keepdims=True)
        return y.reshape(shape)

    x = f32(2, 3, 4, lo=-3, hi=3)
    for op, log in (("Softmax", False), ("LogSoftmax", True)):
        low = op.lower()
        one(low + "_v11", op, {"x": x}, ref32(lambda t: softmax(t, 1, True, log), x), opset=11)
        one(low + "_v11_axis2", op, {"x": x}, ref32(lambda t: softmax(t, 2, True, log), x), {"axis": 2}, opset=11)
        one(low + "_v13", op, {"x": x}, ref32(lambda t: softmax(t, 2, False, log), x))
        one(low + "_v13_axis1", op, {"x": x}, ref32(lambda t: softmax(t, 1, False, log), x), {"axis": 1})
    one("softmax_v6_2d", "Softmax", {"x": x[0]}, ref32(lambda t: softmax(t, 1, True, False), x[0]), opset=6)


# ----------------------------------------------------------------------------------------------
# Shapes and data movement
def shapes():
    x = f32(2, 3, 4)
    for axis, opset in ((1, 13), (0, 13), (2, 9), (-1, 13)):
        one("flatten_axis%s" % str(axis).replace("-", "m"), "Flatten", {"x": x},
            x.reshape(int(np.prod(x.shape[:axis])), -1), {"axis": axis} if axis != 1 else {}, opset=opset)
    for name, shape, out in (("reshape", [4, 6], (4, 6)), ("reshape_minus1", [-1, 4], (6, 4)),
                             ("reshape_zero_copies", [0, -1], (2, 12)), ("reshape_rank4", [2, 1, 3, 4], (2, 1, 3, 4))):
        one(name, "Reshape", {"x": x}, x.reshape(out), inits={"shape": arr(shape)})
    one("reshape_v6", "Reshape", {"x": x}, x.reshape(3, 8), inits={"shape": arr([3, 8])}, opset=6)
    y = f32(6, 4)
    save("reshape_shape_of_input", [("Shape", ["y"], ["s"], {}), ("Reshape", ["x", "s"], ["z"], {})],
         [("x", x), ("y", y)], [("z", x.reshape(6, 4))], note="the target shape is Shape(y), as PyTorch writes view_as")
    one("transpose", "Transpose", {"x": x}, x.transpose(2, 0, 1).copy(), {"perm": [2, 0, 1]})
    one("transpose_default", "Transpose", {"x": x}, x.transpose().copy())
    s = f32(1, 3, 1, 2)
    one("squeeze_v11", "Squeeze", {"x": s}, s.reshape(3, 1, 2), {"axes": [0]}, opset=11)
    one("squeeze_v11_all", "Squeeze", {"x": s}, s.reshape(3, 2), opset=11)
    one("squeeze_v13", "Squeeze", {"x": s}, s.reshape(3, 2), inits={"axes": arr([0, -2])})
    one("squeeze_v13_all", "Squeeze", {"x": s}, s.reshape(3, 2))
    u = f32(3, 2)
    one("unsqueeze_v11", "Unsqueeze", {"x": u}, u.reshape(1, 3, 2, 1), {"axes": [0, -1]}, opset=11)
    one("unsqueeze_v9", "Unsqueeze", {"x": u}, u.reshape(3, 1, 2), {"axes": [1]}, opset=9)
    one("unsqueeze_v13", "Unsqueeze", {"x": u}, u.reshape(3, 1, 1, 2), inits={"axes": arr([1, 2])})
    a, b, c = f32(2, 1, 4), f32(2, 3, 4), f32(2, 2, 4)
    save("concat_axis1", [("Concat", ["a", "b", "c"], ["y"], {"axis": 1})], [("a", a), ("b", b), ("c", c)],
         [("y", np.concatenate([a, b, c], 1))])
    save("concat_v11_neg_axis", [("Concat", ["a", "b"], ["y"], {"axis": -3})], [("a", b), ("b", b[:1])],
         [("y", np.concatenate([b, b[:1]], 0))], opset=11)
    ci = i64(2, 3)
    save("concat_int64_v6", [("Concat", ["a", "b"], ["y"], {"axis": 1})], [("a", ci), ("b", ci)],
         [("y", np.concatenate([ci, ci], 1))], opset=6)
    z = f32(2, 7)
    parts = np.split(z, [2, 5], axis=1)
    outs = [("y%d" % i, p) for i, p in enumerate(parts)]
    save("split_v11", [("Split", ["x"], ["y0", "y1", "y2"], {"axis": 1, "split": [2, 3, 2]})], [("x", z)], outs,
         opset=11)
    save("split_v13", [("Split", ["x", "split"], ["y0", "y1", "y2"], {"axis": -1})], [("x", z)], outs,
         {"split": arr([2, 3, 2])})
    w = f32(6, 2)
    eq = [("y%d" % i, p) for i, p in enumerate(np.split(w, 3, axis=0))]
    save("split_v11_equal", [("Split", ["x"], ["y0", "y1", "y2"], {})], [("x", w)], eq, opset=11)
    save("split_v13_equal", [("Split", ["x"], ["y0", "y1", "y2"], {})], [("x", w)], eq)
    save("split_v18_num_outputs", [("Split", ["x"], ["y0", "y1", "y2"], {"axis": 1, "num_outputs": 3})], [("x", z)],
         [("y%d" % i, p) for i, p in enumerate(np.split(z, [3, 6], axis=1))], opset=18,
         note="7 split in 3: ceil(7/3)=3, 3, 1")
    t = f32(4, 5, 6)
    one("slice_v9", "Slice", {"x": t}, t[1:3, :, 2:-1], {"starts": [1, 2], "ends": [3, -1], "axes": [0, 2]}, opset=9)
    one("slice_v9_no_axes", "Slice", {"x": t}, t[0:2, 1:1000], {"starts": [0, 1], "ends": [2, 1000]}, opset=9)
    one("slice_v10", "Slice", {"x": t}, t[:, 1:5:2], inits={"starts": arr([1]), "ends": arr([5]),
                                                          "axes": arr([1]), "steps": arr([2])}, opset=10)
    one("slice_v13_neg_step", "Slice", {"x": t}, t[::-1, :, 4:0:-2].copy(),
        inits={"starts": arr([-1, 4]), "ends": arr([-(2 ** 63), 0]), "axes": arr([0, 2]), "steps": arr([-1, -2])})
    one("slice_v13_clamp", "Slice", {"x": t}, t[:, -3:], inits={"starts": arr([-3]), "ends": arr([2 ** 63 - 1]),
                                                              "axes": arr([-2])})
    one("slice_v13_no_axes_steps", "Slice", {"x": t}, t[1:4, 0:3], inits={"starts": arr([1, 0]), "ends": arr([4, 3])})
    g = f32(5, 4)
    one("gather_axis0", "Gather", {"x": g}, g[[3, 0, 3]], inits={"i": arr([3, 0, 3])})
    gi = arr([[0, 2], [3, 1], [1, 1]])
    one("gather_axis1_2d_indices", "Gather", {"x": g}, np.take(g, gi, axis=1), {"axis": 1}, {"i": gi})
    one("gather_negative_indices", "Gather", {"x": g}, g[[-1, 1, -5]], inits={"i": arr([-1, 1, -5])}, opset=11)
    one("gather_scalar_index", "Gather", {"x": g}, g[:, 2], {"axis": -1}, {"i": arr(2)})
    ii = arr([4, 2], np.int32)
    one("gather_int32_indices_input", "Gather", {"x": g, "i": ii}, g[ii])
    one("gather_v6", "Gather", {"x": g}, g[[1, 2]], inits={"i": arr([1, 2])}, opset=6)
    e = f32(3, 1)
    one("expand", "Expand", {"x": e}, np.broadcast_to(e, (2, 3, 4)).copy(), inits={"shape": arr([2, 1, 4])})
    one("expand_v8_same_rank", "Expand", {"x": e}, np.broadcast_to(e, (3, 5)).copy(),
        inits={"shape": arr([3, 5])}, opset=8)
    one("tile", "Tile", {"x": u}, np.tile(u, (2, 3)), inits={"r": arr([2, 3])})
    one("tile_3d", "Tile", {"x": x}, np.tile(x, (1, 2, 1)), inits={"r": arr([1, 2, 1])})
    one("shape", "Shape", {"x": x}, arr(x.shape))
    one("shape_v15_start_end", "Shape", {"x": x}, arr(x.shape[1:2]), {"start": 1, "end": -1}, opset=15)
    one("size", "Size", {"x": x}, arr(x.size))
    one("identity", "Identity", {"x": x}, x)
    one("identity_int64", "Identity", {"x": ci}, ci)


# ----------------------------------------------------------------------------------------------
# Constants and generators
def constants():
    x = f32(2, 3)
    k = f32(2, 3)
    save("constant", [("Constant", [], ["k"], {"value": numpy_helper.from_array(k, "k")}), ("Add", ["x", "k"], ["y"], {})],
         [("x", x)], [("y", x + k)])
    save("constant_v12_value_floats", [("Constant", [], ["k"], {"value_floats": [0.5, -2.0, 3.0]}),
                                        ("Mul", ["x", "k"], ["y"], {})],
         [("x", x)], [("y", x * arr([0.5, -2, 3], np.float32))], opset=12)
    n = i64(4)
    save("constant_v13_value_int", [("Constant", [], ["k"], {"value_int": 7}), ("Add", ["n", "k"], ["y"], {})],
         [("n", n)], [("y", n + 7)])
    save("constant_output", [("Constant", [], ["y"], {"value": numpy_helper.from_array(n, "k")})], [], [("y", n)],
         note="a graph without inputs whose output is a Constant")
    save("constantofshape", [("ConstantOfShape", ["s"], ["y"],
                              {"value": numpy_helper.from_array(arr([1.5], np.float32), "v")})],
         [], [("y", np.full((2, 3), 1.5, np.float32))], {"s": arr([2, 3])}, opset=9)
    save("constantofshape_default", [("ConstantOfShape", ["s"], ["y"], {})], [],
         [("y", np.zeros((3, 1, 2), np.float32))], {"s": arr([3, 1, 2])})
    save("constantofshape_shape_of_input", [("Shape", ["x"], ["s"], {}),
                                            ("ConstantOfShape", ["s"], ["y"],
                                             {"value": numpy_helper.from_array(arr([7]), "v")})],
         [("x", x)], [("y", np.full(x.shape, 7, np.int64))])
    save("range_float", [("Range", ["a", "b", "d"], ["y"], {})], [],
         [("y", np.arange(0.5, 3.0, 0.75, dtype=np.float32))],
         {"a": arr(0.5, np.float32), "b": arr(3.0, np.float32), "d": arr(0.75, np.float32)}, opset=11)
    save("range_int64_negative_delta", [("Range", ["a", "b", "d"], ["y"], {})], [], [("y", np.arange(10, 1, -3))],
         {"a": arr(10), "b": arr(1), "d": arr(-3)}, opset=11)
    z = f32(2, 5)
    save("range_from_shape", [("Shape", ["x"], ["s"], {}), ("Gather", ["s", "i"], ["n"], {"axis": 0}),
                              ("Range", ["zero", "n", "one"], ["y"], {})],
         [("x", z)], [("y", np.arange(5))], {"i": arr(1), "zero": arr(0), "one": arr(1)},
         note="torch.arange(x.size(1)) as PyTorch writes it")


# ----------------------------------------------------------------------------------------------
# Reductions, ArgMax, TopK
def reductions():
    x = f32(2, 3, 4, lo=0.5, hi=1.5)
    fns = {"ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max, "ReduceMin": np.min,
           "ReduceProd": np.prod}
    for op, fn in fns.items():
        low, v = op.lower(), 11 if op == "ReduceSum" else 13  # ReduceSum took axes as an input from 13
        one(low, op, {"x": x}, ref32(lambda t: fn(t, axis=(1,), keepdims=True), x), {"axes": [1]}, opset=v)
        one(low + "_all_keepdims0", op, {"x": x}, ref32(fn, x), {"keepdims": 0}, opset=v)
        one(low + "_axes_neg", op, {"x": x}, ref32(lambda t: fn(t, axis=(0, 2)), x), {"axes": [0, -1], "keepdims": 0},
            opset=v)
    one("reducesum_v13_axes_input", "ReduceSum", {"x": x}, ref32(lambda t: t.sum(axis=(0, 2)), x),
        {"keepdims": 0}, {"axes": arr([0, -1])})
    one("reducesum_v13_no_axes", "ReduceSum", {"x": x}, ref32(lambda t: t.sum(keepdims=True), x))
    one("reducesum_v6", "ReduceSum", {"x": x}, ref32(lambda t: t.sum(axis=2, keepdims=True), x), {"axes": [2]}, opset=6)
    xi = i64(3, 4, lo=-5, hi=5)
    one("reducesum_int64", "ReduceSum", {"x": xi}, xi.sum(axis=1), {"keepdims": 0}, {"axes": arr([1])})
    one("reducemax_int64", "ReduceMax", {"x": xi}, xi.max(axis=0, keepdims=True), {"axes": [0]})
    one("reducemean_v18_axes_input", "ReduceMean", {"x": x}, ref32(lambda t: t.mean(axis=1, keepdims=True), x),
        inits={"axes": arr([1])}, opset=18)
    a = np.array([[1, 3, 3, 0], [2, 2, 1, 2], [0, 1, 4, 4]], np.float32)
    one("argmax", "ArgMax", {"x": a}, np.argmax(a, axis=1).reshape(3, 1), {"axis": 1}, opset=11)
    one("argmax_axis0_keepdims0", "ArgMax", {"x": a}, np.argmax(a, axis=0), {"axis": 0, "keepdims": 0})
    one("argmax_v12_select_last", "ArgMax", {"x": a}, (3 - np.argmax(a[:, ::-1], axis=1)).reshape(3, 1),
        {"axis": 1, "select_last_index": 1}, opset=12)
    one("argmax_v6", "ArgMax", {"x": a}, np.argmax(a, axis=0).reshape(1, 4), opset=6)
    t = rng.permutation(24).astype(np.float32).reshape(2, 3, 4)
    order = np.argsort(-t, axis=-1, kind="stable")[..., :2]
    vals = np.take_along_axis(t, order, -1)
    save("topk_v11", [("TopK", ["x", "k"], ["v", "i"], {})], [("x", t)], [("v", vals), ("i", order)],
         {"k": arr([2])}, opset=11)
    save("topk_v10", [("TopK", ["x", "k"], ["v", "i"], {})], [("x", t)], [("v", vals), ("i", order)],
         {"k": arr([2])}, opset=10)
    save("topk_v9", [("TopK", ["x"], ["v", "i"], {"k": 2})], [("x", t)], [("v", vals), ("i", order)], opset=9)
    small = np.argsort(t, axis=1, kind="stable")[:, :2, :]
    save("topk_smallest_axis1", [("TopK", ["x", "k"], ["v", "i"], {"axis": 1, "largest": 0})], [("x", t)],
         [("v", np.take_along_axis(t, small, 1)), ("i", small)], {"k": arr([2])})


# ----------------------------------------------------------------------------------------------
# Resize (nearest) and Pad
def resize_ref(x, out_shape, scales, coord, nearest):
    y = x
    for ax, (n_in, n_out, sc) in enumerate(zip(x.shape, out_shape, scales)):
        o = np.arange(n_out, dtype=np.float64)
        if coord == "asymmetric":
            src = o / sc
        else:  # half_pixel
            src = (o + 0.5) / sc - 0.5
        if nearest == "floor":
            idx = np.floor(src)
        else:  # round_prefer_floor
            idx = np.where(src - np.floor(src) == 0.5, np.floor(src), np.round(src))
        y = np.take(y, np.clip(idx, 0, n_in - 1).astype(np.int64), axis=ax)
    return y


def resize():
    x = f32(1, 2, 3, 4)
    up = [1.0, 1.0, 2.0, 2.0]
    one("resize_v10_nearest", "Resize", {"x": x}, resize_ref(x, (1, 2, 6, 8), up, "asymmetric", "floor"),
        {"mode": "nearest"}, {"scales": arr(up, np.float32)}, opset=10)
    sc = [1.0, 1.0, 2.0, 3.0]
    for opset in (11, 13):
        one("resize_v%d_asymmetric_floor" % opset, "Resize", {"x": x},
            resize_ref(x, (1, 2, 6, 12), sc, "asymmetric", "floor"),
            {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
            {"roi": np.zeros(0, np.float32), "scales": arr(sc, np.float32)}, opset=opset,
            note="F.interpolate(mode='nearest') as PyTorch writes it")
    sizes = (1, 2, 5, 7)
    save("resize_v13_sizes", [("Resize", ["x", "", "", "sizes"], ["y"],
                               {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"})],
         [("x", x)], [("y", resize_ref(x, sizes, [o / i for o, i in zip(sizes, x.shape)], "asymmetric", "floor"))],
         {"sizes": arr(sizes)})
    down = [1.0, 1.0, 0.5, 0.5]
    xb = f32(1, 1, 4, 6)
    save("resize_v13_half_pixel_downsample", [("Resize", ["x", "", "scales"], ["y"], {"mode": "nearest"})],
         [("x", xb)], [("y", resize_ref(xb, (1, 1, 2, 3), down, "half_pixel", "round_prefer_floor"))],
         {"scales": arr(down, np.float32)}, note="default modes: half_pixel, round_prefer_floor")
    p = f32(2, 3, 4)
    pads = [0, 1, 2, 0, 2, 1]
    npad = [(0, 0), (1, 2), (2, 1)]
    one("pad_v2_constant", "Pad", {"x": p}, np.pad(p, npad, constant_values=1.5), {"pads": pads, "value": 1.5}, opset=9)
    one("pad_v2_reflect", "Pad", {"x": p}, np.pad(p, npad, mode="reflect"), {"pads": pads, "mode": "reflect"}, opset=6)
    one("pad_v11", "Pad", {"x": p}, np.pad(p, npad, constant_values=-2), inits={"pads": arr(pads),
                                                                            "v": arr(-2, np.float32)}, opset=11)
    one("pad_v13_zero_default", "Pad", {"x": p}, np.pad(p, npad), inits={"pads": arr(pads)})
    one("pad_v13_edge", "Pad", {"x": p}, np.pad(p, npad, mode="edge"), {"mode": "edge"}, {"pads": arr(pads)})
    one("pad_v13_reflect", "Pad", {"x": p}, np.pad(p, npad, mode="reflect"), {"mode": "reflect"}, {"pads": arr(pads)})
    one("pad_v13_negative", "Pad", {"x": p}, np.pad(p, [(0, 0), (1, 0), (0, 0)])[:, :, 1:-1],
        inits={"pads": arr([0, 1, -1, 0, 0, -1])}, note="negative pads crop")
    pi = i64(3, 3)
    one("pad_v13_int64", "Pad", {"x": pi}, np.pad(pi, [(1, 0), (0, 2)], constant_values=9),
        inits={"pads": arr([1, 0, 0, 2]), "v": arr(9)})
    save("pad_v18_axes", [("Pad", ["x", "pads", "", "axes"], ["y"], {})], [("x", p)],
         [("y", np.pad(p, [(0, 0), (0, 0), (1, 2)]))], {"pads": arr([1, 2]), "axes": arr([-1])}, opset=18)


# ----------------------------------------------------------------------------------------------
# Resize in linear and cubic modes (reference: ONNX's separable formulas in float64, checked against
# torch.nn.functional.interpolate where PyTorch computes the same thing)
def interp_ref(x, out_shape, coord, mode, a=-0.75, exclude_outside=False):
    y = x.astype(np.float64)
    for ax, (n_in, n_out) in enumerate(zip(x.shape, out_shape)):
        if n_in == n_out:
            continue
        o = np.arange(n_out, dtype=np.float64)
        sc = n_out / n_in
        if coord == "align_corners":
            s = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0 * o
        elif coord == "asymmetric":
            s = o / sc
        elif coord == "pytorch_half_pixel":
            s = (o + 0.5) / sc - 0.5 if n_out > 1 else 0 * o
        else:  # half_pixel
            s = (o + 0.5) / sc - 0.5
        base = np.floor(s)
        r = s - base
        if mode == "linear":
            offsets, w = [0, 1], [1 - r, r]
        else:
            near = lambda d: ((a + 2) * d - (a + 3)) * d * d + 1
            far = lambda d: ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
            offsets, w = [-1, 0, 1, 2], [far(r + 1), near(r), near(1 - r), far(2 - r)]
        idx = [(base + k).astype(np.int64) for k in offsets]
        if exclude_outside:
            w = [np.where((i < 0) | (i >= n_in), 0, wk) for i, wk in zip(idx, w)]
            total = sum(w)
            w = [wk / total for wk in w]
        shape = [1] * x.ndim
        shape[ax] = n_out
        y = sum(np.take(y, np.clip(i, 0, n_in - 1), axis=ax) * wk.reshape(shape) for i, wk in zip(idx, w))
    return y.astype(np.float32)


def resize_interpolation():
    x = f32(1, 2, 3, 4)
    t = lambda a: torch.from_numpy(a.astype(np.float64))
    up = [1.0, 1.0, 2.0, 2.0]
    lin = interp_ref(x, (1, 2, 6, 8), "half_pixel", "linear")
    assert np.allclose(lin, F.interpolate(t(x), scale_factor=2, mode="bilinear", align_corners=False).numpy(), atol=1e-6)
    one("resize_v13_linear_half_pixel", "Resize", {"x": x}, lin,
        {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}, {"roi": np.zeros(0, np.float32),
                                                                           "scales": arr(up, np.float32)},
        note="F.interpolate(mode='bilinear', align_corners=False) as PyTorch writes it")
    one("resize_v11_linear_half_pixel", "Resize", {"x": x}, lin,
        {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}, {"roi": np.zeros(0, np.float32),
                                                                           "scales": arr(up, np.float32)},
        opset=11)
    sizes = (1, 2, 5, 7)
    ac = interp_ref(x, sizes, "align_corners", "linear")
    assert np.allclose(ac, F.interpolate(t(x), size=sizes[2:], mode="bilinear", align_corners=True).numpy(), atol=1e-6)
    save("resize_v13_linear_align_corners_sizes",
         [("Resize", ["x", "", "", "sizes"], ["y"], {"mode": "linear", "coordinate_transformation_mode": "align_corners"})],
         [("x", x)], [("y", ac)], {"sizes": arr(sizes)})
    xd = f32(1, 1, 4, 6)
    save("resize_v13_linear_pytorch_half_pixel_down",
         [("Resize", ["x", "", "", "sizes"], ["y"], {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"})],
         [("x", xd)], [("y", interp_ref(xd, (1, 1, 1, 4), "pytorch_half_pixel", "linear"))], {"sizes": arr([1, 1, 1, 4])},
         note="an output axis of length 1 reads position 0")
    x5 = f32(1, 2, 2, 3, 4)
    tri = interp_ref(x5, (1, 2, 4, 6, 8), "half_pixel", "linear")
    assert np.allclose(tri, F.interpolate(t(x5), scale_factor=2, mode="trilinear", align_corners=False).numpy(), atol=1e-6)
    one("resize_v13_linear_5d", "Resize", {"x": x5}, tri, {"mode": "linear"},
        {"roi": np.zeros(0, np.float32), "scales": arr([1, 1, 2, 2, 2], np.float32)})
    cub = interp_ref(x, (1, 2, 6, 8), "half_pixel", "cubic")
    assert np.allclose(cub, F.interpolate(t(x), scale_factor=2, mode="bicubic", align_corners=False).numpy(), atol=1e-6)
    one("resize_v13_cubic_half_pixel", "Resize", {"x": x}, cub,
        {"mode": "cubic", "coordinate_transformation_mode": "half_pixel", "cubic_coeff_a": -0.75},
        {"roi": np.zeros(0, np.float32), "scales": arr(up, np.float32)},
        note="F.interpolate(mode='bicubic', align_corners=False) as PyTorch writes it")
    xc = f32(1, 1, 5, 4)
    save("resize_v13_cubic_exclude_outside",
         [("Resize", ["x", "", "", "sizes"], ["y"], {"mode": "cubic", "coordinate_transformation_mode": "asymmetric",
                                                     "cubic_coeff_a": -0.5, "exclude_outside": 1})],
         [("x", xc)], [("y", interp_ref(xc, (1, 1, 3, 7), "asymmetric", "cubic", a=-0.5, exclude_outside=True))],
         {"sizes": arr([1, 1, 3, 7])})
    one("upsample_v9_linear", "Upsample", {"x": x}, interp_ref(x, (1, 2, 6, 12), "asymmetric", "linear"),
        {"mode": "linear"}, {"scales": arr([1, 1, 2, 3], np.float32)}, opset=9)


# ----------------------------------------------------------------------------------------------
# DepthToSpace and SpaceToDepth (reference: ONNX's reshape-transpose-reshape definitions)
def depth_to_space():
    def d2s(x, b, mode):
        n, c, h, w = x.shape
        if mode == "DCR":
            t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return t.reshape(n, c // (b * b), h * b, w * b)

    x = f32(2, 8, 2, 3)
    one("depthtospace_dcr", "DepthToSpace", {"x": x}, d2s(x, 2, "DCR"), {"blocksize": 2, "mode": "DCR"})
    crd = d2s(x, 2, "CRD")
    assert np.array_equal(crd, torch.pixel_shuffle(torch.from_numpy(x), 2).numpy())
    one("depthtospace_crd_symbolic_batch", "DepthToSpace", {"x": x}, crd, {"blocksize": 2, "mode": "CRD"},
        dims={"x": ["N", 8, 2, 3]}, note="nn.PixelShuffle as PyTorch writes it")
    x9 = f32(1, 9, 2, 2)
    one("depthtospace_v1", "DepthToSpace", {"x": x9}, d2s(x9, 3, "DCR"), {"blocksize": 3}, opset=9)
    y = f32(2, 3, 4, 6)
    n, c, h, w = y.shape
    s2d = y.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * 4, h // 2, w // 2)
    assert np.array_equal(d2s(s2d, 2, "DCR"), y)
    one("spacetodepth", "SpaceToDepth", {"x": y}, s2d, {"blocksize": 2})


# ----------------------------------------------------------------------------------------------
# Trilu (opset 14; reference: numpy.triu / numpy.tril over the last two axes)
def trilu():
    x = f32(2, 3, 5)
    one("trilu_upper", "Trilu", {"x": x}, np.triu(x), opset=14,
        note="torch.triu as PyTorch writes it (the causal mask of nn.Transformer)")
    one("trilu_lower_k", "Trilu", {"x": x}, np.tril(x, -1), {"upper": 0}, {"k": arr(-1)}, opset=14)
    xi = i64(4, 3, lo=-5)
    k = arr(1)
    one("trilu_upper_k_input_int64", "Trilu", {"x": xi, "k": k}, np.triu(xi, 1), opset=14,
        note="k is a graph input: computed at run time")


# ----------------------------------------------------------------------------------------------
# CumSum (reference: numpy.cumsum in float64; exclusive and reverse by shifting and flipping)
def cumsum():
    x = f32(2, 5, 3)
    ax = lambda v: arr(v)
    one("cumsum", "CumSum", {"x": x}, ref32(lambda t: np.cumsum(t, 1), x), inits={"axis": ax(1)}, opset=11,
        note="torch.cumsum as PyTorch writes it")
    rev = ref32(lambda t: np.flip(np.cumsum(np.flip(t, 2), 2), 2), x)
    one("cumsum_reverse_negative_axis", "CumSum", {"x": x}, rev, {"reverse": 1}, {"axis": ax(-1)}, opset=14)
    excl = ref32(lambda t: np.cumsum(t, 0) - t, x)
    one("cumsum_exclusive", "CumSum", {"x": x}, excl, {"exclusive": 1}, {"axis": ax(0)})
    both = ref32(lambda t: np.flip(np.cumsum(np.flip(t, 1), 1), 1) - t, x)
    one("cumsum_exclusive_reverse", "CumSum", {"x": x}, both, {"exclusive": 1, "reverse": 1},
        {"axis": arr([1], np.int32)}, note="axis as a one-element int32 vector")
    mask = i64(2, 7, lo=0, hi=2)
    one("cumsum_int64_position_ids", "CumSum", {"mask": mask}, np.cumsum(mask, 1), inits={"axis": ax(1)},
        note="position ids from an attention mask, as Hugging Face models compute them")


# ----------------------------------------------------------------------------------------------
# LSTM and GRU (reference: a plain loop in float64, ONNX's equations and gate orders)
sig = lambda t: 1 / (1 + np.exp(-t))


def lstm_ref(x, W, R, B, h0, c0):
    seq, nd, hs = x.shape[0], W.shape[0], R.shape[2]
    Y = np.zeros((seq, nd, x.shape[1], hs))
    Yh, Yc = np.zeros((nd, x.shape[1], hs)), np.zeros((nd, x.shape[1], hs))
    for d in range(nd):
        h, c = h0[d].copy(), c0[d].copy()
        for t in (range(seq) if d == 0 else reversed(range(seq))):
            g = x[t] @ W[d].T + h @ R[d].T + B[d][:4 * hs] + B[d][4 * hs:]
            i, o, f, cc = (g[:, k * hs:(k + 1) * hs] for k in range(4))  # ONNX order: i, o, f, c
            c = sig(f) * c + sig(i) * np.tanh(cc)
            h = sig(o) * np.tanh(c)
            Y[t, d] = h
        Yh[d], Yc[d] = h, c
    return Y, Yh, Yc


def gru_ref(x, W, R, B, h0, lbr):
    seq, nd, hs = x.shape[0], W.shape[0], R.shape[2]
    Y = np.zeros((seq, nd, x.shape[1], hs))
    Yh = np.zeros((nd, x.shape[1], hs))
    for d in range(nd):
        h = h0[d].copy()
        Wz, Wr, Wh = (W[d][k * hs:(k + 1) * hs] for k in range(3))  # ONNX order: z, r, h
        Rz, Rr, Rh = (R[d][k * hs:(k + 1) * hs] for k in range(3))
        wbz, wbr, wbh, rbz, rbr, rbh = (B[d][k * hs:(k + 1) * hs] for k in range(6))
        for t in (range(seq) if d == 0 else reversed(range(seq))):
            z = sig(x[t] @ Wz.T + h @ Rz.T + wbz + rbz)
            r = sig(x[t] @ Wr.T + h @ Rr.T + wbr + rbr)
            if lbr:
                hh = np.tanh(x[t] @ Wh.T + r * (h @ Rh.T + rbh) + wbh)
            else:
                hh = np.tanh(x[t] @ Wh.T + (r * h) @ Rh.T + rbh + wbh)
            h = (1 - z) * hh + z * h
            Y[t, d] = h
        Yh[d] = h
    return Y, Yh


def rnn():
    seq, batch, inp, hs = 4, 2, 3, 5
    for name, nd, init, opset in (("lstm_forward", 1, False, 13), ("lstm_bidirectional", 2, False, 14),
                                  ("lstm_initial_state_v7", 1, True, 7)):
        x, W, R, B = f32(seq, batch, inp), f32(nd, 4 * hs, inp), f32(nd, 4 * hs, hs), f32(nd, 8 * hs)
        h0 = f32(nd, batch, hs) if init else np.zeros((nd, batch, hs), np.float32)
        c0 = f32(nd, batch, hs) if init else np.zeros((nd, batch, hs), np.float32)
        Y, Yh, Yc = (a.astype(np.float32) for a in lstm_ref(*(a.astype(np.float64) for a in (x, W, R, B, h0, c0))))
        attrs = {"hidden_size": hs, "direction": "bidirectional" if nd == 2 else "forward"}
        ins = ["x", "W", "R", "B"] + (["", "h0", "c0"] if init else [])
        inits = {"W": W, "R": R, "B": B}
        graph_in = [("x", x)] + ([("h0", h0), ("c0", c0)] if init else [])
        save(name, [("LSTM", ins, ["Y", "Y_h", "Y_c"], attrs)], graph_in, [("Y", Y), ("Y_h", Yh), ("Y_c", Yc)],
             inits, opset, atol=1e-5)
    # The hidden state only (PyTorch's single-output use), the other outputs omitted.
    x, W, R, B = f32(seq, batch, inp), f32(1, 4 * hs, inp), f32(1, 4 * hs, hs), f32(1, 8 * hs)
    z = np.zeros((1, batch, hs))
    _, Yh, _ = lstm_ref(*(a.astype(np.float64) for a in (x, W, R, B)), z, z)
    save("lstm_only_y_h", [("LSTM", ["x", "W", "R", "B"], ["", "Y_h"], {"hidden_size": hs})], [("x", x)],
         [("Y_h", Yh.astype(np.float32))], {"W": W, "R": R, "B": B})
    for name, nd, lbr, init, opset in (("gru_forward_linear_before_reset", 1, 1, False, 13),
                                       ("gru_forward_v7", 1, 0, True, 7),
                                       ("gru_bidirectional", 2, 1, True, 14)):
        x, W, R, B = f32(seq, batch, inp), f32(nd, 3 * hs, inp), f32(nd, 3 * hs, hs), f32(nd, 6 * hs)
        h0 = f32(nd, batch, hs) if init else np.zeros((nd, batch, hs), np.float32)
        Y, Yh = (a.astype(np.float32) for a in gru_ref(*(a.astype(np.float64) for a in (x, W, R, B, h0)), lbr))
        attrs = {"hidden_size": hs, "direction": "bidirectional" if nd == 2 else "forward"}
        if lbr:
            attrs["linear_before_reset"] = 1
        ins = ["x", "W", "R", "B"] + (["", "h0"] if init else [])
        graph_in = [("x", x)] + ([("h0", h0)] if init else [])
        save(name, [("GRU", ins, ["Y", "Y_h"], attrs)], graph_in, [("Y", Y), ("Y_h", Yh)],
             {"W": W, "R": R, "B": B}, opset, atol=1e-5)


# Einsum (opset 12; reference: numpy.einsum in float64)
def einsum():
    def ein(name, eq, *xs, opset=12, **kw):
        ins = {"x%d" % i: x for i, x in enumerate(xs)}
        ref = np.einsum(eq, *xs) if xs[0].dtype.kind in "iu" else ref32(lambda *t: np.einsum(eq, *t), *xs)
        one(name, "Einsum", ins, np.asarray(ref), {"equation": eq}, opset=opset, **kw)
    ein("einsum_batch_matmul", "bij,bjk->bik", f32(2, 3, 4), f32(2, 4, 5), note="torch.einsum as PyTorch writes it")
    ein("einsum_attention_scores", "bhqd,bhkd->bhqk", f32(2, 3, 4, 5), f32(2, 3, 6, 5), opset=13)
    ein("einsum_implicit_matmul", "ij,jk", f32(3, 4), f32(4, 5))
    ein("einsum_implicit_trace", "ii", f32(4, 4))
    ein("einsum_diagonal", "bii->bi", f32(2, 4, 4))
    ein("einsum_sum_axis", "bij->bj", f32(2, 3, 4))
    ein("einsum_transpose_spaces", "i j k -> k i j", f32(2, 3, 4))
    ein("einsum_ellipsis_broadcast", "...ij,...jk->...ik", f32(2, 1, 3, 4), f32(1, 3, 4, 2))
    ein("einsum_implicit_ellipsis", "j...i", f32(3, 2, 5, 4))
    ein("einsum_three_operands", "ij,jk,kl->il", f32(2, 3), f32(3, 4), f32(4, 5))
    ein("einsum_outer", "i,j->ij", f32(3), f32(4))
    ein("einsum_dot_to_scalar", "i,i->", f32(5), f32(5))
    ein("einsum_scalar_operand", ",ij->ji", np.array(1.5, np.float32), f32(2, 3))
    ein("einsum_bilinear_repeated", "bn,anm,bm->ba", f32(2, 3), f32(4, 3, 5), f32(2, 5), opset=18)
    ein("einsum_int64", "ij,j->i", i64(3, 4, lo=-5), i64(4, lo=-5))


# ScatterND (opsets 11/13/16/18; reference: ONNX's loop in numpy, the last duplicate winning). It
# imports as AdvancedSetSubtensor/AdvancedIncSubtensor, which the exporter has no ONNX form for yet.
def scatternd():
    def ref(data, indices, updates, reduction="none"):
        out = data.copy()
        k = indices.shape[-1]
        idx = indices.reshape(-1, k)
        upd = updates.reshape((idx.shape[0],) + data.shape[k:])
        for i in range(idx.shape[0]):
            t = tuple(int(v) for v in idx[i])
            out[t] = upd[i] if reduction == "none" else out[t] + upd[i]
        return out
    def sc(name, data, indices, updates, reduction=None, opset=13, runtime=False, **kw):
        attrs = {"reduction": reduction} if reduction else {}
        ins = [("data", data)] + ([("indices", indices)] if runtime else []) + [("updates", updates)]
        save(name, [("ScatterND", ["data", "indices", "updates"], ["out"], attrs)], ins,
             [("out", ref(data, indices, updates, reduction or "none"))],
             None if runtime else {"indices": indices}, opset, export=False, **kw)
    data, data5 = f32(4, 3), f32(3, 4, 5)
    sc("scatternd_rows", data, arr([[2], [0]]), f32(2, 3), opset=11)
    sc("scatternd_elements_runtime_indices", f32(2, 3, 4), arr([[[0, 1, 2], [1, 2, 3]], [[1, 0, 0], [0, 2, 1]]]),
       f32(2, 2), runtime=True)
    sc("scatternd_slices_k2", data5, arr([[2, 1], [0, 3]]), f32(2, 5), opset=16)
    dup, updd = arr([[1], [3], [1], [1]]), f32(4, 3)
    sc("scatternd_add_duplicates", data, dup, updd, "add", opset=16)
    sc("scatternd_duplicates_last_wins", data, dup, updd,
       note="ONNX leaves duplicates undefined; Tensorscope's last write wins")
    sc("scatternd_negative_indices", data5, arr([[-1, 0], [1, -2]]), f32(2, 5), "none", opset=18)
    sc("scatternd_single_point", data, arr([1, 2]), np.array(7.5, np.float32))
    sc("scatternd_int64_add", i64(3, 4, lo=-5), arr([[2], [2]]), i64(2, 4, lo=-5), "add", opset=18, runtime=True)

# GatherND (opsets 11/12/13; reference: ONNX's definition as a numpy loop). torch's boolean-mask
# indexing x[m] exports as GatherND(x, Transpose(NonZero(m))).
def gathernd():
    def ref(data, indices, b=0):
        k = indices.shape[-1]
        lead = indices.shape[:-1]
        out = np.empty(lead + data.shape[b + k:], data.dtype)
        for pos in np.ndindex(*lead):
            out[pos] = data[pos[:b] + tuple(int(v) for v in indices[pos])]
        return out
    def g(name, data, indices, b=None, opset=13, runtime=False, **kw):
        attrs = {"batch_dims": b} if b is not None else {}
        ins = [("data", data)] + ([("indices", indices)] if runtime else [])
        save(name, [("GatherND", ["data", "indices"], ["out"], attrs)], ins, [("out", ref(data, indices, b or 0))],
             None if runtime else {"indices": indices}, opset, **kw)
    data5 = f32(3, 4, 5)
    g("gathernd_rows", f32(4, 3), arr([[2], [0], [2]]), opset=11)
    g("gathernd_elements_runtime_indices", data5, arr([[[0, 1, 2], [2, 3, 4]], [[1, 0, 0], [0, 2, 1]]]), runtime=True)
    g("gathernd_slices_k2", data5, arr([[2, 1], [0, 3]]), opset=12)
    g("gathernd_negative_indices", data5, arr([[-1, 0], [1, -2]]))
    g("gathernd_single_point", data5, arr([1, 2]))
    g("gathernd_batch_dims1", data5, arr([[[3], [0]], [[1], [1]], [[2], [0]]]), b=1, opset=12, runtime=True)
    g("gathernd_batch_dims2", f32(2, 3, 4, 5), arr([[[1, 4], [0, 0], [3, 2]], [[2, 2], [0, 1], [1, 3]]]), b=2)
    g("gathernd_int64", i64(3, 4, lo=-5), arr([[2, 3], [0, 0]]))


# GridSample (opset 16; reference: F.grid_sample in float64). Grids reach past [-1, 1] so every
# padding mode matters; nearest grids stay clear of ties between two pixels.
def grid_sample():
    def gs(name, x, grid, mode="bilinear", padding="zeros", align=0, opset=16, **kw):
        t = lambda a: torch.from_numpy(a.astype(np.float64))
        y = F.grid_sample(t(x), t(grid), mode=mode, padding_mode=padding, align_corners=bool(align)).numpy()
        attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
        one(name, "GridSample", {"x": x, "grid": grid}, y.astype(x.dtype), attrs, opset=opset, **kw)
    x, g = f32(2, 3, 5, 7), f32(2, 4, 6, 2, lo=-1.3, hi=1.3)
    gs("gridsample_bilinear_zeros", x, g, note="F.grid_sample as PyTorch writes it")
    gs("gridsample_bilinear_zeros_align_corners", x, g, align=1)
    gs("gridsample_bilinear_border", x, g, padding="border", opset=17)
    gs("gridsample_bilinear_border_align_corners", x, g, padding="border", align=1)
    far = f32(1, 3, 5, 2, lo=-3.5, hi=3.5)
    gs("gridsample_bilinear_reflection", x[:1], far, padding="reflection")
    gs("gridsample_bilinear_reflection_align_corners", x[:1], far, padding="reflection", align=1, opset=18)
    gs("gridsample_bilinear_reflection_single_column", f32(1, 2, 4, 1), far, padding="reflection", align=1)
    gs("gridsample_nearest_zeros", x, g, "nearest")
    gs("gridsample_nearest_border_align_corners", x, g, "nearest", "border", 1)
    gs("gridsample_nearest_reflection", x[:1], far, "nearest", "reflection")
    gs("gridsample_bilinear_float64", x.astype(np.float64), g.astype(np.float64), align=1)


# GridSample bicubic (reference: F.grid_sample in float64), every padding mode; generated last so
# that the fixtures before keep their random draws.
def grid_sample_bicubic():
    def gs(name, x, grid, padding, align, opset=16):
        t = lambda a: torch.from_numpy(a.astype(np.float64))
        y = F.grid_sample(t(x), t(grid), mode="bicubic", padding_mode=padding,
                          align_corners=bool(align)).numpy()
        attrs = {"mode": "bicubic", "padding_mode": padding, "align_corners": align}
        one(name, "GridSample", {"x": x, "grid": grid}, y.astype(x.dtype), attrs, opset=opset)
    x, g = f32(2, 3, 5, 7), f32(2, 4, 6, 2, lo=-1.3, hi=1.3)
    far = f32(1, 3, 5, 2, lo=-3.5, hi=3.5)
    gs("gridsample_bicubic_zeros", x, g, "zeros", 0)
    gs("gridsample_bicubic_border_align_corners", x, g, "border", 1)
    gs("gridsample_bicubic_reflection", x[:1], far, "reflection", 0)
    gs("gridsample_bicubic_reflection_align_corners", x[:1], far, "reflection", 1)


# ScatterND with reduction mul, max and min (Note [ScatterND by rows]): duplicates combine in
# indices' order; the indices also as a run-time input. Generated last, after the bicubic cases.
def scatternd_reductions():
    def ref(data, indices, updates, reduction):
        out = data.copy()
        k = indices.shape[-1]
        idx = indices.reshape(-1, k)
        upd = updates.reshape((idx.shape[0],) + data.shape[k:])
        f = {"mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]
        for i in range(idx.shape[0]):
            t = tuple(int(v) for v in idx[i])
            out[t] = f(out[t], upd[i])
        return out
    def sc(name, data, indices, updates, reduction, runtime=False):
        ins = [("data", data)] + ([("indices", indices)] if runtime else []) + [("updates", updates)]
        save(name, [("ScatterND", ["data", "indices", "updates"], ["out"], {"reduction": reduction})],
             ins, [("out", ref(data, indices, updates, reduction))],
             None if runtime else {"indices": indices}, 16, export=False)
    data, dup = f32(4, 3), arr([[1], [3], [1], [1]])
    sc("scatternd_mul_duplicates", data, dup, f32(4, 3), "mul")
    sc("scatternd_max_duplicates", data, dup, f32(4, 3), "max")
    sc("scatternd_min_k2_runtime_indices", f32(3, 4, 5), arr([[2, 1], [0, 3], [2, 1]]), f32(3, 5), "min",
       runtime=True)


# Resize tf_crop_and_resize (Note [Crop and resize]; reference: ONNX's interpolate_nd): a region
# reaching past the input (extrapolation_value there), nearest, and cubic with a roi that also
# resizes the channel axis. Generated last.
def resize_crop():
    from onnx.backend.test.case.node.resize import (interpolate_nd, linear_coeffs, nearest_coeffs,
                                                    cubic_coeffs)
    x = f32(1, 2, 4, 5)
    def rc(name, roi, sizes, mode, extrapolation=None):
        coeffs = {"linear": linear_coeffs, "nearest": nearest_coeffs, "cubic": cubic_coeffs}[mode]
        kw = {} if extrapolation is None else {"extrapolation_value": extrapolation}
        y = interpolate_nd(x, coeffs, output_size=sizes, roi=arr(roi, np.float32),
                           coordinate_transformation_mode="tf_crop_and_resize", **kw)
        attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize"}
        if extrapolation is not None:
            attrs["extrapolation_value"] = extrapolation
        save(name, [("Resize", ["x", "roi", "", "sizes"], ["y"], attrs)], [("x", x)],
             [("y", y.astype(np.float32))], {"roi": arr(roi, np.float32), "sizes": arr(sizes)})
    rc("resize_crop_linear_extrapolation", [0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7], [1, 2, 3, 3], "linear", 10.0)
    rc("resize_crop_nearest", [0, 0, 0.2, -0.3, 1, 1, 0.9, 0.8], [1, 2, 3, 4], "nearest")
    rc("resize_crop_cubic_channels", [0, 0.5, 0.1, 0.1, 1, 1, 0.9, 0.9], [1, 2, 3, 3], "cubic")


# NonZero (opsets 9/13; reference: numpy.nonzero stacked). torch.nonzero exports as
# Transpose(NonZero(x)), boolean-mask indexing x[m] as GatherND(x, Transpose(NonZero(m))).
def nonzero():
    def nz(name, x, opset=13, **kw):
        one(name, "NonZero", {"x": x}, np.stack(np.nonzero(x)).astype(np.int64), opset=opset, **kw)
    x = f32(3, 4)
    x[x < 0.2] = 0
    x[1, 2] = np.nan
    nz("nonzero_float_nan", x, opset=9, note="NaN counts as non-zero")
    nz("nonzero_bool_3d", f32(2, 3, 4) > 0.3)
    nz("nonzero_int64_1d", arr([0, 3, 0, -2, 0, 0, 7]))
    nz("nonzero_all_zero", np.zeros((2, 3), np.float32), note="a (2, 0) result")
    data, m = f32(3, 4, 2), f32(3, 4) > 0
    save("nonzero_boolean_mask_indexing",
         [("NonZero", ["m"], ["at"], {}), ("Transpose", ["at"], ["idx"], {"perm": [1, 0]}),
          ("GatherND", ["data", "idx"], ["out"], {})],
         [("data", data), ("m", m)], [("out", data[m])], note="x[m] as PyTorch writes it")


# Mod (opsets 10/13; reference: numpy.fmod and numpy.mod). torch.fmod and torch.remainder of ints,
# torch.fmod of floats (fmod=1, the dividend's sign) as PyTorch writes them.
def mod():
    a = arr([[-7.5, 7.5, -0.0, 5.0, -5.0, 3.25], [1e-3, -2.5, 7.0, -7.0, np.inf, 2.0]], np.float32)
    b = arr([[2.0, -2.0, 3.0, 5.0, 5.0, -np.inf], [0.75, 0.5, -2.5, 2.5, 3.0, 0.3]], np.float32)
    save("mod_fmod_float", [("Mod", ["a", "b"], ["out"], {"fmod": 1})], [("a", a[:, :4]), ("b", b[:, :4])],
         [("out", np.fmod(a[:, :4], b[:, :4]))], note="torch.fmod of floats as PyTorch writes it")
    save("mod_fmod_float_inf", [("Mod", ["a", "b"], ["out"], {"fmod": 1})], [("a", a[:1]), ("b", b[:1])],
         [("out", np.fmod(a[:1], b[:1]))], opset=10, note="an infinite divisor keeps the dividend")
    x, y = f32(3, 4, lo=-5, hi=5).astype(np.float64), f32(4, lo=0.5, hi=2).astype(np.float64) * arr([1, -1, 1, -1])
    save("mod_fmod_float64_broadcast", [("Mod", ["x", "y"], ["out"], {"fmod": 1})], [("x", x), ("y", y)],
         [("out", np.fmod(x, y))])
    i, j = i64(3, 4, lo=-20, hi=20), arr([3, -3, 5, -7])
    save("mod_int64_floor", [("Mod", ["i", "j"], ["out"], {})], [("i", i), ("j", j)], [("out", np.mod(i, j))],
         note="torch.remainder of ints")
    save("mod_int64_fmod", [("Mod", ["i", "j"], ["out"], {"fmod": 1})], [("i", i), ("j", j)],
         [("out", np.fmod(i, j))], note="torch.fmod of ints")


# ScatterElements (opsets 11/13/16/18) and Scatter (9; reference: ONNX's loop in numpy, the last
# duplicate winning). Like ScatterND they import as AdvancedSetSubtensor/AdvancedIncSubtensor, which
# the exporter has no ONNX form for yet.
def scatter_elements():
    def ref(data, indices, updates, axis, reduction):
        out = data.copy()
        for pos in np.ndindex(*indices.shape):
            at = list(pos)
            at[axis] = int(indices[pos])
            at = tuple(at)
            out[at] = updates[pos] if reduction == "none" else out[at] + updates[pos]
        return out
    def sc(name, data, indices, updates, axis=None, reduction=None, opset=13, runtime=False, op="ScatterElements",
           **kw):
        attrs = {k: v for k, v in (("axis", axis), ("reduction", reduction)) if v is not None}
        ins = [("data", data)] + ([("indices", indices)] if runtime else []) + [("updates", updates)]
        save(name, [(op, ["data", "indices", "updates"], ["out"], attrs)], ins,
             [("out", ref(data, indices, updates, (axis or 0) % data.ndim, reduction or "none"))],
             None if runtime else {"indices": indices}, opset, export=False, **kw)
    data = f32(4, 5)
    sc("scatterelements_axis0", data, arr([[1, 0, 3, 2, 0], [3, 2, 1, 0, 1]]), f32(2, 5), opset=11,
       note="torch.scatter as PyTorch writes it")
    sc("scatterelements_axis1_runtime_indices", data, arr([[4, 0], [1, 2], [3, 3], [0, 1]]), f32(4, 2), axis=1,
       runtime=True)
    sc("scatterelements_negative_axis_and_indices", f32(2, 3, 4), arr([[[-1, 0], [2, -3]], [[1, 1], [0, -4]]]),
       f32(2, 2, 2), axis=-1)
    sc("scatterelements_add_duplicates", data, arr([[1, 1, 3, 3, 0], [1, 2, 3, 3, 0]]), f32(2, 5), axis=0,
       reduction="add", opset=16, note="torch.scatter_add as PyTorch writes it")
    sc("scatterelements_duplicates_last_wins", data, arr([[2, 2], [0, 0], [4, 4], [1, 1]]), f32(4, 2), axis=1,
       note="ONNX leaves duplicates undefined; Tensorscope's last write wins")
    sc("scatterelements_1d", f32(6), arr([5, 0, 2]), f32(3))
    sc("scatter_v9", data, arr([[3, 1, 0], [0, 2, 1]]), f32(2, 3), axis=0, opset=9, op="Scatter")
    sc("scatterelements_int64_add", i64(3, 4, lo=-5), arr([[2, 2, 0, 1]]), i64(1, 4, lo=-5), axis=0,
       reduction="add", opset=18, runtime=True)


def check_rnn_refs():
    """The numpy loops against torch.nn.LSTM/GRU (torch's gate orders: i f g o and r z n)."""
    torch.manual_seed(0)
    x, lstm, gru = torch.randn(3, 2, 4).double(), torch.nn.LSTM(4, 5, bidirectional=True).double(), \
        torch.nn.GRU(4, 5, bidirectional=True).double()
    take = lambda m, n, order: np.concatenate([getattr(m, n).detach().numpy()[k * 5:(k + 1) * 5] for k in order])
    stack = lambda m, o: [np.stack([np.concatenate([take(m, n + s, o) for n in names]) for s in ("", "_reverse")])
                          for names in (["weight_ih_l0"], ["weight_hh_l0"], ["bias_ih_l0", "bias_hh_l0"])]
    z = np.zeros((2, 2, 5))
    with torch.no_grad():
        Y = lstm_ref(x.numpy(), *stack(lstm, [0, 3, 1, 2]), z, z)[0]
        assert np.allclose(Y.transpose(0, 2, 1, 3).reshape(3, 2, 10), lstm(x)[0].numpy())
        Y = gru_ref(x.numpy(), *stack(gru, [1, 0, 2]), z, 1)[0]
        assert np.allclose(Y.transpose(0, 2, 1, 3).reshape(3, 2, 10), gru(x)[0].numpy())


def main():
    check_rnn_refs()
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    for family in (elementwise, logic, blas, conv, convtranspose, pool, norms, shapes, constants, reductions,
                   resize, rnn, resize_interpolation, depth_to_space, trilu, cumsum,
                   einsum, scatternd, gathernd, grid_sample, nonzero, mod, scatter_elements,
                   grid_sample_bicubic, scatternd_reductions, resize_crop):
        family()
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print("%d fixtures, %d files, %.1f KiB in %s" % (len(names), len(os.listdir(OUT)), total / 1024, OUT))


if __name__ == "__main__":
    main()
