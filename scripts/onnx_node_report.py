#!/usr/bin/python3
"""Runs ONNX's node backend cases (written by tests/data/onnx/make_node_cases.py --all DIR) and
prints pass/fail per op type and the total. Not part of CI (the cases are not committed; CI runs
the subset in tests/data/onnx/node/ through tst_onnx_node).

Two runners, the same comparison (dtype and shape equal, floats within the case's rtol/atol as
ONNX's runner does, NaN equal to NaN, everything else exact):
  --test build/tests/tst_onnx_node   runs the Qt test over DIR (TSCOPE_ONNX_NODE_DIR=DIR) and
                                     reads its PASS/FAIL lines (default when that file exists)
  --cli  PATH/tensorscope            runs `tensorscope run` once per case and compares here
Each failure is "refused" (import or run failed with an error: fine, if not the goal) or "WRONG"
(ran and gave other values: a bug), except that a case whose sidecar names it a "bad_case" (its
reference contradicts its own node; make_node_cases.py's KNOWN_BAD) and that gives other values is
counted as "bad case", with the reason. --failures lists every failing case with its message.

  /usr/bin/python3 tests/data/onnx/make_node_cases.py --all /tmp/onnx-node
  /usr/bin/python3 scripts/onnx_node_report.py /tmp/onnx-node [--failures] [--json OUT]
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx


def compare(actual, expected, rtol, atol):
    """None when equal within tolerance, else what differs."""
    if actual.dtype != expected.dtype:
        return "dtype %s, expected %s" % (actual.dtype, expected.dtype)
    if actual.shape != expected.shape:
        return "shape %s, expected %s" % (actual.shape, expected.shape)
    if expected.dtype.kind in "fc":
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        same_special = (np.isnan(a) & np.isnan(e)) | (np.isinf(e) & (a == e))
        ok = same_special | (np.abs(a - e) <= atol + rtol * np.abs(e))
        if not ok.all():
            i = np.unravel_index(np.argmin(ok), ok.shape) if ok.ndim else ()
            return "%d elements differ; at %s: %r, expected %r" % (
                ok.size - ok.sum(), tuple(int(x) for x in i), a[i], e[i])
        return None
    if not np.array_equal(actual, expected):
        return "values differ"
    return None


def run_cli(cli, directory, name, meta):
    model = onnx.load(os.path.join(directory, name + ".onnx"))
    args = [cli, "run", os.path.join(directory, name + ".onnx")]
    initializers = {t.name for t in model.graph.initializer}
    inputs = [vi.name for vi in model.graph.input if vi.name not in initializers]
    for k, n in enumerate(inputs):
        args += ["--input", "%s=%s" % (n, os.path.join(directory, "%s.in%d.npy" % (name, k)))]
    with tempfile.TemporaryDirectory() as out:
        args += ["--output-dir", out]
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return "refused", "timed out after 120 s"
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            return "refused", lines[-1] if lines else "exit %d" % proc.returncode
        for k in range(len(model.graph.output)):
            expected = np.load(os.path.join(directory, "%s.out%d.npy" % (name, k)))
            path = os.path.join(out, "output_%d.npy" % k)
            if not os.path.exists(path):
                return "WRONG", "output %d not written" % k
            diff = compare(np.load(path), expected, meta["rtol"], meta["atol"])
            if diff and meta.get("bad_case"):
                return "bad case", "%s; output %d: %s" % (meta["bad_case"], k, diff)
            if diff:
                return "WRONG", "output %d: %s" % (k, diff)
    return "pass", ""


def run_test(exe, directory):
    """{name: (status, message)} from the Qt test's log."""
    env = dict(os.environ, TSCOPE_ONNX_NODE_DIR=os.path.abspath(directory),
               QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([exe, "-maxwarnings", "0", "cases"], capture_output=True, text=True,
                          env=env, timeout=3600)
    results = {}
    pattern = re.compile(r"^(PASS|FAIL!|SKIP)\s*:\s*\S+::cases\((\w+)\)\s*(.*)$")
    for line in proc.stdout.splitlines():
        m = pattern.match(line)
        if not m:
            continue
        kind, name, message = m.groups()
        if kind == "PASS":
            results[name] = ("pass", "")
        elif kind == "SKIP":
            results[name] = ("bad case", message)
        elif message.startswith("WRONG"):
            results[name] = ("WRONG", message)
        else:
            results[name] = ("refused", message)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", help="the cases (make_node_cases.py --all DIR)")
    parser.add_argument("--test", help="the tst_onnx_node executable")
    parser.add_argument("--cli", help="a tensorscope executable")
    parser.add_argument("--failures", action="store_true", help="list every failing case")
    parser.add_argument("--json", help="write {name: [status, message]} here")
    args = parser.parse_args()
    with open(os.path.join(args.dir, "cases.json")) as f:
        manifest = json.load(f)
    meta = {}
    for name in manifest:
        with open(os.path.join(args.dir, name + ".json")) as f:
            meta[name] = json.load(f)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not args.cli and not args.test:
        args.test = os.path.join(root, "build", "tests", "tst_onnx_node")
    if args.cli:
        results = {n: run_cli(args.cli, args.dir, n, meta[n]) for n in sorted(manifest)}
    else:
        got = run_test(args.test, args.dir)
        results = {n: got.get(n, ("refused", "no result (the test crashed?)")) for n in manifest}

    by_op = collections.defaultdict(collections.Counter)
    for name, (status, _) in results.items():
        by_op[manifest[name]["op"]][status] += 1
    print("%-34s %5s %5s %7s %6s %4s" % ("op", "cases", "pass", "refused", "WRONG", "bad"))
    for op in sorted(by_op):
        c = by_op[op]
        print("%-34s %5d %5d %7d %6d %4d" % (op, sum(c.values()), c["pass"], c["refused"],
                                             c["WRONG"], c["bad case"]))
    total = collections.Counter(status for status, _ in results.values())
    n = len(results)
    print("total: %d of %d pass (%.1f %%), %d refused, %d WRONG, %d bad cases" % (
        total["pass"], n, 100.0 * total["pass"] / max(n, 1), total["refused"], total["WRONG"],
        total["bad case"]))
    if args.failures:
        for name in sorted(results):
            status, message = results[name]
            if status != "pass":
                print("%s %s [%s]: %s" % (status, name, manifest[name]["op"], message))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
