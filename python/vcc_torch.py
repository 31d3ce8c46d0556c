"""PyTorch side of vcc: export a model for training, load what a vcc trainer wrote.

    import sys; sys.path.insert(0, "<vcc>/python")
    from vcc_torch import export_for_training, load_trained

    model = torchvision.models.video.r3d_18(num_classes=400)
    export_for_training(model, torch.randn(2, 3, 8, 112, 112), "r3d_18.onnx")
    #   vcc r3d_18.onnx -o train.c && <the build command vcc prints>
    #   ./train --data clips.npy --labels labels.npy --steps 100 --out trained.safetensors
    load_trained(model, "trained.safetensors")

Letters: N batch, C channels, T frames, H height, W width, K classes.

export_for_training writes the ONNX training form vcc reads (torch.onnx.export with
training=TrainingMode.TRAINING, no constant folding, one input "input" (N, C, T, H, W), one output
"logits" (N, K)) and undoes what that export does to the model. The export traces one forward pass in
training mode, and in that pass every BatchNorm module with running statistics updates, in place:

    running_mean           (1 - momentum) * running_mean + momentum * batch mean
    running_var            (1 - momentum) * running_var  + momentum * unbiased batch variance
    num_batches_tracked    + 1

and torch.onnx.export writes the ONNX initializers for running_mean / running_var from the buffers
AFTER that pass (num_batches_tracked is not exported: ONNX BatchNormalization has no counter). The
trace also sets every submodule to the root module's mode when it restores it. A plain export thus
starts training from statistics one batch away from the model's, and a model whose submodules were
in mixed train/eval modes comes back changed. export_for_training puts every parameter and buffer
back bit for bit, rewrites the affected initializers with the pre-export values, restores each
module's train/eval flag, each parameter's requires_grad and torch's random number generator state
(a traced dropout draws from it), and records the pre-export num_batches_tracked of each BatchNorm
in the file's metadata (see export_for_training).

Shapes computed from sizes: `x.view(x.size(0), -1)` traces x.size(0) as a value. The exporter writes
it as Shape -> Gather -> Unsqueeze -> Concat feeding the Reshape (with a static batch, torch 1.13
already turns Shape -> Gather into a Constant, leaving Constant -> Unsqueeze -> Concat). vcc evaluates
such shape arithmetic itself while compiling (the const family, ir/ops/fold.c). With a static batch (the
default) export_for_training also evaluates these subgraphs with onnx's reference evaluator and
replaces them by int64 initializers (see fold_shape_subgraphs), so the file is smaller and any ONNX tool
sees static shapes; `torch.flatten(x, 1)` exports as one Flatten node and needs none of this.
"""

import dataclasses
import os
import re
import shutil
import tempfile
import warnings

__all__ = ["ExportReport", "LoadResult", "VccExportError", "VccLoadError", "export_for_training",
           "fold_shape_subgraphs", "load_trained", "num_batches_tracked_from_metadata"]

TRAINING_EXPORT_KEY = "vcc.export"
TRAINING_EXPORT_VALUE = "training"
NUM_BATCHES_TRACKED_PREFIX = "vcc.num_batches_tracked."
BATCH_DIM = "batch"

# ops folded when all their inputs are constant integer tensors (shape arithmetic as the exporter
# writes it); Shape is folded when its input's shape is fully static
_FOLDABLE = frozenset(("Gather", "Unsqueeze", "Concat", "Squeeze", "Cast", "Slice", "Mul", "Add", "Sub",
                       "Div", "Identity"))
_TWO_GIB = 2 ** 31


class VccExportError(RuntimeError):
    """export_for_training could not produce a file vcc reads; the message names the node or tensor."""


class VccLoadError(RuntimeError):
    """load_trained found a file that does not match the model; the message names the keys."""


@dataclasses.dataclass
class ExportReport:
    """What export_for_training wrote and repaired.

    path                   the ONNX file written
    mutated_by_trace       state_dict keys the export's training-mode trace changed (then restored)
    initializers_restored  initializer names rewritten with their pre-export values
    folded                 names of shape values replaced by int64 initializers
    removed_nodes          number of shape-arithmetic nodes removed by folding
    num_batches_tracked    BatchNorm module name -> pre-export num_batches_tracked (also in metadata)
    """
    path: str
    mutated_by_trace: list
    initializers_restored: list
    folded: list
    removed_nodes: int
    num_batches_tracked: dict


@dataclasses.dataclass
class LoadResult:
    """What load_trained did not load: like torch's load_state_dict result.

    missing_keys     model state_dict keys absent from the file (only num_batches_tracked, strict=False)
    unexpected_keys  file keys the model has no entry for (ignored with strict=False)
    """
    missing_keys: list
    unexpected_keys: list


# ---------------------------------------------------------------------------------------------------
# model state: snapshot and restore


class _ModelState:
    """Every parameter and buffer (object and value), module mode, requires_grad flag and RNG state."""

    def __init__(self, model):
        import torch

        self.slots = []  # (module, kind, name, tensor object, value copy)
        for mod in model.modules():
            for kind in ("_parameters", "_buffers"):
                for name, t in getattr(mod, kind).items():
                    self.slots.append((mod, kind, name, t, None if t is None else t.detach().clone()))
        self.modes = [(mod, mod.training) for mod in model.modules()]
        self.requires_grad = [(p, p.requires_grad) for p in model.parameters()]
        self.cpu_rng = torch.get_rng_state()
        self.cuda_rng = (torch.cuda.get_rng_state_all()
                         if torch.cuda.is_available() and torch.cuda.is_initialized() else None)

    def restore(self):
        import torch

        with torch.no_grad():
            for mod, kind, name, t, value in self.slots:
                getattr(mod, kind)[name] = t
                if t is not None and not _same_bits(t, value):
                    t.copy_(value)
        for mod, training in self.modes:
            mod.training = training
        for p, flag in self.requires_grad:
            p.requires_grad_(flag)
        torch.set_rng_state(self.cpu_rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)


def _same_bits(a, b):
    import torch

    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point():
        # bitwise: a NaN never compares equal (so it is copied back) and the sign of zero counts
        return bool(torch.equal(a, b) and not torch.signbit(a).ne(torch.signbit(b)).any())
    return torch.equal(a, b)


def _tensor_bytes(t):
    """Little-endian bytes of a CPU copy of t, the layout of ONNX raw_data and safetensors."""
    import torch

    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def _mode_matters(mod):
    """Modules whose forward depends on train/eval: BatchNorm, InstanceNorm with stats, dropout."""
    from torch.nn.modules.batchnorm import _NormBase
    from torch.nn.modules.dropout import _DropoutNd

    return isinstance(mod, (_NormBase, _DropoutNd))


def _batchnorm_modules(model):
    """(name, module) of every BatchNorm that tracks running statistics."""
    from torch.nn.modules.batchnorm import _BatchNorm

    return [(name, mod) for name, mod in model.named_modules()
            if isinstance(mod, _BatchNorm) and getattr(mod, "num_batches_tracked", None) is not None]


# ---------------------------------------------------------------------------------------------------
# ONNX graph helpers


def _onnx_dtype(torch_dtype):
    import torch
    from onnx import TensorProto

    table = {torch.float32: TensorProto.FLOAT, torch.float64: TensorProto.DOUBLE,
             torch.float16: TensorProto.FLOAT16, torch.bfloat16: TensorProto.BFLOAT16,
             torch.int64: TensorProto.INT64, torch.int32: TensorProto.INT32, torch.int16: TensorProto.INT16,
             torch.int8: TensorProto.INT8, torch.uint8: TensorProto.UINT8, torch.bool: TensorProto.BOOL}
    return table.get(torch_dtype)


def _initializer_bytes(init):
    from onnx import numpy_helper

    if init.HasField("raw_data"):
        return init.raw_data
    return numpy_helper.to_array(init).tobytes()


def _opset(proto):
    for o in proto.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    raise VccExportError("the ONNX file imports no default-domain opset")


def _subgraph_uses(node, out):
    """Names read inside node's subgraphs (If/Loop/Scan bodies): outer-scope values stay alive."""
    for a in node.attribute:
        graphs = list(a.graphs) + ([a.g] if a.HasField("g") else [])
        for g in graphs:
            for n in g.node:
                out.update(i for i in n.input if i)
                _subgraph_uses(n, out)


def _static_shapes(proto, workdir=None):
    """Value name -> tuple of dims for every value whose inferred shape is fully static."""
    import onnx

    if proto.ByteSize() < _TWO_GIB:
        inferred = onnx.shape_inference.infer_shapes(proto)
    else:
        tmp = tempfile.mkdtemp(dir=workdir)
        try:
            src, dst = os.path.join(tmp, "in.onnx"), os.path.join(tmp, "out.onnx")
            onnx.save(proto, src, save_as_external_data=True, location="in.data")
            onnx.shape_inference.infer_shapes_path(src, dst)
            inferred = onnx.load(dst, load_external_data=False)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    shapes = {}
    g = inferred.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = tt.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = tuple(d.dim_value for d in dims)
    for init in g.initializer:
        shapes[init.name] = tuple(init.dims)
    return shapes


def fold_shape_subgraphs(proto, fold_shape=True, workdir=None):
    """Replace shape arithmetic in an ONNX ModelProto by int64 initializers, in place.

    A value is constant when it is an integer initializer, the output of an integer Constant node,
    the output of a Shape node whose input has a fully static inferred shape (only with
    fold_shape=True; Shape's start/end attributes follow ONNX: negative counts from the end, clamped),
    or the output of Gather/Unsqueeze/Concat/Squeeze/Cast/Slice/Mul/Add/Sub/Div/Identity whose inputs
    are all constant integer tensors and whose outputs are integer (evaluated with
    onnx.reference.ReferenceEvaluator at the model's opset). Every constant value that a remaining
    node reads and that a folded node (not a Constant node) produced becomes an initializer of the
    same name, so its readers are unchanged; folded nodes nothing reads any more are removed. Float
    Constant nodes and constants feeding nothing folded are left as they are. Graph outputs are never
    folded away.

    Returns (folded value names, number of nodes removed). The caller runs onnx.checker.
    Raises VccExportError when the model has no default-domain opset.
    """
    import numpy as np
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    g = proto.graph
    opset = _opset(proto)
    shapes = _static_shapes(proto, workdir) if fold_shape else {}
    known = {}  # value name -> numpy array
    for init in g.initializer:
        if init.data_type in (7, 6, 5, 3, 12, 13, 2, 4):  # int64 int32 int16 int8 uint64 uint32 uint8 uint16
            known[init.name] = numpy_helper.to_array(init)
    folded_by = {}  # value name -> node index, for values a folded node produced

    def is_int(a):
        return np.issubdtype(np.asarray(a).dtype, np.integer)

    for idx, node in enumerate(g.node):
        if node.domain not in ("", "ai.onnx"):
            continue
        outs = None
        if node.op_type == "Constant":
            try:
                outs = ReferenceEvaluator(node, opsets={"": opset}).run(None, {})
            except Exception:
                outs = None
            if outs is not None and not all(is_int(o) for o in outs):
                outs = None
        elif node.op_type == "Shape" and fold_shape and node.input[0] in shapes:
            dims = shapes[node.input[0]]
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            start, end = attrs.get("start", 0), attrs.get("end", len(dims))
            outs = [np.array(dims[start:end], dtype=np.int64)]
        elif node.op_type in _FOLDABLE:
            ins = [i for i in node.input if i]
            if ins and all(i in known and is_int(known[i]) for i in ins):
                feeds = {i: known[i] for i in ins}
                try:
                    outs = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
                except Exception:
                    outs = None
                if outs is not None and not all(is_int(o) for o in outs):
                    outs = None
        if outs is None:
            continue
        for name, value in zip(node.output, outs):
            if name:
                known[name] = np.asarray(value)
                folded_by[name] = idx

    if not folded_by:
        return [], 0
    folded_nodes = set(folded_by.values())
    graph_outputs = {o.name for o in g.output}
    # a folded node that produces a graph output stays
    for name, idx in folded_by.items():
        if name in graph_outputs:
            folded_nodes.discard(idx)
    readers = set()
    for idx, node in enumerate(g.node):
        if idx not in folded_nodes:
            readers.update(i for i in node.input if i)
            _subgraph_uses(node, readers)
    new_inits = []
    for name in sorted(readers):
        idx = folded_by.get(name)
        if idx is None or idx not in folded_nodes or g.node[idx].op_type == "Constant":
            continue
        new_inits.append(numpy_helper.from_array(known[name], name))
    # Constant nodes whose value a remaining node reads stay; everything else folded is dead
    keep_const = {folded_by[n] for n in readers if n in folded_by and g.node[folded_by[n]].op_type == "Constant"}
    removed = folded_nodes - keep_const
    kept = [n for i, n in enumerate(g.node) if i not in removed]
    del g.node[:]
    g.node.extend(kept)
    g.initializer.extend(new_inits)
    produced = {o for n in g.node for o in n.output} | {i.name for i in g.initializer} | {i.name for i in g.input}
    stale = [vi for vi in g.value_info if vi.name not in produced]
    for vi in stale:
        g.value_info.remove(vi)
    return [t.name for t in new_inits], len(removed)


def _runtime_shape_nodes(proto):
    """Shape nodes left in the graph and the first non-shape nodes their values reach: (shape, readers)."""
    g = proto.graph
    shape_nodes = [n for n in g.node if n.op_type == "Shape"]
    if not shape_nodes:
        return [], []
    tainted = {o for n in shape_nodes for o in n.output}
    reached = []
    for n in g.node:
        if n.op_type == "Shape" or not any(i in tainted for i in n.input):
            continue
        if n.op_type in _FOLDABLE:
            tainted.update(n.output)
        else:
            reached.append(n)
    return shape_nodes, reached


# ---------------------------------------------------------------------------------------------------
# export


def export_for_training(model, example_input, path, dynamic_batch=False, opset_version=17,
                        input_names=("input",), output_names=("logits",), shape_inference=True):
    """Export `model` to the ONNX training form vcc compiles, leaving the model exactly as it was.

    model          a torch.nn.Module; its mode does not matter (the export traces in training mode).
    example_input  a tensor, or a tuple of tensors, one per model input: for a video classifier one
                   clip batch (N, C, T, H, W). Its shape is the compiled shape unless dynamic_batch.
    path           the .onnx file to write (replaced atomically; nothing is written on error). A model
                   of 2 GiB or more keeps its tensors in `<path>.data` beside it (ONNX external data).
    dynamic_batch  False: every dim static, as traced. True: dim 0 of every input and output is the
                   symbolic dim "batch", which vcc binds with `--shape batch=N`.
    opset_version  the ONNX opset (vcc reads 17).
    input_names, output_names
                   graph input / output names, default ("input",) and ("logits",), the names vcc's
                   trainer expects for the clip batch and the logits (N, K).
    shape_inference
                   False turns off torch's export-time ONNX shape inference (torch.onnx's
                   onnx_shape_inference argument of torch.onnx.utils._export, which torch.onnx.export
                   calls with True) for this export: it runs per node over the whole
                   graph built so far, which for graphs of ten thousand nodes (torchvision's mvit_v2_s)
                   takes more memory than a small machine has. vcc infers every shape itself.

    The file: torch.onnx.export(training=TrainingMode.TRAINING, do_constant_folding=False,
    export_params=True, keep_initializers_as_inputs=False), so BatchNormalization nodes carry
    training_mode=1 and the running statistics as initializers under their state_dict keys. Their
    values are the model's pre-export running_mean / running_var (the export's trace updated them;
    see the module docstring). metadata_props gets "vcc.export" = "training" and, for each BatchNorm
    module that tracks running statistics, "vcc.num_batches_tracked.<module name>" = its pre-export
    num_batches_tracked in decimal (state_dict key "<module name>.num_batches_tracked"), which ONNX
    cannot hold otherwise. With dynamic_batch=False, shape arithmetic (x.view(x.size(0), -1)) is
    folded into int64 initializers (fold_shape_subgraphs). The file passes onnx.checker with
    full_check=True.

    torch.onnx.export(training=TRAINING) puts every module in train mode for the trace, so a
    BatchNorm or dropout module left in eval mode inside a training model is exported in training
    form all the same (a warning names them); the model's flags are restored afterwards.

    With dynamic_batch=True a traced size such as x.size(0) stays a run-time Shape computation, which
    this vcc cannot compile yet (it needs shape folding under bound symbolic dims, a later vcc
    version); such graphs raise VccExportError naming the Shape node and its reader. Write
    `torch.flatten(x, 1)` (one Flatten node) or export with dynamic_batch=False.

    Afterwards every parameter and buffer of the model holds its pre-export bits (the same tensor
    objects), each module has its pre-export train/eval flag, each parameter its requires_grad, and
    torch's CPU (and initialized CUDA) random generator its pre-export state; this holds also when the
    export raises. Returns an ExportReport. Raises TypeError for a non-Module model or non-tensor
    input, VccExportError when a BatchNorm running statistic has no initializer of its state_dict
    name or a dtype/shape differs, when onnx.checker rejects the result, or as above.
    """
    import onnx
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"export_for_training: model must be a torch.nn.Module, got {type(model).__name__}")
    args = example_input if isinstance(example_input, tuple) else (example_input,)
    if not args or not all(isinstance(a, torch.Tensor) for a in args):
        raise TypeError("export_for_training: example_input must be a tensor or a tuple of tensors")
    input_names, output_names = list(input_names), list(output_names)
    path = os.fspath(path)
    target_dir = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    if not base:
        raise VccExportError(f"export_for_training: '{path}' names a folder, not a file")

    state = _ModelState(model)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    bn = _batchnorm_modules(model)
    nbt = {name: int(mod.num_batches_tracked.item()) for name, mod in bn}
    cumulative = [name or "(the model)" for name, mod in bn if mod.momentum is None]
    if cumulative:
        warnings.warn(f"export_for_training: BatchNorm {', '.join(cumulative)} has momentum=None (a cumulative "
                      f"average); ONNX BatchNormalization has only an exponential average, and the export "
                      f"writes momentum 0 (running statistics = the last batch's)", stacklevel=2)
    if model.training:
        frozen = [name for name, mod in model.named_modules() if not mod.training and _mode_matters(mod)]
        if frozen:
            warnings.warn(f"export_for_training: {', '.join(frozen[:4])}{' ...' if len(frozen) > 4 else ''} "
                          f"in eval mode: the training export traces every module in train mode (BatchNorm "
                          f"with batch statistics and running-statistics updates, dropout active)", stacklevel=2)
    tmp = tempfile.mkdtemp(prefix=".vcc-export-", dir=target_dir)
    from torch.onnx._globals import GLOBALS
    infer_before = GLOBALS.onnx_shape_inference
    try:
        raw = os.path.join(tmp, "export.onnx")
        try:
            with warnings.catch_warnings():
                # the exporter drops num_batches_tracked's in-place add; the metadata carries the count
                warnings.filterwarnings("ignore", message=r".*Removing mutation from node.*")
                torch.onnx.utils._export(
                    model, args, raw,
                    export_params=True,
                    training=torch.onnx.TrainingMode.TRAINING,
                    do_constant_folding=False,
                    opset_version=opset_version,
                    input_names=input_names,
                    output_names=output_names,
                    keep_initializers_as_inputs=False,
                    dynamic_axes=({n: {0: BATCH_DIM} for n in input_names + output_names}
                                  if dynamic_batch else None),
                    onnx_shape_inference=bool(shape_inference),
                )
            after = model.state_dict()
            mutated = sorted(k for k in before if k in after and not _same_bits(before[k], after[k]))
        finally:
            GLOBALS.onnx_shape_inference = infer_before
            state.restore()

        proto = onnx.load(raw)
        restored = _restore_initializers(proto, before, path)
        folded, removed = fold_shape_subgraphs(proto, fold_shape=not dynamic_batch, workdir=tmp)
        if dynamic_batch:
            shape_nodes, readers = _runtime_shape_nodes(proto)
            if shape_nodes:
                where = ", ".join(f"'{n.name}' ({n.op_type})" for n in readers[:4]) or "no node"
                raise VccExportError(
                    f"{path}: export_for_training(dynamic_batch=True): the graph computes a shape at run "
                    f"time (node '{shape_nodes[0].name}' (Shape), read by {where}), as x.view(x.size(0), "
                    f"-1) or x.reshape(x.shape[0], ...) trace; vcc cannot fold run-time shapes under a "
                    f"symbolic batch yet. Use torch.flatten(x, 1), or export with dynamic_batch=False.")
        del proto.metadata_props[:]  # the exporter writes none; the file's metadata is vcc's
        entries = [(TRAINING_EXPORT_KEY, TRAINING_EXPORT_VALUE)]
        entries += [(NUM_BATCHES_TRACKED_PREFIX + name, str(n)) for name, n in nbt.items()]
        onnx.helper.set_model_props(proto, dict(entries))

        out = os.path.join(tmp, base)
        external = proto.ByteSize() >= _TWO_GIB
        if external:
            onnx.save(proto, out, save_as_external_data=True, all_tensors_to_one_file=True,
                      location=base + ".data")
        else:
            onnx.save(proto, out)
        try:
            onnx.checker.check_model(out, full_check=True)
        except Exception as e:
            raise VccExportError(f"{path}: onnx.checker rejected the export: {e}") from e
        if external:
            os.replace(out + ".data", os.path.join(target_dir, base + ".data"))
        os.replace(out, os.path.abspath(path))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ExportReport(path=path, mutated_by_trace=mutated, initializers_restored=restored, folded=folded,
                        removed_nodes=removed, num_batches_tracked=nbt)


def _restore_initializers(proto, before, path):
    """Give every initializer named like a state_dict entry that entry's pre-export bytes.

    Returns the names whose bytes changed. Raises VccExportError when a BatchNormalization running
    statistic is an initializer with no state_dict entry of its name, or a dtype or shape differs."""
    from onnx import helper

    g = proto.graph
    by_name = {init.name: i for i, init in enumerate(g.initializer)}
    for node in g.node:
        if node.op_type != "BatchNormalization":
            continue
        for stat in list(node.input)[3:5]:
            # a computed statistic (track_running_stats=False) is no state; an initializer must be one
            if stat in by_name and stat not in before:
                raise VccExportError(
                    f"{path}: node '{node.name}' (BatchNormalization): running statistic '{stat}' is an "
                    f"initializer with no state_dict entry of that name; its pre-export value cannot be "
                    f"restored")
    changed = []
    for name, i in by_name.items():
        if name not in before:
            continue
        init, want = g.initializer[i], before[name]
        dtype = _onnx_dtype(want.dtype)
        if dtype != init.data_type or tuple(init.dims) != tuple(want.shape):
            raise VccExportError(
                f"{path}: initializer '{name}' has ONNX type {init.data_type} dims {list(init.dims)}, "
                f"state_dict entry has {want.dtype} {list(want.shape)}")
        data = _tensor_bytes(want)
        if _initializer_bytes(init) != data:
            g.initializer[i].CopyFrom(helper.make_tensor(name, dtype, list(want.shape), data, raw=True))
            changed.append(name)
    return sorted(changed)


# ---------------------------------------------------------------------------------------------------
# load


def _safetensors_metadata(path):
    """The __metadata__ strings of a safetensors file's JSON header ({} when there are none)."""
    import json
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    meta = header.get("__metadata__") or {}
    return meta if isinstance(meta, dict) else {}


def load_trained(model, path, strict=True):
    """Load a vcc trainer's --out (or --checkpoint-dir) safetensors file into `model`, in place.

    The file's keys are the ONNX initializer names, which export_for_training keeps equal to the
    model's state_dict keys: parameters, BatchNorm running_mean / running_var and num_batches_tracked.
    Each tensor is copied into the model's own tensor (same objects, same device), converted to that
    tensor's dtype: float to float of any width; integer to integer; float to integer only when every
    value is integral. A one-element tensor loads into a one-element entry of any shape
    (num_batches_tracked is 0-d in PyTorch); any other shape must match exactly.

    strict=True (the default): the file must hold exactly the state_dict keys, like torch's
    load_state_dict(strict=True); a checkpoint's optimizer state ('<param>.momentum' of SGD,
    '<param>.exp_avg' and '<param>.exp_avg_sq' of AdamW, told apart by the checkpoint's metadata) is left
    out first, so a checkpoint loads strictly too. strict=False: keys the model does not have are ignored
    (a checkpoint's '<name>.momentum' buffers, for instance) and a missing '*.num_batches_tracked' leaves the model's
    counter as it is; any other missing key is still an error, because a vcc trainer writes every
    parameter and running statistic and a file without one is another model's.

    Returns LoadResult(missing_keys, unexpected_keys), the keys not loaded. Raises VccLoadError naming
    the missing and unexpected keys, or the key whose shape or dtype does not fit; the model is left
    untouched when any check fails. FileNotFoundError when path does not exist.
    """
    import torch
    from safetensors.torch import load_file

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_trained: {path}: no such file")
    try:
        tensors = load_file(path)
    except Exception as e:
        raise VccLoadError(f"{path}: not a readable safetensors file: {e}") from e
    sd = model.state_dict()
    # a checkpoint (--checkpoint-dir) also holds the optimizer's state, '<param>.momentum' (SGD) or
    # '<param>.exp_avg' and '<param>.exp_avg_sq' (AdamW): not the model's, so they are never unexpected
    if _safetensors_metadata(path).get("vcc_checkpoint") == "1":
        def optimizer_state(k):
            return any(k.endswith(sfx) and k[:-len(sfx)] in sd for sfx in (".momentum", ".exp_avg", ".exp_avg_sq"))
        tensors = {k: v for k, v in tensors.items() if not optimizer_state(k)}
    missing = [k for k in sd if k not in tensors]
    unexpected = sorted(k for k in tensors if k not in sd)
    fatal_missing = missing if strict else [k for k in missing if not k.endswith("num_batches_tracked")]
    if fatal_missing or (strict and unexpected):
        parts = []
        if fatal_missing:
            parts.append(f"missing keys ({len(fatal_missing)}): {_key_list(fatal_missing)}")
        if strict and unexpected:
            parts.append(f"unexpected keys ({len(unexpected)}): {_key_list(unexpected)}")
        hint = ""
        if strict and missing and all(k.endswith("num_batches_tracked") for k in missing) and not unexpected:
            hint = (" (a trainer that does not write num_batches_tracked: load with strict=False to keep "
                    "the model's counters)")
        raise VccLoadError(f"{path}: does not match the model's state_dict: " + "; ".join(parts) + hint)

    converted = {}
    for k, dst in sd.items():
        if k not in tensors:
            continue
        src = tensors[k]
        if tuple(src.shape) != tuple(dst.shape):
            if not (src.numel() == 1 and dst.numel() == 1):
                raise VccLoadError(f"{path}: '{k}' has shape {list(src.shape)} in the file, "
                                   f"{list(dst.shape)} in the model")
            src = src.reshape(dst.shape)
        if src.dtype != dst.dtype:
            if dst.dtype == torch.bool or src.dtype == torch.bool:
                raise VccLoadError(f"{path}: '{k}' is {src.dtype} in the file, {dst.dtype} in the model")
            if dst.is_floating_point() != src.is_floating_point():
                if src.is_floating_point() and not torch.equal(src, torch.round(src)):
                    raise VccLoadError(f"{path}: '{k}' is {src.dtype} with non-integral values in the file, "
                                       f"{dst.dtype} in the model")
            src = src.to(dst.dtype)
        converted[k] = src
    with torch.no_grad():
        for k, src in converted.items():
            sd[k].copy_(src.to(sd[k].device))
    return LoadResult(missing_keys=missing, unexpected_keys=unexpected)


def _key_list(keys, limit=8):
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f", ... ({len(keys) - limit} more)" if len(keys) > limit else "")


def num_batches_tracked_from_metadata(proto):
    """{module name: num_batches_tracked} from an export_for_training file's metadata_props."""
    return {p.key[len(NUM_BATCHES_TRACKED_PREFIX):]: int(p.value) for p in proto.metadata_props
            if p.key.startswith(NUM_BATCHES_TRACKED_PREFIX) and re.fullmatch(r"[0-9]+", p.value)}
