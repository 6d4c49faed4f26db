#!/usr/bin/env python3
"""Writes the generated seeds of the .tsg fuzz corpus (tests/fuzz/README.md).

    python3 tests/fuzz/make_tsg_corpus.py [OUT_DIR]     # default: tests/data/corpus/tsg

It (over)writes only the files it generates: valid_*.tsg (small graphs that load) and bad_*.tsg
(malformed variants that must be refused with a TsgError); the seeds without "v2" in their name are
version-1 JSON text (still read), valid_v2_* and bad_v2_* are version-2 files (binary header, JSON,
tensor section: docs/tsg-format.md), made here from the JSON by an independent writer, and
framed_v2_* are "JSON NUL SECTION" inputs that the fuzz target frames with a correct header
(Note [Framed inputs] in fuzz_tsg_loader.cpp). The regress_*.tsg files beside them are
minimised crash reproducers, added by hand; this script never touches them. Run it again when the
format changes (docs/tsg-format.md, engine/io/tsg_reader.cpp), then check that the valid_* seeds
still load, e.g. with the fuzz_tsg_replay driver under the sanitizers of a TSCOPE_FUZZ build.
Every seed stays under 8 KB.
"""

import base64
import copy
import json
import os
import struct
import sys

SIZE_LIMIT = 8192


def tensor(dtype, shape, fmt, values):
    data = struct.pack("<" + fmt * len(values), *values)
    return {"dtype": dtype, "shape": shape, "data": base64.b64encode(data).decode()}


def raw_tensor(dtype, shape, data):
    return {"dtype": dtype, "shape": shape, "data": base64.b64encode(data).decode()}


def ttype(dtype, shape, cuda=False):
    """A TYPE string: "float32[?,784]", "int64[]", "float16[2,3]@cuda" (None is an unknown dim)."""
    dims = ",".join("?" if d is None else str(d) for d in shape)
    return f"{dtype}[{dims}]" + ("@cuda" if cuda else "")


def f32(shape, cuda=False):
    return ttype("float32", shape, cuda)


SITES = [
    {"file": "examples/seed.cpp", "function": "int main(int, char**)"},
    {"file": "examples/seed.cpp", "function": "VarPtr dense(const VarPtr&)"},
]


def doc(original, optimized=None, rewrites=None, sites=True, **extra):
    d = {"format": "tensorscope-graph", "version": 1,
         "producer": {"name": "tensorscope", "version": "0.1.0"}}
    if sites:
        d["sites"] = copy.deepcopy(SITES)
    d["graphs"] = {"original": copy.deepcopy(original)}
    if optimized is not None:
        d["graphs"]["optimized"] = copy.deepcopy(optimized)
    d["rewrites"] = copy.deepcopy(rewrites or [])
    d["profiles"] = []
    d.update(copy.deepcopy(extra))
    return d


# --- valid graphs -------------------------------------------------------------------------------
# Every apply states its output types ("types"); a computed variable carries no "type" and is listed
# in "variables" only when it has something of its own (a name, a test value, its own scope/site).

# One input, one Elemwise, one output (the output is implicit: listed only in the apply).
MINIMAL = {
    "inputs": [0], "outputs": [2], "updates": [], "next_id": 3,
    "variables": [{"id": 0, "kind": "input", "name": "x", "type": f32([None, 3])}],
    "applies": [{"id": 1, "op": "Elemwise", "props": {"scalar_op": "exp"}, "inputs": [0], "outputs": [2],
                 "types": [f32([None, 3])]}],
}

# Constants, a shared variable with an update, test values, scopes and creation sites; listed
# computed variables (a name, a test value, their own scope or site) beside an implicit one.
META = {
    "inputs": [0, 1], "outputs": [5, 7, 9], "updates": [{"output": 1, "input": 1}], "next_id": 10,
    "variables": [
        {"id": 0, "kind": "input", "name": "x", "scope": "layer1", "site": [0, 10],
         "type": f32([None, 2]), "test_value": tensor("float32", [1, 2], "f", [1.0, -2.0])},
        {"id": 1, "kind": "shared", "name": "w", "scope": "layer1", "site": [1, 11],
         "type": f32([2]), "value": tensor("float32", [2], "f", [0.5, 0.25])},
        {"id": 2, "kind": "constant", "site": [0, 12], "type": f32([]),
         "value": tensor("float32", [], "f", [2.0])},
        {"id": 5, "kind": "computed", "name": "y", "scope": "layer1/act", "site": [1, 13],
         "test_value": tensor("float32", [1, 2], "f", [1.0, -1.0])},
        {"id": 7, "kind": "computed", "name": "w_new", "site": None}],
    "applies": [
        {"id": 3, "op": "Elemwise", "props": {"scalar_op": "mul"}, "inputs": [0, 1, 2], "outputs": [5],
         "types": [f32([None, 2])], "scope": "layer1", "site": [1, 13]},
        {"id": 6, "op": "Elemwise", "props": {"scalar_op": "sub"}, "inputs": [1, 2], "outputs": [7],
         "types": [f32([2])], "site": [0, 14]},
        {"id": 8, "op": "Elemwise", "props": {"scalar_op": "exp"}, "inputs": [2], "outputs": [9],
         "types": [f32([])], "scope": "head", "site": [1, 15]}],
}

# An op the registry lacks: loads as an OpaqueOp with its props kept; two outputs, types on the GPU.
OPAQUE = {
    "inputs": [0], "outputs": [2, 3], "updates": [], "next_id": 4,
    "variables": [{"id": 0, "kind": "input", "type": f32([4], cuda=True)}],
    "applies": [{"id": 1, "op": "MyCustomOp", "props": {"alpha": 0.5, "mode": "fast", "axes": [0, 1]},
                 "inputs": [0], "outputs": [2, 3], "types": [ttype("int64", [None], cuda=True), f32([])]}],
}

# neg(neg(x)) and its optimized form identity(x), with the rewrite that links them.
ORIGINAL = {
    "inputs": [0], "outputs": [4], "updates": [], "next_id": 5,
    "variables": [{"id": 0, "kind": "input", "name": "x", "type": f32([3])}],
    "applies": [{"id": 1, "op": "Elemwise", "props": {"scalar_op": "neg"}, "inputs": [0], "outputs": [2],
                 "types": [f32([3])]},
                {"id": 3, "op": "Elemwise", "props": {"scalar_op": "neg"}, "inputs": [2], "outputs": [4],
                 "types": [f32([3])]}],
}
OPTIMIZED = {
    "inputs": [0], "outputs": [6], "updates": [], "next_id": 7,
    "variables": [{"id": 0, "kind": "input", "name": "x", "type": f32([3])}],
    "applies": [{"id": 5, "op": "Elemwise", "props": {"scalar_op": "identity"}, "inputs": [0], "outputs": [6],
                 "types": [f32([3])]}],
}
REWRITES = [{"order": 0, "phase": "canonicalize", "reason": "local_neg_neg", "replaced": [[4, 6]],
             "added": [5], "removed": [1, 3], "seconds": 0.00012}]

# cast, DimShuffle (transpose and a new axis), Dot and an inplace Elemwise.
OPS = {
    "inputs": [0, 1], "outputs": [9, 10], "updates": [], "next_id": 12,
    "variables": [{"id": 0, "kind": "input", "name": "a", "type": f32([None, 4])},
                  {"id": 1, "kind": "input", "name": "b", "type": ttype("int32", [3, 4])}],
    "applies": [
        {"id": 2, "op": "Elemwise", "props": {"scalar_op": "cast", "dtype": "float32"}, "inputs": [1],
         "outputs": [3], "types": [f32([3, 4])]},
        {"id": 4, "op": "DimShuffle", "props": {"input_ndim": 2, "order": [1, 0]}, "inputs": [3],
         "outputs": [5], "types": [f32([4, 3])]},
        {"id": 6, "op": "Dot", "inputs": [0, 5], "outputs": [7], "types": [f32([None, 3])]},
        {"id": 8, "op": "Elemwise", "props": {"scalar_op": "tanh", "inplace": {"0": 0}}, "inputs": [7],
         "outputs": [9], "types": [f32([None, 3])]},
        {"id": 11, "op": "DimShuffle", "props": {"input_ndim": 2, "order": ["x", 0, 1]}, "inputs": [9],
         "outputs": [10], "types": [f32([1, None, 3])]}],
}


def dtype_zoo():
    """A constant of every dtype, each compared with itself."""
    values = {"bool": ("B", [1, 0]), "int8": ("b", [-1, 2]), "int16": ("h", [-300, 7]),
              "int32": ("i", [1, -1]), "int64": ("q", [2 ** 40, -5]), "uint8": ("B", [255, 0]),
              "float16": ("H", [0x3c00, 0xc000]), "float64": ("d", [1.5, -0.0])}
    variables = [{"id": 0, "kind": "input", "type": ttype("bool", [2])}]
    applies, outputs, next_id = [], [], 1
    for dtype, (fmt, vals) in values.items():
        const = next_id
        variables.append({"id": const, "kind": "constant", "type": ttype(dtype, [2]),
                          "value": tensor(dtype, [2], fmt, vals)})
        applies.append({"id": const + 1, "op": "Elemwise", "props": {"scalar_op": "eq"},
                        "inputs": [const, const], "outputs": [const + 2], "types": [ttype("bool", [2])]})
        outputs.append(const + 2)
        next_id += 3
    return {"inputs": [0], "outputs": outputs, "updates": [], "next_id": next_id,
            "variables": variables, "applies": applies}


def seeds():
    s = {}
    s["valid_minimal_elemwise.tsg"] = doc(MINIMAL, sites=False)
    s["valid_constants_shared_testvalues.tsg"] = doc(META)
    s["valid_unknown_op_opaque.tsg"] = doc(OPAQUE)
    s["valid_optimized_with_rewrites.tsg"] = doc(ORIGINAL, OPTIMIZED, REWRITES)
    s["valid_dimshuffle_dot_cast_inplace.tsg"] = doc(OPS)
    s["valid_dtype_zoo.tsg"] = doc(dtype_zoo())

    def bad(name, base, edit, **kw):
        d = doc(base, **kw)
        edit(d, d["graphs"]["original"])
        s["bad_" + name + ".tsg"] = d

    def setv(path, value):
        def edit(d, g):
            target = g
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
        return edit

    def listed(*entries):
        """Lists computed variables (by name, so they are not implicit) among the variables."""
        def edit(d, g):
            g["variables"].extend(copy.deepcopy(entries))
            g["variables"].sort(key=lambda v: v["id"])
        return edit

    def both(*edits):
        def edit(d, g):
            for e in edits:
                e(d, g)
        return edit

    minimal_text = json.dumps(doc(MINIMAL), separators=(",", ":"))
    s["bad_truncated.tsg"] = minimal_text[: len(minimal_text) // 2]
    s["bad_empty.tsg"] = ""
    s["bad_root_array.tsg"] = [doc(MINIMAL)]
    s["bad_root_string.tsg"] = '"tensorscope-graph"'
    s["bad_deep_nesting.tsg"] = ('{"format":"tensorscope-graph","version":1,"graphs":{"original":'
                                 + "[" * 200 + "]" * 200 + "}}")
    bad("wrong_format", MINIMAL, lambda d, g: d.update(format="tensorscope-grpah"))
    bad("version_99", MINIMAL, lambda d, g: d.update(version=99))
    bad("extra_graph", MINIMAL, lambda d, g: d["graphs"].update(extra=copy.deepcopy(MINIMAL)))
    bad("base64_alphabet", META, setv(["variables", 2, "value", "data"], "AA*AAA=="))
    bad("base64_length", META, setv(["variables", 2, "value", "data"], "AAAAA"))
    bad("base64_padding", META, setv(["variables", 2, "value", "data"], "AAA"))
    bad("data_length_mismatch", META, setv(["variables", 1, "value", "shape"], [3]))
    bad("bool_data_not_0_or_1", dtype_zoo(), setv(["variables", 1, "value", "data"], "B/8="))
    bad("value_dtype_unknown", META, setv(["variables", 2, "value", "dtype"], "complex64"))
    bad("unknown_kind", MINIMAL, setv(["variables", 0, "kind"], "parameter"))

    # TYPE strings: the old object form and malformed strings, on variables and in "types".
    bad("type_object", MINIMAL, setv(["variables", 0, "type"], {"dtype": "float32", "shape": [None, 3]}))
    bad("types_object", MINIMAL, setv(["applies", 0, "types"], [{"dtype": "float32", "shape": [None, 3]}]))
    bad("type_unclosed", MINIMAL, setv(["variables", 0, "type"], "float32[?,"))
    bad("type_no_brackets", MINIMAL, setv(["variables", 0, "type"], "float32"))
    bad("negative_dim", MINIMAL, setv(["variables", 0, "type"], "float32[-1]"))
    bad("type_empty_dim", MINIMAL, setv(["applies", 0, "types"], ["float32[1,,2]"]))
    bad("type_trailing_comma", MINIMAL, setv(["variables", 0, "type"], "float32[?,3,]"))
    bad("unknown_dtype", MINIMAL, setv(["variables", 0, "type"], "float31[2]"))
    bad("type_unknown_device", MINIMAL, setv(["applies", 0, "types"], ["float32[?,3]@tpu"]))
    bad("type_dim_too_large", MINIMAL, setv(["variables", 0, "type"], "float32[9007199254740992]"))
    bad("type_rank_33", MINIMAL, setv(["variables", 0, "type"], "float32[" + ",".join(["1"] * 33) + "]"))
    bad("computed_has_type", META, setv(["variables", 3, "type"], f32([None, 2])))
    bad("types_count_mismatch", MINIMAL, setv(["applies", 0, "types"], [f32([None, 3]), f32([None, 3])]))
    bad("types_missing", MINIMAL, lambda d, g: g["applies"][0].pop("types"))
    bad("type_contradiction", MINIMAL, setv(["applies", 0, "types"], [ttype("int8", [None, 3])]))
    bad("shape_contradiction", MINIMAL, setv(["applies", 0, "types"], [f32([None, 5])]))
    bad("rank_contradiction", OPS, setv(["applies", 2, "types"], [f32([None])]))

    bad("dangling_variable_id", MINIMAL, setv(["applies", 0, "inputs"], [42]))
    bad("apply_out_of_order", ORIGINAL,
        both(listed({"id": 2, "kind": "computed", "name": "h"}), lambda d, g: g["applies"].reverse()))
    bad("cycle_attempt", ORIGINAL,
        both(listed({"id": 4, "kind": "computed", "name": "y"}), setv(["applies", 0, "inputs"], [4])))
    bad("duplicate_id", MINIMAL, setv(["applies", 0, "id"], 0))
    bad("duplicate_variable", MINIMAL, listed({"id": 0, "kind": "input", "type": f32([3])}))
    bad("dead_variable", MINIMAL, listed({"id": 9, "kind": "input", "type": f32([1])}))
    bad("computed_not_output", MINIMAL, listed({"id": 9, "kind": "computed", "name": "z"}))
    bad("output_of_two_applies", ORIGINAL, setv(["applies", 1, "outputs"], [2]))
    bad("output_not_computed", MINIMAL, setv(["applies", 0, "outputs"], [0]))
    bad("props_unknown_scalar_op", MINIMAL, setv(["applies", 0, "props"], {"scalar_op": "frobnicate"}))
    bad("props_not_object", MINIMAL, setv(["applies", 0, "props"], "exp"))
    bad("props_dimshuffle_repeat", OPS, setv(["applies", 1, "props"], {"input_ndim": 2, "order": [1, 1]}))
    bad("props_dot_has_props", OPS, setv(["applies", 2, "props"], {"transA": True}))
    bad("props_inplace_out_of_range", MINIMAL, setv(["applies", 0, "props", "inplace"], {"0": 1}))

    def two_outputs(d, g):
        g["applies"][0]["outputs"] = [2, 3]
        g["applies"][0]["types"] = [f32([None, 3]), f32([None, 3])]
        g["next_id"] = 4
    bad("wrong_output_count", MINIMAL, two_outputs)
    bad("test_value_shape", META,
        setv(["variables", 0, "test_value"], tensor("float32", [1, 3], "f", [1, 2, 3])))
    bad("update_type_mismatch", META, setv(["updates"], [{"output": 0, "input": 1}]))
    bad("shared_not_an_input", META, lambda d, g: g.update(inputs=[0], updates=[]))
    bad("site_index_out_of_range", META, setv(["variables", 0, "site"], [7, 1]))
    bad("site_old_object_form", META,
        setv(["variables", 0, "site"], {"file": "a.cpp", "line": 1, "function": "f"}))
    bad("rewrite_negative_seconds", ORIGINAL, lambda d, g: d["rewrites"][0].update(seconds=-1),
        optimized=OPTIMIZED, rewrites=REWRITES)
    bad("rewrite_pair", ORIGINAL, lambda d, g: d["rewrites"][0].update(replaced=[[4]]),
        optimized=OPTIMIZED, rewrites=REWRITES)
    return s


# --- version 2 ----------------------------------------------------------------------------------
MAGIC = b"\x89TSG\r\n\x1a\n"


def align(n):
    return (n + 63) // 64 * 64


def to_v2(d):
    """Moves every base64 tensor of the graphs into a tensor section (equal bytes stored once)."""
    d = copy.deepcopy(d)
    d["version"] = 2
    section, where = bytearray(), {}

    def ref(t):
        data = base64.b64decode(t["data"])
        if not data:
            return {"dtype": t["dtype"], "shape": t["shape"], "offset": 0, "length": 0}
        if data not in where:
            where[data] = len(section)
            section.extend(data)
            section.extend(b"\0" * (align(len(section)) - len(section)))
        return {"dtype": t["dtype"], "shape": t["shape"], "offset": where[data], "length": len(data)}

    for g in d["graphs"].values():
        for v in g["variables"]:
            for key in ("value", "test_value"):
                if key in v and "data" in v[key]:
                    v[key] = ref(v[key])
    return d, bytes(section)


def assemble(d, section, version=2, reserved=0, json_length=None, section_length=None):
    text = json.dumps(d, separators=(",", ":")).encode()
    header = MAGIC + struct.pack("<IIQQ", version, reserved,
                                 len(text) if json_length is None else json_length,
                                 len(section) if section_length is None else section_length)
    body = header + text
    return body + b"\0" * (align(len(body)) - len(body)) + section


def v2_seeds(s):
    for name in [n for n in s if n.startswith("valid_")]:
        s[name.replace("valid_", "valid_v2_")] = assemble(*to_v2(s[name]))
        if "dtype_zoo" in name or "constants" in name:  # Note [Framed inputs] in the fuzz target
            d, section = to_v2(s[name])
            s[name.replace("valid_", "framed_v2_")] = (
                json.dumps(d, separators=(",", ":")).encode() + b"\0" + section)
    # A shared weight and a constant with the same bytes, and both graphs holding the weight.
    w = tensor("float32", [2, 2], "f", [1.0, -2.0, 0.5, 4.0])
    shared = {
        "inputs": [0, 1], "outputs": [4], "updates": [], "next_id": 5,
        "variables": [{"id": 0, "kind": "input", "name": "x", "type": f32([2, 2])},
                      {"id": 1, "kind": "shared", "name": "W", "type": f32([2, 2]), "value": w},
                      {"id": 2, "kind": "constant", "name": "C", "type": f32([2, 2]), "value": w,
                       "test_value": w}],
        "applies": [{"id": 3, "op": "Elemwise", "props": {"scalar_op": "add"}, "inputs": [0, 1],
                     "outputs": [5], "types": [f32([2, 2])]},
                    {"id": 6, "op": "Elemwise", "props": {"scalar_op": "mul"}, "inputs": [5, 2],
                     "outputs": [4], "types": [f32([2, 2])]}],
    }
    shared["next_id"] = 7
    base, section = to_v2(doc(shared, copy.deepcopy(shared)))
    s["valid_v2_shared_between_graphs.tsg"] = assemble(base, section)
    s["framed_v2_shared_between_graphs.tsg"] = json.dumps(base, separators=(",", ":")).encode() + b"\0" + section
    good = assemble(base, section)

    def edited(edit):
        d = copy.deepcopy(base)
        edit(d["graphs"]["original"]["variables"][1]["value"], d)
        return assemble(d, section)

    s["bad_v2_truncated_section.tsg"] = good[:-32]
    s["bad_v2_trailing_bytes.tsg"] = good + b"\0" * 64
    s["bad_v2_bad_magic.tsg"] = b"\x89TSX" + good[4:]
    s["bad_v2_short_header.tsg"] = good[:20]
    s["bad_v2_header_version_3.tsg"] = assemble(base, section, version=3)
    s["bad_v2_reserved_nonzero.tsg"] = assemble(base, section, reserved=1)
    s["bad_v2_json_length_past_end.tsg"] = assemble(base, section, json_length=1 << 40)
    s["bad_v2_section_length_not_aligned.tsg"] = assemble(base, section, section_length=len(section) - 1)
    s["bad_v2_offset_out_of_range.tsg"] = edited(lambda t, d: t.update(offset=4096))
    s["bad_v2_offset_misaligned.tsg"] = edited(lambda t, d: t.update(offset=8))
    s["bad_v2_length_mismatch.tsg"] = edited(lambda t, d: t.update(length=12))
    s["bad_v2_overlap.tsg"] = assemble(*(lambda d: (d, section + b"\0" * 64))(
        (lambda d: (d["graphs"]["original"]["variables"][2]["value"].update(
            dtype="float16", shape=[2, 2], length=8, offset=0) or d))(copy.deepcopy(base))))
    json_version_1 = copy.deepcopy(base)
    json_version_1["version"] = 1
    s["bad_v2_json_says_version_1.tsg"] = assemble(json_version_1, section)
    s["bad_v2_json_only.tsg"] = base  # version 2 without the header


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "data", "corpus", "tsg")
    os.makedirs(out, exist_ok=True)
    total = 0
    all_seeds = seeds()
    v2_seeds(all_seeds)
    for name, content in sorted(all_seeds.items()):
        if isinstance(content, bytes):
            data = content
        else:
            text = content if isinstance(content, str) else json.dumps(content, separators=(",", ":"))
            data = text.encode()
        if len(data) >= SIZE_LIMIT:
            sys.exit(f"{name}: {len(data)} bytes; seeds must stay under {SIZE_LIMIT}")
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        total += len(data)
    print(f"{len(all_seeds)} seeds, {total} bytes, in {out}")


if __name__ == "__main__":
    main()
