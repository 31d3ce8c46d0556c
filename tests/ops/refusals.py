"""Clean refusals of op forms vcc does not support (tests/ops/<family>/check_refusals.py).

A family's script lists named cases and hands them to main():

    import refusals as rf
    CASES = [
        rf.Refusal("axes_not_constant", [helper.make_node("ReduceSum", ["X", "axes"], ["Y"])],
                   inputs={"X": (2, 3), "axes": (1, "int64")}, opset=13,
                   expect=["'n0'", "ReduceSum", "axes", "must be a constant"]),
    ]
    sys.exit(rf.main(CASES))        # run as: script.py --vcc BUILD/vcc --work DIR [--only NAME]

A Refusal is a small ONNX model: its nodes (named n0, n1, ... where unnamed), graph inputs (name ->
shape, or (shape, element type name)), initializers (name -> numpy array) and the output of the last
node. `vcc MODEL --forward-only -o fwd.c` must refuse it cleanly: exit status 1, every line on stderr
naming the model file or indented under one that does (a report of unsupported constructs), each of
`expect` somewhere in that text (the node, the op, the attribute or input, the reason), and no output
file left behind. Prints one line per case; exits 1 if any case failed.
"""

import argparse
import os
import shutil
import subprocess

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

TYPES = {"float": TensorProto.FLOAT, "int64": TensorProto.INT64, "bool": TensorProto.BOOL}


class Refusal:
    def __init__(self, name, nodes, inputs, expect, inits=None, opset=17):
        self.name, self.nodes, self.inputs, self.expect = name, nodes, dict(inputs), list(expect)
        self.inits, self.opset = dict(inits or {}), opset

    def model(self):
        for i, n in enumerate(self.nodes):
            if not n.name:
                n.name = "n%d" % i
        ins = []
        for name, spec in self.inputs.items():
            shape, ty = (spec[0], spec[1]) if len(spec) == 2 and isinstance(spec[1], str) else (spec, "float")
            ins.append(helper.make_tensor_value_info(name, TYPES[ty], list(shape)))
        out = [helper.make_tensor_value_info(self.nodes[-1].output[0], TensorProto.FLOAT, None)]
        inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in self.inits.items()]
        g = helper.make_graph(self.nodes, self.name, ins, out, initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)], producer_name="refusals")
        m.ir_version = 8 if self.opset >= 9 else 3
        return m


def check(case, vcc, work):
    """None when vcc refuses the case cleanly, else what is wrong."""
    d = os.path.join(work, case.name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    onnx.save(case.model(), path)
    p = subprocess.run([vcc, path, "--forward-only", "-o", os.path.join(d, "fwd.c")], cwd=d, capture_output=True,
                       text=True)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 1:
        return "exit status %d (want 1): %s" % (p.returncode, p.stderr.strip()[:300])
    if not lines or not lines[0].startswith(path) or not all(l.startswith(path) or l.startswith("  ") for l in lines):
        return "a line does not name the model: %s" % p.stderr.strip()[:300]
    missing = [e for e in case.expect if e not in p.stderr]
    if missing:
        return "the message lacks %s: %s" % (", ".join(repr(m) for m in missing), p.stderr.strip()[:300])
    left = set(os.listdir(d)) - {"model.onnx"}
    if left:
        return "left behind: %s" % ", ".join(sorted(left))
    return None


def main(cases, argv=None):
    ap = argparse.ArgumentParser(description="clean refusals of vcc (tests/ops/refusals.py)")
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default=None)
    args = ap.parse_args(argv)
    vcc, work = os.path.abspath(args.vcc), os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    failed, total = [], 0
    for c in cases:
        if args.only and args.only not in c.name:
            continue
        total += 1
        why = check(c, vcc, work)
        print("%-40s %s" % (c.name, "refused cleanly" if why is None else "FAIL  " + why))
        if why is not None:
            failed.append(c.name)
    print("%d cases, %d failed%s" % (total, len(failed), (": " + ", ".join(failed)) if failed else ""))
    return 1 if failed or total == 0 else 0
