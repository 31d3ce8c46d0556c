"""ONNX backend conformance: vcc against the ONNX project's own node test data.

    run_node_tests.py --vcc BUILD/vcc --data DIR --work DIR [--only SUBSTRING]

DIR is ../shared/onnx-node-tests (model.onnx + test_data_set_*/{input,output}_*.pb per test, from
onnx/backend/test/data). For every test model (top level, pytorch-converted/, pytorch-operator/,
simple/, and light/'s whole networks):

  - vcc --forward-only either compiles it or refuses it. A refusal must be clean: exit status 1, every
    line on stderr naming the model file (or indented under one: the lines of a report of unsupported
    constructs), no output left behind, never a crash.
  - What vcc compiles is built with the command vcc printed and run on every test_data_set; each output
    must match the expected one: |got - want| <= 1e-5 + 1e-4 * |want| (shapes and dtypes exact).
  - The tests in SUPPORTED must compile: they are the ONNX forms of the ops vcc trains.

Harness adaptations, each stated here: vcc needs static shapes, so a Reshape shape that a test feeds as
a graph input is baked into the model as an initializer (its value is the test's input). A model made
only of ops that vcc evaluates while compiling (FOLDED_OPS: shape arithmetic, comparisons, masks, index
lists) gets every graph input that a node reads for its values baked in as a Constant node holding the
test's values (Constants are compile-time values; float initializers would be trained parameters), so
that vcc folds the whole graph and the program only writes the constant outputs; inputs that only
Shape or Size read stay inputs (their shape is what those ops take). Every output
is compared with the expected one as it is: forward-only programs follow the ONNX spec (for example,
BatchNormalization's training mode updates running_var with the biased batch variance there, while
vcc's trainers follow PyTorch's unbiased one).
Exits 77 (skipped) when DIR does not exist, except under CI=true, where that is a failure.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

# ONNX node tests of the forms vcc supports; each must compile, run and match.
SUPPORTED = [
    "test_basic_conv_with_padding", "test_basic_conv_without_padding", "test_conv_with_autopad_same",
    "test_conv_with_strides_and_asymmetric_padding", "test_conv_with_strides_no_padding",
    "test_conv_with_strides_padding",
    "test_batchnorm_epsilon_training_mode", "test_batchnorm_example_training_mode",
    "test_batchnorm_epsilon", "test_batchnorm_example", "test_BatchNorm1d_3d_input_eval", "test_BatchNorm2d_eval",
    "test_BatchNorm2d_momentum_eval", "test_BatchNorm3d_eval", "test_BatchNorm3d_momentum_eval",
    "test_relu", "test_add",
    "test_globalaveragepool", "test_globalaveragepool_precomputed",
    "test_flatten_axis0", "test_flatten_axis1", "test_flatten_axis2", "test_flatten_axis3",
    "test_flatten_default_axis", "test_flatten_negative_axis1", "test_flatten_negative_axis2",
    "test_flatten_negative_axis3", "test_flatten_negative_axis4",
    "test_gemm_all_attributes", "test_gemm_alpha", "test_gemm_beta", "test_gemm_default_matrix_bias",
    "test_gemm_default_no_bias", "test_gemm_default_scalar_bias", "test_gemm_default_single_elem_vector_bias",
    "test_gemm_default_vector_bias", "test_gemm_default_zero_bias", "test_gemm_transposeA", "test_gemm_transposeB",
    "test_identity",
    "test_reshape_extended_dims", "test_reshape_negative_dim", "test_reshape_negative_extended_dims",
    "test_reshape_one_dim", "test_reshape_reduced_dims", "test_reshape_reordered_all_dims",
    "test_reshape_reordered_last_dims", "test_reshape_zero_and_negative_dim", "test_reshape_zero_dim",
    # const: evaluated while compiling (inputs baked as Constants where FOLDED_OPS says)
    "test_constant", "test_constantofshape_float_ones", "test_constantofshape_int_shape_zero",
    "test_constantofshape_int_zeros",
    "test_shape", "test_shape_clip_end", "test_shape_clip_start", "test_shape_end_1", "test_shape_end_negative_1",
    "test_shape_example", "test_shape_start_1", "test_shape_start_1_end_2", "test_shape_start_1_end_negative_1",
    "test_shape_start_negative_1", "test_size", "test_size_example",
    "test_range_float_type_positive_delta", "test_range_int32_type_negative_delta",
    "test_gather_0", "test_gather_1", "test_gather_2d_indices", "test_gather_negative_indices",
    "test_where_example", "test_where_long_example", "test_equal", "test_equal_bcast",
]


# Ops of the models whose inputs are baked as Constants (the const family, and Gather over constants).
FOLDED_OPS = {"Shape", "Size", "ConstantOfShape", "Range", "Equal", "Less", "LessOrEqual", "Greater",
              "GreaterOrEqual", "Not", "And", "Or", "Xor", "Where", "Gather"}


def bake_folded_inputs(model, inputs):
    """Turn the graph inputs of a FOLDED_OPS-only model that a node reads for its values into Constant
    nodes holding the test's values; returns the inputs left to feed."""
    shape_only = {i for i in (x.name for x in model.graph.input)
                  if all(n.op_type in ("Shape", "Size") for n in model.graph.node if i in n.input)}
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    kept, consts = [], []
    for name, arr in zip(names, inputs):
        if name in shape_only:
            kept.append(arr)
            continue
        consts.append(onnx.helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name)))
        for i, vi in enumerate(model.graph.input):
            if vi.name == name:
                del model.graph.input[i]
                break
    nodes = consts + list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return kept


def bake_shape_inputs(model, inputs):
    """Turn graph inputs that feed a Reshape's shape into initializers holding the test's values."""
    shape_inputs = {n.input[1] for n in model.graph.node if n.op_type == "Reshape" and len(n.input) > 1}
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    kept = []
    for name, arr in zip(names, inputs):
        if name in shape_inputs:
            model.graph.initializer.append(numpy_helper.from_array(arr, name))
            for i, vi in enumerate(model.graph.input):
                if vi.name == name:
                    del model.graph.input[i]
                    break
        else:
            kept.append(arr)
    return kept


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        if os.environ.get("CI") == "true":  # CI has the data: its absence there is a failure, not a skip
            sys.exit("FAIL: %s not found (CI=true)" % args.data)
        print("skip: %s not found" % args.data)
        sys.exit(77)
    vcc = os.path.abspath(args.vcc)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    tests = sorted(glob.glob(os.path.join(args.data, "test_*")))
    for sub in ("pytorch-converted", "pytorch-operator", "simple"):
        tests += sorted(glob.glob(os.path.join(args.data, sub, "test_*")))
    models = [(t, os.path.join(t, "model.onnx")) for t in tests]
    models += [(None, m) for m in sorted(glob.glob(os.path.join(args.data, "light", "*.onnx")))]
    models = [(t, m) for t, m in models if args.only in m]

    failures, passed, refused, refusals = [], [], 0, {}
    for tdir, path in models:
        name = os.path.basename(tdir) if tdir else os.path.basename(path)[:-5]
        work = os.path.join(args.work, name)
        os.makedirs(work, exist_ok=True)
        sets = sorted(glob.glob(os.path.join(tdir, "test_data_set_*"))) if tdir else []
        model = onnx.load(path)
        src = path
        feeds = []
        if sets:
            feeds = [[numpy_helper.to_array(onnx.load_tensor(p))
                      for p in sorted(glob.glob(os.path.join(s, "input_*.pb")),
                                      key=lambda p: int(p.rsplit("_", 1)[1][:-3]))] for s in sets]
            bake = None
            if model.graph.node and all(n.op_type in FOLDED_OPS for n in model.graph.node):
                bake = bake_folded_inputs
            elif any(n.op_type == "Reshape" for n in model.graph.node):
                bake = bake_shape_inputs
            if bake and len(sets) > 1 and bake is bake_folded_inputs:
                sets, feeds = sets[:1], feeds[:1]  # the baked values are those of the first data set
            if bake:
                feeds = [bake(onnx.load(path), f) for f in feeds]
                bake(model, [numpy_helper.to_array(onnx.load_tensor(p)) for p in sorted(
                    glob.glob(os.path.join(sets[0], "input_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))])
                src = os.path.join(work, "model.onnx")
                onnx.save(model, src)
        p = subprocess.run([vcc, src, "--forward-only", "-o", "fwd.c"], cwd=work, capture_output=True, text=True)
        if p.returncode != 0:
            lines = p.stderr.strip().splitlines()
            # every line names the model, or continues a report (indented under a line that does)
            clean = (p.returncode == 1 and lines and lines[0].startswith(src)
                     and all(l.startswith(src) or l.startswith("  ") for l in lines)
                     and not set(os.listdir(work)) - {"model.onnx"})
            if not clean:
                failures.append("%s: unclean refusal (rc %d): %s" % (name, p.returncode, p.stderr.strip()[:300]))
            elif name in SUPPORTED:
                failures.append("%s: supported but refused: %s" % (name, lines[0]))
            refusals[name] = " ".join(l.strip() for l in lines[:3])[:240]
            refused += 1
            continue
        if not sets:
            passed.append(name)  # compiled; light/ nets store no input, nothing to compare
            continue
        build = p.stdout.strip()
        b = subprocess.run(build, cwd=work, shell=True, capture_output=True, text=True)
        if b.returncode:
            failures.append("%s: build failed: %s" % (name, b.stderr.strip()[:300]))
            continue
        ok = True
        for s, inputs in zip(sets, feeds):
            want = [numpy_helper.to_array(onnx.load_tensor(q)) for q in sorted(
                glob.glob(os.path.join(s, "output_*.pb")), key=lambda q: int(q.rsplit("_", 1)[1][:-3]))]
            ins, outs = [], []
            for i, arr in enumerate(inputs):
                ins.append(os.path.join(work, "in%d.npy" % i))
                np.save(ins[-1], arr)
            for i in range(len(want)):
                outs.append(os.path.join(work, "out%d.npy" % i))
            r = subprocess.run(["./fwd"] + ins + ["-o"] + outs, cwd=work, capture_output=True, text=True)
            if r.returncode:
                failures.append("%s: run failed: %s" % (name, r.stderr.strip()[:300]))
                ok = False
                break
            for i, w in enumerate(want):
                got = np.load(outs[i])
                if got.shape != w.shape or got.dtype != w.dtype:
                    failures.append("%s: output %d is %s %s, expected %s %s" % (name, i, got.dtype, got.shape,
                                                                                w.dtype, w.shape))
                    ok = False
                elif not np.allclose(got, w, rtol=1e-4, atol=1e-5):
                    failures.append("%s: output %d differs by up to %.3e" % (
                        name, i, float(np.abs(got.astype(np.float64) - w).max())))
                    ok = False
        if ok:
            passed.append(name)
    missing = [t for t in SUPPORTED if t not in passed and any(t == os.path.basename(x or "") for x, _ in models)]
    # the tests whose ops are all vcc's (vcc --ops): how many pass, and why the others do not
    vcc_ops = {l.split()[0] for l in subprocess.run([vcc, "--ops"], capture_output=True, text=True).stdout.splitlines()}
    in_set, why = [], {}
    for tdir, path in models:
        name = os.path.basename(tdir) if tdir else os.path.basename(path)[:-5]
        m = onnx.load(path, load_external_data=False)
        if all(n.domain in ("", "ai.onnx") and n.op_type in vcc_ops for n in m.graph.node):
            in_set.append(name)
    for f in failures:
        why[f.split(":", 1)[0]] = f.split(":", 1)[1].strip()
    for name, reason in refusals.items():
        why.setdefault(name, "refused: " + reason)
    not_passing = [n for n in in_set if n not in passed]
    rate = 100.0 * (len(in_set) - len(not_passing)) / max(len(in_set), 1)
    print("%d tests use only ops vcc has: %d pass (%.1f%%)" % (len(in_set), len(in_set) - len(not_passing), rate))
    for n in not_passing:
        print("  not passing: %s: %s" % (n, why.get(n, "?")))
    print("%d models: %d compiled and matched, %d refused cleanly, %d failures" % (
        len(models), len(passed), refused, len(failures)))
    print("matched: " + " ".join(passed))
    for f in failures:
        print("FAIL " + f)
    if failures or missing:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
