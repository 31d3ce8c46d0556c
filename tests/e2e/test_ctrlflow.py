"""Static control flow: If, Loop and sequences whose conditions, trip counts and positions are known while
compiling are expanded into ordinary nodes; one computed at run time is refused, naming the node.

    test_ctrlflow.py --vcc BUILD/vcc --work DIR

Models exported by torch.onnx.export (training mode, no constant folding, opset 17); each export is first
checked to hold the control-flow ops it is meant to test:
  squeeze_if    x.squeeze(2) on an input whose dim 2 is symbolic: If(Shape(x)[2] == 1) with Squeeze and
                Identity branches; compiled with that dim bound to 1 (then branch) and to 3 (else branch)
  split_loop    torch.tensor_split(x, tensor([1, 3]), dim=1): SequenceEmpty, a Loop whose body slices and
                SequenceInserts, SequenceAt
For each: `vcc --forward-only` against onnxruntime (1e-5), then the trainer (default --loss ce on the
Linear head's logits) runs one step with --lr 0 --save-grads, and every parameter's gradient is compared
with PyTorch float64 autograd of the same module (2e-4, relative to the largest gradient).
A hand-made Loop whose body holds an If reading values two scopes out, with a scan output, and hand-made
SplitToSequence graphs (scalar split, vector split, no split with keepdims 0): forward against
onnxruntime.
Refused (exit 1, the message names the node, its op and the value): an If whose condition is a graph
input, and a Loop whose trip count is computed from the data.
"""

import argparse
import collections
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper
from safetensors.numpy import load_file
from torch.onnx import TrainingMode


class SqueezeIf(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(0.5, 1.5, 6).reshape(6, 1))
        self.fc = torch.nn.Linear(6, 4)

    def forward(self, x):  # x (N, 6, d, 2)
        y = (x * self.w.unsqueeze(-1)).squeeze(2)
        return self.fc(torch.relu(y.reshape(y.shape[0], 6, -1).mean(2)))


class SplitLoop(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(0.5, 1.5, 8))
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):  # x (N, 4, 8)
        parts = torch.tensor_split(x * self.w, torch.tensor([1, 3]), dim=1)
        y = parts[0].mean(1) * 2 + torch.tanh(parts[1]).mean(1) + parts[2].sum(1)
        return self.fc(y)


def run(cmd, cwd, shell=False, ok=True):
    p = subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)
    if ok and p.returncode:
        raise RuntimeError("%s exited %d: %s%s" % (cmd, p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def build(vcc, model, out, cwd, extra):
    cmd = run([vcc, model, "-o", out] + extra, cwd).stdout.strip().splitlines()[-1]
    run(cmd.replace("-O2 -march=native", "-O0"), cwd, shell=True)
    return os.path.join(cwd, os.path.splitext(out)[0])


def err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def op_counts(path):
    """Op types of the graph and of every subgraph in it."""
    c = collections.Counter()

    def walk(g):
        for n in g.node:
            c[n.op_type] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)

    walk(onnx.load(path).graph)
    return c


def check_model(args, name, module, shape, dynamic, binding, want_ops):
    d = os.path.join(args.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    torch.manual_seed(0)
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(module, torch.randn(*shape), path, training=TrainingMode.TRAINING, do_constant_folding=False,
                      opset_version=17, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": dynamic} if dynamic else None)
    ops = op_counts(path)
    rows = []
    missing = [o for o in want_ops if not ops[o]]
    rows.append(("%s export holds %s" % (name, ", ".join(want_ops)), not missing,
                 "ops: %s" % dict(ops) if missing else ""))
    for bind in binding:
        tag = name + (" " + bind if bind else "")
        flags = ["--shape", bind] if bind else []
        x_shape = list(shape)
        if bind:
            x_shape[list(dynamic)[0]] = int(bind.split("=")[1])
        x = np.random.default_rng(1).standard_normal(x_shape).astype(np.float32)
        np.save(os.path.join(d, "x.npy"), x)
        # forward against onnxruntime
        fwd = build(args.vcc, "model.onnx", "fwd.c", d, ["--forward-only"] + flags)
        run([fwd, "x.npy", "-o", "y.npy"], d)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        e = err(np.load(os.path.join(d, "y.npy")), want)
        rows.append(("%s forward vs onnxruntime" % tag, e <= 1e-5, "%.2e" % e))
        # one training step's gradients against PyTorch float64
        labels = np.arange(x.shape[0], dtype=np.int64) % 4
        np.save(os.path.join(d, "labels.npy"), labels)
        train = build(args.vcc, "model.onnx", "train.c", d, ["--keep-grads"] + flags)
        run([train, "--data", "x.npy", "--labels", "labels.npy", "--lr", "0", "--save-grads", "grads.safetensors"], d)
        got = load_file(os.path.join(d, "grads.safetensors"))
        ref = module.double()
        ref.zero_grad()
        loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x).double()), torch.from_numpy(labels))
        loss.backward()
        module.float()
        for pname, p in ref.named_parameters():
            g = got.get(pname)
            e = err(g, p.grad.numpy()) if g is not None else float("inf")
            rows.append(("%s grad %s vs torch float64" % (tag, pname), e <= 2e-4, "%.2e" % e))
    return rows


def refused(args, name, nodes, inits, want, extra_inputs=()):
    d = os.path.join(args.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])] + list(extra_inputs),
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    p = run([args.vcc, "model.onnx", "--forward-only", "-o", "fwd.c"], d, ok=False)
    ok = p.returncode == 1 and want in p.stderr
    return [("%s refused" % name, ok, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "no message")]


def nested(args):
    """A Loop of 3 iterations whose body holds an If on the iteration number; the branches read the graph's
    input x (two scopes out) and the body's carried value; a scan output collects each iteration's value."""
    d = os.path.join(args.work, "nested")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    F = TensorProto.FLOAT
    then_g = helper.make_graph([helper.make_node("Add", ["v", "x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", F, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Mul", ["v", "x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", F, [2, 3])])
    zero = helper.make_tensor("zero", TensorProto.INT64, [], [0])
    body = helper.make_graph([helper.make_node("Identity", ["cin"], ["cout"]),
                              helper.make_node("Equal", ["i", "zero"], ["first"]),
                              helper.make_node("If", ["first"], ["v2"], then_branch=then_g, else_branch=else_g),
                              helper.make_node("Relu", ["v2"], ["s"])], "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("cin", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v", F, [2, 3])],
                             [helper.make_tensor_value_info("cout", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v2", F, [2, 3]),
                              helper.make_tensor_value_info("s", F, [2, 3])], [zero])
    m3 = helper.make_tensor("m", TensorProto.INT64, [], [3])
    g = helper.make_graph([helper.make_node("Loop", ["m", "", "x"], ["y", "scan"], name="/loop", body=body)], "nested",
                          [helper.make_tensor_value_info("x", F, [2, 3])],
                          [helper.make_tensor_value_info("y", F, [2, 3]), helper.make_tensor_value_info("scan", F, [3, 2, 3])],
                          [m3])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    fwd = build(args.vcc, "model.onnx", "fwd.c", d, ["--forward-only"])
    run([fwd, "x.npy", "-o", "y.npy", "scan.npy"], d)
    want = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    e = max(err(np.load(os.path.join(d, "y.npy")), want[0]), err(np.load(os.path.join(d, "scan.npy")), want[1]))
    return [("nested If in a Loop body, scan output, forward vs onnxruntime", e <= 1e-6, "%.2e" % e)]


def split_to_sequence(args):
    """SplitToSequence in its three forms, each read back by SequenceAt and ConcatFromSequence: a scalar
    split (pieces of 2 along axis 1 of x (2, 5, 3), the last of 1), a vector split ([1, 4]), and no split
    with keepdims 0 (x unbound along axis 2, rejoined with new_axis on axis 0); forward vs onnxruntime."""
    d = os.path.join(args.work, "split_to_sequence")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    F, I = TensorProto.FLOAT, TensorProto.INT64
    nodes = [helper.make_node("SplitToSequence", ["x", "two"], ["s1"], name="/s1", axis=1),
             helper.make_node("SequenceAt", ["s1", "last"], ["a"], name="/at"),
             helper.make_node("ConcatFromSequence", ["s1"], ["b"], name="/cat1", axis=1),
             helper.make_node("SplitToSequence", ["x", "sizes"], ["s2"], name="/s2", axis=-2),
             helper.make_node("SequenceAt", ["s2", "one"], ["c"], name="/at2"),
             helper.make_node("SplitToSequence", ["x"], ["s3"], name="/s3", axis=2, keepdims=0),
             helper.make_node("ConcatFromSequence", ["s3"], ["e"], name="/cat3", axis=0, new_axis=1)]
    inits = [helper.make_tensor("two", I, [], [2]), helper.make_tensor("last", I, [], [-1]),
             helper.make_tensor("sizes", I, [2], [1, 4]), helper.make_tensor("one", I, [], [1])]
    g = helper.make_graph(nodes, "split_to_sequence", [helper.make_tensor_value_info("x", F, [2, 5, 3])],
                          [helper.make_tensor_value_info("a", F, [2, 1, 3]), helper.make_tensor_value_info("b", F, [2, 5, 3]),
                           helper.make_tensor_value_info("c", F, [2, 4, 3]), helper.make_tensor_value_info("e", F, [3, 2, 5])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    x = np.random.default_rng(3).standard_normal((2, 5, 3)).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    fwd = build(args.vcc, "model.onnx", "fwd.c", d, ["--forward-only"])
    names = ["a", "b", "c", "e"]
    run([fwd, "x.npy", "-o"] + [n + ".npy" for n in names], d)
    want = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    e = max(err(np.load(os.path.join(d, n + ".npy")), w) for n, w in zip(names, want))
    return [("SplitToSequence (scalar, vector and no split), forward vs onnxruntime", e == 0.0, "%.2e" % e)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    args.vcc = os.path.abspath(args.vcc)
    os.makedirs(args.work, exist_ok=True)
    rows = []
    rows += check_model(args, "squeeze_if", SqueezeIf(), (2, 6, 1, 2), {2: "d"}, ["d=1", "d=3"], ["If", "Squeeze"])
    rows += check_model(args, "split_loop", SplitLoop(), (2, 4, 8), None, [None],
                        ["Loop", "SequenceEmpty", "SequenceInsert", "SequenceAt"])
    rows += nested(args)
    rows += split_to_sequence(args)
    # an If on a value of the data
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
    rows += refused(args, "if_runtime", [
        helper.make_node("If", ["c"], ["y"], name="/if", then_branch=then_g, else_branch=else_g)], [],
        "node '/if' (If): condition 'c' is computed at run time",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, [])])
    # a Loop whose trip count is computed from the data
    body = helper.make_graph([helper.make_node("Identity", ["cin"], ["cout"]),
                              helper.make_node("Add", ["v", "x"], ["v2"])], "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("cin", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v", TensorProto.FLOAT, [2, 3])],
                             [helper.make_tensor_value_info("cout", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v2", TensorProto.FLOAT, [2, 3])])
    rows += refused(args, "loop_runtime", [
        helper.make_node("ReduceSum", ["x"], ["s"], name="/sum", keepdims=0),
        helper.make_node("Cast", ["s"], ["m"], name="/cast", to=TensorProto.INT64),
        helper.make_node("Loop", ["m", "", "x"], ["y"], name="/loop", body=body)], [],
        "node '/loop' (Loop): trip count 'm' is computed at run time")
    bad = 0
    for what, ok, note in rows:
        print("%-4s %s%s" % ("ok" if ok else "FAIL", what, ("  " + note) if note else ""))
        bad += not ok
    print("%d checks, %d failed" % (len(rows), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
