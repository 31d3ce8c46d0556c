#!/usr/bin/python3
"""Export one of models/video_nets.py's convolutional video models to ONNX in training mode, with
its weights and a seeded data set; print the export's op inventory.

    .venv/bin/python models/export_video_nets.py --model c3d_tiny --out /tmp/c3d \
        [--shape 2x3x8x40x40] [--samples 4] [--seed 0] [--num-classes 10] [--dropout P] [--check-ort]
        [--dynamic-batch]

Models (video_nets.MODELS; default shapes in video_nets.DEFAULT_SHAPES):

    x3d_s_tiny     2x3x4x48x48    X3D-S layout: depthwise Conv3d, squeeze-excite, swish, BN, Add
    slowfast_tiny  2x3x8x32x32    SlowFast: Slice step 4, time-strided lateral convs, Concat, MaxPool
    c3d_tiny       2x3x8x40x40    C3D: MaxPool ceil_mode=1 (a window starting in the padding), Dropout
    unet3d_block   2x3x4x16x16    video-diffusion UNet, two inputs, the scalar loss as its output
    s3d            2x3x16x224x224 torchvision s3d, unchanged (needs T >= 13, H, W >= 209)
    s3d_small      2x3x8x64x64    torchvision s3d with the final AvgPool3d sized to the clip
    vivit_tiny     2x3x4x32x32    ViViT factorised encoder: Conv3d tubelets, nn.MultiheadAttention, LayerNorm, GELU
    videomae_tiny  2x3x4x32x32    Hugging Face VideoMAEForVideoClassification, tiny config (transformers)
    timesformer_tiny 2x3x4x32x32  Hugging Face TimesformerForVideoClassification, divided space-time attention

Writes, under --out:

    <model>.onnx     the training-form export (see below)
    <model>.pt       the model's state_dict (parameters, BN running stats, num_batches_tracked) as it
                     was BEFORE the export; video_nets.build_model(<model>, K, shape, dropout) +
                     load_state_dict(strict=True) rebuilds the model (reference_sgd.py does)
    data.npy         float32 (S, C, T, H, W)
    labels.npy       int64 (S,), the classifiers only: export_torchvision.make_data (data ~ N(0, 1)
                     from numpy.random.default_rng(seed), then labels uniform in [0, K))
    targets.npy      float32 (S, C, T, H, W), unet3d_block only: the noise epsilon. With
                     rng = numpy.random.default_rng(seed), x0 = rng.standard_normal(...), then
                     eps = rng.standard_normal(...), data = (x0 + eps) / sqrt(2) (the noisy clip at
                     alpha_bar = 1/2), targets = eps
    export_info.json the arguments, the op inventory, the --check-ort figures and
                     export_torchvision.describe_graph's facts

Letters: N batch, C channels, T frames, H height, W width, S samples, K classes.

The export. The classifiers go through python/vcc_torch.py's export_for_training unchanged
(torch.onnx.export, training=TRAINING, opset 17, do_constant_folding=False; input 'input'
(N, C, T, H, W), output 'logits' (N, K)). unet3d_block goes through the same call with two inputs
and a scalar output, which export_for_training supports as it is (example_input a tuple,
input_names=("input", "target"), output_names=("loss",)); its output is the loss () itself. Two
things are done to its file after export_for_training, here and not in vcc_torch.py:

  * The timestep and frequency tensors are non-persistent buffers (not in the state dict). torch
    1.13's exporter treats a non-persistent buffer as a traced constant and its JIT constant
    propagation (which runs even with do_constant_folding=False) folds the whole sinusoidal
    embedding, Sin and Cos included, into one float Constant. To keep Sin and Cos in the graph,
    the two buffers are made persistent for the export only, so that they are traced as
    initializers ('timesteps' (N,), 'freqs' (D/2,)), and the file then holds them as Constant
    nodes of the same output names instead of initializers: they are constants of the model, not
    parameters (a float initializer is a trainable parameter to vcc), and the file's initializers
    stay exactly the state dict's entries.
  * export_for_training's shape folding (fold_shape_subgraphs) infers static shapes once, without
    onnx's data propagation; a GroupNorm whose input comes after an earlier GroupNorm's
    Shape -> Reshape then keeps its own Shape -> Reshape, because the earlier Reshape's output
    shape is unknown until that Shape is folded. fold_shape_subgraphs is run again on the file
    until nothing more folds (for every model; only the UNet needs it), and the file re-checked.

Dropout: --dropout P sets every Dropout's probability (default: the paper's, 0.5 for the tiny
classifiers, 0.2 for S3D). The export holds Dropout(ratio=P, training_mode=True); a per-step
comparison with vcc's trainer needs --dropout 0 here and in reference_sgd.py (random masks differ).

--check-ort runs the exported file in onnxruntime (graph optimizations off: its Conv+BN fusion
ignores training_mode) and compares its output with the PyTorch module's in train() mode on the
first batch. For a deterministic comparison the check sets every Dropout to 0 on both sides (on a
copy of the module and on an in-memory copy of the graph whose Dropout ratio inputs it replaces by
0); the figure is max|a-b| (and max|a-b|/max|b|). The UNet's prediction (conv_out) is compared
besides its loss, a mean that hides differences. onnxruntime (1.20) keeps a MaxPool window that
starts in the right padding under ceil_mode=1, which PyTorch (and ONNX's reference evaluator)
drop: at c3d_tiny's default 8x40x40 its pool5 output is 3x3 instead of 2x2 and fc6 fails, so the
check then compares pool4 and pool5 (PyTorch's leading 2x2 block) on the subgraph up to them.

The op inventory lists each op type with its count and each attribute form: the attributes, the
constant inputs that act as attributes (Slice starts/ends/axes/steps, Resize scales, Pad pads,
Dropout ratio/training_mode, Unsqueeze/Reshape/ReduceMean axes or shape, Pow exponent), outputs
in use, and for Add/Sub/Mul/Div/Pow the broadcast pattern of the inputs.

The export's dummy input is the first batch of data.npy (samples 0..N-1, wrapping around); for the
UNet also of targets.npy.
"""

import argparse
import collections
import copy
import json
import os
import sys
import warnings

from clipshape import parse_shape
from export_torchvision import describe_graph, make_data
import video_nets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from vcc_torch import export_for_training, fold_shape_subgraphs  # noqa: E402

UNET = "unet3d_block"
UNET_CONST_BUFFERS = ("timesteps", "freqs")

# inputs of these ops that are constants worth showing in the inventory (index -> name)
CONST_INPUTS = {
    "Slice": {1: "starts", 2: "ends", 3: "axes", 4: "steps"},
    "Resize": {1: "roi", 2: "scales", 3: "sizes"},
    "Pad": {1: "pads", 2: "constant_value", 3: "axes"},
    "Dropout": {1: "ratio", 2: "training_mode"},
    "Unsqueeze": {1: "axes"},
    "Squeeze": {1: "axes"},
    "Reshape": {1: "shape"},
    "ReduceMean": {1: "axes"},
    "Pow": {1: "exponent"},
}
SKIP_ATTRS = {"Constant": ("value",)}


def make_unet_data(seed, samples, c, t, h, w):
    """(noisy clips, noise): float32 (S, C, T, H, W) each; see the module docstring."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal((samples, c, t, h, w), dtype=np.float32)
    eps = rng.standard_normal((samples, c, t, h, w), dtype=np.float32)
    data = ((x0 + eps) / np.float32(np.sqrt(2.0))).astype(np.float32)
    return data, eps


# ---------------------------------------------------------------------------------------------------
# ONNX file edits (after export_for_training)


class _TraceBuffersAsInitializers:
    """Make the named non-persistent buffers persistent while the exporter traces (see docstring)."""

    def __init__(self, model, names):
        self.model, self.names = model, names

    def __enter__(self):
        self.model._non_persistent_buffers_set.difference_update(self.names)

    def __exit__(self, *exc):
        self.model._non_persistent_buffers_set.update(self.names)
        return False


class _TensorSplitAsSlices:
    """While the exporter traces without its shape inference, torch.tensor_split with constant indices is
    the same split written as slices. torch 1.13's tensor_split symbolic needs the indices' rank from shape
    inference; without it, it takes the 1-D indices (1,) for a section count and writes a Tile whose
    repeats are 2-D, a graph ONNX refuses and whose split would be wrong. The slices compute the same
    tensors (x[..., :i0], x[..., i0:i1], ..., along dim)."""

    def __enter__(self):
        import torch
        self.orig = torch.tensor_split

        def tensor_split(x, indices_or_sections=None, dim=0, indices=None, **kw):
            idx = indices if indices is not None else indices_or_sections
            if kw or not isinstance(idx, (tuple, list)) or not all(isinstance(i, int) for i in idx):
                return self.orig(x, idx, dim=dim, **kw)
            size = int(x.shape[dim])  # static: the export fixes every shape
            bounds = [0] + [min(max(i + size if i < 0 else i, 0), size) for i in idx] + [size]
            return tuple(x.narrow(dim, a, max(b - a, 0)) for a, b in zip(bounds, bounds[1:]))
        torch.tensor_split = tensor_split

    def __exit__(self, *exc):
        import torch
        torch.tensor_split = self.orig
        return False


def initializers_to_constants(proto, names):
    """Replace the named initializers by Constant nodes (first in the graph) of the same output name."""
    from onnx import helper

    g = proto.graph
    keep, moved = [], []
    for init in g.initializer:
        (moved if init.name in names else keep).append(init)
    missing = set(names) - {i.name for i in moved}
    if missing:
        raise RuntimeError(f"initializers {sorted(missing)} not found in the export")
    del g.initializer[:]
    g.initializer.extend(keep)
    nodes = [helper.make_node("Constant", [], [init.name], name=f"/{init.name}/Constant", value=init)
             for init in moved]
    rest = list(g.node)
    del g.node[:]
    g.node.extend(nodes + rest)
    return [i.name for i in moved]


def fold_to_fixed_point(proto):
    """fold_shape_subgraphs until nothing more folds; returns (folded names, nodes removed)."""
    folded, removed = [], 0
    for _ in range(100):
        f, r = fold_shape_subgraphs(proto)
        folded += f
        removed += r
        if not r:
            break
    return folded, removed


# ---------------------------------------------------------------------------------------------------
# inventory


def _const_values(g):
    """Value name -> numpy array for initializers and Constant node outputs."""
    import numpy as np
    from onnx import helper, numpy_helper

    vals = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.attribute:
            a = n.attribute[0]
            if a.name == "value":
                vals[n.output[0]] = numpy_helper.to_array(a.t)
            else:
                vals[n.output[0]] = helper.get_attribute_value(a)
        elif n.op_type == "Concat" and n.input and all(i in vals for i in n.input):
            # Resize's scales come as Concat(Constant [1, 1], Constant [2, 2, 2]): shown as the result
            axis = next((helper.get_attribute_value(a) for a in n.attribute if a.name == "axis"), 0)
            try:
                vals[n.output[0]] = np.concatenate([np.asarray(vals[i]) for i in n.input], axis=axis)
            except ValueError:
                pass
    return vals


def _fmt(v):
    import numpy as np

    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, np.ndarray):
        if v.size > 16:
            return f"{v.dtype}{list(v.shape)}"
        if v.dtype.kind == "f":
            return f"{v.dtype}{list(v.shape)}:" + "[" + ",".join(f"{x:.6g}" for x in v.ravel()) + "]"
        if v.dtype.kind == "i":
            big = {2 ** 63 - 1: "INT64_MAX", -2 ** 63: "INT64_MIN"}
            lst = [big.get(int(x), int(x)) for x in v.ravel()]
            return f"{v.dtype}{list(v.shape)}:" + "[" + ",".join(map(str, lst)) + "]"
        return f"{v.dtype}{list(v.shape)}:{v.ravel().tolist()}"
    if isinstance(v, list):
        return "[" + ",".join(_fmt(x) for x in v) + "]"
    return str(v)


BROADCAST_OPS = ("Add", "Sub", "Mul", "Div", "Pow")


def _inferred_shapes(proto):
    """Value name -> tuple of dims (None for an unknown dim) from onnx shape inference."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(proto, data_prop=True)
    except Exception:
        return {}
    g = inferred.graph
    shapes = {i.name: tuple(i.dims) for i in g.initializer}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        if tt.HasField("shape"):
            shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
    return shapes


def _broadcast_form(node, shapes):
    ins = [shapes.get(i) for i in node.input]
    out = shapes.get(node.output[0])
    if out is None or any(s is None for s in ins):
        return "broadcast=?"
    if all(s == out for s in ins):
        return "broadcast=equal"

    def pattern(s):
        tail = out[len(out) - len(s):] if s else ()
        return "(" + ",".join("*" if d == o else str(d) for d, o in zip(s, tail)) + ")"
    return "broadcast=" + " x ".join(pattern(s) for s in ins)


def op_inventory(proto):
    """{op type: {"count": n, "forms": {form string: count}}} in graph order of first appearance.

    A form is the node's attributes (Constant: the value's dtype and shape), the constant inputs of
    CONST_INPUTS (an input that is not constant shows as <runtime>), outputs=k when an op has
    optional outputs in use (BatchNormalization, Dropout, MaxPool), and for the elementwise binary
    ops of BROADCAST_OPS the broadcast pattern of the inputs (onnx shape inference): "equal" or one
    pattern per input, '*' a dim equal to the output's, '1' a broadcast dim, e.g. (*,*,*,*,*) x (*,1,1,1)."""
    from onnx import helper

    g = proto.graph
    consts = _const_values(g)
    shapes = _inferred_shapes(proto)
    producer = {o: n.op_type for n in g.node for o in n.output}
    inv = {}
    for n in g.node:
        parts = []
        if n.op_type in BROADCAST_OPS:
            parts.append(_broadcast_form(n, shapes))
        if n.op_type == "Constant":
            v = consts.get(n.output[0])
            parts.append(f"value={getattr(v, 'dtype', type(v).__name__)}{list(getattr(v, 'shape', []))}")
        for a in sorted(n.attribute, key=lambda a: a.name):
            if a.name in SKIP_ATTRS.get(n.op_type, ()):
                continue
            parts.append(f"{a.name}={_fmt(helper.get_attribute_value(a))}")
        for idx, label in CONST_INPUTS.get(n.op_type, {}).items():
            if idx < len(n.input) and n.input[idx]:
                name = n.input[idx]
                how = " (Concat of Constants)" if producer.get(name) == "Concat" else ""
                parts.append(f"{label}{how}={_fmt(consts[name])}" if name in consts else f"{label}=<runtime>")
        if n.op_type in ("BatchNormalization", "Dropout", "MaxPool"):
            parts.append(f"outputs={len([o for o in n.output if o])}")
        form = ", ".join(parts) or "-"
        e = inv.setdefault(n.op_type, {"count": 0, "forms": collections.Counter()})
        e["count"] += 1
        e["forms"][form] += 1
    return {op: {"count": e["count"], "forms": dict(e["forms"])} for op, e in inv.items()}


def print_inventory(inv, out=sys.stdout):
    total = sum(e["count"] for e in inv.values())
    print(f"op inventory ({total} nodes, {len(inv)} op types; op x count, then each attribute form x count):",
          file=out)
    for op, e in sorted(inv.items(), key=lambda kv: (-kv[1]["count"], kv[0])):
        print(f"  {op} x{e['count']}", file=out)
        for form, k in sorted(e["forms"].items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"      x{k:<3d} {form}", file=out)


# ---------------------------------------------------------------------------------------------------
# onnxruntime check


def zero_dropout_graph(proto):
    """A copy of proto whose Dropout ratio inputs are a constant 0 (training_mode unchanged)."""
    from onnx import numpy_helper
    import numpy as np

    p = copy.deepcopy(proto)
    name = "vcc_check_zero_ratio"
    n_drop = 0
    for n in p.graph.node:
        if n.op_type == "Dropout":
            while len(n.input) < 2:
                n.input.append("")
            n.input[1] = name
            n_drop += 1
    if n_drop:
        p.graph.initializer.append(numpy_helper.from_array(np.array(0.0, dtype=np.float32), name))
    return p, n_drop


# modules whose outputs are compared too, and the ONNX nodes that compute them. The UNet's graph
# output is a mean over every element, which hides differences, so its prediction is compared as
# well; c3d_tiny's pool4 (ceil_mode matters) and pool5 (a window starting in the padding, which
# PyTorch drops and onnxruntime keeps) are compared because onnxruntime cannot run its Gemm fc6 on
# its larger pool5 output.
PROBES = {
    UNET: [("conv_out", "/conv_out/Conv")],
    "c3d_tiny": [("pool4", "/pool4/MaxPool"), ("pool5", "/pool5/MaxPool")],
}


def _ort_run(proto, out_names, feeds):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 4  # quiet: unused ratio constants; a failure is reported by the caller
    sess = ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(out_names, feeds)


def _compare(name, a, b, n_drop, out):
    """max|a-b| of onnxruntime's a and PyTorch's b; on a shape mismatch, over PyTorch's leading block."""
    import numpy as np

    note, ort_shape = "", list(a.shape)
    if a.shape != b.shape:
        if a.ndim != b.ndim or any(x < y for x, y in zip(a.shape, b.shape)):
            print(f"check-ort: '{name}' shapes differ: onnxruntime {list(a.shape)}, PyTorch {list(b.shape)}",
                  file=out)
            return {"error": f"shape {list(a.shape)} vs {list(b.shape)}"}
        note = f" (SHAPES DIFFER: onnxruntime {list(a.shape)}; compared on PyTorch's leading block)"
        a = a[tuple(slice(0, d) for d in b.shape)]
    diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    rel = diff / max(float(np.max(np.abs(b))), 1e-30)
    print(f"check-ort: onnxruntime vs PyTorch train() forward, '{name}' {list(b.shape)}{note} "
          f"({n_drop} Dropout set to 0 on both sides): max|a-b| = {diff:.3e}, max|a-b|/max|b| = {rel:.3e}",
          file=out)
    r = {"max_abs": diff, "rel": rel, "shape": list(b.shape)}
    if note:
        r["onnxruntime_shape"] = ort_shape
    return r


def check_ort(proto, model, feeds, probes=(), out=sys.stdout):
    """onnxruntime on the exported graph vs the module in train() mode, Dropout 0 on both sides.

    feeds: {input name: numpy array}; probes: (module name, ONNX node name) pairs whose outputs are
    compared as well (the node's first output is added to the graph copy's outputs). When
    onnxruntime cannot run the whole graph, the probes are compared on the subgraph that computes
    them (onnx.utils.Extractor). Returns {value name: {"max_abs", "rel", "shape", ...},
    "dropouts_zeroed": k, "error": ... when the whole graph failed} or None without onnxruntime."""
    import torch
    from onnx import TensorProto, helper
    from onnx.utils import Extractor

    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None:
        print("check-ort: onnxruntime is not installed; skipped", file=out)
        return None
    p, n_drop = zero_dropout_graph(proto)
    node_out = {n.name: n.output[0] for n in p.graph.node}
    probe_values = [(m, node_out[nn]) for m, nn in probes if nn in node_out]
    for _, v in probe_values:
        p.graph.output.append(helper.make_tensor_value_info(v, TensorProto.FLOAT, None))
    graph_outs = [o.name for o in proto.graph.output]
    result = {"dropouts_zeroed": n_drop}
    try:
        got = dict(zip(graph_outs + [v for _, v in probe_values],
                       _ort_run(p, graph_outs + [v for _, v in probe_values], feeds)))
    except Exception as e:
        msg = str(e).splitlines()[0][:300]
        print(f"check-ort: onnxruntime could not run the whole graph: {msg}", file=out)
        result["error"] = msg
        got = {}
        if probe_values:
            sub = Extractor(p).extract_model([i.name for i in proto.graph.input], [v for _, v in probe_values])
            try:
                got = dict(zip([v for _, v in probe_values], _ort_run(sub, [v for _, v in probe_values], feeds)))
            except Exception as e2:
                print(f"check-ort: nor the subgraph up to {[v for _, v in probe_values]}: {e2}", file=out)
                return result
    m = copy.deepcopy(model).train()
    for mod in m.modules():
        if isinstance(mod, torch.nn.modules.dropout._DropoutNd):
            mod.p = 0.0
    want = {}
    mods = dict(m.named_modules())
    for mod_name, value in probe_values:
        mods[mod_name].register_forward_hook(
            lambda _m, _i, o, value=value: want.__setitem__(value, o.detach().numpy().copy()))
    with torch.no_grad():
        want[graph_outs[0]] = m(*[torch.from_numpy(feeds[i.name]) for i in proto.graph.input]).numpy()
    for name in graph_outs[:1] + [v for _, v in probe_values]:
        if name in got:
            result[name] = _compare(name, got[name], want[name], n_drop, out)
    return result


# ---------------------------------------------------------------------------------------------------


# models whose export runs without torch's export-time shape inference by default (--shape-inference)
NO_EXPORT_SHAPE_INFERENCE = ("mvit_v2_s",)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Export a models/video_nets.py video model (random init) to ONNX in training mode, "
                    "with its initial state dict and a seeded data set; print the op inventory.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", required=True, choices=video_nets.MODELS)
    ap.add_argument("--shape", help="one batch, N x C x T x H x W (default: video_nets.DEFAULT_SHAPES)")
    ap.add_argument("--samples", type=int, default=4, help="samples S in data.npy / labels.npy / targets.npy")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed for the weights, numpy seed for data")
    ap.add_argument("--num-classes", type=int, default=10, help="classifier outputs K (not for unet3d_block)")
    ap.add_argument("--dynamic-batch", action="store_true",
                    help="export the batch dim as the symbolic dim 'batch' (vcc --shape batch=N, vcc --fit)")
    ap.add_argument("--dropout", type=float, help="every Dropout's probability (default: the paper's)")
    ap.add_argument("--opset", type=int, default=17, help="ONNX opset version")
    ap.add_argument("--out", required=True, help="output directory (created if missing)")
    ap.add_argument("--check-ort", action="store_true",
                    help="also run the export in onnxruntime on the first batch and compare with PyTorch")
    ap.add_argument("--show-warnings", action="store_true", help="show the exporter's UserWarnings")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--shape-inference", choices=("on", "off"),
                    help="torch's export-time ONNX shape inference (default: on, off for %s, whose graph "
                         "it cannot hold in memory on a small machine)" % ", ".join(NO_EXPORT_SHAPE_INFERENCE))
    args = ap.parse_args(argv)

    shape_text = args.shape or "x".join(map(str, video_nets.DEFAULT_SHAPES[args.model]))
    try:
        n, c, t, h, w = parse_shape(shape_text)
    except ValueError as e:
        ap.error(str(e))
    if args.samples <= 0:
        ap.error("--samples must be positive")
    if args.num_classes <= 0:
        ap.error("--num-classes must be positive")
    if args.dropout is not None and not 0.0 <= args.dropout < 1.0:
        ap.error("--dropout must lie in [0, 1)")
    if args.threads <= 0:
        ap.error("--threads must be positive")
    is_unet = args.model == UNET
    if not is_unet and c != 3:
        ap.error(f"--shape {shape_text}: {args.model} takes C=3 channels, got C={c}")
    if is_unet and args.dropout is not None:
        ap.error("--dropout: unet3d_block has no Dropout")

    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper

    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, f"{args.model}.onnx")
    pt_path = os.path.join(args.out, f"{args.model}.pt")

    # data first (it does not touch torch's RNG), so the export traces the real first batch
    idx = [i % args.samples for i in range(n)]
    if is_unet:
        data, targets = make_unet_data(args.seed, args.samples, c, t, h, w)
        labels = None
        example = (torch.from_numpy(np.ascontiguousarray(data[idx])),
                   torch.from_numpy(np.ascontiguousarray(targets[idx])))
        names = dict(input_names=("input", "target"), output_names=("loss",))
    else:
        data, labels = make_data(args.seed, args.samples, c, t, h, w, args.num_classes)
        targets = None
        example = torch.from_numpy(np.ascontiguousarray(data[idx]))
        names = {}

    if args.dynamic_batch:
        names = dict(names, dynamic_batch=True)
    infer = (args.shape_inference or ("off" if args.model in NO_EXPORT_SHAPE_INFERENCE else "on")) == "on"
    torch.manual_seed(args.seed)
    try:
        model = video_nets.build_model(args.model, num_classes=args.num_classes, clip=(n, c, t, h, w),
                                       dropout=args.dropout)
    except ValueError as e:
        sys.exit(f"{args.model}: {e}")
    model.train()
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    n_params = video_nets.count_parameters(model)

    with warnings.catch_warnings():
        if not args.show_warnings:
            warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx.*")
            warnings.filterwarnings("ignore", category=UserWarning, message=r".*prim::Constant.*")
        try:
            if is_unet:
                with _TraceBuffersAsInitializers(model, UNET_CONST_BUFFERS):
                    report = export_for_training(model, example, onnx_path, opset_version=args.opset, **names)
            elif not infer:
                with _TensorSplitAsSlices():
                    report = export_for_training(model, example, onnx_path, opset_version=args.opset,
                                                 shape_inference=False, **names)
            else:
                report = export_for_training(model, example, onnx_path, opset_version=args.opset, **names)
        except Exception as e:
            sys.exit(f"{onnx_path}: export failed: {e}")

    # the file edits described in the docstring, then the full check again
    proto = onnx.load(onnx_path)
    constants = initializers_to_constants(proto, UNET_CONST_BUFFERS) if is_unet else []
    refolded, reremoved = fold_to_fixed_point(proto)
    if constants or refolded:
        try:
            onnx.checker.check_model(proto, full_check=True)
        except Exception as e:
            sys.exit(f"{onnx_path}: onnx.checker rejected the edited export: {e}")
        tmp = onnx_path + ".tmp"
        onnx.save(proto, tmp)
        os.replace(tmp, onnx_path)

    # export_for_training's promises, checked independently: the model is as before, and every
    # initializer named like a state_dict entry holds the saved (pre-export) value
    after = model.state_dict()
    if set(after) != set(before):
        sys.exit(f"the model's state_dict keys changed during the export: {sorted(set(after) ^ set(before))}")
    changed = sorted(k for k in before if not torch.equal(before[k], after[k]))
    if changed or not model.training:
        sys.exit(f"export_for_training changed the model: entries {changed[:4]}, training={model.training}")
    checked = 0
    for init in proto.graph.initializer:
        if init.name not in before:
            continue
        have, want = numpy_helper.to_array(init), before[init.name].numpy()
        if have.shape != want.shape or have.dtype != want.dtype or not np.array_equal(have, want):
            sys.exit(f"{onnx_path}: initializer '{init.name}' ({have.dtype}{list(have.shape)}) differs from "
                     f"the saved state dict ({want.dtype}{list(want.shape)})")
        checked += 1
    floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
    float_extra = sorted(i.name for i in proto.graph.initializer
                         if i.name not in before and i.data_type in floats)

    torch.save(before, pt_path)
    np.save(os.path.join(args.out, "data.npy"), data)
    if is_unet:
        np.save(os.path.join(args.out, "targets.npy"), targets)
    else:
        np.save(os.path.join(args.out, "labels.npy"), labels)

    facts = describe_graph(proto, before)
    inv = op_inventory(proto)
    dropout = None
    if not is_unet:
        dropout = video_nets.DEFAULT_DROPOUT[args.model] if args.dropout is None else args.dropout
    print(f"exported {args.model} ({'' if is_unet else f'K={args.num_classes}, dropout {dropout}, '}batch "
          f"{n}x{c}x{t}x{h}x{w}, opset {args.opset}, {n_params} parameters) -> {onnx_path} "
          f"({os.path.getsize(onnx_path) / 1e6:.2f} MB)")
    print(f"graph inputs {facts['graph_inputs']}, outputs {facts['graph_outputs']}; "
          f"{facts['num_initializers']} initializers ({checked} equal to the pre-export state dict; "
          f"{len(report.initializers_restored)} rewritten by export_for_training); float initializers "
          f"not in the state dict: {float_extra or 'none'}")
    print(f"shape values folded: {len(report.folded)} by export_for_training, {len(refolded)} more by "
          f"re-running fold_shape_subgraphs ({reremoved} nodes removed); Shape nodes left: "
          f"{inv.get('Shape', {}).get('count', 0)}"
          + (f"; initializers made Constant nodes: {constants}" if constants else ""))
    print_inventory(inv)
    second = (f"targets.npy {list(targets.shape)} float32" if is_unet
              else f"labels.npy {list(labels.shape)} int64")
    print(f"wrote {pt_path} (pre-export state dict, {len(before)} entries), data.npy {list(data.shape)} "
          f"float32, {second}")

    ort = None
    if args.check_ort:
        feeds = {i.name: (a.numpy() if hasattr(a, "numpy") else a)
                 for i, a in zip(proto.graph.input, example if isinstance(example, tuple) else (example,))}
        ort = check_ort(proto, model, feeds, probes=PROBES.get(args.model, ()))

    info = {
        "model": args.model, "shape": [n, c, t, h, w], "samples": args.samples, "seed": args.seed,
        "num_classes": None if is_unet else args.num_classes, "dropout": dropout, "opset": args.opset,
        "num_parameters": n_params,
        "torch": torch.__version__, "onnx": onnx.__version__,
        "export_mutated_state": report.mutated_by_trace, "initializers_rewritten": report.initializers_restored,
        "shape_values_folded": report.folded, "shape_values_refolded": refolded,
        "initializers_made_constants": constants, "num_batches_tracked": report.num_batches_tracked,
        "op_inventory": inv, "ort_check": ort,
        **facts,
    }
    with open(os.path.join(args.out, "export_info.json"), "w") as f:
        json.dump(info, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
