#!/usr/bin/python3
"""Write the reproducer corpus the fuzz tests replay: one small file per known way hostile input broke vcc.

    make_reproducers.py [OUTDIR]      (default: corpus/ beside this script)

The files are committed (tests/fuzz/corpus/<target>/), so replaying them needs no Python; run this again
after changing a case. Under OUTDIR:

  onnx/   (fuzz_onnx, and the vcc command line: fuzz_cli_*)
    param_name_510.onnx      a conv weight named with 510 characters: "<name>.momentum" and "<name>.grad"
    param_name_511.onnx      ... 511: "<name>.grad" truncated to 511 bytes is the name itself
    param_name_512.onnx      ... 512 characters
    collide_momentum.onnx    an initializer named "conv.weight.momentum" beside the parameter conv.weight
    collide_grad_seed.onnx   an initializer named "loss.grad_seed" (the loss's gradient seed)
    reshape_overflow.onnx    Reshape to [2**62, 4]: 2**64 elements, more than int64 counts
    range_int64_extremes.onnx  int64 Range from -2**63 to 2**63 - 1 by 2**63 - 1: the elements fit in int64,
                             i * delta does not (signed overflow while folding, found by UBSan)
    empty_graph.onnx         one input, no nodes, no outputs
    redefine_outputs_3000.onnx  3,000 nodes that all write the same output name
    names_control_node.onnx  an unsupported node whose name and op type carry a newline and escape sequences
    names_control_tensor.onnx  an undefined input whose name carries a newline, CR and an OSC sequence
    names_invalid_utf8.onnx  node and op names with bytes that are not UTF-8
  safetensors/   (fuzz_safetensors: the trainer's reader)
    names_control.safetensors  a duplicate tensor name with a newline and an escape sequence (\\u escapes)
    names_invalid_utf8.safetensors  a tensor name and a dtype with raw bytes that are not UTF-8
  npy/   (fuzz_npy)
    names_control.npy        a header whose dtype string carries an escape sequence and a CR
    names_invalid_utf8.npy   a header with a key of raw non-UTF-8 bytes

Letters: N batch, C channels, H height, W width, K classes.
"""

import json
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
N, C, H, W, F, K = 2, 3, 4, 4, 4, 5  # F: conv output channels


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print("%s (%d bytes)" % (path, len(data)))


def conv_model(weight="conv.weight", bias="conv.bias", fc_bias="fc.bias"):
    """input (N, C, H, W) -> Conv (bias) -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> logits (N, K)."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((F, C, 3, 3)).astype(np.float32), weight),
        numpy_helper.from_array(rng.standard_normal(F).astype(np.float32), bias),
        numpy_helper.from_array(rng.standard_normal((K, F)).astype(np.float32), "fc.weight"),
        numpy_helper.from_array(rng.standard_normal(K).astype(np.float32), fc_bias),
    ]
    nodes = [
        helper.make_node("Conv", ["input", weight, bias], ["c"], name="/conv/Conv", kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node("Relu", ["c"], ["r"], name="/Relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="/GlobalAveragePool"),
        helper.make_node("Flatten", ["p"], ["f"], name="/Flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", fc_bias], ["logits"], name="/fc/Gemm", transB=1),
    ]
    return model(nodes, inits, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [N, C, H, W])],
                 [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [N, K])])


def model(nodes, inits, inputs, outputs):
    g = helper.make_graph(nodes, "repro", inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="vcc-fuzz")
    m.ir_version = 8
    return m


def long_name(n):
    """A plausible parameter name of exactly n characters."""
    stem = "layer1.0.conv1."
    return stem + "w" * (n - len(stem) - len("weight")) + "weight"


def with_bytes(m, placeholders):
    """Serialize m, then swap each ASCII placeholder for raw bytes of the same length (protobuf strings
    built in Python must be valid UTF-8; the file need not be)."""
    data = m.SerializeToString()
    for old, new in placeholders:
        assert len(old) == len(new) and data.count(old) >= 1, old
        data = data.replace(old, new)
    return data


def onnx_cases(out):
    d = os.path.join(out, "onnx")
    for n in (510, 511, 512):
        name = long_name(n)
        assert len(name) == n
        write(os.path.join(d, "param_name_%d.onnx" % n), conv_model(weight=name).SerializeToString())
    write(os.path.join(d, "collide_momentum.onnx"), conv_model(bias="conv.weight.momentum").SerializeToString())
    write(os.path.join(d, "collide_grad_seed.onnx"), conv_model(fc_bias="loss.grad_seed").SerializeToString())

    # Reshape (N, K) -> [2**62, 4]: the element count 2**64 overflows int64
    shape = numpy_helper.from_array(np.array([2 ** 62, 4], dtype=np.int64), "shape")
    m = model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="/Reshape")], [shape],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    write(os.path.join(d, "reshape_overflow.onnx"), m.SerializeToString())

    # Range over the whole int64 span, folded at compile time
    ends = [numpy_helper.from_array(np.array(v, dtype=np.int64), k)
            for k, v in (("start", -2 ** 63), ("limit", 2 ** 63 - 1), ("delta", 2 ** 63 - 1))]
    m = model([helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="/Range")], ends, [],
              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    write(os.path.join(d, "range_int64_extremes.onnx"), m.SerializeToString())

    m = model([], [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])], [])
    write(os.path.join(d, "empty_graph.onnx"), m.SerializeToString())

    nodes = [helper.make_node("Relu", ["x"], ["y"]) for _ in range(3000)]
    m = model(nodes, [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    write(os.path.join(d, "redefine_outputs_3000.onnx"), m.SerializeToString())

    x = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])]
    y = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])]
    # an unsupported op: its node name and op type are printed in the error
    m = model([helper.make_node("Max\x1b[31mPool", ["x"], ["y"], name="evil\nvcc: all good\x1b[2J\x1b[H")], [], x, y)
    write(os.path.join(d, "names_control_node.onnx"), m.SerializeToString())
    # an undefined input: its name is printed in the error
    m = model([helper.make_node("Relu", ["in\r\nput\x1b]0;pwned\x07"], ["y"], name="/Relu")], [], x, y)
    write(os.path.join(d, "names_control_tensor.onnx"), m.SerializeToString())
    # bytes that are not UTF-8: 0xff, an overlong NUL (0xc0 0x80), a lone continuation byte, a CSI in C1 form
    m = model([helper.make_node("MaxPoolXXXX", ["x"], ["y"], name="nodeYYYYYY")], [], x, y)
    write(os.path.join(d, "names_invalid_utf8.onnx"),
          with_bytes(m, [(b"XXXX", b"\xff\xfe\x80\x9b"), (b"YYYYYY", b"\xc0\x80\xed\xa0\x80\xc3")]))


def safetensors_file(header, data):
    h = header.encode("utf-8") if isinstance(header, str) else header
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def safetensors_cases(out):
    d = os.path.join(out, "safetensors")
    name = "a\\nvcc: ok\\u001b[31m"  # JSON escapes: a newline and ESC in the decoded name
    info = '{"dtype":"F32","shape":[1],"data_offsets":[%d,%d]}'
    header = '{"%s":%s,"%s":%s}' % (name, info % (0, 4), name, info % (4, 8))
    write(os.path.join(d, "names_control.safetensors"), safetensors_file(header, b"\0" * 8))
    header = b'{"w\xff\xfe\xc0\x80":{"dtype":"F\xff32","shape":[1],"data_offsets":[0,4]}}'
    write(os.path.join(d, "names_invalid_utf8.safetensors"), safetensors_file(header, b"\0" * 4))


def npy_file(header):
    h = header + b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h


def npy_cases(out):
    d = os.path.join(out, "npy")
    write(os.path.join(d, "names_control.npy"),
          npy_file(b"{'descr': '<f\x1b[2J\r4', 'fortran_order': False, 'shape': (1,), }") + b"\0" * 4)
    write(os.path.join(d, "names_invalid_utf8.npy"),
          npy_file(b"{'descr': '<f4', 'fortran_order': False, 'sh\xff\xc0ape': (1,), }") + b"\0" * 4)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    onnx_cases(out)
    safetensors_cases(out)
    npy_cases(out)
