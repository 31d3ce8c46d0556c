"""export_for_training leaves the model as it was and writes the pre-export state into the ONNX file.

    .venv/bin/python tests/python/test_export_state.py --work DIR [--skip-mc3]

Two models, each with non-default BatchNorm running statistics and num_batches_tracked (so an
export that kept the trace's values, or wrote zeros, would differ):
  small   Conv3d-BN-ReLU-Dropout-Conv3d-BN(frozen: eval mode)-ReLU-pool-Linear, one parameter with
          requires_grad=False, the root in train mode;
  mc3_18  torchvision's, at (2, 3, 4, 32, 32).

First, what a plain torch.onnx.export(training=TRAINING) does to a deep copy (the reason for the
helper), printed and asserted as the premise of this test: which state_dict entries change, whether
the ONNX running-stat initializers hold the pre- or post-trace values, what happens to the frozen
BatchNorm's eval flag. Then export_for_training on the model itself, checked against a deep copy
taken before it: every state_dict entry bit-identical (and the same tensor objects), every module's
train/eval flag, every requires_grad, torch's RNG state; in the file: every initializer named like a
state_dict entry equal (bitwise) to the pre-export entry, metadata "vcc.export" = "training" and one
"vcc.num_batches_tracked.<module>" per BatchNorm holding the pre-export count; onnx.checker passes.
"""

import argparse
import copy
import io
import os
import warnings

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from checklib import check, finish
import vcc_torch  # noqa: E402  (checklib puts python/ on sys.path)


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv3d(3, 4, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm3d(4)
        self.drop = torch.nn.Dropout(0.25)
        self.conv2 = torch.nn.Conv3d(4, 6, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm3d(6, momentum=0.3)
        self.fc = torch.nn.Linear(6, 5)

    def forward(self, x):  # (N, 3, T, H, W) -> (N, 5)
        x = self.drop(torch.relu(self.bn1(self.conv1(x))))
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool3d(x, 1), 1))


def scramble_stats(model, seed):
    """Non-default running statistics and counters, so pre- and post-trace values are told apart."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for i, (_, m) in enumerate(vcc_torch._batchnorm_modules(model)):
            m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g))
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
            m.num_batches_tracked.fill_(1000 + 37 * i)


def bits(t):
    return vcc_torch._tensor_bytes(t)


def naive_export(model, x):
    """A plain training-mode export of a deep copy: (mutated keys, post-trace state, proto, copy)."""
    m = copy.deepcopy(model)
    pre = {k: v.clone() for k, v in m.state_dict().items()}
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), f, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          opset_version=17, input_names=["input"], output_names=["logits"])
    post = {k: v.clone() for k, v in m.state_dict().items()}
    mutated = sorted(k for k in pre if bits(pre[k]) != bits(post[k]))
    return mutated, pre, post, onnx.load_from_string(f.getvalue()), m


def run(name, model, x, work):
    print(f"== {name}: input {list(x.shape)}")
    bn = vcc_torch._batchnorm_modules(model)
    mutated, pre, post, proto, naive_model = naive_export(model, x)
    by_kind = sorted({k.rsplit(".", 1)[-1] for k in mutated})
    print(f"      plain export mutates {len(mutated)} entries, kinds {by_kind}")
    stat_keys = [f"{n}.{s}" for n, _ in bn for s in ("running_mean", "running_var", "num_batches_tracked")]
    check(sorted(stat_keys) == mutated,
          f"premise: the plain export's trace mutates exactly every BN's running_mean, running_var and "
          f"num_batches_tracked ({len(stat_keys)} entries), nothing else")
    nbt_ok = all(int(post[f"{n}.num_batches_tracked"]) == int(pre[f"{n}.num_batches_tracked"]) + 1 for n, _ in bn)
    check(nbt_ok, "premise: num_batches_tracked + 1 per BN")
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    stats = [k for k in stat_keys if not k.endswith("num_batches_tracked")]
    holds_post = all(np.array_equal(inits[k], post[k].numpy()) and not np.array_equal(inits[k], pre[k].numpy())
                     for k in stats)
    check(holds_post, f"premise: the plain export's {len(stats)} running-stat initializers hold the post-trace "
                      f"values, not the pre-export ones")
    check(not any(k.endswith("num_batches_tracked") for k in inits),
          "premise: num_batches_tracked is not exported (ONNX BatchNormalization has no counter)")
    modes_changed = [n for (n, a), (_, b) in zip(model.named_modules(), naive_model.named_modules())
                     if a.training != b.training]
    print(f"      plain export changes the train/eval flag of: {modes_changed or 'none'}")

    before = copy.deepcopy(model)
    objects = {k: v for k, v in model.state_dict(keep_vars=True).items()}
    rng = torch.get_rng_state()
    path = os.path.join(work, f"{name}.onnx")
    report = vcc_torch.export_for_training(model, x, path)
    rng_after = torch.get_rng_state()
    print(f"      export_for_training: mutated_by_trace {len(report.mutated_by_trace)}, initializers "
          f"restored {len(report.initializers_restored)}, folded {report.folded}")

    sd, ref = model.state_dict(keep_vars=True), before.state_dict()
    check(list(sd) == list(ref), f"state_dict keys unchanged ({len(ref)})")
    diff = [k for k in ref if bits(sd[k]) != bits(ref[k]) or sd[k].dtype != ref[k].dtype]
    check(not diff, f"state_dict bit-identical to the pre-export copy ({len(ref)} entries): differ {diff[:4]}")
    check(all(sd[k] is objects[k] for k in objects), "the same tensor objects (nothing replaced)")
    modes = [n for (n, a), (_, b) in zip(model.named_modules(), before.named_modules()) if a.training != b.training]
    check(not modes, f"every module's train/eval flag as before: differ {modes}")
    rg = [n for (n, a), (_, b) in zip(model.named_parameters(), before.named_parameters())
          if a.requires_grad != b.requires_grad]
    check(not rg, f"every requires_grad as before: differ {rg}")
    check(torch.equal(rng, rng_after), "torch's CPU RNG state as before")
    check(sorted(report.mutated_by_trace) == mutated, "the report names the entries the trace mutated")

    out = onnx.load(path)
    onnx.checker.check_model(path, full_check=True)
    inits = {i.name: i for i in out.graph.initializer}
    named = [k for k in ref if k in inits]
    bad = [k for k in named if numpy_helper.to_array(inits[k]).tobytes() != bits(ref[k])]
    check(not bad and all(k in named for k in stats),
          f"{len(named)} initializers named like state_dict entries, the {len(stats)} running statistics "
          f"among them, equal the pre-export entries bitwise: differ {bad[:4]}")
    bn_nodes = [n for n in out.graph.node if n.op_type == "BatchNormalization"]
    train_attr = all(any(a.name == "training_mode" and a.i == 1 for a in n.attribute) for n in bn_nodes)
    check(len(bn_nodes) == len(bn) and train_attr, f"{len(bn_nodes)} BatchNormalization nodes, training_mode=1")
    meta = {p.key: p.value for p in out.metadata_props}
    want = {"vcc.export": "training"}
    want.update({f"vcc.num_batches_tracked.{n}": str(int(ref[f"{n}.num_batches_tracked"])) for n, _ in bn})
    check(meta == want, f"metadata_props: {len(meta)} entries, e.g. "
                        f"{dict(list(meta.items())[:2])}; expected {len(want)}")
    check(vcc_torch.num_batches_tracked_from_metadata(out) == {n: int(ref[f"{n}.num_batches_tracked"])
                                                               for n, _ in bn},
          "num_batches_tracked_from_metadata reads the counts back")
    inp, outp = out.graph.input[0], out.graph.output[0]
    dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    check(inp.name == "input" and outp.name == "logits" and dims == list(x.shape),
          f"graph input '{inp.name}' {dims}, output '{outp.name}'")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True)
    ap.add_argument("--skip-mc3", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(2)
    os.makedirs(args.work, exist_ok=True)

    torch.manual_seed(0)
    small = Small().train()
    scramble_stats(small, 1)
    small.bn2.eval()  # a frozen BatchNorm
    small.conv1.bias.requires_grad_(False)
    run("small", small, torch.randn(3, 3, 4, 6, 6), args.work)

    # the whole model in eval mode: the export traces in train mode and must hand back eval
    torch.manual_seed(1)
    small_eval = Small().eval()
    scramble_stats(small_eval, 2)
    run("small_eval", small_eval, torch.randn(2, 3, 2, 4, 4), args.work)

    if not args.skip_mc3:
        import torchvision
        torch.manual_seed(0)
        mc3 = torchvision.models.video.mc3_18(num_classes=10).train()
        scramble_stats(mc3, 3)
        run("mc3_18", mc3, torch.randn(2, 3, 4, 32, 32), args.work)

    finish()


if __name__ == "__main__":
    main()
