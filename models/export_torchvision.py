#!/usr/bin/python3
"""Export a torchvision video ResNet to ONNX in training mode, with its weights and a data set.

    .venv/bin/python models/export_torchvision.py --model mc3_18 --shape 2x3x8x56x56 \
        --samples 4 --seed 0 --out /tmp/mc3 [--dynamic-batch]

Writes, under --out:

    <model>.onnx     vcc_torch.export_for_training (torch.onnx.export with training=TRAINING, opset
                     17, no constant folding, params embedded); one graph input 'input'
                     (N, C, T, H, W), one output 'logits' (N, K)
    <model>.pt       the model's state_dict (parameters, BN running stats, num_batches_tracked)
                     as it was BEFORE the export
    data.npy         float32 (S, C, T, H, W), standard normal, from numpy.random.default_rng(seed)
    labels.npy       int64 (S,), uniform in [0, K), from the same generator (drawn after the data)
    export_info.json the arguments, the op-type histogram and the facts checked below

Letters: N batch, C channels, T frames, H height, W width, S samples, K classes.

The export is python/vcc_torch.py's export_for_training. Exporting in training mode traces one
forward pass in train mode, which updates every BatchNorm's running_mean / running_var and
num_batches_tracked in place, and torch.onnx.export writes the updated buffers as the initializers.
The helper restores the model and rewrites those initializers with the pre-export values, so that
the ONNX file and <model>.pt describe the same starting point, and records each num_batches_tracked
(which ONNX BatchNormalization cannot hold) in the file's metadata_props under
"vcc.num_batches_tracked.<module>". This script checks again that the model is unchanged and that
every initializer equals the <model>.pt entry of the same name.

The export's dummy input is the first batch of data.npy (samples 0..N-1, wrapping around).
"""

import argparse
import collections
import copy
import json
import os
import sys
import warnings

from clipshape import parse_shape

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from vcc_torch import export_for_training  # noqa: E402

MODELS = ("r3d_18", "mc3_18", "r2plus1d_18")


def make_data(seed, samples, c, t, h, w, num_classes):
    """The data set both vcc's trainer and the PyTorch reference read: (S, C, T, H, W) f32, (S,) i64."""
    import numpy as np

    rng = np.random.default_rng(seed)
    data = rng.standard_normal((samples, c, t, h, w), dtype=np.float32)
    labels = rng.integers(0, num_classes, size=(samples,), dtype=np.int64)
    return data, labels


def attr_dict(node):
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def describe_graph(model, state_dict):
    """Facts about the exported graph that the compiler relies on; returned as a JSON-able dict."""
    g = model.graph
    hist = collections.Counter(n.op_type for n in g.node)
    init_names = [i.name for i in g.initializer]
    init_set = set(init_names)
    input_names = [i.name for i in g.input]
    output_names = [o.name for o in g.output]
    bn_nodes = [n for n in g.node if n.op_type == "BatchNormalization"]
    bn_attrs = sorted({json.dumps({k: (round(v, 9) if isinstance(v, float) else v)
                                   for k, v in attr_dict(n).items()}, sort_keys=True)
                       for n in bn_nodes})
    bn_stat_outputs = [o for n in bn_nodes for o in list(n.output)[1:] if o]
    gemm = [{"name": n.name, "inputs": list(n.input), "attrs": attr_dict(n)}
            for n in g.node if n.op_type == "Gemm"]
    producers = {o: n for n in g.node for o in n.output}
    before_gemm = []
    for n in g.node:
        if n.op_type == "Gemm" and n.input[0] in producers:
            p = producers[n.input[0]]
            before_gemm.append({"op": p.op_type, "name": p.name, "attrs": attr_dict(p)})
    sd_keys = set(state_dict)
    return {
        "op_histogram": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
        "num_nodes": len(g.node),
        "graph_inputs": input_names,
        "graph_outputs": output_names,
        "num_initializers": len(init_names),
        "initializers_listed_as_inputs": sorted(init_set & set(input_names)),
        "initializers_not_in_state_dict": sorted(init_set - sd_keys),
        "state_dict_keys_not_initializers": sorted(sd_keys - init_set),
        "batchnorm_count": len(bn_nodes),
        "batchnorm_attribute_sets": [json.loads(s) for s in bn_attrs],
        "batchnorm_output_counts": sorted({len([o for o in n.output if o]) for n in bn_nodes}),
        "batchnorm_stat_outputs_that_are_graph_outputs": sorted(set(bn_stat_outputs) & set(output_names)),
        "batchnorm_stat_outputs_consumed_by_nodes": sorted(
            set(bn_stat_outputs) & {i for n in g.node for i in n.input}),
        "op_feeding_gemm": before_gemm,
        "gemm": gemm,
        "opset_imports": {(o.domain or "ai.onnx"): o.version for o in model.opset_import},
    }


def print_facts(facts, out=sys.stdout):
    p = lambda *a: print(*a, file=out)
    p("op-type histogram:")
    for op, n in facts["op_histogram"].items():
        p(f"  {op:<20} {n:4d}")
    p(f"  {'(total)':<20} {facts['num_nodes']:4d}")
    p(f"graph inputs: {facts['graph_inputs']}   graph outputs: {facts['graph_outputs']}")
    p(f"initializers: {facts['num_initializers']}; also listed as graph inputs: "
      f"{len(facts['initializers_listed_as_inputs'])}")
    p(f"initializers not in state_dict: {facts['initializers_not_in_state_dict'] or 'none'}")
    missing = facts["state_dict_keys_not_initializers"]
    kinds = collections.Counter(k.rsplit(".", 1)[-1] for k in missing)
    p(f"state_dict keys with no initializer: {len(missing)} ({dict(kinds) or 'none'})")
    p(f"BatchNormalization: {facts['batchnorm_count']} nodes, outputs per node "
      f"{facts['batchnorm_output_counts']}, attributes {facts['batchnorm_attribute_sets']}")
    p(f"  running-stat outputs that are graph outputs: "
      f"{len(facts['batchnorm_stat_outputs_that_are_graph_outputs'])}, consumed by a node: "
      f"{len(facts['batchnorm_stat_outputs_consumed_by_nodes'])}")
    for fg, gm in zip(facts["op_feeding_gemm"], facts["gemm"]):
        p(f"before Gemm '{gm['name']}': {fg['op']} {fg['attrs']}; Gemm attrs {gm['attrs']}, "
          f"inputs {gm['inputs']}")


def check_ort(onnx_path, model, batch, out=sys.stdout):
    """Run onnxruntime on one batch and compare logits with a train-mode PyTorch forward."""
    import numpy as np
    import torch

    try:
        import onnxruntime as ort
    except ImportError:
        print("check-ort: onnxruntime is not installed; skipped", file=out)
        return None
    try:
        # no graph optimizations: onnxruntime's Conv+BatchNormalization fusion ignores training_mode=1
        # and normalizes with the running statistics
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
        got = sess.run(["logits"], {"input": batch})[0]
    except Exception as e:  # ORT builds differ in training-mode BN support
        print(f"check-ort: onnxruntime could not run the model: {e}", file=out)
        return None
    m = copy.deepcopy(model).train()
    with torch.no_grad():
        want = m(torch.from_numpy(batch)).numpy()
    err = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
    print(f"check-ort: onnxruntime vs PyTorch train-mode logits, max|a-b|/max|b| = {err:.3e}", file=out)
    return err


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Export a torchvision video ResNet (random init) to ONNX in training mode, "
                    "with its initial state dict and a seeded data set.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", required=True, choices=MODELS, help="torchvision.models.video constructor")
    ap.add_argument("--shape", default="2x3x8x56x56", help="one batch, N x C x T x H x W")
    ap.add_argument("--samples", type=int, default=4, help="samples S in data.npy / labels.npy")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed for the weights, numpy seed for data")
    ap.add_argument("--num-classes", type=int, default=400, help="classifier outputs K")
    ap.add_argument("--dynamic-batch", action="store_true",
                    help="export the batch dim as the symbolic dim 'batch' (vcc --shape batch=N, vcc --fit)")
    ap.add_argument("--opset", type=int, default=17, help="ONNX opset version")
    ap.add_argument("--out", required=True, help="output directory (created if missing)")
    ap.add_argument("--check-ort", action="store_true",
                    help="also run the export in onnxruntime on the first batch and compare logits")
    ap.add_argument("--show-warnings", action="store_true",
                    help="show the exporter's UserWarnings (its expected 'Removing mutation' warnings "
                         "about num_batches_tracked are always hidden: the file's metadata holds the counts)")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    args = ap.parse_args(argv)

    try:
        n, c, t, h, w = parse_shape(args.shape)
    except ValueError as e:
        ap.error(str(e))
    if args.samples <= 0:
        ap.error("--samples must be positive")
    if args.num_classes <= 0:
        ap.error("--num-classes must be positive")
    if c != 3:
        ap.error(f"--shape {args.shape}: torchvision video ResNets take C=3 channels, got C={c}")

    import numpy as np
    import onnx
    import torch
    import torchvision
    from onnx import numpy_helper

    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, f"{args.model}.onnx")
    pt_path = os.path.join(args.out, f"{args.model}.pt")

    # Data first (it does not touch torch's RNG), so the export can trace the real first batch.
    data, labels = make_data(args.seed, args.samples, c, t, h, w, args.num_classes)
    first = np.ascontiguousarray(data[[i % args.samples for i in range(n)]])

    torch.manual_seed(args.seed)
    ctor = getattr(torchvision.models.video, args.model)
    model = ctor(num_classes=args.num_classes)
    model.train()
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}

    with warnings.catch_warnings():
        if not args.show_warnings:
            warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx.*")
        try:
            report = export_for_training(model, torch.from_numpy(first), onnx_path, opset_version=args.opset,
                                         dynamic_batch=args.dynamic_batch)
        except Exception as e:
            sys.exit(f"{onnx_path}: export failed: {e}")
    mutated, patched = report.mutated_by_trace, report.initializers_restored

    # The helper's promises, checked independently: the model is as before, and every initializer
    # named like a state_dict entry holds the saved (pre-export) value.
    after = model.state_dict()
    changed = sorted(k for k in before if not torch.equal(before[k], after[k]))
    if changed or not model.training:
        sys.exit(f"export_for_training changed the model: entries {changed[:4]}, training={model.training}")
    proto = onnx.load(onnx_path)
    checked = 0
    for init in proto.graph.initializer:
        if init.name not in before:
            continue
        have, want = numpy_helper.to_array(init), before[init.name].numpy()
        if have.shape != want.shape or have.dtype != want.dtype or not np.array_equal(have, want):
            sys.exit(f"{onnx_path}: initializer '{init.name}' ({have.dtype}{list(have.shape)}) differs from "
                     f"the saved state dict ({want.dtype}{list(want.shape)})")
        checked += 1

    torch.save(before, pt_path)
    np.save(os.path.join(args.out, "data.npy"), data)
    np.save(os.path.join(args.out, "labels.npy"), labels)

    facts = describe_graph(proto, before)
    print(f"exported {args.model} (K={args.num_classes}, batch {n}x{c}x{t}x{h}x{w}, opset {args.opset}) "
          f"-> {onnx_path} ({os.path.getsize(onnx_path) / 1e6:.1f} MB)")
    print("onnx.checker: ok (full_check, by export_for_training)")
    print_facts(facts)
    print(f"the export's trace mutated {len(mutated)} state_dict entries "
          f"({dict(collections.Counter(k.rsplit('.', 1)[-1] for k in mutated)) or 'none'}); "
          f"export_for_training restored them and rewrote {len(patched)} of {checked} matching "
          f"initializers with the pre-export values; {len(report.folded)} shape values folded")
    print(f"wrote {pt_path} (pre-export state dict, {len(before)} entries), data.npy {list(data.shape)} "
          f"float32, labels.npy {list(labels.shape)} int64")

    ort_err = check_ort(onnx_path, model, first) if args.check_ort else None

    info = {
        "model": args.model, "shape": [n, c, t, h, w], "samples": args.samples, "seed": args.seed,
        "num_classes": args.num_classes, "opset": args.opset,
        "torch": torch.__version__, "torchvision": torchvision.__version__, "onnx": onnx.__version__,
        "export_mutated_state": mutated, "initializers_rewritten": patched,
        "shape_values_folded": report.folded, "num_batches_tracked": report.num_batches_tracked,
        "num_parameters": int(sum(p.numel() for p in model.parameters())),
        "ort_logits_rel_err": ort_err,
        **facts,
    }
    with open(os.path.join(args.out, "export_info.json"), "w") as f:
        json.dump(info, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
