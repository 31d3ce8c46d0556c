"""Small ONNX training graphs for fast end-to-end tests, written with onnx.helper and seeded random weights.

    tiny_models.py OUTDIR      writes OUTDIR/<name>/model.onnx, data.npy (float32), labels.npy (int64)

Models (letters: N batch, C channels, T frames, H height, W width, K classes):
  res3d     (2, 3, 4, 12, 12): 3-D stem conv (stride 1,2,2) + BN + Relu, a residual block, a downsampling
            residual block with a 1x1x1 strided projection, GlobalAveragePool, Flatten, Gemm (transB=1)
  conv2d    (2, 4, 9, 11): grouped, dilated conv with asymmetric pads and a bias, BN, Relu, a second conv
            with auto_pad SAME_UPPER, GlobalAveragePool, Reshape, Gemm with alpha/beta and no transB
  conv1d    (2, 3, 20): strided 1-D conv, BN, Relu, Identity, GlobalAveragePool, Flatten, Gemm
  res3d_opset9  res3d at opset 9, where BatchNormalization's training form is the one with five outputs
            (Y, running mean, running var, saved mean, saved var) and has no training_mode attribute
  mse3d     (2, 2, 3, 8, 8) -> (N, 4), trained with --loss mse against targets.npy
  graphloss (1, 2, 3, 6, 6) and a second float input: the model's scalar output is its loss (--loss graph)
Each folder's loss.txt names the --loss the model trains with.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed, opset=17):
        self.out = "logits"
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0
        self.opset = opset

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(self, op, inputs, **attrs):
        self.n += 1
        out = "/%s_%d_output_0" % (op, self.n)
        self.nodes.append(helper.make_node(op, inputs, [out], name="/%s_%d" % (op, self.n), **attrs))
        return out

    def conv(self, x, cin, cout, k, bias=False, **attrs):
        fan = cin // attrs.get("group", 1) * int(np.prod(k))
        w = self.init("conv%d.weight" % self.n, (self.rng.standard_normal((cout, cin // attrs.get("group", 1), *k))
                                                 * np.sqrt(2.0 / fan)).astype(np.float32))
        ins = [x, w]
        if bias:
            ins.append(self.init("conv%d.bias" % self.n, (0.1 * self.rng.standard_normal(cout)).astype(np.float32)))
        return self.node("Conv", ins, kernel_shape=list(k), **attrs)

    def bn(self, x, c):
        i = self.n
        names = [self.init("bn%d.%s" % (i, s), v) for s, v in (
            ("weight", self.rng.uniform(0.5, 1.5, c).astype(np.float32)),
            ("bias", (0.1 * self.rng.standard_normal(c)).astype(np.float32)),
            ("running_mean", (0.1 * self.rng.standard_normal(c)).astype(np.float32)),
            ("running_var", self.rng.uniform(0.5, 1.5, c).astype(np.float32)))]
        self.n += 1
        out = "/BatchNormalization_%d_output_0" % self.n
        if self.opset >= 14:
            self.nodes.append(helper.make_node(
                "BatchNormalization", [x] + names, [out, out + "_rm", out + "_rv"],
                name="/BatchNormalization_%d" % self.n, epsilon=1e-5, momentum=0.9, training_mode=1))
        else:  # opsets 7-13: the training form is the one with five outputs
            self.nodes.append(helper.make_node(
                "BatchNormalization", [x] + names, [out, out + "_rm", out + "_rv", out + "_sm", out + "_sv"],
                name="/BatchNormalization_%d" % self.n, epsilon=1e-5, momentum=0.9))
        return out

    def fc(self, x, cin, k, trans_b=True, **attrs):
        shape = (k, cin) if trans_b else (cin, k)
        w = self.init("fc.weight", (self.rng.standard_normal(shape) / np.sqrt(cin)).astype(np.float32))
        b = self.init("fc.bias", (0.1 * self.rng.standard_normal(k)).astype(np.float32))
        self.n += 1
        self.nodes.append(helper.make_node("Gemm", [x, w, b], ["logits"], name="/fc/Gemm",
                                           transB=1 if trans_b else 0, **attrs))
        return "logits"

    def save(self, outdir, name, in_shape, k, samples=4, loss="ce", out_shape=None, target_input=False):
        """loss: the trainer's --loss (written to loss.txt): ce (labels.npy), mse (targets.npy of the output's
        shape per sample), graph (the output is the loss; target_input: a second float input "target" of the
        data's shape, filled from targets.npy)."""
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, in_shape)]
        if target_input:
            inputs.append(helper.make_tensor_value_info("target", TensorProto.FLOAT, in_shape))
        out_shape = [in_shape[0], k] if out_shape is None else out_shape
        g = helper.make_graph(self.nodes, name, inputs,
                              [helper.make_tensor_value_info(self.out, TensorProto.FLOAT, out_shape)],
                              initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)], producer_name="vcc-tests")
        m.ir_version = 8
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(d, "model.onnx"))
        np.save(os.path.join(d, "data.npy"), self.rng.standard_normal((samples, *in_shape[1:])).astype(np.float32))
        np.save(os.path.join(d, "labels.npy"), self.rng.integers(0, k, samples).astype(np.int64))
        if loss != "ce":
            tshape = in_shape[1:] if loss == "graph" else out_shape[1:]
            np.save(os.path.join(d, "targets.npy"), self.rng.standard_normal((samples, *tshape)).astype(np.float32))
        with open(os.path.join(d, "loss.txt"), "w") as f:
            f.write(loss + "\n")


def res3d(outdir, opset=17):
    b = Builder(1, opset)
    x = b.conv("input", 3, 8, (3, 3, 3), strides=[1, 2, 2], pads=[1] * 6)
    x = b.node("Relu", [b.bn(x, 8)])
    y = b.node("Relu", [b.bn(b.conv(x, 8, 8, (3, 3, 3), pads=[1] * 6), 8)])
    y = b.bn(b.conv(y, 8, 8, (3, 3, 3), pads=[1] * 6), 8)
    x = b.node("Relu", [b.node("Add", [y, x])])
    y = b.node("Relu", [b.bn(b.conv(x, 8, 16, (3, 3, 3), strides=[2, 2, 2], pads=[1] * 6), 16)])
    y = b.bn(b.conv(y, 16, 16, (1, 3, 3), pads=[0, 1, 1, 0, 1, 1]), 16)
    p = b.bn(b.conv(x, 8, 16, (1, 1, 1), strides=[2, 2, 2]), 16)
    x = b.node("Relu", [b.node("Add", [y, p])])
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    b.fc(x, 16, 5)
    b.save(outdir, "res3d" if opset == 17 else "res3d_opset%d" % opset, [2, 3, 4, 12, 12], 5)


def res3d_opset9(outdir):
    res3d(outdir, opset=9)


def conv2d(outdir):
    b = Builder(2)
    x = b.conv("input", 4, 6, (3, 2), bias=True, group=2, dilations=[2, 1], strides=[1, 2], pads=[2, 0, 1, 1])
    x = b.node("Relu", [b.bn(x, 6)])
    x = b.conv(x, 6, 8, (3, 3), auto_pad="SAME_UPPER", strides=[2, 2])
    x = b.node("Relu", [b.bn(x, 8)])
    shape = b.init("shape", np.array([0, -1], dtype=np.int64))
    x = b.node("Reshape", [b.node("GlobalAveragePool", [x]), shape])
    b.fc(x, 8, 7, trans_b=False, alpha=0.5, beta=2.0)
    b.save(outdir, "conv2d", [2, 4, 9, 11], 7)


def conv1d(outdir):
    b = Builder(3)
    x = b.conv("input", 3, 5, (4,), strides=[3], pads=[1, 2])
    x = b.node("Identity", [b.node("Relu", [b.bn(x, 5)])])
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])])
    b.fc(x, 5, 3)
    b.save(outdir, "conv1d", [2, 3, 20], 3)


def mse3d(outdir):
    """--loss mse: a 3-D conv net whose output (N, 4) regresses float targets."""
    b = Builder(4)
    x = b.node("Relu", [b.bn(b.conv("input", 2, 6, (3, 3, 3), bias=True, pads=[1] * 6), 6)])
    x = b.node("Flatten", [b.node("GlobalAveragePool", [b.conv(x, 6, 6, (1, 3, 3), strides=[1, 2, 2])])])
    b.fc(x, 6, 4)
    b.save(outdir, "mse3d", [2, 2, 3, 8, 8], 4, loss="mse")


def graphloss(outdir):
    """--loss graph: the model computes its own loss, a scalar, from the clip and a second float input:
    Conv(input + target) -> Relu -> GlobalAveragePool -> 1x1x1 Conv to one channel -> Reshape to []."""
    b = Builder(5)
    x = b.node("Add", ["input", "target"])
    x = b.node("Relu", [b.conv(x, 2, 4, (3, 3, 3), bias=True, pads=[1] * 6)])
    x = b.conv(b.node("GlobalAveragePool", [x]), 4, 1, (1, 1, 1), bias=True)
    b.out = b.node("Reshape", [x, b.init("scalar", np.zeros(0, dtype=np.int64))])
    b.save(outdir, "graphloss", [1, 2, 3, 6, 6], 1, loss="graph", out_shape=[], target_input=True)


if __name__ == "__main__":
    for make in (res3d, res3d_opset9, conv2d, conv1d, mse3d, graphloss):
        make(sys.argv[1])
