#!/usr/bin/python3
"""Write the seed corpora of the fuzz targets: small valid inputs that reach deep into each reader.

    make_seeds.py VCC [OUTDIR]      (VCC: a built vcc; OUTDIR default: seeds/ beside this script)

The files are committed (tests/fuzz/seeds/<target>/) so that replaying them needs no Python. Under OUTDIR:

  onnx/         tiny models with every supported op and every way the loader reads data: 3-D conv + BN +
                Add, grouped/dilated 2-D conv with auto_pad and a Reshape, 1-D conv with Identity, Constant
                nodes, typed (non-raw) initializers, an opset 9 model listing initializers as inputs, a
                symbolic batch dim, a Gemm-only model
  vir/          `vcc --dump-ir=PASS` of two of those models after every pass, and tests/vir/features.vir
  npy/          numpy-written arrays: float32 and int64, 0-d, empty, rank 5, format versions 1.0, 2.0, 3.0
  safetensors/  files written by the safetensors package (several dtypes, metadata, no tensors) and by vcc

Letters: N batch, C channels, T frames, H height, W width, K classes.
"""

import io
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print("%s (%d bytes)" % (path, len(data)))


class Model:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def w(self, name, *shape):
        return self.init(name, (0.5 * self.rng.standard_normal(shape)).astype(np.float32))

    def node(self, op, inputs, nout=1, **attrs):
        self.n += 1
        outs = ["/%s_%d_output_%d" % (op, self.n, i) for i in range(nout)]
        self.nodes.append(helper.make_node(op, inputs, outs, name="/%s_%d" % (op, self.n), **attrs))
        return outs[0]

    def bn(self, x, c):
        i = self.n
        ins = [self.w("bn%d.weight" % i, c), self.w("bn%d.bias" % i, c), self.w("bn%d.running_mean" % i, c),
               self.init("bn%d.running_var" % i, np.ones(c, np.float32))]
        return self.node("BatchNormalization", [x] + ins, nout=3, epsilon=1e-5, momentum=0.9, training_mode=1)

    def gemm(self, x, cin, k, trans_b=True, **attrs):
        w = self.w("fc.weight", *((k, cin) if trans_b else (cin, k)))
        self.n += 1
        self.nodes.append(helper.make_node("Gemm", [x, w, self.w("fc.bias", k)], ["logits"], name="/fc/Gemm",
                                           transB=1 if trans_b else 0, **attrs))

    def bytes(self, in_shape, k, opset=OPSET, ir_version=8, inputs=None):
        ins = inputs or [helper.make_tensor_value_info("input", TensorProto.FLOAT, in_shape)]
        g = helper.make_graph(self.nodes, "seed", ins,
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [in_shape[0], k])],
                              initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="vcc-fuzz")
        m.ir_version = ir_version
        return m.SerializeToString()


def conv3d_bn():
    m = Model(1)
    x = m.node("Conv", ["input", m.w("conv0.weight", 2, 2, 3, 3, 3)], kernel_shape=[3, 3, 3], pads=[1] * 6)
    x = m.node("Relu", [m.bn(x, 2)])
    y = m.node("Conv", [x, m.w("conv1.weight", 2, 2, 1, 1, 1)], kernel_shape=[1, 1, 1], strides=[1, 2, 2])
    z = m.node("Conv", [x, m.w("conv2.weight", 2, 2, 1, 1, 1)], kernel_shape=[1, 1, 1], strides=[1, 2, 2])
    x = m.node("Relu", [m.node("Add", [y, z])])
    x = m.node("Flatten", [m.node("GlobalAveragePool", [x])], axis=1)
    m.gemm(x, 2, 3)
    return m.bytes([1, 2, 3, 4, 4], 3)


def conv2d():
    m = Model(2)
    x = m.node("Conv", ["input", m.w("conv0.weight", 4, 1, 3, 2), m.w("conv0.bias", 4)], kernel_shape=[3, 2],
               group=2, dilations=[2, 1], strides=[1, 2], pads=[2, 0, 1, 1])
    x = m.node("Relu", [m.bn(x, 4)])
    x = m.node("Conv", [x, m.w("conv1.weight", 2, 4, 3, 3)], kernel_shape=[3, 3], auto_pad="SAME_UPPER",
               strides=[2, 2])
    shape = m.init("shape", np.array([0, -1], dtype=np.int64))
    x = m.node("Reshape", [m.node("GlobalAveragePool", [x]), shape])
    m.gemm(x, 2, 3, trans_b=False, alpha=0.5, beta=2.0)
    return m.bytes([2, 2, 5, 5], 3)


def conv1d():
    m = Model(3)
    x = m.node("Conv", ["input", m.w("conv0.weight", 2, 3, 4)], kernel_shape=[4], strides=[3], pads=[1, 2])
    x = m.node("Identity", [m.node("Relu", [m.bn(x, 2)])])
    x = m.node("Flatten", [m.node("GlobalAveragePool", [x])])
    m.gemm(x, 2, 3)
    return m.bytes([2, 3, 8], 3)


def constant():
    m = Model(4)
    m.nodes.append(helper.make_node("Constant", [], ["shape"], name="/Constant",
                                    value=numpy_helper.from_array(np.array([2, 4], np.int64))))
    m.nodes.append(helper.make_node("Constant", [], ["one"], name="/Constant_1", value_floats=[1.0] * 3))
    m.nodes.append(helper.make_node("Constant", [], ["k"], name="/Constant_2", value_ints=[3]))
    x = m.node("Reshape", ["input", "shape"])
    m.gemm(x, 4, 3)
    return m.bytes([2, 2, 2], 3)


def typed():
    m = Model(5)
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    m.inits.append(helper.make_tensor("fc.weight", TensorProto.FLOAT, w.shape, w.flatten().tolist()))
    m.inits.append(helper.make_tensor("fc.bias", TensorProto.FLOAT, [3], [0.1, 0.2, 0.3]))
    m.inits.append(helper.make_tensor("shape", TensorProto.INT32, [2], [2, -1]))
    m.inits.append(helper.make_tensor("unused", TensorProto.INT64, [2], [7, 8]))
    x = m.node("Reshape", ["input", "shape"])
    m.n += 1
    m.nodes.append(helper.make_node("Gemm", [x, "fc.weight", "fc.bias"], ["logits"], name="/fc/Gemm", transB=1))
    return m.bytes([2, 4], 3)


def initializers_as_inputs():
    m = Model(6)
    x = m.node("Relu", ["input"])
    m.gemm(x, 4, 3)
    ins = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 4])]
    ins += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in m.inits]
    return m.bytes([2, 4], 3, opset=9, ir_version=3, inputs=ins)


def symbolic():
    m = Model(7)
    m.gemm("input", 4, 3)
    g = helper.make_graph(m.nodes, "seed", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3])],
                          initializer=m.inits)
    mm = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    mm.ir_version = 8
    return mm.SerializeToString()


def gemm_only():
    m = Model(8)
    m.gemm("input", 4, 3)
    return m.bytes([2, 4], 3)


def npy_bytes(arr, version=None):
    f = io.BytesIO()
    if version:
        np.lib.format.write_array(f, arr, version=version)
    else:
        np.save(f, arr)
    return f.getvalue()


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_seeds.py VCC [OUTDIR]")
    vcc = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "seeds")

    models = {"conv3d_bn": conv3d_bn(), "conv2d": conv2d(), "conv1d": conv1d(), "constant": constant(),
              "typed": typed(), "initializers_as_inputs": initializers_as_inputs(), "symbolic": symbolic(),
              "gemm_only": gemm_only()}
    for name, data in models.items():
        write(os.path.join(out, "onnx", name + ".onnx"), data)

    passes = "onnx canonical shape fuse precision loss autodiff optimizer storage schedule liveness inplace memplan".split()
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("conv1d", "gemm_only"):
            model = os.path.join(out, "onnx", name + ".onnx")
            for p in passes:
                dump = subprocess.run([vcc, model, "--dump-ir=" + p], check=True, capture_output=True).stdout
                write(os.path.join(out, "vir", "%s_%s.vir" % (name, p)), dump)
            fwd = subprocess.run([vcc, model, "--forward-only", "--dump-ir=memplan"], check=True,
                                 capture_output=True).stdout
            write(os.path.join(out, "vir", "%s_forward_memplan.vir" % name), fwd)
        subprocess.run([vcc, os.path.join(out, "onnx", "conv2d.onnx"), "-o", os.path.join(tmp, "train.c")], check=True,
                       capture_output=True)
        with open(os.path.join(tmp, "train.safetensors"), "rb") as f:
            write(os.path.join(out, "safetensors", "vcc_conv2d.safetensors"), f.read())
    with open(os.path.join(HERE, "..", "vir", "features.vir"), "rb") as f:
        write(os.path.join(out, "vir", "features.vir"), f.read())

    rng = np.random.default_rng(9)
    f4 = rng.standard_normal((2, 3)).astype(np.float32)
    i8 = np.array([0, 4, -1, 2 ** 40], np.int64)
    arrays = {"f4_2x3": (f4, None), "i8_4": (i8, None), "f4_scalar": (np.float32(1.5).reshape(()), None),
              "f4_empty": (np.zeros((0, 3), np.float32), None),
              "f4_rank5": (rng.standard_normal((1, 2, 2, 1, 2)).astype(np.float32), None),
              "f4_v2": (f4, (2, 0)), "i8_v3": (i8, (3, 0))}
    for name, (arr, version) in arrays.items():
        write(os.path.join(out, "npy", name + ".npy"), npy_bytes(arr, version))

    from safetensors.numpy import save
    write(os.path.join(out, "safetensors", "two.safetensors"),
          save({"a": f4, "b": i8}))
    write(os.path.join(out, "safetensors", "dtypes_metadata.safetensors"),
          save({"h": np.ones(3, np.float16), "d": np.zeros((1, 2), np.float64), "u": np.arange(4, dtype=np.uint8),
                "k": np.array([True, False]), "e": np.zeros((0, 2), np.float32)}, metadata={"format": "pt"}))
    write(os.path.join(out, "safetensors", "none.safetensors"), save({}))


if __name__ == "__main__":
    main()
