"""Values the host reads after the step are never written over: graph outputs against onnxruntime.

    test_forward_outputs.py --vcc BUILD/vcc --work DIR

Each model below has a graph output whose bytes an in-place op could take: the output is the input of
an elementwise op (Relu, Add) that runs after it, where it would otherwise die. Each model is compiled
with `vcc --forward-only`, run, and every output is compared with onnxruntime (graph optimizations
off) to 1e-5. The plan of each is also checked outside vcc (check_plan.py), and a copy of the plan in
which a graph output IS written over (the later op marked inplace_of the output, at its offset) must be
rejected by that checker, and by vcc's own when the same hand-made plan comes back as a .vir dump
(`vcc bad.vir`), while vcc's unedited dump is accepted.

Models (letters: N batch, C channels, H height, W width):
  relu_add      c = Conv(x); a = Relu(c); b = Add(a, c)          outputs (a, b)
  view_relu     c = Conv(x); f = Flatten(c); r = Relu(c)          outputs (f, r), the Relu last
  conv_relu     c = Conv(x); a = Relu(c)                          outputs (c, a)
  identity_add  c = Conv(x); i = Identity(c); s = Add(c, c2)      outputs (i, s), c2 = Relu(Conv(x))
"""

import argparse
import copy
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
N, C, H, W, K = 2, 3, 6, 5, 4


def conv(nodes, inits, rng, x, name):
    w = numpy_helper.from_array(rng.standard_normal((K, C, 3, 3)).astype(np.float32), name + ".weight")
    inits.append(w)
    nodes.append(helper.make_node("Conv", [x, w.name], [name], name="/" + name, pads=[1, 1, 1, 1]))
    return name


def model(name, rng):
    nodes, inits = [], []
    outs = {}
    if name == "relu_add":
        c = conv(nodes, inits, rng, "x", "c")
        nodes += [helper.make_node("Relu", [c], ["a"], name="/relu"),
                  helper.make_node("Add", ["a", c], ["b"], name="/add")]
        outs = {"a": [N, K, H, W], "b": [N, K, H, W]}
    elif name == "view_relu":
        c = conv(nodes, inits, rng, "x", "c")
        nodes += [helper.make_node("Flatten", [c], ["f"], name="/flatten"),
                  helper.make_node("Relu", [c], ["r"], name="/relu")]
        outs = {"f": [N, K * H * W], "r": [N, K, H, W]}
    elif name == "conv_relu":
        c = conv(nodes, inits, rng, "x", "c")
        nodes += [helper.make_node("Relu", [c], ["a"], name="/relu")]
        outs = {"c": [N, K, H, W], "a": [N, K, H, W]}
    elif name == "identity_add":
        c = conv(nodes, inits, rng, "x", "c")
        c2 = conv(nodes, inits, rng, "x", "c2")
        nodes += [helper.make_node("Identity", [c], ["i"], name="/identity"),
                  helper.make_node("Relu", [c2], ["r2"], name="/relu"),
                  helper.make_node("Add", [c, "r2"], ["s"], name="/add")]
        outs = {"i": [N, K, H, W], "s": [N, K, H, W]}
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, C, H, W])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, s) for o, s in outs.items()],
                              inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m, list(outs)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    fails = 0
    for name in ["relu_add", "view_relu", "conv_relu", "identity_add"]:
        d = os.path.join(args.work, name)
        os.makedirs(d, exist_ok=True)
        m, outs = model(name, rng)
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        x = rng.standard_normal((N, C, H, W)).astype(np.float32)
        np.save(os.path.join(d, "x.npy"), x)
        run([args.vcc, path, "--forward-only", "-o", os.path.join(d, "fwd.c"),
             "--plan-json", os.path.join(d, "plan.json")])
        build = open(os.path.join(d, "fwd.c")).readline().split(":", 1)[1].strip()
        run(["sh", "-c", build], cwd=d)
        run(["./fwd", "x.npy", "-o"] + ["%s.npy" % o for o in outs], cwd=d)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(outs, {"x": x})
        for o, r in zip(outs, ref):
            got = np.load(os.path.join(d, "%s.npy" % o))
            err = float(np.max(np.abs(got - r))) if got.shape == r.shape else float("inf")
            ok = err <= 1e-5
            fails += not ok
            print("%-13s output %-2s max abs error vs onnxruntime %.3g %s" % (name, o, err, "ok" if ok else "FAIL"))

        # the plan, checked outside vcc; and a hand-made copy in which the last op writes over an output
        r = subprocess.run([sys.executable, os.path.join(HERE, "check_plan.py"), "--plan",
                            os.path.join(d, "plan.json")], capture_output=True, text=True)
        fails += r.returncode != 0
        print("%-13s check_plan on vcc's plan: %s" % (name, "PASS" if r.returncode == 0 else "FAIL\n" + r.stdout))
        plan = json.load(open(os.path.join(d, "plan.json")))
        by = {t["name"]: t for t in plan["tensors"]}
        victim, writer = outs[0], max((t for t in plan["tensors"] if t["start"] is not None
                                       and t["start"] > by[outs[0]]["start"] and t["view_of"] is None
                                       and t["bytes"] == by[outs[0]]["bytes"]), key=lambda t: t["start"])
        bad = copy.deepcopy(plan)
        for t in bad["tensors"]:
            if t["name"] == writer["name"]:
                t["inplace_of"], t["offset"] = victim if by[victim]["view_of"] is None else by[victim]["view_of"], \
                    by[victim]["offset"]
        with open(os.path.join(d, "bad_plan.json"), "w") as f:
            json.dump(bad, f)
        r = subprocess.run([sys.executable, os.path.join(HERE, "check_plan.py"), "--plan",
                            os.path.join(d, "bad_plan.json")], capture_output=True, text=True)
        rejected = r.returncode != 0 and "host" in r.stdout
        fails += not rejected
        print("%-13s check_plan on a plan writing %r over output %r: %s" % (
            name, writer["name"], victim, "rejected" if rejected else "NOT REJECTED\n" + r.stdout))

        # the same hand-made plan as a .vir dump: vcc's own plan check must refuse it
        vir = run([args.vcc, path, "--forward-only", "--dump-ir", "memplan"]).stdout
        with open(os.path.join(d, "plan.vir"), "w") as f:
            f.write(vir)
        root = victim if by[victim]["view_of"] is None else by[victim]["view_of"]
        line = re.compile(r'^(plan "%s" \S+ bytes=\d+ live=\S+ offset=)\d+.*$' % re.escape(writer["name"]), re.M)
        bad_vir, n = line.subn(lambda m: '%s%d inplace_of="%s"' % (m.group(1), by[root]["offset"], root), vir)
        assert n == 1
        with open(os.path.join(d, "bad_plan.vir"), "w") as f:
            f.write(bad_vir)
        good = subprocess.run([args.vcc, os.path.join(d, "plan.vir")], capture_output=True, text=True)
        bad = subprocess.run([args.vcc, os.path.join(d, "bad_plan.vir")], capture_output=True, text=True)
        ok = good.returncode == 0 and bad.returncode == 1 and "plan check" in bad.stderr and "host" in bad.stderr
        fails += not ok
        print("%-13s vcc on its own dump: exit %d; on the hand-made .vir: exit %d %s" % (
            name, good.returncode, bad.returncode, "(rejected)" if ok else "FAIL\n" + good.stderr + bad.stderr))
        if name == "relu_add":
            print("   " + bad.stderr.strip())
    print("FAIL" if fails else "PASS")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
