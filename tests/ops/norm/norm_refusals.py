"""What the norm family refuses, it refuses cleanly: exit status 1, every stderr line naming the model
file (or indented under one, in the report of unsupported constructs), the node and the op named, the
reason given; never a crash. Each model is compiled as a forward program (--forward-only) and as a
trainer (--loss mse).

    norm_refusals.py --vcc BUILD/vcc --work DIR

Prints one line per model and mode; exits 1 if any refusal is missing or unclean.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(op, xshape, params, opset, outputs=("y",), x_param=False, **attrs):
    """One node op(x, *params) -> outputs; params name -> shape (float initializers, "" for absent)."""
    ins = ["x"] + [p for p in params]
    node = helper.make_node(op, ins, list(outputs), name="the_node", **attrs)
    inits = [numpy_helper.from_array(np.ones(s, np.float32), n) for n, s in params.items() if n]
    g_in = []
    if x_param:
        inits.append(numpy_helper.from_array(np.ones(xshape, np.float32), "x"))
        g_in.append(helper.make_tensor_value_info("data", TensorProto.FLOAT, [xshape[0]]))
    else:
        g_in.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xshape)))
    outs = [helper.make_tensor_value_info(outputs[0], TensorProto.FLOAT, None)]
    m = helper.make_model(helper.make_graph([node], "m", g_in, outs, inits),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


# name, model, words stderr must hold (besides the file and the node)
CASES = [
    ("in_rank2", model("InstanceNormalization", (2, 3), {"s": (3,), "b": (3,)}, 13),
     ["(InstanceNormalization)", "rank 2"]),
    ("in_scale_shape", model("InstanceNormalization", (2, 3, 4), {"s": (4,), "b": (3,)}, 13),
     ["(InstanceNormalization)", "scale has shape (4), expected (3)"]),
    ("in_epsilon_negative", model("InstanceNormalization", (2, 3, 4), {"s": (3,), "b": (3,)}, 13, epsilon=-1.0),
     ["InstanceNormalization attribute 'epsilon'", "finite number >= 0"]),
    ("in_epsilon_nan", model("InstanceNormalization", (2, 3, 4), {"s": (3,), "b": (3,)}, 13, epsilon=float("nan")),
     ["InstanceNormalization attribute 'epsilon'"]),
    ("gn_num_groups_missing", model("GroupNormalization", (2, 4, 3), {"s": (4,), "b": (4,)}, 21),
     ["GroupNormalization attribute 'num_groups'", "required"]),
    ("gn_num_groups_zero", model("GroupNormalization", (2, 4, 3), {"s": (4,), "b": (4,)}, 21, num_groups=0),
     ["GroupNormalization attribute 'num_groups'", "at least 1"]),
    ("gn_num_groups_not_dividing", model("GroupNormalization", (2, 4, 3), {"s": (4,), "b": (4,)}, 21, num_groups=3),
     ["(GroupNormalization)", "num_groups 3 does not divide the 4 channels"]),
    ("gn_opset17", model("GroupNormalization", (2, 4, 3), {"s": (2,), "b": (2,)}, 17, num_groups=2),
     ["GroupNormalization before opset 18", "exists from opset 18"]),
    ("gn_opset18_per_channel_scale", model("GroupNormalization", (2, 4, 3), {"s": (4,), "b": (4,)}, 18, num_groups=2),
     ["(GroupNormalization)", "scale has shape (4), expected (2)"]),
    ("gn_opset21_per_group_scale", model("GroupNormalization", (2, 4, 3), {"s": (2,), "b": (2,)}, 21, num_groups=2),
     ["(GroupNormalization)", "scale has shape (2), expected (4)"]),
    ("gn_stash_float16", model("GroupNormalization", (2, 4, 3), {"s": (4,), "b": (4,)}, 21, num_groups=2,
                               stash_type=10), ["GroupNormalization attribute 'stash_type'", "double"]),
    ("gn_stash_before_21", model("GroupNormalization", (2, 4, 3), {"s": (2,), "b": (2,)}, 18, num_groups=2,
                                 stash_type=1), ["GroupNormalization attribute 'stash_type'", "exists from opset 21"]),
    ("ln_axis_too_big", model("LayerNormalization", (2, 3, 4), {"s": (4,), "b": (4,)}, 17, axis=3),
     ["(LayerNormalization)", "axis 3 is outside [-3, 3)"]),
    ("ln_axis_too_small", model("LayerNormalization", (2, 3, 4), {"s": (4,), "b": (4,)}, 17, axis=-4),
     ["(LayerNormalization)", "axis -4 is outside [-3, 3)"]),
    ("ln_opset16", model("LayerNormalization", (2, 3, 4), {"s": (4,), "b": (4,)}, 16),
     ["LayerNormalization before opset 17", "exists from opset 17"]),
    ("ln_scale_not_broadcast", model("LayerNormalization", (2, 3, 5), {"s": (4,), "b": (5,)}, 17),
     ["(LayerNormalization)", "Scale of shape (4) does not broadcast to X (2, 3, 5)"]),
    ("ln_bias_two_runs", model("LayerNormalization", (2, 3, 4, 5), {"s": (3, 4, 5), "b": (3, 1, 5)}, 17, axis=1),
     ["(LayerNormalization)", "B of shape (3, 1, 5)", "more than one run"]),
    ("ln_stash_double_with_mean", model("LayerNormalization", (2, 3, 4), {"s": (4,), "b": (4,)}, 17,
                                        outputs=("y", "mean"), stash_type=11),
     ["LayerNormalization attribute 'stash_type'", "double tensors"]),
    ("ln_stash_bfloat16", model("LayerNormalization", (2, 3, 4), {"s": (4,), "b": (4,)}, 17, stash_type=16),
     ["LayerNormalization attribute 'stash_type'"]),
    ("ln_epsilon_inf", model("LayerNormalization", (2, 3, 4), {"s": (4,), "b": (4,)}, 17, epsilon=float("inf")),
     ["LayerNormalization attribute 'epsilon'"]),
]


def loss_through_mean():
    """LayerNormalization over a last dim of 1 (Mean has Y's shape), out = Y + Mean: the loss reaches the
    node through Mean, which vcc does not differentiate."""
    m = model("LayerNormalization", (2, 3, 1), {"s": (1,), "b": (1,)}, 17, outputs=("y", "mean"), x_param=True)
    m.graph.node.append(helper.make_node("Add", ["y", "mean"], ["out"], name="add"))
    del m.graph.output[:]
    m.graph.output.append(helper.make_tensor_value_info("out", TensorProto.FLOAT, None))
    return m


# trainer only
TRAIN_ONLY = [("ln_loss_through_mean", loss_through_mean(), ["(LayerNormalization)", "Mean or InvStdDev"])]


def check(vcc, path, mode, words):
    p = subprocess.run([vcc, path] + mode, capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    clean = (p.returncode == 1 and lines and lines[0].startswith(path)
             and all(l.startswith(path) or l.startswith("  ") for l in lines))
    missing = [w for w in words + ["the_node"] if w not in p.stderr]
    return clean and not missing, p.returncode, missing, p.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    vcc = os.path.abspath(args.vcc)
    os.makedirs(args.work, exist_ok=True)
    fails = []
    runs = [(n, m, w, ["--forward-only"]) for n, m, w in CASES] + [(n, m, w, ["--loss", "mse"]) for n, m, w in CASES]
    runs += [(n, m, w, ["--loss", "mse"]) for n, m, w in TRAIN_ONLY]
    for name, m, words, mode in runs:
        path = os.path.join(os.path.abspath(args.work), name + ".onnx")
        onnx.save(m, path)
        ok, rc, missing, err = check(vcc, path, mode, words)
        print("%-4s %-30s %-15s exit %d%s" % ("ok" if ok else "FAIL", name, " ".join(mode), rc,
                                               "" if ok else "  missing %s; stderr: %s" % (missing, err[:400])))
        if not ok:
            fails.append("%s %s" % (name, " ".join(mode)))
    print("FAIL: " + ", ".join(fails) if fails else "PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
