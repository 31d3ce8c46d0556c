"""The vcc command line: option forms, usage errors, and .vir dumps as inputs.

    test_cli.py --vcc BUILD/vcc --model MODEL.onnx --work DIR

MODEL is a small training model (tests/e2e/tiny_models.py's res3d).

  - Every option that takes a value accepts "--opt VALUE" and "--opt=VALUE" with the same result
    (--dump-ir memplan gave "unknown option" once): the dumps, plan JSON files and programs written
    are byte for byte the same.
  - Usage errors exit with status 2 and one line: an unknown option, a missing value, --forward-only
    with --eval, an unknown pass, a --momentum that is not a plain decimal within float32 (the trainer's
    rule: hex, a leading space, a sign, 1e39), a --workspace-limit that is not a byte count from 4 to 2^47 (with or
    without a K/M/G or KiB/MiB/GiB suffix) or is given twice.
  - --precision fp32|tf32 (check_precision): written into the CUDA program and the plan JSON, the same plan;
    tf32 with a .c output, bf16 with a .cu output and --eval, unknown names and a
    repeat are usage errors. bf16 (check_bf16_plan): in the plan JSON every activation and activation
    gradient is 2 bytes per element and every parameter, gradient and optimizer state 4, each parameter a
    Conv or Gemm reads has a bfloat16 copy, the arena is below fp32's; a .c output keeps the same values
    at 4 bytes; a dump from before 'precision' is accepted and gives the ONNX file's plan, a dump after
    it (or a bf16 dump without --precision bf16), with or without a plan, is refused in one line; a bf16
    .cu output with an op that has no bfloat16 CUDA kernel (Pow's gradient) is refused in one line naming
    that node and the model's node it was made for, and writes nothing.
  - -o t.cu.c beside a file t.cu is refused: the printed build command would write its program over it.
  - A failed run leaves no output behind (check_failed_run_leaves_nothing): -o into a missing folder
    with --plan-json, --plan-svg and --plan-trace, and a standard output that cannot be written.
  - --fit on a model that still fits at the largest batch the search tries (2^20) says "or more"; a
    --vary name the model lacks is reported as that --vary (not as a --shape the user never gave), and
    a --vary or --shape name the model lacks is the only error (not also the symbolic batch it leaves
    unbound, which it was most likely meant for).
  - --workspace-limit 16MiB, 16M and 16777216 give the same plan; a plan compiled with a limit and
    dumped is accepted back with the same limit.
  - A .vir dump is an input: the program compiled from a memplan dump of a model whose Reshape reads a
    constant trains as the ONNX model's does with its weights file (the same loss lines), and run without
    --weights it says to give one (vcc writes no weights beside it); the dump after
    each pass, fed back to vcc, gives the same final nodes,
    tensors, live intervals and arena as the ONNX file; `vcc m.vir` (after memplan) accepts vcc's own
    plan; a dump after liveness
    whose live interval was widened by hand is re-planned: the memplan dump keeps the edited interval,
    and the plan passes tests/e2e/check_plan.py; a dump whose interval was shrunk below a use is refused
    by vcc's plan check; edits that break the stored types (a Conv's pads in a dump after shape, a
    Relu turned into an Identity whose output is not a view) are refused; a dump without its first line
    says what is missing; hand edits that parse but would make a wrong program are refused (an offset
    near 2^63, a Gemm's output declared a view of its weight, a BN running-statistic output that is no view
    of it, a schedule that updates a weight before its ConvGradData reads it); names with control characters, escape sequences, C1 controls are escaped in
    dumps (as \\xNN) and read back to the same dump.
"""

import argparse
import filecmp
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
fails = []


def run(args, cwd, **kw):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, **kw)


def check(ok, label, detail=""):
    print("%-4s %s%s" % ("ok" if ok else "FAIL", label, ("\n     " + detail.strip().replace("\n", "\n     "))
                         if detail and not ok else ""))
    if not ok:
        fails.append(label)


def plan_of(path):
    """A plan JSON file without its planning time (plan_seconds), a measurement that differs between runs."""
    p = json.load(open(path))
    p.pop("plan_seconds", None)
    return p


def check_precision(vcc, model, work):
    """--precision: fp32 and tf32 compile CUDA trainers (VCC_PRECISION_TF32 0 and 1) and are recorded in the plan
    JSON, whose plan they do not change; tf32 with a .c output, bf16 with a .cu evaluation program and an unknown
    name are usage errors (exit 2, one line naming the problem), and so is --precision given twice."""
    d = os.path.join(work, "precision")
    os.makedirs(d, exist_ok=True)
    plans = {}
    for prec in ("fp32", "tf32"):
        p = run([vcc, model, "-o", "t_%s.cu" % prec, "--precision", prec, "--plan-json", "p_%s.json" % prec], d)
        ok = p.returncode == 0
        text = open(os.path.join(d, "t_%s.cu" % prec)).read() if ok else ""
        plans[prec] = plan_of(os.path.join(d, "p_%s.json" % prec)) if ok else {}
        check(ok and "#define VCC_PRECISION_TF32 %d " % (prec == "tf32") in text and
              plans[prec].get("precision") == prec, "vcc -o t.cu --precision %s: program and plan JSON say %s" % (
                  prec, prec), p.stderr)
    p = run([vcc, model, "-o", "t_default.cu", "--plan-json", "p_default.json"], d)
    check(p.returncode == 0 and plan_of(os.path.join(d, "p_default.json")).get("precision") == "fp32" and
          "#define VCC_PRECISION_TF32 0 " in open(os.path.join(d, "t_default.cu")).read(),
          "the default precision is fp32", p.stderr)
    strip = [{k: v for k, v in plans[x].items() if k != "precision"} for x in ("fp32", "tf32")]
    check(strip[0] == strip[1] and strip[0], "fp32 and tf32 plan the same arena")
    p = run([vcc, model, "-o", "t_fp32.c", "--precision", "fp32"], d)
    check(p.returncode == 0, "vcc -o t.c --precision fp32 is accepted", p.stderr)
    for label, a, words in [
            ("tf32 with a .c output", ["-o", "t_tf32.c", "--precision", "tf32"], ["tf32", "CUDA", ".cu"]),
            ("bf16 with a .cu evaluation program", ["--eval", "-o", "t_bf16.cu", "--precision", "bf16"],
             ["bf16", "--eval", "bfloat16", "FILE.c"]),
            ("an unknown precision", ["--precision", "fp8"], ["fp32, tf32 or bf16", "fp8"]),
            ("--precision twice", ["--precision", "fp32", "--precision", "tf32"], ["given twice"])]:
        p = run([vcc, model] + a, d)
        err = p.stderr.strip()
        check(p.returncode == 2 and len(err.splitlines()) == 1 and all(w in err for w in words),
              "usage error: --precision, %s (exit %d: %s)" % (label, p.returncode, err), p.stderr)
    check(not os.path.exists(os.path.join(d, "t_tf32.c")) and not os.path.exists(os.path.join(d, "t_bf16.cu")),
          "a refused --precision writes no program")


def check_bf16_plan(vcc, model, work):
    """--precision bf16's plan against the model's own shapes: which tensors hold bfloat16 and their sizes."""
    d = os.path.join(work, "bf16")
    os.makedirs(d, exist_ok=True)
    p32 = run([vcc, model, "--plan-json", "p32.json"], d)
    p16 = run([vcc, model, "--precision", "bf16", "--plan-json", "p16.json", "--dump-ir", "memplan"], d)
    if p32.returncode or p16.returncode:
        check(False, "vcc --precision bf16 --plan-json", p32.stderr + p16.stderr)
        return
    a, b = json.load(open(os.path.join(d, "p32.json"))), json.load(open(os.path.join(d, "p16.json")))
    tensors = b["tensors"]
    acts = [t for t in tensors if t["category"] in ("activation", "saved_activation") and t["view_of"] is None]
    state = [t for t in tensors if t["category"] in ("parameter", "gradient", "optimizer_state")]
    check(b["precision"] == "bf16" and any(t["bf16"] for t in acts) and
          all(t["bytes"] == 2 * t["elements"] for t in tensors if t["bf16"]) and
          all(t["bytes"] == 4 * t["elements"] and not t["bf16"] for t in state
              if not t["name"].endswith("num_batches_tracked")),  # int64 counters
          "--precision bf16: bfloat16 tensors take 2 bytes per element, parameters, gradients and optimizer state 4")
    # the trained convolution and Gemm weights (4-D or more, or the Gemm's 2-D weight) each have one copy
    params = {t["name"] for t in tensors if t["category"] == "parameter"}
    copies = {t["name"][:-len(".bf16")] for t in tensors if t["name"].endswith(".bf16")} & params
    onnx_model = onnx.load(model)
    readers = {i for n in onnx_model.graph.node if n.op_type in ("Conv", "Gemm", "MatMul", "ConvTranspose")
               for i in n.input}
    check(copies and copies == (readers & params), "each parameter a Conv or Gemm reads has one bfloat16 copy",
          "copies %s, read %s" % (sorted(copies), sorted(readers & params)))
    check(b["arena_bytes"] < a["arena_bytes"], "the bf16 arena (%d) is below the fp32 one (%d)" % (
        b["arena_bytes"], a["arena_bytes"]))
    p = run([vcc, model, "--precision", "bf16", "-o", "t_bf16.c", "--plan-json", "pc.json"], d)
    c = json.load(open(os.path.join(d, "pc.json"))) if p.returncode == 0 else {"tensors": []}
    check(p.returncode == 0 and [t["name"] for t in c["tensors"] if t["bf16"]] ==
          [t["name"] for t in tensors if t["bf16"]] and all(t["bytes"] == 4 * t["elements"] for t in c["tensors"]
                                                            if t["bf16"]) and
          "bf16_round_forward" in open(os.path.join(d, "t_bf16.c")).read(),
          "a .c output rounds the same tensors to bfloat16 and keeps them at 4 bytes", p.stderr)
    # a .cu output stores them in 2 bytes: its plan is the bf16 plan, each such tensor a __nv_bfloat16 pointer
    p = run([vcc, model, "--precision", "bf16", "-o", "t_bf16.cu", "--plan-json", "pcu.json"], d)
    cu = json.load(open(os.path.join(d, "pcu.json"))) if p.returncode == 0 else {}
    text = open(os.path.join(d, "t_bf16.cu")).read() if p.returncode == 0 else ""
    b16 = [t for t in cu.get("tensors", []) if t["bf16"] and t["view_of"] is None and t["offset"] >= 0]
    strip_secs = lambda plan: {k: v for k, v in plan.items() if k != "plan_seconds"}
    check(p.returncode == 0 and strip_secs(cu) == strip_secs(b) and "#define VCC_PRECISION_BF16 1 " in text and
          b16 and all("VCC_B(%d)" % t["offset"] in text for t in b16),
          "a .cu output plans the bf16 arena and passes each bfloat16 tensor as a __nv_bfloat16 pointer", p.stderr)
    # dumps: from before 'precision' with --precision bf16, the ONNX file's plan; after it, refused
    fuse = run([vcc, model, "--dump-ir", "fuse"], d).stdout
    open(os.path.join(d, "fuse.vir"), "w").write(fuse)
    p = run([vcc, "fuse.vir", "--precision", "bf16", "--dump-ir", "memplan"], d)
    strip = lambda text: sorted(re.sub(r" offset=\d+", "", l) for l in text.splitlines()[1:])
    check(p.returncode == 0 and strip(p.stdout) == strip(p16.stdout),
          "a dump after fuse with --precision bf16 plans as the ONNX file does", p.stderr)
    for pas, args, words in [("precision", [], ["--precision bf16", "CastBF16"]),
                             ("precision", ["--precision", "bf16"], ["'precision'", "ONNX model"]),
                             ("autodiff", ["--precision", "bf16"], ["autodiff", "ONNX model"]),
                             ("liveness", [], ["--precision bf16", "CastBF16"]),
                             ("liveness", ["--precision", "bf16"], ["liveness", "ONNX model"])]:
        text = run([vcc, model, "--precision", "bf16", "--dump-ir", pas], d).stdout
        open(os.path.join(d, pas + ".vir"), "w").write(text)
        p = run([vcc, pas + ".vir"] + args, d)
        check(p.returncode == 1 and all(w in p.stderr for w in words) and len(p.stderr.strip().splitlines()) == 1,
              "a bf16 dump after %s %s is refused in one line" % (pas, "with" if args else "without --precision bf16"),
              p.stderr)


def check_bf16_cuda_refusal(vcc, work):
    """A bf16 .cu output of a model whose op has no bfloat16 CUDA kernel (Pow's gradient, reading the
    Conv's bfloat16 output): exit 1, nothing written, one line naming the gradient node, its op and the
    model's node and op it was made for."""
    d = os.path.join(work, "bf16_refusal")
    os.makedirs(d, exist_ok=True)
    w = numpy_helper.from_array(np.full((4, 3, 3, 3, 3), 0.01, np.float32), "w")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1] * 6),
             helper.make_node("Pow", ["c", "two"], ["p"], name="square"),
             helper.make_node("GlobalAveragePool", ["p"], ["g"], name="pool"),
             helper.make_node("Flatten", ["g"], ["logits"], name="flatten")]
    graph = helper.make_graph(nodes, "pow_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 8, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 4])], [w, two])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(d, "pow.onnx"))
    p = run([vcc, "pow.onnx", "--precision", "bf16", "-o", "t.cu"], d)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 1 and len(lines) == 1 and all(w in p.stderr for w in ("'square.grad'", "PowGrad",
                                                                                "'square' (Pow)", "--precision fp32")) and
          not os.path.exists(os.path.join(d, "t.cu")),
          "a bf16 .cu with Pow's gradient on a bfloat16 value is refused naming the node it was made for", p.stderr)
    p = run([vcc, "pow.onnx", "--precision", "bf16", "-o", "t.c"], d)
    check(p.returncode == 0, "the same model compiles to a bf16 C trainer", p.stderr)


def check_fit_cap(vcc, work):
    """--fit tries batches up to 2^20: a model that still fits there is said to fit that batch or more, not
    that batch as its largest (a Gemm of 4 features to 3 classes at 1 GiB: 2^20 samples need about 70 MiB)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3])
    w = numpy_helper.from_array(np.full((3, 4), 0.1, np.float32), "w")
    b = numpy_helper.from_array(np.zeros(3, np.float32), "b")
    g = helper.make_graph([helper.make_node("Gemm", ["x", "w", "b"], ["logits"], transB=1)], "fit_cap", [x], [y],
                          [w, b])
    path = os.path.join(work, "fit_cap.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    p = run([vcc, path, "--fit", "1GiB"], work)
    lines = [l for l in p.stdout.splitlines() if "largest batch=" in l]
    check(p.returncode == 0 and len(lines) == 2 and all("batch=1048576 or more" in l for l in lines),
          "--fit past the largest batch tried says 'or more'", p.stdout + p.stderr)
    p = run([vcc, path, "--fit", "1GiB", "--vary", "nosuch"], work)
    check(p.returncode != 0 and "--vary nosuch: no graph input" in p.stderr and "--shape nosuch" not in p.stderr
          and "is symbolic" not in p.stderr, "--fit --vary of a name the model lacks is named as --vary, alone",
          p.stderr)
    p = run([vcc, path, "--shape", "nosuch=2"], work)
    check(p.returncode != 0 and "--shape nosuch: no graph input" in p.stderr and "is symbolic" not in p.stderr,
          "--shape of a name the model lacks is named alone, not the symbolic dim it leaves unbound", p.stderr)


def check_failed_run_leaves_nothing(vcc, model, work):
    """A run that fails after some of its outputs could be written leaves none of them: the program's
    folder missing (the plan files were written and renamed before the program once), and the standard
    output full (the program and weights were renamed before the build command failed to print)."""
    d = os.path.join(work, "nothing_left")
    os.makedirs(d, exist_ok=True)
    shape = ["--shape", "input=2x3x4x12x12"]
    p = run([vcc, model, "-o", os.path.join(d, "missing", "t.c"), "--plan-json", "p.json", "--plan-svg", "p.svg",
             "--plan-trace", "p.trace"] + shape, d)
    left = sorted(os.listdir(d))
    check(p.returncode == 1 and left == [], "-o into a missing folder with --plan-json/-svg/-trace: exit 1, nothing "
          "written", "exit %d, left %s; %s" % (p.returncode, left, p.stderr))
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            p = subprocess.run([vcc, model, "-o", "q.c", "--plan-json", "p.json"] + shape, cwd=d, stdout=full,
                               stderr=subprocess.PIPE, text=True)
        left = sorted(os.listdir(d))
        check(p.returncode == 1 and left == [] and "standard output" in p.stderr,
              "-o q.c --plan-json p.json > /dev/full: exit 1, nothing written",
              "exit %d, left %s; %s" % (p.returncode, left, p.stderr))


def check_vir_trains(vcc, tiny, work):
    """The flow the README gives for a dump: `vcc m.vir -o v.c`, run with the weights file vcc wrote beside
    the ONNX model's trainer, trains as that trainer does (the same loss lines). tiny is tests/e2e's conv2d
    folder: its Reshape reads a constant shape, which the dump carries (data=); without it the program
    asked for 'shape' in the weights file."""
    d = os.path.join(work, "vir_trains")
    os.makedirs(d, exist_ok=True)
    onnx_model = os.path.join(tiny, "model.onnx")
    with open(os.path.join(d, "m.vir"), "w") as f:
        f.write(run([vcc, onnx_model, "--dump-ir", "memplan"], d).stdout)
    args = ["--data", os.path.join(tiny, "data.npy"), "--labels", os.path.join(tiny, "labels.npy"), "--steps", "2"]
    losses = []
    for src, out, extra in ((onnx_model, "t.c", []), ("m.vir", "v.c", ["--weights", "t.safetensors"])):
        p = run([vcc, src, "-o", out], d)
        b = subprocess.run(p.stdout.strip(), cwd=d, shell=True, capture_output=True, text=True)
        t = run(["./" + out[:-2]] + args + extra, d) if p.returncode == 0 and b.returncode == 0 else None
        losses.append(t.stdout if t is not None and t.returncode == 0 else None)
        if losses[-1] is None:
            print("     %s: %s%s%s" % (src, p.stderr, b.stderr, t.stderr if t is not None else ""))
    check(losses[0] is not None and losses[0] == losses[1] and "step 2 loss" in losses[0],
          "a program compiled from a memplan dump trains as the ONNX model's with its weights file", str(losses))
    # without --weights it looks for v.safetensors beside it, which vcc did not write: the error says what to give
    t = run(["./v"] + args, d) if os.path.exists(os.path.join(d, "v")) else None
    check(t is not None and t.returncode != 0 and "v.safetensors: cannot open" in t.stderr
          and "--weights" in t.stderr, "the dump's program run without --weights names the option", t and t.stderr)


def check_vir_semantics(vcc, model, mem, work):
    """Hand edits of a dump that parse and type-check but would make a wrong program: each is refused with a
    message naming what is wrong, and no program is written (each wrote a trainer that crashed or computed
    other numbers before)."""
    def refused(label, text, must):
        with open(os.path.join(work, "sem.vir"), "w") as f:
            f.write(text)
        out = os.path.join(work, "sem.c")
        if os.path.exists(out):
            os.remove(out)
        p = run([vcc, "sem.vir", "-o", "sem.c"], work)
        check(p.returncode != 0 and must in p.stderr and not os.path.exists(out), label, p.stderr)

    # an offset whose sum with the tensor's bytes overflows int64 (the plan check's bound wrapped around)
    m = re.search(r'^(plan "[^"]+" activation bytes=\d+ live=\[\d+,\d+\] offset=)(\d+)$', mem, re.M)
    refused("a dump with an offset near 2^63 is refused", mem.replace(m.group(0), m.group(1) + "9223372036854775552", 1),
            "past vcc's largest arena")
    # a non-view op's output declared a view: the Gemm would write the logits into its weight's bytes
    # (at the weight's offset, as a view's must be)
    m = re.search(r'^(plan "logits" .* offset=)\d+$', mem, re.M)
    w = re.search(r'^plan "fc.weight" .* offset=(\d+)', mem, re.M).group(1)
    refused("a Gemm's output declared a view of its weight is refused",
            mem.replace(m.group(0), m.group(1) + w + ' view_of="fc.weight"', 1), "does not make it one")
    # a BatchNormalization's running-mean output that is not a view of the statistic it updates in place
    m = re.search(r'^(plan "[^"]+_rm" .*) view_of="[^"]+"$', mem, re.M)
    refused("a BN running-statistic output that is not a view of it is refused", mem.replace(m.group(0), m.group(1), 1),
            "must be a view of the running statistic")
    # a schedule dump whose update of a weight runs before the ConvGradData that reads the weight
    sched = run([vcc, model, "--dump-ir", "schedule"], work).stdout
    lines = sched.split("\n")
    upd = next(i for i, l in enumerate(lines) if " update SGDMomentum " in l and ".grad_data" in lines[i - 2]
               and "ConvGradFilter" in lines[i - 1])
    a, b, c = lines[upd - 2], lines[upd - 1], lines[upd]
    num = lambda l, k: re.sub(r"^node \d+ ", "node %d " % k, l)
    first = int(re.match(r"node (\d+) ", a).group(1))
    lines[upd - 2], lines[upd - 1], lines[upd] = num(b, first), num(c, first + 1), num(a, first + 2)
    refused("a schedule dump that updates a weight before its ConvGradData reads it is refused", "\n".join(lines),
            "every reader of a parameter runs before its update")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    vcc, model = os.path.abspath(args.vcc), os.path.abspath(args.model)
    work = os.path.abspath(args.work)
    for sub in ("sep", "eq"):
        os.makedirs(os.path.join(work, sub), exist_ok=True)

    # --- option forms: the same outputs
    forms = {"sep": [model, "-o", "t.c", "--plan-json", "p.json", "--dump-ir", "memplan", "--momentum", "0.5",
                     "--shape", "input=2x3x4x12x12"],
             "eq": [model, "-o=t.c", "--plan-json=p.json", "--dump-ir=memplan", "--momentum=0.5",
                    "--shape=input=2x3x4x12x12"]}
    outs = {}
    for k, a in forms.items():
        p = run([vcc] + a, os.path.join(work, k))
        outs[k] = p
        check(p.returncode == 0, "vcc %s" % " ".join(a[1:]), p.stderr)
    same = outs["sep"].stdout == outs["eq"].stdout and plan_of(os.path.join(work, "sep", "p.json")) == plan_of(os.path.join(work, "eq", "p.json")) and all(
        filecmp.cmp(os.path.join(work, "sep", f), os.path.join(work, "eq", f), shallow=False)
        for f in ("t.c", "t.safetensors"))
    check(same, "--opt VALUE and --opt=VALUE write the same dump, plan JSON, program and weights")

    # --- a program name whose weights' name is 252 bytes (legal; the temporary name beside it would pass
    # NAME_MAX unless shortened): both written, their contents those of t.c's compile, no temporary left
    long_dir = os.path.join(work, "long")
    os.makedirs(long_dir, exist_ok=True)
    stem = "w" * 240
    p = run([vcc, model, "-o", stem + ".c", "--momentum", "0.5", "--shape", "input=2x3x4x12x12"], long_dir)
    left = sorted(os.listdir(long_dir))
    check(p.returncode == 0 and left == sorted([stem + ".c", stem + ".safetensors"]) and
          filecmp.cmp(os.path.join(long_dir, stem + ".safetensors"), os.path.join(work, "sep", "t.safetensors"),
                      shallow=False),
          "-o with a 242-byte name: the program and its 252-byte weights file, the same weights, nothing else",
          p.stderr + " ".join(f[:20] + "..." + f[-20:] for f in left))

    # --- usage errors: status 2, one line
    for label, a in [("unknown option", ["--no-such-option"]), ("missing value", ["--dump-ir"]),
                     ("--forward-only with --eval", ["--forward-only", "--eval"]),
                     ("unknown pass", ["--dump-ir", "nopass"]),
                     ("--momentum in hex", ["--momentum", "0x1p-1"]),
                     ("--momentum with a space", ["--momentum", " 0.5"]),
                     ("--momentum -0.5", ["--momentum", "-0.5"]),
                     ("--momentum 1e39", ["--momentum", "1e39"]),
                     ("--memory-limit without a size", ["--memory-limit", "12XB"]),
                     ("--memory-limit 0", ["--memory-limit", "0"]),
                     ("--memory-limit with --eval", ["--memory-limit", "1GiB", "--eval"]),
                     ("--vary without --fit", ["--vary", "batch"]),
                     ("--fit with -o", ["--fit", "1GiB", "-o", "t.c"]),
                     ("--fit with --memory-limit", ["--fit", "1GiB", "--memory-limit", "1GiB"]),
                     ("--recompute-flops without --memory-limit or --fit", ["--recompute-flops", "5"]),
                     ("--recompute-flops -1", ["--memory-limit", "1GiB", "--recompute-flops", "-1"]),
                     ("--recompute-flops 5x", ["--memory-limit", "1GiB", "--recompute-flops", "5x"]),
                     ("--recompute-flops 1001", ["--memory-limit", "1GiB", "--recompute-flops", "1001"])]:
        p = run([vcc, model] + a, work)
        check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, "usage error: %s (exit %d: %s)" % (
            label, p.returncode, p.stderr.strip()), p.stderr)

    # the build command vcc prints writes the program beside -o: never over a file that is not a program
    with open(os.path.join(work, "t.cu"), "w") as f:
        f.write("// a CUDA source\n")
    p = run([vcc, model, "-o", "t.cu.c"], work)
    check(p.returncode == 2 and "'t.cu', an existing file that is not a program" in p.stderr and
          open(os.path.join(work, "t.cu")).read() == "// a CUDA source\n" and
          not os.path.exists(os.path.join(work, "t.cu.c")),
          "-o t.cu.c beside a CUDA source t.cu is refused (its program would be built over t.cu)", p.stderr)

    # --- --workspace-limit: suffixes, bad values
    plans = []
    for i, v in enumerate(("16MiB", "16M", "16777216")):
        p = run([vcc, model, "--workspace-limit", v, "--plan-json", "wl%d.json" % i], work)
        check(p.returncode == 0, "vcc --workspace-limit %s" % v, p.stderr)
        plans.append(plan_of(os.path.join(work, "wl%d.json" % i)) if p.returncode == 0 else None)
    check(plans[0] is not None and plans.count(plans[0]) == 3, "--workspace-limit 16MiB, 16M and 16777216: one plan")
    for v in ("abc", "0", "3", "-4096", "16XB", "1e6", "4096 ", "200000G", "", "99999999999999999999"):
        p = run([vcc, model, "--workspace-limit=" + v], work)
        check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--workspace-limit" in p.stderr,
              "usage error: --workspace-limit '%s' (exit %d: %s)" % (v, p.returncode, p.stderr.strip()), p.stderr)
    p = run([vcc, model, "--workspace-limit", "4K", "--workspace-limit", "8K"], work)
    check(p.returncode == 2 and "given twice" in p.stderr, "usage error: --workspace-limit twice", p.stderr)
    check_fit_cap(vcc, work)
    check_failed_run_leaves_nothing(vcc, model, work)
    check_precision(vcc, model, work)
    check_bf16_plan(vcc, model, work)
    check_bf16_cuda_refusal(vcc, work)
    small = run([vcc, model, "--workspace-limit", "4096", "--dump-ir", "memplan"], work).stdout
    with open(os.path.join(work, "m4096.vir"), "w") as f:
        f.write(small)
    p = run([vcc, "m4096.vir", "--workspace-limit", "4096"], work)
    check(p.returncode == 0 and "arena" in p.stdout, "a plan dumped under --workspace-limit 4096 is accepted with it",
          p.stderr)

    # --- .vir inputs
    # a dump after remat (recomputed nodes, BatchNormApply among them where BN is recomputed) reads back
    # and its plan passes the check; an unmeetable limit writes nothing
    p = run([vcc, model, "--memory-limit", "1", "-o", "none.c"], work)
    check(p.returncode == 1 and "smallest arena reachable" in p.stderr and not os.path.exists(
        os.path.join(work, "none.c")), "--memory-limit 1 is refused, nothing written", p.stderr)
    m = re.search(r"is (\d+) bytes", p.stderr)
    # --recompute-flops P: the smallest arena within P percent more FLOPs; 0 recomputes nothing
    unb = re.search(r"is (\d+) bytes \(.*?; (\d+) values? recomputed, \+([0-9.]+)% FLOPs\), the arena without "
                    r"recomputation (\d+) bytes", p.stderr)
    check(unb is not None and float(unb.group(3)) > 0, "--memory-limit 1 names the smallest arena, its values and FLOPs",
          p.stderr)
    if unb:
        for pct in (0.0, float(unb.group(3)) / 2):
            q = run([vcc, model, "--memory-limit", "1", "--recompute-flops", "%g%%" % pct, "-o", "none.c"], work)
            b = re.search(r"within --recompute-flops [0-9.e+-]+% is (\d+) bytes \(.*?; (\d+) values? recomputed, "
                          r"\+([0-9.]+)% FLOPs\)", q.stderr)
            ok = q.returncode == 1 and b is not None and float(b.group(3)) <= pct and \
                int(unb.group(1)) <= int(b.group(1)) <= int(unb.group(4)) and \
                (pct > 0 or (int(b.group(2)) == 0 and int(b.group(1)) == int(unb.group(4))))
            check(ok, "--memory-limit 1 --recompute-flops %g: within %g%% more FLOPs, an arena between the smallest "
                  "and the unlimited one" % (pct, pct), q.stderr)
    rem = run([vcc, model, "--memory-limit", m.group(1) if m else "1", "--dump-ir", "remat"], work).stdout
    with open(os.path.join(work, "r.vir"), "w") as f:
        f.write(rem)
    p = run([vcc, "r.vir"], work)
    check(p.returncode == 0 and "arena" in p.stdout and rem.startswith("# vcc IR after remat"),
          "vcc r.vir accepts the plan after remat", p.stderr)
    mem = run([vcc, model, "--dump-ir", "memplan"], work).stdout
    with open(os.path.join(work, "m.vir"), "w") as f:
        f.write(mem)
    p = run([vcc, "m.vir"], work)
    check(p.returncode == 0 and "arena" in p.stdout, "vcc m.vir accepts vcc's own plan", p.stderr)
    # --memory-limit on a dump after memplan runs recomputation on it: the same refusal, and at the smallest
    # arena the same plan as from the ONNX model; a dump after remat above the limit is refused
    p = run([vcc, "m.vir", "--memory-limit", "1", "-o", "none.c"], work)
    mv = re.search(r"recomputation is (\d+) bytes", p.stderr)
    check(p.returncode == 1 and mv is not None and m is not None and mv.group(1) == m.group(1) and
          not os.path.exists(os.path.join(work, "none.c")),
          "vcc m.vir --memory-limit 1: refused, the smallest arena as from the ONNX model", p.stderr)
    if m:
        for src in (model, "m.vir"):
            run([vcc, src, "--memory-limit", m.group(1), "--plan-json", "lim_%s.json" % src[-3:]], work)
        a, b = (json.load(open(os.path.join(work, "lim_%s.json" % x))) for x in (model[-3:], "vir"))
        check(a["arena_bytes"] == b["arena_bytes"] <= int(m.group(1)) and
              a["recomputed_values"] == b["recomputed_values"] > 0,
              "vcc m.vir --memory-limit S: the ONNX model's plan (arena %d / %d, %s / %s values recomputed)"
              % (a["arena_bytes"], b["arena_bytes"], a["recomputed_values"], b["recomputed_values"]))
        p = run([vcc, "r.vir", "--memory-limit", str(a["arena_bytes"] - 1), "-o", "none.c"], work)
        check(p.returncode == 1 and "after remat" in p.stderr and not os.path.exists(os.path.join(work, "none.c")),
              "vcc r.vir --memory-limit below its arena: refused, nothing written", p.stderr)

    inp = run([vcc, model, "--dump-ir", "liveness"], work).stdout
    # widen the interval of the first activation that a single forward node reads, to the last step
    m = re.search(r'^plan "([^"]+)" activation bytes=(\d+) live=\[(\d+),(\d+)\] offset=-1$', inp, re.M)
    name, start, end = m.group(1), int(m.group(3)), int(m.group(4))
    steps = len(re.findall(r"^node ", inp, re.M))
    wide = inp.replace(m.group(0), m.group(0).replace("live=[%d,%d]" % (start, end), "live=[%d,%d]" % (start, steps)))
    with open(os.path.join(work, "wide.vir"), "w") as f:
        f.write(wide)
    p = run([vcc, "wide.vir", "--dump-ir", "memplan", "--plan-json", "wide.json"], work)
    kept = re.search(r'^plan "%s" \S+ bytes=\d+ live=\[%d,%d\]' % (re.escape(name), start, steps), p.stdout, re.M)
    c = run([sys.executable, os.path.join(HERE, "..", "e2e", "check_plan.py"), "--plan", "wide.json"], work)
    check(p.returncode == 0 and kept is not None and c.returncode == 0,
          "a dump after liveness with '%s' widened to live=[%d,%d] is re-planned (inplace, memplan), the interval "
          "kept, the plan checked" % (name, start, steps), p.stderr + c.stdout)

    # shrink an interval below a use: the node at its end + 1 reads it (pick one with end > start)
    for m in re.finditer(r'^plan "([^"]+)" (?:saved_)?activation bytes=\d+ live=\[(\d+),(\d+)\] offset=-1$', inp,
                         re.M):
        if int(m.group(3)) > int(m.group(2)) + 1:
            break
    short = inp.replace(m.group(0), m.group(0).replace("live=[%s,%s]" % (m.group(2), m.group(3)),
                                                      "live=[%s,%s]" % (m.group(2), m.group(2))))
    with open(os.path.join(work, "short.vir"), "w") as f:
        f.write(short)
    p = run([vcc, "short.vir"], work)
    check(p.returncode == 1 and "plan check" in p.stderr and m.group(1) in p.stderr,
          "a dump with '%s' shrunk to live=[%s,%s] is refused by the plan check" % (m.group(1), m.group(2),
                                                                                    m.group(2)), p.stderr)
    # every dump, fed back, gives the same program: the same nodes, the same tensors with the same
    # categories, sizes and live intervals, the same arena line (persistent offsets may be laid out in
    # another order: the declaration order of a dump is not the order the passes created tensors in)
    def shape_of_plan(text):
        lines = text.splitlines()[1:]
        nodes = [l for l in lines if l.startswith(("node ", "output ", "opset "))]
        plans = sorted(re.sub(r" offset=\d+", "", l) for l in lines if l.startswith("plan "))
        arena = [l for l in lines if l.startswith("arena ")]
        return nodes, plans, arena
    ref = shape_of_plan(mem)
    for pas in ["onnx", "canonical", "shape", "fuse", "precision", "loss", "autodiff", "optimizer", "storage", "schedule",
                "liveness", "inplace"]:
        d = run([vcc, model, "--dump-ir", pas], work).stdout
        with open(os.path.join(work, pas + ".vir"), "w") as f:
            f.write(d)
        p = run([vcc, pas + ".vir", "--dump-ir", "memplan"], work)
        check(p.returncode == 0 and shape_of_plan(p.stdout) == ref,
              "the dump after %s, fed back, gives the same nodes, intervals and arena" % pas, p.stderr)

    # hand edits that leave the stored types inconsistent are refused before anything trusts them
    # (a conv's pads changed in a dump after shape: its output and workspace no longer fit)
    d = open(os.path.join(work, "shape.vir")).read()
    edited = d.replace("pads=[1,1,1,1,1,1]", "pads=[0,0,0,0,0,0]", 1)
    with open(os.path.join(work, "pads.vir"), "w") as f:
        f.write(edited)
    p = run([vcc, "pads.vir", "-o", "pads.c"], work)
    check(edited != d and p.returncode == 1 and "but its inputs and attributes give" in p.stderr
          and not os.path.exists(os.path.join(work, "pads.c")),
          "a dump after shape with a Conv's pads edited is refused: %s" % p.stderr.strip()[:160], p.stderr)
    edited = mem.replace(" forward Relu ", " forward Identity ", 1)
    with open(os.path.join(work, "op.vir"), "w") as f:
        f.write(edited)
    p = run([vcc, "op.vir"], work)
    check(p.returncode == 1 and "not a view" in p.stderr, "a Relu turned into an Identity (not a view) is refused: %s"
          % p.stderr.strip()[:160], p.stderr)

    check_vir_semantics(vcc, model, mem, work)
    check_vir_trains(vcc, os.path.join(os.path.dirname(os.path.dirname(model)), "conv2d"), work)

    # names with control characters, escape sequences, a C1 control and bytes that are not UTF-8: the
    # dump shows them escaped (\\xNN), as plain text, and reads back to the same graph
    m = onnx.load(model)
    names = {"input": "in\x1b[31mput", "conv0.weight": "w\neight\u009b", "fc.bias": "fc.b\u0085ias"}
    for t in list(m.graph.initializer) + list(m.graph.input):
        t.name = names.get(t.name, t.name)
    for n in m.graph.node:
        n.input[:] = [names.get(i, i) for i in n.input]
    onnx.save(m, os.path.join(work, "weird.onnx"))
    dump = run([vcc, "weird.onnx", "--dump-ir", "memplan"], work)
    raw = dump.stdout.encode()
    printable = all(b >= 0x20 or b in (0x0a,) for b in raw) and b"\xc2\x9b" not in raw
    with open(os.path.join(work, "weird.vir"), "w") as f:
        f.write(dump.stdout)
    again = run([vcc, "weird.vir", "--dump-ir", "memplan"], work)
    check(dump.returncode == 0 and printable and "\\x1b" in dump.stdout and again.stdout == dump.stdout,
          "names with control characters are escaped in dumps and read back to the same dump",
          dump.stderr + again.stderr)

    with open(os.path.join(work, "headless.vir"), "w") as f:
        f.write(mem.split("\n", 1)[1])
    p = run([vcc, "headless.vir"], work)
    check(p.returncode == 1 and "# vcc IR after" in p.stderr, "a dump without its first line: %s" % p.stderr.strip(),
          p.stderr)
    print("FAIL: %d" % len(fails) if fails else "PASS")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
