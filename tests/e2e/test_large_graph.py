"""A long graph compiles and runs: 20,000 chained Relu nodes (every pass is linear or n log n in the
graph's size; CTest's timeout guards against a quadratic pass creeping back in).

    test_large_graph.py --vcc BUILD/vcc --work DIR [--nodes 20000]

The forward-only program's output is compared with numpy's relu of the input (exact), and the plan
must fit the chain in place: one buffer for the whole chain.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--nodes", type=int, default=20000)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    n = args.nodes
    nodes = [helper.make_node("Relu", ["x" if i == 0 else "r%d" % (i - 1)], ["r%d" % i], name="relu%d" % i)
             for i in range(n)]
    nodes.append(helper.make_node("Flatten", ["r%d" % (n - 1)], ["y"], name="flat"))
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 48])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(args.work, "chain.onnx"))
    p = subprocess.run([os.path.abspath(args.vcc), "chain.onnx", "--forward-only", "-o", "fwd.c", "--plan-json",
                        "plan.json"], cwd=args.work, capture_output=True, text=True)
    if p.returncode:
        sys.exit("FAIL: vcc: " + p.stderr)
    b = subprocess.run(p.stdout.strip(), cwd=args.work, shell=True, capture_output=True, text=True)
    if b.returncode:
        sys.exit("FAIL: build: " + b.stderr[-2000:])
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    np.save(os.path.join(args.work, "x.npy"), x)
    r = subprocess.run(["./fwd", "x.npy", "-o", "y.npy"], cwd=args.work, capture_output=True, text=True)
    if r.returncode:
        sys.exit("FAIL: run: " + r.stderr)
    y = np.load(os.path.join(args.work, "y.npy"))
    import json
    arena = json.load(open(os.path.join(args.work, "plan.json")))["arena_bytes"]
    print("%d nodes: output %s, arena %d bytes" % (n, "exact" if np.array_equal(y, np.maximum(x, 0).reshape(2, 48))
                                                   else "WRONG", arena))
    if not np.array_equal(y, np.maximum(x, 0).reshape(2, 48)):
        sys.exit("FAIL: output differs from relu(x)")
    if arena > 2 * 512:  # x and the chain: two 384-byte buffers, each rounded up to 256-byte multiples
        sys.exit("FAIL: the chain did not run in place (arena %d bytes)" % arena)
    print("PASS")


if __name__ == "__main__":
    main()
