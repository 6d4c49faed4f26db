#!/usr/bin/python3
"""Generates ONNX's per-operator backend test cases (the "node" suite) from Debian's python3-onnx
1.12 (`onnx.backend.test.case.node`), tensor cases only, in the fixture layout of
tests/onnx/onnx_fixture.h (Note [ONNX fixture layout]):

  DIR/NAME.onnx, DIR/NAME.in<k>.npy, DIR/NAME.out<k>.npy, DIR/NAME.json
      NAME is ONNX's case name (test_abs, test_softmax_cross_entropy_mean_expanded, ...); the
      sidecar holds the tolerances of ONNX's runner (rtol 1e-3, atol 1e-7, or the case's own),
      the op type, whether the case is a function expansion ("expanded") and the opset.
  DIR/cases.json
      {NAME: {"op": ..., "expanded": bool, "opset": N}} for every case written.

A case is left out when an input or output is not a plain numeric tensor (sequences, maps,
optionals, strings): the engine has no such values. Everything else is written, including
dtypes the engine lacks (uint16/32/64, bfloat16 stored as uint16, complex), so the report counts
them as failures rather than hiding them.

Run:
  /usr/bin/python3 tests/data/onnx/make_node_cases.py --all /tmp/onnx-node
      every case, for scripts/onnx_node_report.py (not committed: about 25 MB)
  /usr/bin/python3 tests/data/onnx/make_node_cases.py
      the committed CI subset, tests/data/onnx/node/ (the names in SUBSET below)
CI never runs this script; commit the files it writes.
"""
import argparse
import json
import os
import shutil
import sys
import warnings

import numpy as np

# onnx 1.12's case definitions use the aliases numpy 1.24 removed (np.float, np.int, np.bool...).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object),
                          ("str", str), ("long", int)):
        if not hasattr(np, _alias):
            setattr(np, _alias, _type)

import onnx
import onnx.backend.test.case.node as node_cases

HERE = os.path.dirname(os.path.abspath(__file__))
SUBSET_DIR = os.path.join(HERE, "node")

# The committed subset: at least one case of every op whose converter issue 25 added or changed
# (run-time shape values, unknown ranks, new ops), small enough for CI. tst_onnx_node checks that
# every name listed here is present, so the subset cannot shrink silently.
SUBSET = """
test_abs test_relu test_add_bcast test_matmul_2d test_cast_FLOAT_to_DOUBLE
test_reduce_sum_default_axes_keepdims_example test_reduce_sum_keepdims_example
test_reduce_sum_negative_axes_keepdims_example test_reduce_sum_do_not_keepdims_example
test_reduce_sum_empty_axes_input_noop_example
test_unsqueeze_axis_0 test_unsqueeze_two_axes test_unsqueeze_negative_axes test_unsqueeze_unsorted_axes
test_squeeze test_squeeze_negative_axes
test_slice test_slice_neg_steps test_slice_default_axes test_slice_negative_axes
test_tile_precomputed test_expand_dim_changed test_expand_dim_unchanged
test_reshape_reordered_all_dims test_reshape_negative_dim test_reshape_zero_dim test_reshape_allowzero_reordered
test_constantofshape_float_ones test_constantofshape_int_zeros
test_range_float_type_positive_delta test_range_int32_type_negative_delta
test_top_k test_top_k_negative_axis test_top_k_smallest
test_constant_pad test_edge_pad test_reflect_pad
test_resize_upsample_scales_nearest test_resize_downsample_sizes_nearest
test_resize_upsample_sizes_cubic test_resize_downsample_scales_linear
test_onehot_with_axis test_onehot_without_axis
test_tan test_tan_example test_sinh test_cosh test_asin test_acos test_atan
test_asinh test_acosh test_atanh test_sinh_example test_atanh_example
test_isinf test_isinf_negative test_isinf_positive test_isnan
test_hardmax_axis_0 test_hardmax_axis_1 test_hardmax_axis_2 test_hardmax_example
test_hardmax_negative_axis test_hardmax_one_hot test_hardmax_default_axis
test_castlike_FLOAT_to_DOUBLE test_castlike_DOUBLE_to_FLOAT test_castlike_FLOAT16_to_FLOAT
test_castlike_FLOAT_to_DOUBLE_expanded
test_compress_0 test_compress_1 test_compress_default_axis test_compress_negative_axis
test_mvn test_mvn_expanded
test_bitshift_left_uint8 test_bitshift_right_uint8
test_reversesequence_batch test_reversesequence_time
test_det_2d test_det_nd
test_quantizelinear test_quantizelinear_axis test_dequantizelinear test_dequantizelinear_axis
test_matmulinteger test_qlinearmatmul_2D test_qlinearmatmul_3D
test_nllloss_NC test_nllloss_NCd1d2_reduction_mean
test_nllloss_NCd1_weight_ii test_nllloss_NCd1d2d3_none_no_weight_negative_ii
test_nllloss_NCd1d2_with_weight_reduction_sum_ii
test_sce_mean test_sce_mean_weight_ii_3d test_sce_NCd1d2d3_none_no_weight_negative_ii
test_sce_mean_log_prob
test_shrink_hard test_sign test_mean_example test_neg
test_nonmaxsuppression_center_point_box_format test_nonmaxsuppression_flipped_coordinates
test_nonmaxsuppression_identical_boxes test_nonmaxsuppression_limit_output_size
test_nonmaxsuppression_suppress_by_IOU_and_scores test_nonmaxsuppression_two_batches
test_nonmaxsuppression_two_classes
test_unique_not_sorted_without_axis test_unique_sorted_with_axis test_unique_sorted_with_axis_3d
test_unique_sorted_with_negative_axis test_unique_sorted_without_axis
test_roialign_aligned_false test_roialign_aligned_true
test_dft test_dft_axis test_dft_inverse
test_maxunpool_export_with_output_shape test_maxunpool_export_without_output_shape
test_hannwindow test_hammingwindow_symmetric test_blackmanwindow
test_dynamicquantizelinear test_dynamicquantizelinear_min_adjusted
test_cumsum_1d_exclusive test_cumsum_2d_negative_axis
test_not_2d test_softplus test_globalaveragepool
test_resize_downsample_scales_linear_align_corners test_resize_downsample_scales_cubic_align_corners
test_sce_mean_weight_ii_3d_log_prob test_batchnorm_example_training_mode test_tfidfvectorizer_tf_batch_uniandbigrams_skip5 test_maxpool_2d_uint8 test_stft test_stft_with_window
test_convinteger_with_padding test_convinteger_without_padding test_qlinearconv
test_nllloss_NCd1_mean_weight_negative_ii_expanded
test_bitshift_left_uint16 test_bitshift_right_uint64 test_max_uint32 test_min_uint64 test_mod_uint16
test_pow_types_float32_uint32 test_adagrad test_adagrad_multiple test_adam
test_momentum test_momentum_multiple test_nesterov_momentum
test_maxpool_with_argmax_2d_precomputed_pads test_maxpool_with_argmax_2d_precomputed_strides
test_scatternd_multiply test_melweightmatrix test_resize_tf_crop_and_resize test_gridsample_bicubic
""".split()


# Cases whose expected outputs contradict their own node (a defect of the case, not of an
# implementation): the sidecar says why ("bad_case"); tst_onnx_node skips such a case when its
# values differ, and onnx_node_report.py counts it apart from pass / refused / WRONG.
KNOWN_BAD = {
    "test_adam_multiple": "ONNX 1.12 computes the expected outputs with epsilon 1e-2, but the "
    "node leaves epsilon at its default, 1e-6",
}


def as_tensor(value):
    """value as an ndarray (numpy scalars such as QuantizeLinear's np.float32 scale become 0-d
    arrays), or None when it is not a plain numeric tensor."""
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        return value
    return None


def tensor_types_only(model):
    for vi in list(model.graph.input) + list(model.graph.output):
        if vi.type.WhichOneof("value") != "tensor_type":
            return False
        if vi.type.tensor_type.elem_type == onnx.TensorProto.STRING:
            return False
    return True


def default_opset(model):
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            return opset.version
    return 0


def collect():
    """Every tensor case as (name, case, op, expanded, inputs, outputs), sorted by name."""
    cases = node_cases.collect_testcases(None)
    ops = {}
    for c in cases:
        if not c.name.endswith("_expanded"):
            ops[c.name] = c.model.graph.node[0].op_type
    out = []
    for c in cases:
        expanded = c.name.endswith("_expanded")
        base = c.name[: -len("_expanded")] if expanded else c.name
        op = ops.get(base, c.model.graph.node[0].op_type)
        inputs, outputs = c.data_sets[0]
        inputs = [as_tensor(v) for v in inputs]
        outputs = [as_tensor(v) for v in outputs]
        if any(v is None for v in inputs + outputs):
            continue
        if not tensor_types_only(c.model):
            continue
        out.append((c.name, c, op, expanded, inputs, outputs))
    out.sort(key=lambda t: t[0])
    return out


def write_case(directory, name, case, op, expanded, inputs, outputs):
    onnx.save(case.model, os.path.join(directory, name + ".onnx"))
    for k, v in enumerate(inputs):
        np.save(os.path.join(directory, "%s.in%d.npy" % (name, k)), v)
    for k, v in enumerate(outputs):
        np.save(os.path.join(directory, "%s.out%d.npy" % (name, k)), v)
    sidecar = {
        "rtol": case.rtol,
        "atol": case.atol,
        "op": op,
        "expanded": expanded,
        "opset": default_opset(case.model),
        "export": False,
        "note": "ONNX 1.12 backend node case " + name,
    }
    if name in KNOWN_BAD:
        sidecar["bad_case"] = KNOWN_BAD[name]
    with open(os.path.join(directory, name + ".json"), "w") as f:
        json.dump(sidecar, f, indent=1, sort_keys=True)
        f.write("\n")
    return {"op": op, "expanded": expanded, "opset": sidecar["opset"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", metavar="DIR", help="write every tensor case into DIR")
    args = parser.parse_args()
    cases = collect()
    if args.all:
        directory, wanted = args.all, None
    else:
        directory, wanted = SUBSET_DIR, set(SUBSET)
        known = {c[0] for c in cases}
        missing = sorted(wanted - known)
        if missing:
            sys.exit("SUBSET names no such tensor case: " + " ".join(missing))
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)
    manifest = {}
    for name, case, op, expanded, inputs, outputs in cases:
        if wanted is None or name in wanted:
            manifest[name] = write_case(directory, name, case, op, expanded, inputs, outputs)
    with open(os.path.join(directory, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    print("%d cases written to %s (of %d tensor cases)" % (len(manifest), directory, len(cases)))


if __name__ == "__main__":
    main()
