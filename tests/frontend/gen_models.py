#!/usr/bin/python3
"""Write the small ONNX models the frontend test loads, and the reference bytes it compares against.

    gen_models.py OUTDIR

Under OUTDIR:
    *.onnx                 models, good and broken (see the list in main())
    ext/                   models with external data, their side files, and a symlink pointing out
    outside.bin            a data file outside ext/ (what the refused locations point at)
    ref/<model>/<name>.bin each initializer / Constant value as the loader must hold it: the numpy
                           array's little-endian bytes (float32, int64, int32, float64)

Letters: N batch, C channels, T frames, H height, W width, K classes.
"""

import os
import shutil
import struct
import sys

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

OPSET = 17
N, C, T, H, W, F, K = 2, 3, 4, 8, 8, 4, 5  # F: conv output channels


def save(path, model, check=True):
    if check:
        onnx.checker.check_model(model)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())  # bytes as built: no external-data rewriting by onnx.save


def ref(outdir, model, name, arr):
    d = os.path.join(outdir, "ref", model)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".bin"), "wb") as f:
        f.write(arr.astype(arr.dtype.newbyteorder("<")).tobytes())


def varint(v):
    b = bytearray()
    while True:
        byte, v = v & 0x7F, v >> 7
        b.append(byte | (0x80 if v else 0))
        if not v:
            return bytes(b)


def field(number, payload):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def weights(seed=0):
    rng = np.random.default_rng(seed)
    f32 = np.float32
    return {
        "conv.weight": rng.standard_normal((F, C, 3, 3, 3)).astype(f32),
        "conv.bias": rng.standard_normal(F).astype(f32),
        "bn.weight": rng.uniform(0.5, 1.5, F).astype(f32),
        "bn.bias": rng.standard_normal(F).astype(f32),
        "bn.running_mean": rng.standard_normal(F).astype(f32),
        "bn.running_var": rng.uniform(0.5, 2.0, F).astype(f32),
        "fc.weight": rng.standard_normal((K, F)).astype(f32),
        "fc.bias": rng.standard_normal(K).astype(f32),
    }


def raw_tensor(name, arr):
    t = numpy_helper.from_array(arr, name)  # raw_data, little-endian
    assert t.HasField("raw_data")
    return t


def typed_tensor(name, arr):
    dt = helper.np_dtype_to_tensor_dtype(arr.dtype)
    t = helper.make_tensor(name, dt, arr.shape, arr.flatten().tolist(), raw=False)
    assert not t.HasField("raw_data")
    return t


def ext_tensor(name, shape, location, offset=None, length=None, dtype=TensorProto.FLOAT):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            e = t.external_data.add()
            e.key, e.value = key, str(value)
    return t


def conv_nodes(conv_bias=True, opset=None):
    """Conv + BN(training) + Relu + GlobalAveragePool + Flatten + Gemm: (N,C,T,H,W) -> (N,K). Before opset 14
    the BN is in that opset's training form: five outputs, no training_mode attribute."""
    nodes = [
        helper.make_node("Conv", ["input", "conv.weight", "conv.bias" if conv_bias else ""], ["/conv/Conv_output_0"],
                         name="/conv/Conv", kernel_shape=[3, 3, 3], pads=[1] * 6, strides=[1, 1, 1]),
        helper.make_node("BatchNormalization",
                         ["/conv/Conv_output_0", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"],
                         ["/bn/BatchNormalization_output_0", "bn.running_mean_out", "bn.running_var_out"],
                         name="/bn/BatchNormalization", epsilon=1e-5, momentum=0.9, training_mode=1),
        helper.make_node("Relu", ["/bn/BatchNormalization_output_0"], ["/relu/Relu_output_0"], name="/relu/Relu"),
        helper.make_node("GlobalAveragePool", ["/relu/Relu_output_0"], ["/avgpool/GlobalAveragePool_output_0"],
                         name="/avgpool/GlobalAveragePool"),
        helper.make_node("Flatten", ["/avgpool/GlobalAveragePool_output_0"], ["/Flatten_output_0"], name="/Flatten",
                         axis=1),
        helper.make_node("Gemm", ["/Flatten_output_0", "fc.weight", "fc.bias"], ["logits"], name="/fc/Gemm",
                         alpha=1.0, beta=1.0, transB=1),
    ]
    if opset is not None and opset < 14:
        bn = nodes[1]
        nodes[1] = helper.make_node("BatchNormalization", list(bn.input),
                                    list(bn.output) + ["/bn/saved_mean", "/bn/saved_var"], name=bn.name,
                                    epsilon=1e-5, momentum=0.9)
    return nodes


def conv_input(dims=(N, C, T, H, W)):
    return helper.make_tensor_value_info("input", TensorProto.FLOAT, list(dims))


def model(nodes, inits, inputs, outputs=None, ir_version=8, opset=OPSET):
    outputs = outputs or [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [N, K])]
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="vcc-tests")
    m.ir_version = ir_version
    return m


def nested_if(depth):
    """A model whose graph ends in an If (condition: the initializer c) whose then_branch holds another
    If, and so on depth times; every else_branch is Identity(x). Returns the serialized ModelProto."""
    def attr(name, graph_bytes):
        return AttributeProto(name=name, type=AttributeProto.GRAPH).SerializeToString() + field(6, graph_bytes)

    def branch(node_bytes, out_name):
        g = helper.make_graph([], "branch", [], [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, [3])])
        return g.SerializeToString() + field(1, node_bytes)

    inner = helper.make_node("Identity", ["x"], ["y%d" % depth], name="/inner").SerializeToString()
    for level in range(depth - 1, -1, -1):
        out_name = "y%d" % level
        other = helper.make_node("Identity", ["x"], [out_name + "e"], name="/else%d" % level).SerializeToString()
        node = helper.make_node("If", ["c"], [out_name], name="/If%d" % level).SerializeToString()
        inner = node + field(5, attr("then_branch", branch(inner, "y%d" % (level + 1)))) + \
            field(5, attr("else_branch", branch(other, out_name + "e")))
    m = model([], [numpy_helper.from_array(np.array(True), "c")],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
              [helper.make_tensor_value_info("y0", TensorProto.FLOAT, [3])])
    graph = m.graph.SerializeToString() + field(1, inner)
    m.ClearField("graph")
    return m.SerializeToString() + field(7, graph)


def main():
    out = sys.argv[1]
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "ext"))
    w = weights()

    # --- good models -------------------------------------------------------------------------
    # unpacked: float_data and int64_data written element by element (not packed) -- legal on the
    # wire, and a reader must accept both encodings. Encoded by hand: a message is the concatenation
    # of its fields, in any order.
    wu = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    ku = np.array([3, -1, 1 << 40], dtype=np.int64)
    t_w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3])
    t_k = TensorProto(name="k", data_type=TensorProto.INT64, dims=[3])
    t_w_bytes = t_w.SerializeToString() + b"".join(b"\x25" + struct.pack("<f", v) for v in wu)
    t_k_bytes = t_k.SerializeToString() + b"".join(b"\x38" + varint(int(v) & (2**64 - 1)) for v in ku)
    m = model([helper.make_node("Add", ["x", "w"], ["y"], name="/Add")], [],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    graph = m.graph.SerializeToString() + field(5, t_w_bytes) + field(5, t_k_bytes)
    m.ClearField("graph")
    with open(os.path.join(out, "unpacked.onnx"), "wb") as f:
        f.write(m.SerializeToString() + field(7, graph))
    assert list(onnx.load(os.path.join(out, "unpacked.onnx")).graph.initializer[1].int64_data) == ku.tolist()
    ref(out, "unpacked", "w", wu)
    ref(out, "unpacked", "k", ku)

    # conv_raw: every initializer in raw_data, plus an int32 and a float64 initializer (kept as they are)
    i32 = np.array([-5, 7, 2147483647], dtype=np.int32)
    f64 = np.array([0.1, -2.5e300], dtype=np.float64)
    inits = [raw_tensor(k, v) for k, v in w.items()] + [raw_tensor("i32raw", i32), raw_tensor("f64raw", f64)]
    save(os.path.join(out, "conv_raw.onnx"), model(conv_nodes(), inits, [conv_input()]))
    for k, v in w.items():
        ref(out, "conv_raw", k, v)
    ref(out, "conv_raw", "i32raw", i32)
    ref(out, "conv_raw", "f64raw", f64)

    # conv_typed: float_data / int64_data / int32_data / double_data, Conv without bias (absent optional input),
    # a Reshape whose shape is an int64 initializer
    wt = {k: v for k, v in w.items() if k != "conv.bias"}
    shape = np.array([N, F], dtype=np.int64)
    i32t = np.array([1, -2, -2147483648], dtype=np.int32)
    nodes = conv_nodes(conv_bias=False)
    nodes[4:5] = [
        helper.make_node("Flatten", ["/avgpool/GlobalAveragePool_output_0"], ["/Flatten_output_0a"], name="/Flatten",
                         axis=1),
        helper.make_node("Reshape", ["/Flatten_output_0a", "shape"], ["/Flatten_output_0"], name="/Reshape"),
    ]
    inits = [typed_tensor(k, v) for k, v in wt.items()] + [typed_tensor("shape", shape), typed_tensor("i32", i32t),
                                                           typed_tensor("f64", f64)]
    save(os.path.join(out, "conv_typed.onnx"), model(nodes, inits, [conv_input()]))
    for k, v in wt.items():
        ref(out, "conv_typed", k, v)
    ref(out, "conv_typed", "shape", shape)
    ref(out, "conv_typed", "i32", i32t)
    ref(out, "conv_typed", "f64", f64)

    # conv_initin: initializers also listed as graph inputs (IR version 3 exporters)
    inits = [raw_tensor(k, v) for k, v in w.items()]
    ins = [conv_input()] + [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in w.items()]
    save(os.path.join(out, "conv_initin.onnx"), model(conv_nodes(opset=9), inits, ins, ir_version=3, opset=9),
         check=False)

    # constant: Constant nodes of each attribute kind; no Constant node survives loading
    c0 = np.array([0.5, -1.0, 2.0, 3.25], dtype=np.float32)
    nodes = [
        helper.make_node("Constant", [], ["c0"], name="/Constant", value=numpy_helper.from_array(c0)),
        helper.make_node("Constant", [], ["shape_c"], name="/Constant_1", value_ints=[4, 2]),
        helper.make_node("Constant", [], ["cf"], name="/Constant_2", value_float=2.5),
        helper.make_node("Constant", [], ["ci"], value_int=-7),
        helper.make_node("Constant", [], ["cfs"], name="/Constant_4", value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Add", ["x", "c0"], ["sum"], name="/Add"),
        helper.make_node("Reshape", ["sum", "shape_c"], ["y"], name="/Reshape"),
    ]
    m = model(nodes, [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])])
    save(os.path.join(out, "constant.onnx"), m)
    ref(out, "constant", "c0", c0)
    ref(out, "constant", "shape_c", np.array([4, 2], dtype=np.int64))
    ref(out, "constant", "cf", np.array(2.5, dtype=np.float32))
    ref(out, "constant", "ci", np.array(-7, dtype=np.int64))
    ref(out, "constant", "cfs", np.array([1, 2, 3], dtype=np.float32))

    # constant_forms: the Constant forms vcc refuses (sparse_value, value_string) and one the model's opset
    # does not have yet (value_float in opset 11), all in one report
    sp = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0], np.float32), "v"),
                                   numpy_helper.from_array(np.array([0], np.int64), "i"), [4])
    nodes = [
        helper.make_node("Constant", [], ["sp"], name="/sparse", sparse_value=sp),
        helper.make_node("Constant", [], ["st"], name="/string", value_string="a"),
        helper.make_node("Add", ["x", "sp"], ["y"], name="/Add"),
    ]
    m = model(nodes, [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    save(os.path.join(out, "constant_forms.onnx"), m, check=False)
    nodes = [helper.make_node("Constant", [], ["c"], name="/c", value_float=1.0),
             helper.make_node("Add", ["x", "c"], ["y"], name="/Add")]
    m = model(nodes, [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], opset=11)
    save(os.path.join(out, "constant_opset11.onnx"), m, check=False)

    # constantofshape: its value attribute (a tensor) becomes a second input holding the value
    nodes = [helper.make_node("ConstantOfShape", ["shp"], ["y"], name="cos",
                              value=numpy_helper.from_array(np.array([7], np.int32), "value"))]
    m = model(nodes, [typed_tensor("shp", np.array([2, 3], np.int64))], [], [
        helper.make_tensor_value_info("y", TensorProto.INT32, [2, 3])])
    save(os.path.join(out, "constantofshape.onnx"), m)
    ref(out, "constantofshape", "cos.value", np.array([7], np.int32))

    # ext/conv_ext: conv.weight and fc.weight in weights.bin at offsets (junk around them),
    # bn.weight alone in bn_weight.bin (no offset, no length); the rest raw
    ext = os.path.join(out, "ext")
    junk = bytes(range(16))
    cw, fw = w["conv.weight"].tobytes(), w["fc.weight"].tobytes()
    with open(os.path.join(ext, "weights.bin"), "wb") as f:
        f.write(junk + cw + junk[:8] + fw + junk)
    with open(os.path.join(ext, "bn_weight.bin"), "wb") as f:
        f.write(w["bn.weight"].tobytes())
    cw_off, fw_off = 16, 16 + len(cw) + 8

    def ext_inits(conv_weight_tensor):
        inits = []
        for k, v in w.items():
            if k == "conv.weight":
                inits.append(conv_weight_tensor)
            elif k == "fc.weight":
                inits.append(ext_tensor(k, v.shape, "weights.bin", fw_off, len(fw)))
            elif k == "bn.weight":
                inits.append(ext_tensor(k, v.shape, "bn_weight.bin"))
            else:
                inits.append(raw_tensor(k, v))
        return inits

    cshape = w["conv.weight"].shape
    save(os.path.join(ext, "conv_ext.onnx"),
         model(conv_nodes(), ext_inits(ext_tensor("conv.weight", cshape, "weights.bin", cw_off, len(cw))),
               [conv_input()]), check=False)
    for k, v in w.items():
        ref(out, "conv_ext", k, v)
    # a symlink that stays inside the model's folder is fine
    os.symlink("weights.bin", os.path.join(ext, "inside_link.bin"))
    save(os.path.join(ext, "conv_ext_link.onnx"),
         model(conv_nodes(), ext_inits(ext_tensor("conv.weight", cshape, "inside_link.bin", cw_off, len(cw))),
               [conv_input()]), check=False)

    # --- external data that must be refused or fails ------------------------------------------
    with open(os.path.join(out, "outside.bin"), "wb") as f:
        f.write(cw)
    os.symlink("../outside.bin", os.path.join(ext, "link.bin"))
    bad_ext = {
        "ext_dotdot": ext_tensor("conv.weight", cshape, "../outside.bin"),
        "ext_dotdot2": ext_tensor("conv.weight", cshape, "sub/../../outside.bin"),
        "ext_abs": ext_tensor("conv.weight", cshape, os.path.abspath(os.path.join(out, "outside.bin"))),
        "ext_symlink": ext_tensor("conv.weight", cshape, "link.bin"),
        "ext_short": ext_tensor("conv.weight", cshape, "weights.bin", fw_off),  # runs past the end
        "ext_badlen": ext_tensor("conv.weight", cshape, "weights.bin", cw_off, len(cw) - 4),
        "ext_pastend": ext_tensor("conv.weight", cshape, "weights.bin", 1 << 40, len(cw)),
        "ext_missing": ext_tensor("conv.weight", cshape, "nope.bin"),
        "ext_noloc": ext_tensor("conv.weight", cshape, ""),
        "ext_badoffset": ext_tensor("conv.weight", cshape, "weights.bin", "-16", len(cw)),
        "ext_dot": ext_tensor("conv.weight", cshape, "."),  # the model's folder itself
    }
    for name, t in bad_ext.items():
        save(os.path.join(ext, name + ".onnx"), model(conv_nodes(), ext_inits(t), [conv_input()]), check=False)

    # --- models vcc must reject ---------------------------------------------------------------
    xin = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4, 4])]
    yout = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4, 4])]
    nodes = [
        helper.make_node("LpPool", ["x"], ["p"], name="/lppool/LpPool", kernel_shape=[2, 2, 2]),
        helper.make_node("Relu", ["p"], ["r"], name="/relu/Relu"),
        helper.make_node("Hardmax", ["r"], ["y"], name="/Hardmax_1"),
    ]
    save(os.path.join(out, "unsupported.onnx"), model(nodes, [], xin, yout))

    nodes = [helper.make_node("Relu", ["x"], ["y"], name="/custom", domain="com.example")]
    m = model(nodes, [], xin, yout)
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    save(os.path.join(out, "custom_domain.onnx"), m, check=False)

    inits = [raw_tensor(k, v) for k, v in w.items()]
    save(os.path.join(out, "symbolic.onnx"), model(conv_nodes(), inits, [conv_input(("batch", C, T, H, W))]))
    m = model(conv_nodes(), inits, [conv_input((N, C, T, H, W))])
    m.graph.input[0].type.tensor_type.shape.dim[3].Clear()  # neither dim_value nor dim_param
    save(os.path.join(out, "unknown_dim.onnx"), m, check=False)

    with open(os.path.join(out, "conv_raw.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(out, "text.onnx"), "w") as f:
        f.write("This is a text file, not an ONNX model.\nIt has two lines.\n")
    open(os.path.join(out, "empty.onnx"), "wb").close()
    nograph = onnx.ModelProto()
    nograph.ir_version = 8
    nograph.opset_import.append(helper.make_opsetid("", OPSET))
    save(os.path.join(out, "nograph.onnx"), nograph, check=False)

    def one_init_model(t):
        nodes = [helper.make_node("Add", ["x", t.name], ["y"], name="/Add")]
        return model(nodes, [t], xin, yout)

    bad = TensorProto()
    bad.name, bad.data_type = "w", TensorProto.FLOAT
    bad.dims.extend([2, 3])
    bad.raw_data = b"\0" * 20  # 24 needed
    save(os.path.join(out, "raw_len.onnx"), one_init_model(bad), check=False)
    bad = TensorProto()
    bad.name, bad.data_type = "w", TensorProto.FLOAT
    bad.dims.extend([-1, 3])
    bad.raw_data = b"\0" * 12
    save(os.path.join(out, "neg_dim.onnx"), one_init_model(bad), check=False)
    bad = TensorProto()
    bad.name, bad.data_type = "w", TensorProto.FLOAT
    bad.dims.extend([1 << 31, 1 << 31, 1 << 31])
    bad.raw_data = b"\0" * 4
    save(os.path.join(out, "overflow_dim.onnx"), one_init_model(bad), check=False)
    save(os.path.join(out, "rank9.onnx"), one_init_model(raw_tensor("w", np.zeros([1] * 9, np.float32))), check=False)
    bad = typed_tensor("w", np.zeros([2, 3], np.float32))
    del bad.float_data[-1]
    save(os.path.join(out, "typed_len.onnx"), one_init_model(bad), check=False)
    save(os.path.join(out, "float16_init.onnx"), one_init_model(raw_tensor("w", np.zeros([3], np.float16))), check=False)

    m = one_init_model(raw_tensor("w", np.zeros([3], np.float32)))
    m.graph.initializer.append(raw_tensor("w", np.ones([3], np.float32)))
    save(os.path.join(out, "dup_init.onnx"), m, check=False)

    nodes = [helper.make_node("Add", ["x", "nowhere"], ["y"], name="/Add")]
    save(os.path.join(out, "undefined_input.onnx"), model(nodes, [], xin, yout), check=False)

    nodes = [helper.make_node("Relu", ["x"], ["r"], name="/relu/Relu"),
             helper.make_node("Relu", ["r"], ["r"], name="/relu2/Relu")]
    save(os.path.join(out, "dup_output.onnx"), model(nodes, [], xin, [helper.make_tensor_value_info("r", 1, None)]),
         check=False)

    nodes = [helper.make_node("Relu", ["x"], ["y"], name="/relu/Relu", tags=["a", "b"])]
    save(os.path.join(out, "bad_attr.onnx"), model(nodes, [], xin, yout), check=False)

    # If nodes nested in each other's then_branch, written field by field (python's protobuf refuses to
    # nest this deep): 32 levels below the main graph load; 33 are refused, and so are 5000, which
    # overflowed the stack inside protobuf-c's recursive unpacking before vcc checked the nesting
    for depth in (32, 33, 5000):
        with open(os.path.join(out, "nested_if_%d.onnx" % depth), "wb") as f:
            f.write(nested_if(depth))

    nodes = [helper.make_node("Relu", ["x"], ["y"], name="/relu/Relu")]
    save(os.path.join(out, "undefined_output.onnx"),
         model(nodes, [], xin, [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)]), check=False)
    m = model(nodes, [], [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [3])], yout)
    save(os.path.join(out, "float16_input.onnx"), m, check=False)


if __name__ == "__main__":
    main()
