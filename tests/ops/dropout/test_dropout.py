"""The dropout family (ir/ops/dropout.c, runtime/elem/dropout.h): Dropout in training mode, by property.

    test_dropout.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda | --cuda-one]

vcc draws its masks from Philox4x32-10, PyTorch from its own generator, so no test compares masks with
PyTorch's; each checks what must hold for the mask the program itself reports (the optional mask output
of a --forward-only program, which draws the masks of training step 1, as a trainer's first step does):

  philox_kat         runtime/elem/dropout.h's Philox4x32-10 against Random123's published known answers
  fraction_R         over 16384 elements the dropped fraction is within 5 standard deviations of ratio R
  forward_FORM       y equals PyTorch's dropout of x with that mask, bit for bit: x * (mask / (1 - p)) in
                     float32 (torch's _dropout_impl: the mask divided by 1 - p, then multiplied), for each
                     opset form that draws in a forward program (1 and 6 is_test=0 with a float mask; 12, 13,
                     22 training_mode=true with a bool mask)
  seeds              the same --seed gives the same mask, another seed another one (about 2p(1-p) of the
                     elements differ); a node's ONNX seed attribute keys its draws: its mask is the same
                     under any --seed and equals the mask a node without the attribute draws under --seed
                     of that value
  backward_FORM      a --loss mse trainer on a parameter X through the Dropout, one step, --save-grads: dX
                     against PyTorch float64 autograd of mean((X * m / (1 - p) - T)^2) with the mask m of the
                     forward program at the same seed (and against central differences of that function),
                     for opsets 6 (is_test=0), 7 and 10 (no mode: trainers train), 13 (training_mode)
  no_saved_mask      the backward regenerates the mask: DropoutGrad reads dY alone, and the plan holds no
                     byte of a mask the model does not ask for
  free_when_off      ratio 0 or training_mode false (and opsets 7-11 in a forward program): the node is an
                     Identity, a view; the arena equals that of the model without the node
  resume             a trainer run of 4 steps and one of 2 steps resumed to 4 print the same losses (the
                     masks of steps 3 and 4 are drawn again from the checkpoint's seed); the checkpoint holds
                     the seed; resuming with another --seed is refused
  refusals           a ratio or training_mode that is not a constant, a ratio outside [0, 1): exit 1, one
                     report naming the node and the reason
  cuda               (--cuda, --cuda-one) the forward and trainer .cu programs build with nvcc with no
                     warnings; where a GPU is present they run, and the CUDA mask, output and gradient must
                     equal the CPU program's bit for bit

Prints one line per check with its figure; exits 1 if any failed (77 with --cuda-one and no nvcc).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
SHAPE = (2, 4, 8, 16, 16)  # (N, C, T, H, W): 16384 elements
F32 = np.float32


def dropout_model(path, opset, ratio=0.3, train=True, mask=True, seed_attr=None, trainer=False, shape=SHAPE,
                  extra_inputs=None):
    """One Dropout node in the form of opset: X (a graph input, or an initializer for a trainer) -> Y [, mask].
    Opsets 1 and 6 say training with is_test=0, 7-11 say nothing, 12+ take constant ratio and training_mode
    inputs (extra_inputs: {1 or 2: name} makes that one a graph input instead)."""
    attrs, ins, inits = {}, ["X"], []
    if opset < 12:
        attrs["ratio"] = ratio
        if opset < 7:
            attrs["is_test"] = 0 if train else 1
    else:
        for i, (name, value) in enumerate((("ratio", np.array(ratio, F32)), ("training_mode", np.array(train)))):
            if (extra_inputs or {}).get(i + 1):
                ins.append(extra_inputs[i + 1])
            else:
                inits.append(numpy_helper.from_array(value, name))
                ins.append(name)
        if seed_attr is not None:
            attrs["seed"] = seed_attr
    outs = ["Y", "mask"] if mask else ["Y"]
    node = helper.make_node("Dropout", ins, outs, name="/drop", **attrs)
    mask_type = TensorProto.FLOAT if opset < 10 else TensorProto.BOOL
    g_out = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(shape))]
    if trainer:
        x0 = np.random.default_rng(5).uniform(-1, 1, shape).astype(F32)
        inits.append(numpy_helper.from_array(x0, "X"))
        g_in = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [shape[0]])]
    else:
        g_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(shape))]
        if mask:
            g_out.append(helper.make_tensor_value_info("mask", mask_type, list(shape)))
    for i, name in (extra_inputs or {}).items():
        g_in.append(helper.make_tensor_value_info(name, TensorProto.BOOL if i == 2 else TensorProto.FLOAT, []))
    m = helper.make_model(helper.make_graph([node], "dropout", g_in, g_out, inits),
                          opset_imports=[helper.make_opsetid("", opset)], producer_name="test_dropout")
    m.ir_version = 8 if opset >= 9 else 3
    onnx.save(m, path)
    return m


class Checks:
    def __init__(self, vcc, work, only):
        self.vcc, self.work, self.only = vcc, work, only
        self.failed, self.total = [], 0

    def row(self, name, check, fig, ok, note=""):
        self.total += 1
        print("%-28s %-30s %9.2e %s%s" % (name, check, fig, "ok  " if ok else "FAIL", ("  " + note) if note else ""))
        if not ok:
            self.failed.append("%s: %s" % (name, check))

    def dir(self, name):
        d = os.path.join(self.work, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def wanted(self, name):
        return not self.only or self.only in name


def forward(vcc, d, opset, x, seed=None, build=True, **kw):
    """Build (once) and run the forward program of a Dropout model; returns (y, mask)."""
    if build:
        dropout_model(os.path.join(d, "fwd.onnx"), opset, **kw)
        oc._build(vcc, "fwd.onnx", "fwd.c", d, ["--forward-only"])
    np.save(os.path.join(d, "x.npy"), x)
    oc._run(["./fwd", "x.npy", "-o", "y.npy", "mask.npy"] + (["--seed", str(seed)] if seed is not None else []), d)
    return np.load(os.path.join(d, "y.npy")), np.load(os.path.join(d, "mask.npy"))


def torch_dropout(x, mask, p):
    """PyTorch's dropout of x with a given mask (torch/nn/functional _dropout_impl: noise = mask; noise.div_(1 - p);
    x * noise), in float32."""
    noise = torch.from_numpy(np.asarray(mask, F32).copy())
    noise.div_(1 - p)
    return (torch.from_numpy(x) * noise).numpy()


def philox_kat(c):
    """Random123's kat_vectors, philox4x32 10 rows: (counter, key) -> the four words."""
    d = c.dir("philox_kat")
    kat = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
           ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
           ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
            (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
    src = ['#include <stdio.h>', '#include "elem/dropout.h"', "int main(void) {", "    uint32_t o[4];"]
    for ctr, key, _ in kat:
        src.append("    { const uint32_t c[4] = {%su, %su, %su, %su}, k[2] = {%su, %su};" % (ctr + key))
        src.append('      vcc_philox4x32_10(c, k, o); printf("%08x %08x %08x %08x\\n", o[0], o[1], o[2], o[3]); }')
    src.append("    return 0;\n}\n")
    with open(os.path.join(d, "kat.c"), "w") as f:
        f.write("\n".join(src))
    oc._run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(ROOT, "runtime"), "kat.c", "-o", "kat"], d)
    got = [tuple(int(w, 16) for w in line.split()) for line in oc._run(["./kat"], d).splitlines()]
    bad = sum(g != want for g, (_, _, want) in zip(got, kat)) + abs(len(got) - len(kat))
    c.row("philox_kat", "Random123 known answers", float(bad), bad == 0, "%d of %d vectors differ" % (bad, len(kat)))


def fractions(c):
    x = np.random.default_rng(0).uniform(-1, 1, SHAPE).astype(F32)
    for ratio in (0.1, 0.5, 0.75):
        name = "fraction_%g" % ratio
        if not c.wanted(name):
            continue
        _, m = forward(c.vcc, c.dir(name), 13, x, ratio=ratio)
        n, dropped = m.size, float((~m).sum())
        sd = np.sqrt(n * ratio * (1 - ratio))
        z = abs(dropped - ratio * n) / sd
        c.row(name, "dropped vs ratio (sd)", z, z <= 5, "%.4f of %d dropped" % (dropped / n, n))


def forwards(c):
    x = np.random.default_rng(1).uniform(-2, 2, SHAPE).astype(F32)
    for name, opset, ratio in (("forward_opset1", 1, 0.5), ("forward_opset6", 6, 0.25), ("forward_opset12", 12, 0.4),
                               ("forward_opset13", 13, 0.3), ("forward_opset22", 22, 0.6)):
        if not c.wanted(name):
            continue
        y, m = forward(c.vcc, c.dir(name), opset, x, ratio=ratio)
        want_type = np.float32 if opset < 10 else np.bool_
        ok_mask = m.dtype == want_type and m.shape == x.shape and np.isin(m, [0, 1]).all()
        ref = torch_dropout(x, m, float(F32(ratio)))
        bad = int((y != ref).sum())
        c.row(name, "y != torch dropout(x, mask)", float(bad), bad == 0 and ok_mask,
              "mask %s%s, %.3f dropped" % (m.dtype, "" if ok_mask else " (expected %s 0/1)" % np.dtype(want_type),
                                           1 - float(np.mean(m))))


def seeds(c):
    if not c.wanted("seeds"):
        return
    d = c.dir("seeds")
    x = np.random.default_rng(2).uniform(-1, 1, SHAPE).astype(F32)
    p = 0.5
    _, m0 = forward(c.vcc, d, 13, x, ratio=p)
    _, m0b = forward(c.vcc, d, 13, x, seed=0, build=False)
    _, m1 = forward(c.vcc, d, 13, x, seed=1, build=False)
    c.row("seeds", "same seed: elements differing", float((m0 != m0b).sum()), bool((m0 == m0b).all()))
    n, diff = m0.size, float((m0 != m1).sum())
    z = abs(diff - 2 * p * (1 - p) * n) / np.sqrt(n * 2 * p * (1 - p) * (1 - 2 * p * (1 - p)))
    c.row("seeds", "other seed: differing vs 2p(1-p)", z, z <= 5, "%.4f of the elements differ" % (diff / n))
    d2 = c.dir("seeds_attr")
    _, a0 = forward(c.vcc, d2, 13, x, seed=0, ratio=p, seed_attr=7)
    _, a3 = forward(c.vcc, d2, 13, x, seed=3, build=False)
    _, m7 = forward(c.vcc, d, 13, x, seed=7, build=False)
    c.row("seeds", "seed attribute: --seed 0 vs 3", float((a0 != a3).sum()), bool((a0 == a3).all()))
    c.row("seeds", "seed=7 attribute vs --seed 7", float((a0 != m7).sum()), bool((a0 == m7).all()))


def train_grads(vcc, d, opset, ratio, seed, target):
    """One --lr 0 step of the --loss mse trainer of the Dropout on parameter X; its dX."""
    dropout_model(os.path.join(d, "train.onnx"), opset, ratio=ratio, mask=opset >= 12, trainer=True)
    train = oc._build(vcc, "train.onnx", "train.c", d, ["--loss", "mse", "--keep-grads"])
    np.save(os.path.join(d, "data.npy"), np.zeros(SHAPE[0], F32))
    np.save(os.path.join(d, "targets.npy"), target)
    oc._run([train, "--data", "data.npy", "--targets", "targets.npy", "--lr", "0", "--save-grads", "grads.safetensors",
             "--seed", str(seed)], d)
    return load_file(os.path.join(d, "grads.safetensors"))["X"]


def backwards(c):
    target = np.random.default_rng(3).uniform(-1, 1, SHAPE).astype(F32)
    x = onnx.numpy_helper.to_array([i for i in dropout_model(os.path.join(c.work, "x.onnx"), 13, trainer=True)
                                    .graph.initializer if i.name == "X"][0])
    for name, opset, ratio, seed in (("backward_opset6", 6, 0.25, 0), ("backward_opset7", 7, 0.5, 4),
                                     ("backward_opset10", 10, 0.3, 0), ("backward_opset13", 13, 0.6, 9)):
        if not c.wanted(name):
            continue
        d = c.dir(name)
        # the mask of training step 1 at this seed: the forward program of the form that draws there
        _, m = forward(c.vcc, d, 13 if 7 <= opset < 12 else opset, x, seed=seed, ratio=ratio)
        got = train_grads(c.vcc, d, opset, ratio, seed, target)
        p = float(F32(ratio))
        xt = torch.tensor(x.astype(np.float64), requires_grad=True)
        mt = torch.tensor(np.asarray(m, np.float64))
        loss = ((xt * mt / (1 - p) - torch.tensor(target.astype(np.float64))) ** 2).mean()
        loss.backward()
        ref = xt.grad.numpy()
        e = oc._err(got, ref)
        # central differences of the same function at a few elements
        idx = np.random.default_rng(4).choice(x.size, 16, replace=False)

        def L(v):
            return float(((v * mt.numpy() / (1 - p) - target.astype(np.float64)) ** 2).mean())
        fd = []
        for i in idx:
            xp, xm = x.astype(np.float64).copy(), x.astype(np.float64).copy()
            xp.flat[i] += 1e-6
            xm.flat[i] -= 1e-6
            fd.append((L(xp) - L(xm)) / 2e-6)
        e_fd = oc._err(got.reshape(-1)[idx], np.array(fd))
        c.row(name, "dX vs autograd / central diff", max(e, e_fd), max(e, e_fd) <= 1e-6,
              "autograd %.1e, finite differences %.1e" % (e, e_fd))


def dump(vcc, d, model, *extra):
    return oc._run([vcc, model, "--dump-ir", "memplan"] + list(extra), d)


def arena(text):
    return int(re.search(r"^arena bytes=(\d+)", text, re.M).group(1))


def structure(c):
    if c.wanted("no_saved_mask"):
        d = c.dir("no_saved_mask")
        dropout_model(os.path.join(d, "m.onnx"), 13, trainer=True)  # the mask output is not a graph output
        text = dump(c.vcc, d, "m.onnx", "--loss", "mse")
        grad = [line for line in text.splitlines() if " DropoutGrad " in line]
        reads_dy_only = len(grad) == 1 and re.search(r'DropoutGrad "[^"]*" \("[^"]*"\) ->', grad[0]) is not None
        mask_bytes = [line for line in text.splitlines() if line.startswith('plan "mask"') and "bytes=0" not in line
                      and "live=" in line and "offset=-1" not in line]
        fwd = [line for line in text.splitlines() if " Dropout " in line and line.startswith("node")]
        one_out = len(fwd) == 1 and '"mask"' not in fwd[0]
        c.row("no_saved_mask", "DropoutGrad reads dY alone", 0.0 if reads_dy_only else 1.0, reads_dy_only,
              grad[0].split(" -> ")[0] if grad else "no DropoutGrad")
        c.row("no_saved_mask", "unread mask dropped", 0.0 if one_out and not mask_bytes else 1.0,
              one_out and not mask_bytes)
    if c.wanted("free_when_off"):
        d = c.dir("free_when_off")
        helper_model = helper.make_model(helper.make_graph(
            [helper.make_node("Relu", ["X"], ["Y"], name="/relu")], "plain",
            [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(SHAPE))],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(SHAPE))]),
            opset_imports=[helper.make_opsetid("", 13)])
        helper_model.ir_version = 8
        forms = [("ratio 0", 13, dict(ratio=0.0)), ("training_mode false", 13, dict(train=False)),
                 ("opset 10, forward program", 10, dict(ratio=0.5)), ("opset 6 is_test=1", 6, dict(train=False))]
        for what, opset, kw in forms:
            m = dropout_model(os.path.join(d, "drop.onnx"), opset, mask=False, **kw)
            # the same model with a Relu after the Dropout, and without the Dropout
            g = m.graph
            g.node[0].output[0] = "D"
            g.node.append(helper.make_node("Relu", ["D"], ["Y"], name="/relu"))
            onnx.save(m, os.path.join(d, "drop.onnx"))
            hm = helper.make_model(helper.make_graph([helper_model.graph.node[0]], "plain", g.input, g.output,
                                                     g.initializer), opset_imports=m.opset_import)
            hm.ir_version = m.ir_version
            onnx.save(hm, os.path.join(d, "plain.onnx"))
            a, b = dump(c.vcc, d, "drop.onnx", "--forward-only"), dump(c.vcc, d, "plain.onnx", "--forward-only")
            view = re.search(r'node 0 forward Identity "/drop"', a) is not None
            c.row("free_when_off", what + ": arena - plain arena", float(arena(a) - arena(b)),
                  view and arena(a) == arena(b), "an Identity view" if view else "not a view")


def resume(c):
    if not c.wanted("resume"):
        return
    d = c.dir("resume")
    dropout_model(os.path.join(d, "train.onnx"), 13, ratio=0.5, mask=False, trainer=True)
    train = oc._build(c.vcc, "train.onnx", "train.c", d, ["--loss", "mse"])
    np.save(os.path.join(d, "data.npy"), np.zeros(SHAPE[0], F32))
    np.save(os.path.join(d, "targets.npy"), np.random.default_rng(6).uniform(-1, 1, SHAPE).astype(F32))
    base = [train, "--data", "data.npy", "--targets", "targets.npy", "--lr", "0.5", "--seed", "11"]
    full = oc._run(base + ["--steps", "4"], d).splitlines()
    oc._run(base + ["--steps", "2", "--checkpoint-dir", "ck"], d)
    meta = oc._run([sys.executable, "-c", "import json,struct,sys; b=open(sys.argv[1],'rb').read(); "
                    "n=struct.unpack('<Q',b[:8])[0]; print(json.loads(b[8:8+n])['__metadata__'].get('seed'))",
                    os.path.join(d, "ck", "step2.safetensors")], d).strip()
    resumed = oc._run(base[:-2] + ["--steps", "4", "--resume", "ck"], d).splitlines()
    same = full[2:] == resumed and len(resumed) == 2
    c.row("resume", "steps 3-4: resumed vs straight", 0.0 if same else 1.0, same,
          "checkpoint seed %s; %s" % (meta, " / ".join(resumed)))
    c.row("resume", "checkpoint metadata seed", 0.0 if meta == "11" else 1.0, meta == "11")
    other = subprocess.run(base[:-1] + ["12", "--steps", "4", "--resume", "ck"], cwd=d, capture_output=True,
                           text=True)
    ok = other.returncode == 1 and "--seed 11" in other.stderr and "--seed 12" in other.stderr
    c.row("resume", "another --seed refused", 0.0 if ok else 1.0, ok, other.stderr.strip()[:120])
    other_seed = oc._run([train, "--data", "data.npy", "--targets", "targets.npy", "--lr", "0.5", "--seed", "12",
                          "--steps", "4"], d).splitlines()
    differs = other_seed[1:] != full[1:]
    c.row("resume", "--seed 12 trains otherwise", 0.0 if differs else 1.0, differs)


def refusals(c):
    if not c.wanted("refusals"):
        return
    d = c.dir("refusals")
    # (what, model, words the report must hold); each compiled as a trainer (--loss mse), where every form draws
    cases = [("ratio a graph input", dict(opset=13, extra_inputs={1: "r"}), ["Dropout input 'ratio'", "constant"]),
             ("ratio 1", dict(opset=13, ratio=1.0), ["Dropout input 'ratio'", "[0, 1)"]),
             ("ratio -0.5, opset 10", dict(opset=10, ratio=-0.5), ["Dropout attribute 'ratio'", "[0, 1)"]),
             ("ratio NaN, opset 6", dict(opset=6, ratio=float("nan")), ["Dropout attribute 'ratio'", "[0, 1)"]),
             ("training_mode a graph input", dict(opset=13, extra_inputs={2: "t"}),
              ["Dropout input 'training_mode'", "constant"])]
    for what, kw, words in cases:
        path = os.path.join(d, "m.onnx")
        dropout_model(path, mask=False, **kw)
        p = subprocess.run([c.vcc, path, "--loss", "mse", "-o", os.path.join(d, "train.c")], capture_output=True,
                           text=True)
        lines = p.stderr.strip().splitlines()
        ok = (p.returncode == 1 and lines and lines[0].startswith(path) and all(w in p.stderr for w in words)
              and "'/drop'" in p.stderr and not os.path.exists(os.path.join(d, "train.c")))
        c.row("refusals", what, 0.0 if ok else 1.0, ok, " | ".join(l.strip() for l in lines[1:3])[:150])


def cuda(c, run_cpu_too=True):
    """Build the .cu programs; on a GPU compare them with the CPU ones bit for bit."""
    d = c.dir("cuda")
    x = np.random.default_rng(7).uniform(-1, 1, SHAPE).astype(F32)
    target = np.random.default_rng(8).uniform(-1, 1, SHAPE).astype(F32)
    dropout_model(os.path.join(d, "fwd.onnx"), 13, ratio=0.3)
    dropout_model(os.path.join(d, "train.onnx"), 13, ratio=0.3, mask=False, trainer=True)
    exes = {}
    for name, target_file, extra in (("fwd", "fwd.cu", ["--forward-only"]), ("train", "train.cu", ["--loss", "mse", "--keep-grads"])):
        try:
            exes[name] = oc._build(c.vcc, name + ".onnx", target_file, d, extra, fast=False)
            c.row("cuda", "nvcc build " + name, 0.0, True, "no warnings")
        except RuntimeError as e:
            c.row("cuda", "nvcc build " + name, float("inf"), False, str(e)[:300])
    if len(exes) < 2 or not oc._gpu():
        print("cuda: built only; no GPU here, so the CUDA masks were not compared with the CPU ones")
        return
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "data.npy"), np.zeros(SHAPE[0], F32))
    np.save(os.path.join(d, "targets.npy"), target)
    cpu_fwd = oc._build(c.vcc, "fwd.onnx", "fwd.c", d, ["--forward-only"])
    cpu_train = oc._build(c.vcc, "train.onnx", "train.c", d, ["--loss", "mse", "--keep-grads"])
    for seed in ("0", "5"):
        oc._run([cpu_fwd, "x.npy", "-o", "y.npy", "m.npy", "--seed", seed], d)
        oc._run([exes["fwd"], "x.npy", "-o", "yc.npy", "mc.npy", "--seed", seed], d)
        bad_m = int((np.load(os.path.join(d, "m.npy")) != np.load(os.path.join(d, "mc.npy"))).sum())
        bad_y = int((np.load(os.path.join(d, "y.npy")) != np.load(os.path.join(d, "yc.npy"))).sum())
        c.row("cuda", "seed %s: mask, y differ (count)" % seed, float(bad_m + bad_y), bad_m + bad_y == 0,
              "mask %d, y %d" % (bad_m, bad_y))
        run = ["--data", "data.npy", "--targets", "targets.npy", "--lr", "0", "--seed", seed, "--save-grads"]
        oc._run([cpu_train] + run + ["g.safetensors"], d)
        oc._run([exes["train"]] + run + ["gc.safetensors"], d)
        g, gc = load_file(os.path.join(d, "g.safetensors"))["X"], load_file(os.path.join(d, "gc.safetensors"))["X"]
        e = oc._err(gc, g)
        c.row("cuda", "seed %s: dX cuda vs cpu" % seed, e, e <= 1e-6, "zero pattern equal: %s" % bool(((g == 0) == (gc == 0)).all()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default=None)
    ap.add_argument("--cuda", action="store_true", help="also build (and on a GPU run) the CUDA programs")
    ap.add_argument("--cuda-one", action="store_true", help="only the CUDA programs")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    c = Checks(os.path.abspath(args.vcc), os.path.abspath(args.work), args.only)
    if args.cuda_one and shutil.which("nvcc") is None:
        print("skip: nvcc not found")
        return 77
    steps = [cuda] if args.cuda_one else [philox_kat, fractions, forwards, seeds, backwards, structure, resume,
                                          refusals] + ([cuda] if args.cuda else [])
    for step in steps:
        if step in (philox_kat, cuda) and not c.wanted(step.__name__):
            continue
        try:
            step(c)
        except Exception as e:  # a crash of vcc or of a program is a failed check
            c.row(step.__name__, "run", float("inf"), False, str(e)[:600])
    print("%d checks, %d failed%s" % (c.total, len(c.failed), (": " + "; ".join(c.failed)) if c.failed else ""))
    return 1 if c.failed or c.total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
