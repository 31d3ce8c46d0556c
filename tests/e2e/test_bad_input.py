"""Bad input gets a clear one-line error, a non-zero exit and no output left behind.

    test_bad_input.py --vcc BUILD/vcc --model-dir DIR --work DIR

DIR holds a good small model (tiny_models.py's res3d: model.onnx, data.npy, labels.npy).
vcc cases (each run with -o train.c in an empty folder; afterwards the folder must still be empty):
  truncated .onnx, a text file named .onnx, a missing file, a model with two unsupported ops (both listed
  in one line), an unbound symbolic batch dim (the message names the input and the dim), an unwritable
  output folder.
  Also: dims whose byte size passes 2^47 (no overflow), external data more than vcc may allocate (a 64
  GiB sparse file, vcc's address space capped at 4 GiB: an error naming the initializer), a zero batch, an attribute of the wrong type,
  auto_pad with pads, a cycle, nodes listing more inputs or outputs than their op has (an Add with 3
  inputs, a Conv with 4, a Relu with 2 outputs); and, as usage errors (status 2), malformed --shape values, a repeated
  --shape, --momentum nan, an output name that is not a plain file name, -o without a value.
trainer cases (train.c built from the good model): data .npy of the wrong shape, of the wrong dtype,
  labels of the wrong dtype, labels out of range, a missing data file, a truncated .npy, a missing
  weights file, a NaN/negative/infinite hyperparameter, --steps past LONG_MAX, --out into a missing
  folder (refused before training). Each must exit 1 with one line on stderr naming the file or flag
  (a report of unsupported constructs: a first line naming the file, its other lines indented).
Round trips: --out and --checkpoint-dir files load again with --weights. Names from the model (a node
name closing a comment, a tensor name with a quote, a trigraph and a newline) reach the generated C
escaped: the trainer builds with -Werror and runs unchanged.
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

failures = []


def check(label, cmd, cwd, must_name, expect_rc=None, clean_dir=None):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    err = p.stderr.strip().splitlines()
    ok = p.returncode != 0 and (expect_rc is None or p.returncode == expect_rc)
    # one line, or one report: a first line naming the file and indented lines under it
    ok = ok and len(err) >= 1 and all(l.startswith("  ") for l in err[1:])
    ok = ok and all(s in p.stderr for s in must_name)
    left = sorted(os.listdir(clean_dir)) if clean_dir else []
    ok = ok and not left
    print("%-4s %-34s rc=%d  %s%s" % ("ok" if ok else "FAIL", label, p.returncode, err[0] if err else "(no message)",
                                      ("  left behind: %s" % left) if left else ""))
    if not ok:
        failures.append(label)
        print("     stderr had %d lines:\n     %s" % (len(err), "\n     ".join(err)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    vcc = os.path.abspath(args.vcc)
    src = os.path.abspath(args.model_dir)
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    good = os.path.join(src, "model.onnx")

    # ---- inputs vcc must refuse
    blob = open(good, "rb").read()
    inputs = os.path.join(work, "inputs")
    os.makedirs(inputs)
    open(os.path.join(inputs, "truncated.onnx"), "wb").write(blob[: len(blob) // 3])
    open(os.path.join(inputs, "text.onnx"), "w").write("not a model\njust text\n")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("LpPool", ["x"], ["p"], name="/pool/LpPool", kernel_shape=[2, 2, 2]),
             helper.make_node("GlobalAveragePool", ["p"], ["g"], name="/gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="/flat"),
             helper.make_node("Hardmax", ["f"], ["y"], name="/head/Hardmax")]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, os.path.join(inputs, "unsupported.onnx"))
    sym = onnx.load(good)
    sym.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(sym, os.path.join(inputs, "symbolic.onnx"))

    # sizes that overflow int64 if multiplied unchecked; an empty batch
    big = onnx.load(good)
    big.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1 << 40
    onnx.save(big, os.path.join(inputs, "huge_batch.onnx"))
    zero = onnx.load(good)
    zero.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 0
    onnx.save(zero, os.path.join(inputs, "zero_batch.onnx"))
    # an attribute of the wrong type, auto_pad with pads, a cycle
    bad_attr = onnx.load(good)
    conv = next(n for n in bad_attr.graph.node if n.op_type == "Conv")
    for i, a in enumerate(conv.attribute):
        if a.name == "kernel_shape":
            del conv.attribute[i]
            break
    conv.attribute.append(helper.make_attribute("kernel_shape", [3.0, 3.0, 3.0]))
    onnx.save(bad_attr, os.path.join(inputs, "attr_type.onnx"))
    both = onnx.load(good)
    next(n for n in both.graph.node if n.op_type == "Conv").attribute.append(
        helper.make_attribute("auto_pad", "SAME_UPPER"))
    onnx.save(both, os.path.join(inputs, "autopad_pads.onnx"))
    cyc = onnx.load(good)
    relu = next(n for n in cyc.graph.node if n.op_type == "Relu")
    conv = next(n for n in cyc.graph.node if n.op_type == "Conv")
    conv.input[0] = relu.output[0]  # the first conv now reads a value computed after it
    onnx.save(cyc, os.path.join(inputs, "cycle.onnx"))
    # nodes listing more inputs or outputs than their op has (the ONNX checker's arity rule), which
    # would otherwise compile with the extras ignored
    arity = onnx.load(good)
    add = next(n for n in arity.graph.node if n.op_type == "Add")
    add.input.append(add.input[0])
    onnx.save(arity, os.path.join(inputs, "add_3_inputs.onnx"))
    arity = onnx.load(good)
    conv = next(n for n in arity.graph.node if n.op_type == "Conv")
    while len(conv.input) < 4:
        conv.input.append(conv.input[-1])
    onnx.save(arity, os.path.join(inputs, "conv_4_inputs.onnx"))
    arity = onnx.load(good)
    next(n for n in arity.graph.node if n.op_type == "Relu").output.append("relu_extra")
    onnx.save(arity, os.path.join(inputs, "relu_2_outputs.onnx"))

    # what a new user's trial found: declared outputs the graph does not compute, a future opset, BN
    # attributes out of range, initializer names a safetensors header cannot hold, nothing to train, a NUL
    # inside an external-data location, a FIFO where a file was expected
    decl = onnx.load(good)
    decl.graph.output[0].type.tensor_type.shape.dim[1].dim_value += 2
    onnx.save(decl, os.path.join(inputs, "declared_output.onnx"))
    future = onnx.load(good)
    future.opset_import[0].version = 99
    onnx.save(future, os.path.join(inputs, "opset99.onnx"))
    eps = onnx.load(good)
    for a in next(n for n in eps.graph.node if n.op_type == "BatchNormalization").attribute:
        if a.name == "epsilon":
            a.f = -1.0
    onnx.save(eps, os.path.join(inputs, "bn_epsilon.onnx"))
    open(os.path.join(inputs, "name_utf8.onnx"), "wb").write(blob.replace(b"fc.weight", b"fc.weig\xc3("))
    meta = onnx.load(good)
    for init in meta.graph.initializer:
        if init.name == "fc.bias":
            init.name = "__metadata__"
    for n in meta.graph.node:
        for i, v in enumerate(n.input):
            if v == "fc.bias":
                n.input[i] = "__metadata__"
    onnx.save(meta, os.path.join(inputs, "name_metadata.onnx"))
    x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])
    y2 = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="/gap"),
             helper.make_node("Flatten", ["g"], ["y"], name="/flat")]
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x4], [y2]), opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(inputs, "no_params.onnx"))
    ext = os.path.join(inputs, "ext")
    os.makedirs(ext)
    w = numpy_helper.from_array(np.ones((3, 2), np.float32), "fc.weight")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value="w.binXx")
    w.ClearField("raw_data")
    open(os.path.join(ext, "w.bin"), "wb").write(np.ones(6, np.float32).tobytes())
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="/gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="/flat"),
             helper.make_node("Gemm", ["f", "fc.weight"], ["y"], name="/fc")]
    mm = helper.make_model(helper.make_graph(nodes, "g", [x4], [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                                             [2, 2])], [w]),
                           opset_imports=[helper.make_opsetid("", 17)])
    open(os.path.join(ext, "nul_location.onnx"), "wb").write(mm.SerializeToString().replace(b"w.binXx", b"w.bin\x00x"))
    os.mkfifo(os.path.join(inputs, "fifo.onnx"))

    cases = [("truncated .onnx", "truncated.onnx", ["truncated.onnx"]),
             ("a declared output the graph does not compute", "declared_output.onnx",
              ["declared_output.onnx", "logits", "declared"]),
             ("a future opset", "opset99.onnx", ["opset99.onnx", "99"]),
             ("BN epsilon < 0", "bn_epsilon.onnx", ["bn_epsilon.onnx", "epsilon"]),
             ("an initializer name that is not UTF-8", "name_utf8.onnx", ["name_utf8.onnx", "UTF-8", "\\xc3"]),
             ("an initializer named __metadata__", "name_metadata.onnx", ["name_metadata.onnx", "__metadata__"]),
             ("nothing to train", "no_params.onnx", ["no_params.onnx", "no parameter"]),
             ("a NUL in an external-data location", "ext/nul_location.onnx", ["nul_location.onnx", "NUL"]),
             ("a FIFO for a model", "fifo.onnx", ["fifo.onnx", "not a regular file"]),
             ("not an ONNX file", "text.onnx", ["text.onnx"]),
             ("missing file", "missing.onnx", ["missing.onnx"]),
             ("unsupported ops", "unsupported.onnx", ["unsupported.onnx", "/pool/LpPool", "LpPool",
                                                      "/head/Hardmax", "Hardmax"]),
             ("unbound symbolic dim", "symbolic.onnx", ["symbolic.onnx", "input", "batch", "--shape"]),
             ("dims past 2^47 bytes", "huge_batch.onnx", ["huge_batch.onnx", "input", "2^47"]),
             ("zero batch", "zero_batch.onnx", ["zero_batch.onnx", "input", "dim 0"]),
             ("attribute of the wrong type", "attr_type.onnx", ["attr_type.onnx", "kernel_shape", "FLOATS", "INTS"]),
             ("auto_pad with pads", "autopad_pads.onnx", ["autopad_pads.onnx", "auto_pad", "pads"]),
             ("cycle", "cycle.onnx", ["cycle.onnx", "Conv", "topologically"]),
             ("an Add with 3 inputs", "add_3_inputs.onnx", ["add_3_inputs.onnx", "(Add)", "3 inputs", "2 inputs"]),
             ("a Conv with 4 inputs", "conv_4_inputs.onnx", ["conv_4_inputs.onnx", "(Conv)", "4 inputs", "2 to 3"]),
             ("a Relu with 2 outputs", "relu_2_outputs.onnx", ["relu_2_outputs.onnx", "(Relu)", "2 outputs",
                                                                 "1 output"])]
    for label, name, must in cases:
        out = os.path.join(work, "out_" + name.replace(".", "_").replace("/", "_"))
        os.makedirs(out)
        check("vcc: " + label, [vcc, os.path.join(inputs, name), "-o", "train.c", "--plan-json", "plan.json"], out,
              must, expect_rc=1, clean_dir=out)
    # the symbolic model compiles once the dim is bound
    out = os.path.join(work, "out_bound")
    os.makedirs(out)
    p = subprocess.run([vcc, os.path.join(inputs, "symbolic.onnx"), "--shape", "batch=2", "-o", "train.c"], cwd=out,
                       capture_output=True, text=True)
    print("%-4s %-34s rc=%d" % ("ok" if p.returncode == 0 else "FAIL", "vcc: symbolic dim bound", p.returncode))
    if p.returncode != 0:
        failures.append("symbolic dim bound: " + p.stderr.strip())
    # command-line values vcc must refuse (usage errors: status 2)
    for label, extra in (("bad --shape 'batch=2x'", ["--shape", "batch=2x"]),
                         ("bad --shape 'batch= 2'", ["--shape", "batch= 2"]),
                         ("bad --shape 'batch=0'", ["--shape", "batch=0"]),
                         ("--shape given twice", ["--shape", "batch=2", "--shape", "batch=3"]),
                         ("--momentum nan", ["--momentum", "nan"]),
                         ("output name with a space", ["-o", "my train.c"]),
                         ("-o without a value", ["-o"]),
                         ("-o given twice", ["-o", "a.c", "-o", "b.c"]),
                         ("an empty --plan-json", ["--plan-json", ""]),
                         ("--plan-json over the model", ["--plan-json", good]),
                         ("--plan-json over the weights of -o", ["-o", "t.c", "--plan-json", "t.safetensors"])):
        out = os.path.join(work, "out_flags")
        os.makedirs(out, exist_ok=True)
        check("vcc: " + label, [vcc, good] + extra, out, [], expect_rc=2, clean_dir=out)
    # an output that exists and is not a regular file (the finished output's rename would replace it)
    out = os.path.join(work, "out_fifo")
    os.makedirs(out)
    os.mkfifo(os.path.join(out, "fifo.c"))
    check("vcc: -o onto a FIFO", [vcc, good, "-o", "fifo.c"], out, ["fifo.c", "not a regular file"], expect_rc=2)
    with open("/dev/full", "w") as full:  # a failed write to stdout is an error, not a truncated dump
        p = subprocess.run([vcc, good, "--dump-ir", "memplan"], stdout=full, stderr=subprocess.PIPE, text=True)
    ok = p.returncode == 1 and "standard output" in p.stderr
    print("%-4s %-34s rc=%d  %s" % ("ok" if ok else "FAIL", "vcc: stdout on a full disk", p.returncode, p.stderr.strip()))
    if not ok:
        failures.append("vcc: stdout on a full disk")
    # an initializer whose external data is a 64 GiB sparse file (no disk used): with vcc's address space
    # capped at 4 GiB the read cannot be allocated, which must be an error naming it, not an abort
    sp = os.path.join(work, "sparse")
    os.makedirs(sp)
    m = onnx.load(good)
    init = m.graph.initializer[0]
    init.ClearField("raw_data")
    init.ClearField("float_data")
    del init.dims[:]
    init.dims.extend([1 << 34])
    init.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "big.bin"), ("offset", "0"), ("length", str(4 << 34))):
        e = init.external_data.add()
        e.key, e.value = k, v
    with open(os.path.join(sp, "big.bin"), "wb") as f:
        f.truncate(4 << 34)
    onnx.save(m, os.path.join(sp, "model.onnx"))
    import resource
    cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    p = subprocess.run([vcc, "model.onnx", "-o", "train.c"], cwd=sp, capture_output=True, text=True,
                       preexec_fn=cap)
    os.remove(os.path.join(sp, "big.bin"))
    ok = p.returncode == 1 and "'%s'" % init.name in p.stderr and "cannot allocate" in p.stderr and \
        not os.path.exists(os.path.join(sp, "train.c"))
    print("%-4s %-34s rc=%d  %s" % ("ok" if ok else "FAIL", "vcc: external data past memory", p.returncode,
                                    p.stderr.strip()[:200]))
    if not ok:
        failures.append("vcc: external data past memory")
    # an output folder that does not exist: nothing written anywhere
    check("vcc: unwritable output", [vcc, good, "-o", os.path.join(work, "no", "such", "dir", "train.c")], work,
          ["train.c"], expect_rc=1)

    # ---- trainer data errors
    t = os.path.join(work, "trainer")
    os.makedirs(t)
    subprocess.run([vcc, good, "-o", "train.c"], cwd=t, check=True, capture_output=True)
    build = open(os.path.join(t, "train.c")).readline()[len("// build (from this file's folder): "):].strip()
    subprocess.run(build, cwd=t, shell=True, check=True)
    data = np.load(os.path.join(src, "data.npy"))
    labels = np.load(os.path.join(src, "labels.npy"))
    np.save(os.path.join(t, "data.npy"), data)
    np.save(os.path.join(t, "labels.npy"), labels)
    np.save(os.path.join(t, "wrong_shape.npy"), data[:, :, :, :-1])
    np.save(os.path.join(t, "wrong_dtype.npy"), data.astype(np.float64))
    np.save(os.path.join(t, "labels_i32.npy"), labels.astype(np.int32))
    np.save(os.path.join(t, "labels_range.npy"), labels + 1000)
    open(os.path.join(t, "truncated.npy"), "wb").write(open(os.path.join(t, "data.npy"), "rb").read()[:200])
    train = os.path.join(t, "train")
    runs = [("train: data of the wrong shape", ["wrong_shape.npy", "labels.npy"], ["wrong_shape.npy", "shape"]),
            ("train: data of the wrong dtype", ["wrong_dtype.npy", "labels.npy"], ["wrong_dtype.npy", "float32"]),
            ("train: labels of the wrong dtype", ["data.npy", "labels_i32.npy"], ["labels_i32.npy", "int64"]),
            ("train: labels out of range", ["data.npy", "labels_range.npy"], ["labels_range.npy"]),
            ("train: missing data file", ["nothere.npy", "labels.npy"], ["nothere.npy"]),
            ("train: truncated .npy", ["truncated.npy", "labels.npy"], ["truncated.npy"])]
    for label, (d, lab), must in runs:
        check(label, [train, "--data", d, "--labels", lab, "--steps", "1"], t, must, expect_rc=1)
    check("train: missing weights", [train, "--data", "data.npy", "--labels", "labels.npy", "--weights", "nope.st"],
          t, ["nope.st"], expect_rc=1)
    for label, extra, must in (("train: --lr nan", ["--lr", "nan"], ["--lr"]),
                               ("train: --lr -1", ["--lr", "-1"], ["--lr"]),
                               ("train: --weight-decay inf", ["--weight-decay", "inf"], ["--weight-decay"]),
                               ("train: --steps past LONG_MAX", ["--steps", "99999999999999999999"], ["--steps"]),
                               ("train: --out in a missing folder", ["--out", "no/such/out.safetensors"], ["no/such"])):
        base = [train, "--data", "data.npy", "--labels", "labels.npy"] + ([] if "--steps" in extra else ["--steps", "1"])
        p = subprocess.run(base + extra, cwd=t, capture_output=True, text=True)
        if "step 1" in p.stdout:  # refused before training, not after
            failures.append(label + " (trained first)")
        check(label, base + extra, t, must, expect_rc=1)
    # what --out and --checkpoint-dir write is a complete --weights file (momentum included for checkpoints)
    for label, cmd in (("train: --out file reloads", ["--out", "trained.safetensors"]),
                       ("train: checkpoint reloads", ["--checkpoint-dir", "ckpt"])):
        p1 = subprocess.run([train, "--data", "data.npy", "--labels", "labels.npy", "--steps", "2"] + cmd, cwd=t,
                            capture_output=True, text=True)
        w = "trained.safetensors" if "--out" in cmd else os.path.join("ckpt", "step2.safetensors")
        p2 = subprocess.run([train, "--data", "data.npy", "--labels", "labels.npy", "--weights", w], cwd=t,
                            capture_output=True, text=True)
        ok = p1.returncode == 0 and p2.returncode == 0 and p2.stdout.startswith("step 1 loss")
        print("%-4s %-34s %s" % ("ok" if ok else "FAIL", label, (p1.stderr + p2.stderr).strip()))
        if not ok:
            failures.append(label)

    # names from the model reach the generated C only escaped: a node name that closes a comment and a
    # tensor name with a quote, a "??/" trigraph and a newline must not change the program
    inj = onnx.load(good)
    inj.graph.node[0].name = '*/ puts("INJECTED"); /*'
    old = inj.graph.node[0].output[0]
    new = 'x"??/\n); puts("INJECTED'
    for n in inj.graph.node:
        n.input[:] = [new if v == old else v for v in n.input]
        n.output[:] = [new if v == old else v for v in n.output]
    onnx.save(inj, os.path.join(inputs, "inject.onnx"))
    ij = os.path.join(work, "inject")
    os.makedirs(ij)
    p = subprocess.run([vcc, os.path.join(inputs, "inject.onnx"), "-o", "train.c"], cwd=ij, capture_output=True,
                       text=True)
    b = subprocess.run(p.stdout.strip() + " -Wall -Werror", cwd=ij, shell=True, capture_output=True, text=True)
    r = subprocess.run(["./train", "--data", os.path.join(t, "data.npy"), "--labels", os.path.join(t, "labels.npy")],
                       cwd=ij, capture_output=True, text=True) if b.returncode == 0 else None
    ok = p.returncode == 0 and b.returncode == 0 and r is not None and r.returncode == 0 \
        and "INJECTED" not in r.stdout and r.stdout.startswith("step 1 loss")
    print("%-4s %-34s %s" % ("ok" if ok else "FAIL", "names escaped in generated C", (p.stderr + b.stderr).strip()[:200]))
    if not ok:
        failures.append("names escaped in generated C")
    if failures:
        sys.exit("FAIL: %d case(s): %s" % (len(failures), ", ".join(failures)))
    print("PASS")


if __name__ == "__main__":
    main()
