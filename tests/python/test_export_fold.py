"""Reshapes from traced sizes (x.view(x.size(0), -1)) are folded into int64 initializers, exactly.

    .venv/bin/python tests/python/test_export_fold.py --vcc BUILD/vcc --work DIR [--skip-mc3]

Models, each exported with export_for_training (static batch):
  view     Conv3d-BN-ReLU, x.view(x.size(0), -1), Linear                       (Shape/Gather or Constant,
  view2    the same through x.view(x.size(0), x.size(1) * x.size(2), -1) first   Unsqueeze, Concat, Mul)
  mc3_18   torchvision's mc3_18 with its head written as fc(x.view(x.size(0), -1)) at (2, 3, 4, 32, 32)
Checked for each: no Shape, Gather, Unsqueeze, Squeeze, Concat, Slice, Cast or int64 Mul/Add/Sub/Div
node is left, every Reshape reads an int64 initializer, onnx.checker (full) passes; onnxruntime's
output of the file (graph optimizations off: its Conv+BatchNormalization fusion ignores
training_mode=1) against PyTorch's, within 1e-5 of max|PyTorch|:
  train    the file as written vs the pre-export model (a deep copy) in train mode: batch statistics;
  eval     a copy of the file whose BatchNormalization nodes have training_mode=0 vs the pre-export
           model in eval mode: this also reads the running-statistics initializers.
vcc compiles view, view2 and mc3_18 (its one-line plan summary, exit 0). fold_shape_subgraphs alone
on a graph with real Shape -> Gather nodes (a dynamic-batch export with the batch then fixed to 2):
nothing of them is left and onnxruntime still matches PyTorch.
dynamic_batch=True: the view model raises VccExportError naming the Shape node, writes no file and
leaves the model as it was; a model using torch.flatten exports with the symbolic dim "batch" on
input and output, runs in onnxruntime at batch 3 (within 1e-5), and vcc compiles it with
--shape batch=2.
"""

import argparse
import copy
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

from checklib import check, finish
import vcc_torch  # noqa: E402  (checklib puts python/ on sys.path)

ARITH = {"Mul", "Add", "Sub", "Div"}  # shape arithmetic when integer; the residual Add is float
SHAPE_OPS = {"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast"} | ARITH


class View(torch.nn.Module):
    def __init__(self, two_step=False):
        super().__init__()
        self.conv = torch.nn.Conv3d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm3d(4)
        self.fc = torch.nn.Linear(4 * 2 * 4 * 4, 5)
        self.two_step = two_step

    def forward(self, x):  # (N, 3, 2, 4, 4) -> (N, 5)
        x = torch.relu(self.bn(self.conv(x)))
        if self.two_step:
            x = x.view(x.size(0), x.size(1) * x.size(2), -1)
        return self.fc(x.view(x.size(0), -1))


class Flat(View):
    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.bn(self.conv(x))), 1))


class ViewHead(torch.nn.Module):
    """torchvision VideoResNet with x.view(x.size(0), -1) in place of x.flatten(1)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        n = self.net
        x = n.avgpool(n.layer4(n.layer3(n.layer2(n.layer1(n.stem(x))))))
        return n.fc(x.view(x.size(0), -1))


def ort_run(model_proto, x):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model_proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {"input": x.numpy()})[0]


def eval_form(proto):
    """A copy whose BatchNormalization nodes run in inference mode (running statistics)."""
    p = copy.deepcopy(proto)
    for n in p.graph.node:
        if n.op_type == "BatchNormalization":
            for a in n.attribute:
                if a.name == "training_mode":
                    a.i = 0
            del n.output[1:]
    return p


def compare(label, got, want, tol=1e-5):
    err = float(np.abs(got - want).max())
    scale = max(float(np.abs(want).max()), 1e-30)
    check(err <= tol * max(scale, 1.0), f"{label}: max|ort - torch| = {err:.2e} (max|torch| {scale:.3g}), "
                                        f"limit {tol:g} * max(1, max|torch|)")


def vcc_compiles(vcc, path, *extra):
    p = subprocess.run([vcc, path, *extra], capture_output=True, text=True)
    line = (p.stdout + p.stderr).strip().splitlines()
    check(p.returncode == 0, f"vcc {os.path.basename(path)} {' '.join(extra)}: exit {p.returncode}: "
                             f"{line[-1] if line else ''}")


def run_static(name, model, x, work, vcc):
    print(f"== {name}: input {list(x.shape)}")
    pre = copy.deepcopy(model)
    path = os.path.join(work, f"{name}.onnx")
    report = vcc_torch.export_for_training(model, x, path)
    proto = onnx.load(path)
    onnx.checker.check_model(path, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(proto).graph
    types = {v.name: v.type.tensor_type.elem_type for v in list(inferred.value_info) + list(inferred.output)}
    types.update({i.name: i.data_type for i in proto.graph.initializer})
    left = sorted({n.op_type for n in proto.graph.node if n.op_type in SHAPE_OPS and
                   (n.op_type not in ARITH or any(types.get(o) == onnx.TensorProto.INT64 for o in n.output))})
    check(not left and report.folded and report.removed_nodes > 0,
          f"folded {report.folded} ({report.removed_nodes} nodes removed); shape ops left: {left or 'none'}")
    inits = {i.name: i for i in proto.graph.initializer}
    shapes = []
    for n in proto.graph.node:
        if n.op_type == "Reshape":
            init = inits.get(n.input[1])
            shapes.append(None if init is None or init.data_type != onnx.TensorProto.INT64
                          else numpy_helper.to_array(init).tolist())
    check(shapes and None not in shapes, f"every Reshape reads an int64 initializer: {shapes}")

    with torch.no_grad():
        want_train = copy.deepcopy(pre).train()(x).numpy()
        want_eval = copy.deepcopy(pre).eval()(x).numpy()
    compare("train mode (batch statistics)", ort_run(proto, x), want_train)
    compare("eval mode (running-statistics initializers)", ort_run(eval_form(proto), x), want_eval)
    if vcc:
        vcc_compiles(vcc, path)


def run_shape_nodes(work):
    """fold_shape_subgraphs on a graph with real Shape -> Gather nodes (what exporters write when the
    batch is not traced as a constant): a dynamic-batch export whose batch dim is then set to 2."""
    import io
    import warnings

    print("== view_shape: fold_shape_subgraphs on Shape -> Gather -> Unsqueeze -> Concat")
    torch.manual_seed(7)
    model = View().train()
    x = torch.randn(2, 3, 2, 4, 4)
    with torch.no_grad():
        want = copy.deepcopy(model)(x).numpy()
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(copy.deepcopy(model), (x,), f, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=17, input_names=["input"],
                          output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    proto = onnx.load_from_string(f.getvalue())
    check("Shape" in {n.op_type for n in proto.graph.node}, "premise: the export has a Shape node")
    for v in (proto.graph.input[0], proto.graph.output[0]):
        v.type.tensor_type.shape.dim[0].dim_value = 2
    folded, removed = vcc_torch.fold_shape_subgraphs(proto)
    onnx.checker.check_model(proto, full_check=True)
    left = sorted({n.op_type for n in proto.graph.node} & (SHAPE_OPS - ARITH))
    check(folded and not left, f"folded {folded} ({removed} nodes removed); shape ops left: {left or 'none'}")
    compare("Shape-folded model, train mode", ort_run(proto, x), want)


def run_dynamic(work, vcc):
    print("== dynamic_batch=True")
    torch.manual_seed(5)
    model = View().train()
    before = copy.deepcopy(model.state_dict())
    path = os.path.join(work, "view_dynamic.onnx")
    if os.path.exists(path):
        os.remove(path)
    try:
        vcc_torch.export_for_training(model, torch.randn(2, 3, 2, 4, 4), path, dynamic_batch=True)
        check(False, "x.view(x.size(0), -1) with dynamic_batch=True raises VccExportError")
    except vcc_torch.VccExportError as e:
        msg = str(e)
        print(f"      error: {msg}")
        check("(Shape)" in msg and "Reshape" in msg and "dynamic_batch=False" in msg,
              "x.view(x.size(0), -1) with dynamic_batch=True: VccExportError naming the Shape node and its Reshape")
    check(not os.path.exists(path), "no file written on error")
    after = model.state_dict()
    check(all(torch.equal(before[k], after[k]) for k in before) and model.training,
          "the model is as before after the error")

    torch.manual_seed(6)
    flat = Flat().train()
    pre = copy.deepcopy(flat)
    path = os.path.join(work, "flat_dynamic.onnx")
    vcc_torch.export_for_training(flat, torch.randn(2, 3, 2, 4, 4), path, dynamic_batch=True)
    proto = onnx.load(path)
    dim_in = proto.graph.input[0].type.tensor_type.shape.dim[0]
    dim_out = proto.graph.output[0].type.tensor_type.shape.dim[0]
    check(dim_in.dim_param == "batch" and dim_out.dim_param == "batch",
          f"symbolic dim 0: input '{dim_in.dim_param}', output '{dim_out.dim_param}'")
    x3 = torch.randn(3, 3, 2, 4, 4)
    with torch.no_grad():
        want = pre.train()(x3).numpy()
    compare("torch.flatten model at batch 3", ort_run(proto, x3), want)
    if vcc:
        vcc_compiles(vcc, path, "--shape", "batch=2")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", help="vcc binary (compile checks are skipped without it)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--skip-mc3", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(2)
    os.makedirs(args.work, exist_ok=True)
    vcc = os.path.abspath(args.vcc) if args.vcc else None

    torch.manual_seed(0)
    run_static("view", View().train(), torch.randn(2, 3, 2, 4, 4), args.work, vcc)
    torch.manual_seed(1)
    run_static("view2", View(two_step=True).train(), torch.randn(2, 3, 2, 4, 4), args.work, vcc)
    if not args.skip_mc3:
        import torchvision
        torch.manual_seed(2)
        mc3 = ViewHead(torchvision.models.video.mc3_18(num_classes=10)).train()
        with torch.no_grad():  # running statistics away from (0, 1), so eval mode reads real values
            for m in mc3.modules():
                if isinstance(m, torch.nn.BatchNorm3d):
                    m.running_mean.uniform_(-0.1, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
        run_static("mc3_18_view", mc3, torch.randn(2, 3, 4, 32, 32), args.work, vcc)
    run_shape_nodes(args.work)
    run_dynamic(args.work, vcc)

    finish()


if __name__ == "__main__":
    main()
