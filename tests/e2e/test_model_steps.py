"""Each training step of a models/video_nets.py model, checked from the trainer's own state (teacher forcing).

    test_model_steps.py --vcc BUILD/vcc --model NAME --work DIR [--shape NxCxTxHxW] [--steps 5]
                        [--target c|cu] [--optimizer sgd|adamw] [--no-fuse-attention]
                        [--workspace-limit BYTES] [--remat] [--cpu-conv dnnl|im2col] [--loss-report-only]
                        [--update-factor F]

models/export_video_nets.py exports the model (dropout 0: vcc's masks are not PyTorch's; the Dropout
nodes stay in the graph), vcc compiles it (--loss graph for unet3d_block, whose graph computes its own
loss), and the trainer runs --steps steps writing a checkpoint after each (parameters, BN statistics,
momentum). For every step k, the PyTorch module of models/video_nets.py is loaded with the trainer's
state after step k-1 (the export's state dict for k = 1) and performs step k in float64, and in float32
on each of PyTorch's two CPU convolution paths (oneDNN, its default, and its own im2col + GEMM), each on 1
and on 2 threads, with
torch.optim.SGD (lr 0.01, momentum 0.9, weight decay 1e-4), or with --optimizer adamw (the trainer compiled
with vcc --optimizer adamw) torch.optim.AdamW (lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 1e-2)
whose exp_avg, exp_avg_sq and step count are the trainer's checkpoint's; the batch is the one the trainer
used (samples (k-1)*N + i mod S). Checked per step:
  loss          |vcc - ref64| <= max(1e-5, 2 * max|loss32 - ref64|) * |ref64| + what the taken ReLU ties (below)
                move it (to first order: dloss/dy of the ReLU output times the element's change), where
                loss32 is PyTorch float32's loss on both its convolution paths, each on 1 and on 2 threads:
                on a badly conditioned step (s3d_small's first) PyTorch float32 itself lands 2.4e-5 from
                float64 at 2 threads (2.9e-6 at 1); with --loss-report-only the figures are printed, not
                asserted
  each tensor   parameters and BN running statistics after the step:
                max|vcc - ref64| <= max(F * max|ref32 - ref64| + 4 ulp(max|ref64|), F * max|free32 - ref64|,
                                        1e-4 * max|update64|)
                (F: --update-factor, 2 unless a test gives its measured reason for more; free32: PyTorch
                float32 as it runs by itself, its own side of every tie, on both paths at 2 threads)
                i.e. within PyTorch float32's own distance from float64 on the same step (the larger of
                its two paths; a step of a badly conditioned net, s3d's for one, moves float32 far from
                float64 in PyTorch too; for AdamW plus twice the change of the float64 step when the
                tensor's gradient moves by PyTorch float32's own gradient distance, which AdamW magnifies
                where |g| is near eps), or the step's own update (ref64 after - before) to 1e-4 of its
                size: a tensor whose update is a few float32 roundings of its values (a bias near zero)
                is judged by that update. A gradient that is zero in exact arithmetic (a key's LayerNorm
                bias under softmax: it shifts every score of a row alike) is rounding noise in any float32
                program; where PyTorch float32's gradient is as far from float64 as float64's is large,
                the tensor is also allowed twice the step's change when its gradient moves by 8 float32
                epsilons of its layer's (module's) largest gradient.
  ReLU ties     a ReLU input within float32's rounding of zero (|x64| <= max|x32 - x64| over that ReLU
                call, either path) may land on either side in a correct float32 step, and its gradient
                then passes or not; deep in a net that moves whole channels' updates (s3d_small's step 1
                has -3.5e-5 in float64 after 40 layers, which vcc's float32, like PyTorch's im2col path,
                puts above zero). The float32 references take float64's side of every ReLU in backward,
                so their distance is rounding alone. A step within its allowance with every tie on
                float64's side passes as it is (a float64 backward per tie is not run: a full-size
                model's step has dozens of ties). Otherwise, for each tie, the float64 step is redone
                with that one element on its other side (SGD's update changes by -lr * the gradient's change; AdamW's,
                not linear in the gradient, by the float64 AdamW step redone with the changed gradient); the ties whose update changes lower the squared distance
                of vcc's step from ref64 (per tensor, in units of its allowance) the most are taken, one
                at a time while one does. Where more than one is taken, the float64 step is redone with
                all of them on their other side at once (a tie changes the gradient that reaches another
                one upstream in backward, which the sum of their single changes leaves out: on
                s3d_small's first step on an AVX-512 Xeon, 5 ties summed left a conv weight at 1.93 of
                its allowance, redone together 0.86), and the rest of the distance is held to the
                allowance. The taken ties are printed with their ReLU and float64 value. A wrong update
                is not such a combination, so it still fails.
  MaxPool ties  the same for a MaxPool window whose two largest inputs are within float32's rounding of
                each other (0 < gap <= max|x32 - x64| over that call): one tie per pair of inputs, every
                window holding both routed to the runner-up at once (a float32 program orders the two
                one way everywhere); the float32 references route by float64's argmax, and a taken tie's
                loss change is bounded by its gap (relu_ties.py, find_pool_ties).
With --remat vcc compiles with --memory-limit at the smallest arena its recomputation reaches (the size it
names when refusing --memory-limit 1): the recomputed values must leave every step as close to PyTorch.
With --remat-workspaces, at the smaller arena it names beside it with conv workspaces at the peak halved
too (smaller im2col chunks; the test fails when vcc names none), so the chunked sums are checked as well.
With --recompute-flops P (and --remat) the smallest arena within P percent more FLOPs instead. With
--expect-op OP[,OP...] (and --remat) for each OP, some recomputed node must be of op OP (e.g. Concat: a
data-movement copy).
With --clip-grad-norm MAX the trainer (compiled with vcc --keep-grads, which clipping needs; else each
update runs as soon as its gradient is final, vcc's default) clips and the references call
torch.nn.utils.clip_grad_norm_(MAX)
before each step; with --lr-schedule and --warmup-steps the references' learning rate is a LambdaLR with
the trainer's documented factor (s <= W: s/W; then 1, or 0.5 * (1 + cos(pi * (s - W) / (S - W))) for
cosine), advanced to the step; a step's lr and clip factor are printed with its figures.
With --workspace-limit BYTES the trainer is compiled with vcc --workspace-limit BYTES: a small one makes
every convolution and its gradients unfold their input in chunks, held to the same references.
Prints the figures of every step; exits 1 on a failure.

With --target cu the CUDA trainer is built (nvcc, no warnings); it runs only where a GPU is present.
With --export-from DIR the export is not run: DIR holds an earlier export of the same model and options
(this test's --work folder after a run, or export_video_nets.py's --out), whose <model>.onnx, <model>.pt and
data files are copied; for a GPU machine whose PyTorch exports differently or cannot export (carry the folder).
"""

import argparse
import copy
import json
import math
import os
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import torch
from safetensors import safe_open
from torch.optim.adamw import adamw as adamw_step  # PyTorch's functional AdamW (torch.optim.AdamW.step's)
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "..", "models")
sys.path.insert(0, MODELS_DIR)
import video_nets  # noqa: E402
from relu_ties import TIES, explain_by_ties, find_pool_ties, find_ties, tie_flips  # noqa: E402  (patches nn.ReLU, nn.MaxPool*)

LR, MOMENTUM, WD = 0.01, 0.9, 1e-4
ADAMW = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-2}
# --optimizer, --clip-grad-norm (None: off), --lr-schedule, --warmup-steps, --steps, and the step being checked
OPT = {"name": "sgd", "clip": None, "schedule": "constant", "warmup": 0, "steps": 5, "k": 1}


def lr_factor(s):
    """The trainer's documented learning-rate factor of step s (1-based): s / W while s <= W, then 1
    (constant) or 0.5 * (1 + cos(pi * (s - W) / (S - W))) (cosine), W = --warmup-steps, S = --steps."""
    w, total = OPT["warmup"], OPT["steps"]
    if s <= w:
        return s / w
    return 1.0 if OPT["schedule"] == "constant" else 0.5 * (1.0 + math.cos(math.pi * (s - w) / (total - w)))


def clip_coef(grads):
    """torch.nn.utils.clip_grad_norm_'s factor for the gradients grads (a dict), 1 without --clip-grad-norm."""
    if OPT["clip"] is None:
        return 1.0
    total = torch.norm(torch.stack([torch.norm(g.double(), 2) for g in grads.values()]), 2)
    return min(OPT["clip"] / (float(total) + 1e-6), 1.0)


def run(cmd, cwd, shell=False):
    p = subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)
    if p.returncode:
        sys.exit("FAIL: %s exited %d\n%s%s" % (cmd, p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout


def ulp(x):
    return float(np.spacing(np.float32(max(abs(x), 1e-30))))


def make_optimizer(model, opt_state, dtype):
    """torch.optim.SGD or AdamW (OPT["name"]) over model's parameters, its per-parameter state from
    opt_state ({parameter name: {state key: float64 array or step count}}, the trainer's checkpoint)."""
    if OPT["name"] == "adamw":
        opt = torch.optim.AdamW(model.parameters(), **ADAMW)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    for n, p in model.named_parameters():
        for key, v in opt_state.get(n, {}).items():
            opt.state[p][key] = torch.tensor(float(v)) if key == "step" else torch.tensor(v, dtype=dtype)
    # the schedule as a LambdaLR (its epoch e is the step e + 1), advanced to step k
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: lr_factor(e + 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "lr_scheduler.step() before optimizer.step()": on purpose here
        for _ in range(OPT["k"] - 1):
            sched.step()
    return opt


def clipped_step(model, opt):
    """torch.nn.utils.clip_grad_norm_ (with --clip-grad-norm), then the optimizer's step."""
    if OPT["clip"] is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), OPT["clip"])
    opt.step()


def adamw_param(p, g, st, lr):
    """Parameter p (float64) after PyTorch's functional AdamW step with gradient g and learning rate lr from
    state st (its exp_avg, exp_avg_sq and step before the step)."""
    p = p.clone()
    adamw_step([p], [g], [st["exp_avg"].clone()], [st["exp_avg_sq"].clone()], [], [st["step"].clone()],
               foreach=False, amsgrad=False, beta1=ADAMW["betas"][0], beta2=ADAMW["betas"][1], lr=lr,
               weight_decay=ADAMW["weight_decay"], eps=ADAMW["eps"], maximize=False)
    return p


def forward(name, clip, num_classes, state, momenta, x, y, dtype, mkldnn=True, masks=None, pool_idx=None):
    """The PyTorch module from state (state dict names) with its optimizer state (momenta, make_optimizer),
    and its loss on (x, y), its CPU convolutions through oneDNN (mkldnn, PyTorch's default for float32) or through its own
    im2col + GEMM path (mkldnn=False), its ReLUs' backward on masks (one per ReLU call) and its MaxPools'
    on the argmax pool_idx (one per MaxPool call) when given (relu_ties.py; TIES["pools"] records them).
    Returns (model, optimizer, loss, the ReLU inputs in call order, their module names)."""
    torch.backends.mkldnn.enabled = mkldnn
    torch.manual_seed(0)
    model = video_nets.build_model(name, num_classes=num_classes, clip=clip, dropout=0.0).to(dtype)
    sd = model.state_dict()
    model.load_state_dict({k: torch.tensor(np.asarray(v)).to(sd[k].dtype) for k, v in state.items() if k in sd},
                          strict=True)
    model.train()
    opt = make_optimizer(model, momenta, dtype)
    xt = torch.tensor(x, dtype=dtype)
    TIES["pre"], TIES["flip"], TIES["mask"], TIES["names"] = [], {}, masks, []
    TIES["pools"], TIES["pool_flip"], TIES["pool_idx"] = [], {}, pool_idx
    TIES["modules"] = {id(m): n for n, m in model.named_modules()}
    if name == "unet3d_block":
        loss = model(xt, torch.tensor(y, dtype=dtype))
    else:
        loss = torch.nn.functional.cross_entropy(model(xt), torch.tensor(y))
    TIES["mask"], TIES["pool_idx"] = None, None
    opt.zero_grad()
    return model, opt, loss, TIES["pre"], TIES["names"]


def state_of(model):
    return {k: v.detach().double().numpy() for k, v in model.state_dict().items()}


def ref_step(name, clip, num_classes, state, momenta, x, y):
    """Step k in PyTorch: returns (loss64, state64, [state32 per convolution path], ties), each tie a
    (description, a function returning {parameter: the change of its float64 update with that ReLU element
    on its other side}): each costs a float64 backward, run only where the step is not within its
    allowance without the ties."""
    m64, o64, l64, pre64, relus = forward(name, clip, num_classes, state, momenta, x, y, torch.float64)
    pools64 = TIES["pools"]
    TIES["gout"], TIES["pool_gout"] = {}, {}  # each ReLU and MaxPool call's output gradient, dloss/dy
    l64.backward(retain_graph=True)
    gout, pool_gout, TIES["gout"], TIES["pool_gout"] = TIES["gout"], TIES["pool_gout"], None, None
    masks = [p > 0 for p in pre64]
    pool_idx = [r["idx"] for r in pools64]
    s32, pre32, g32, l32, pools32 = [], [], [], [], []
    # PyTorch's float32 on both convolution paths, each on 1 thread and on 2 (the trainer's default on
    # the CI machine): their summation orders differ, and on a badly conditioned step so do their results
    for mk, threads in ((True, 1), (False, 1), (True, 2), (False, 2)):
        torch.set_num_threads(threads)
        m, o, l, pre, _ = forward(name, clip, num_classes, state, momenta, x, y, torch.float32, mk, masks,
                                  pool_idx)
        pools32.append(TIES["pools"])
        l32.append(float(l))
        l.backward()
        torch.set_num_threads(1)
        g32.append({n: p.grad.double() for n, p in m.named_parameters() if p.grad is not None})
        clipped_step(m, o)
        s32.append(state_of(m))
        pre32.append(pre)
    # PyTorch's float32 as it runs by itself, its own side of every ReLU and MaxPool tie, on both paths at
    # 2 threads: a step where the ties PyTorch's im2col path takes move it as far from float64 as vcc's
    # (s3d_small's second on an AVX-512 EPYC: 4.8e-4 on a BN bias, vcc 4.9e-4) is judged by that distance
    free32 = []
    for mk in (True, False):
        torch.set_num_threads(2)
        m, o, l, _, _ = forward(name, clip, num_classes, state, momenta, x, y, torch.float32, mk)
        l.backward()
        torch.set_num_threads(1)
        clipped_step(m, o)
        free32.append(state_of(m))
    torch.backends.mkldnn.enabled = True
    grads = {n: p.grad.clone() for n, p in m64.named_parameters() if p.grad is not None}
    lr = o64.param_groups[0]["lr"]
    coef = clip_coef(grads)
    adamw = OPT["name"] == "adamw"
    if adamw:  # AdamW's state before the step (zero at the first), and its update with the true gradients
        for p in m64.parameters():
            st = o64.state[p]
            if not st:
                st.update(step=torch.tensor(0.0), exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p))
        before = {n: (p.detach().clone(), o64.state[p]) for n, p in m64.named_parameters()}
        base = {n: adamw_param(before[n][0], coef * grads[n], before[n][1], lr) for n in grads}
    # AdamW's update is not linear in the gradient: near |g| ~ eps it magnifies the gradient's float32
    # rounding. The float64 step redone with each gradient moved by PyTorch float32's own gradient distance
    # (either way) bounds what that rounding does to the step.
    # A gradient that cancels to zero in exact arithmetic (a key's LayerNorm bias under softmax, which shifts
    # every score of a row alike) is float32 rounding noise alone, in PyTorch as in any other float32 program:
    # where PyTorch float32's gradient is as far from float64 as float64's is large, the gradient's distance is
    # taken as at least 8 float32 epsilons of its layer's largest float64 gradient (the layer: the parameters
    # of one module, whose gradients sum the same incoming gradient), and the step's sensitivity to it is
    # allowed, for SGD (lr * clip * that distance) as for AdamW.
    layer_max = {}
    for n, g in grads.items():
        mod = n.rsplit(".", 1)[0]
        layer_max[mod] = max(layer_max.get(mod, 0.0), float(g.abs().max()))
    sens = {}
    for n in grads:
        dg = max(float((r[n] - grads[n]).abs().max()) for r in g32)
        noise = float(grads[n].abs().max()) <= dg
        if noise:
            dg = max(dg, 8 * float(np.finfo(np.float32).eps) * layer_max[n.rsplit(".", 1)[0]])
        if adamw:
            sens[n] = max(float((adamw_param(before[n][0], coef * (grads[n] + sg * dg), before[n][1], lr) -
                                 base[n]).abs().max()) for sg in (1.0, -1.0))
        elif noise:
            sens[n] = lr * coef * dg

    def moved_by(flips, pool_flips=None):
        """The change of every parameter's float64 update with the ReLU elements flips ({call: [flat
        indices]}) on their other side in backward, and the MaxPool windows pool_flips ({call: ([flat
        output positions], [flat input positions])}) routing their gradient to those inputs (p.grad is left
        holding the changed gradients)."""
        TIES["flip"] = {k: torch.tensor(v) for k, v in flips.items()}
        TIES["pool_flip"] = {k: (torch.tensor(o), torch.tensor(a)) for k, (o, a) in (pool_flips or {}).items()}
        o64.zero_grad()
        l64.backward(retain_graph=True)
        TIES["flip"], TIES["pool_flip"] = {}, {}
        changed = [(n, p) for n, p in m64.named_parameters() if n in grads and not torch.equal(p.grad, grads[n])]
        # with --clip-grad-norm the flipped gradients have their own clip factor; the other tensors'
        # change through it (second order in the flipped elements) is left out
        c2 = clip_coef({n: p.grad for n, p in m64.named_parameters() if n in grads})
        if adamw:
            return {n: (adamw_param(before[n][0], c2 * p.grad, before[n][1], lr) - base[n]).numpy().astype(
                np.float32) for n, p in changed}
        return {n: (-lr * (c2 * p.grad - coef * grads[n])).numpy().astype(np.float32) for n, p in changed}

    ties, tie_loss, tie_at = [], {}, []
    for k, i, xi, err in find_ties(pre64, pre32):
        # the loss moves too (to first order, by dloss/dy times the output's change): a positive input
        # on its other side drops x64 from the output; a negative one lets through its float32 value,
        # at most the call's float32 distance err above zero
        tie_loss["%s[%d] %.1e" % (relus[k], i, xi)] = abs(float(gout[k][i])) * (xi if xi > 0 else err)
        ties.append(("%s[%d] %.1e" % (relus[k], i, xi), lambda k=k, i=i: moved_by({k: [i]})))
        tie_at.append((k, i))
    for k, o, alt, gap in find_pool_ties(pools64, pools32):
        # a MaxPool window whose two largest inputs are within float32's rounding: its output moves by at
        # most the gap when the runner-up wins, the loss by dloss/dy times that
        desc = "%s(%s->%d) gap %.1e" % (pools64[k]["name"], ",".join(map(str, o)), alt[0], gap)
        tie_loss[desc] = sum(abs(float(pool_gout[k][j])) for j in o) * gap
        ties.append((desc, lambda k=k, o=o, alt=alt: moved_by({}, {k: (o, alt)})))
        tie_at.append(("pool", k, o, alt))

    def together(picked):
        """moved_by for the ties picked (indices into ties) all on their other side at once: a tie's
        change of the gradients reaching another tie upstream in backward is in it, which the sum of
        their single changes leaves out."""
        pool_flips = {}
        for j in picked:
            if tie_at[j][0] == "pool":
                o, a = pool_flips.setdefault(tie_at[j][1], ([], []))
                o.extend(tie_at[j][2])
                a.extend(tie_at[j][3])
        return moved_by(tie_flips(tie_at, [j for j in picked if tie_at[j][0] != "pool"]), pool_flips)

    # the step runs on a copy, so that together() can still run backward through m64's graph (a
    # Parameter's deepcopy leaves its .grad behind: the gradients are set on the copy)
    m64s, o64s = copy.deepcopy((m64, o64))
    for n, p in m64s.named_parameters():
        if n in grads:
            p.grad = grads[n].clone()
    clipped_step(m64s, o64s)
    return float(l64), state_of(m64s), s32, ties, sens, (lr, coef), l32, tie_loss, together, free32


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model", required=True, choices=video_nets.MODELS)
    ap.add_argument("--work", required=True)
    ap.add_argument("--shape", default=None)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--num-classes", type=int, default=10)
    ap.add_argument("--target", choices=("c", "cu"), default="c")
    ap.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    ap.add_argument("--clip-grad-norm", type=float, default=None)
    ap.add_argument("--lr-schedule", choices=("constant", "cosine"), default="constant")
    ap.add_argument("--warmup-steps", type=int, default=0)
    ap.add_argument("--no-fuse-attention", action="store_true",
                    help="compile the model's attention as written (vcc --no-fuse-attention)")
    ap.add_argument("--cpu-conv", choices=("dnnl", "im2col"), default=None,
                    help="vcc --cpu-conv: the C trainer's convolution backend (default: vcc's)")
    ap.add_argument("--update-factor", type=float, default=2.0,
                    help="each tensor's allowance in units of PyTorch float32's own distance from float64 (default 2)")
    ap.add_argument("--loss-report-only", action="store_true",
                    help="print the loss check's figures without asserting them (every tensor is still checked)")
    ap.add_argument("--workspace-limit", default=None,
                    help="compile with vcc --workspace-limit BYTES (small: every convolution unfolds in chunks)")
    ap.add_argument("--export-from", default=None,
                    help="copy the export (<model>.onnx, <model>.pt, data) from this folder instead of exporting")
    ap.add_argument("--remat", action="store_true",
                    help="compile with vcc --memory-limit at the smallest arena recomputation reaches (the size "
                         "vcc names when it refuses --memory-limit 1)")
    ap.add_argument("--remat-workspaces", action="store_true",
                    help="with --remat, the smaller arena vcc names with conv workspaces at the peak halved too")
    ap.add_argument("--recompute-flops", metavar="P", default=None,
                    help="with --remat, vcc --recompute-flops P: the smallest arena within P%% more FLOPs")
    ap.add_argument("--expect-op", metavar="OP[,OP...]", default=None,
                    help="with --remat, fail unless for each OP some recomputed node (a backward clone) is of op OP")
    args = ap.parse_args()
    OPT.update(name=args.optimizer, clip=args.clip_grad_norm, schedule=args.lr_schedule, warmup=args.warmup_steps,
               steps=args.steps)
    train_opts = ["--lr-schedule", args.lr_schedule, "--warmup-steps", str(args.warmup_steps)]
    if args.clip_grad_norm is not None:
        train_opts += ["--clip-grad-norm", str(args.clip_grad_norm)]
    torch.set_num_threads(1)
    d = os.path.abspath(args.work)
    os.makedirs(d, exist_ok=True)
    name = args.model
    exp = [sys.executable, os.path.join(MODELS_DIR, "export_video_nets.py"), "--model", name, "--out", d]
    if name != "unet3d_block":  # the UNet has neither Dropout nor classes
        exp += ["--dropout", "0", "--num-classes", str(args.num_classes)]
    if args.shape:
        exp += ["--shape", args.shape]
    if args.export_from:
        src_dir = os.path.abspath(args.export_from)
        files = [name + ".onnx", name + ".pt", "data.npy", "targets.npy" if name == "unet3d_block" else "labels.npy"]
        missing = [f for f in files if not os.path.isfile(os.path.join(src_dir, f))]
        if missing:
            sys.exit("FAIL: --export-from %s lacks %s" % (src_dir, ", ".join(missing)))
        if src_dir != d:
            for f in files:
                shutil.copyfile(os.path.join(src_dir, f), os.path.join(d, f))
        print("export: copied from %s" % src_dir)
    else:
        run(exp, d)
    clip = tuple(int(v) for v in (args.shape.split("x") if args.shape else video_nets.DEFAULT_SHAPES[name]))
    graph_loss = name == "unet3d_block"
    src = "train." + args.target
    vcc_cmd = [os.path.abspath(args.vcc), name + ".onnx", "-o", src, "--optimizer", args.optimizer] + \
        (["--loss", "graph"] if graph_loss else []) + \
        (["--no-fuse-attention"] if args.no_fuse_attention else []) + \
        (["--workspace-limit", args.workspace_limit] if args.workspace_limit else []) + \
        (["--cpu-conv", args.cpu_conv] if args.cpu_conv else []) + \
        (["--keep-grads"] if args.clip_grad_norm is not None else []) + \
        (["--recompute-flops", args.recompute_flops] if args.remat and args.recompute_flops else [])
    if args.remat:
        p = subprocess.run(vcc_cmd + ["--memory-limit", "1"], cwd=d, capture_output=True, text=True)
        m = re.search(r"smallest arena reachable by recomputation(?: within --recompute-flops \S+)? is (\d+) bytes", p.stderr)
        if args.remat_workspaces:
            same = m
            m = re.search(r"workspaces at the peak shrunk too .*? it is (\d+) bytes", p.stderr)
            if m and same and not int(m.group(1)) < int(same.group(1)):
                sys.exit("FAIL: the arena with workspaces halved, %s, is not below the one without, %s"
                         % (m.group(1), same.group(1)))
        if p.returncode == 0 or not m:
            sys.exit("FAIL: vcc --memory-limit 1: exit %d, %s" % (p.returncode, p.stderr))
        vcc_cmd += ["--memory-limit", m.group(1)]
        print("vcc --memory-limit %s" % m.group(1))
        if args.remat_workspaces:
            vcc_cmd += ["--plan-json", "remat_plan.json"]
    build = run(vcc_cmd, d).strip().splitlines()[-1]
    if args.remat and args.expect_op:  # the IR after recomputation: the clones' ops
        dump = run([a for a in vcc_cmd if a not in ("-o", src)] + ["--dump-ir", "remat"], d)
        clones = {ln.split()[3] for ln in dump.splitlines()
                  if ln.startswith("node ") and ".recompute\"" in ln.split("(")[0]}
        for op in args.expect_op.split(","):
            if op not in clones:
                sys.exit("FAIL: no %s among the recomputed nodes: %s" % (op, sorted(clones)))
        print("recomputed nodes' ops: %s" % " ".join(sorted(clones)))
    if args.remat_workspaces:  # the plan at that limit says it halved workspaces
        plan = json.load(open(os.path.join(d, "remat_plan.json")))
        limit = int(vcc_cmd[vcc_cmd.index("--memory-limit") + 1])
        if not (plan.get("recompute_workspace_halvings") or 0) > 0 or plan["arena_bytes"] > limit:
            sys.exit("FAIL: vcc --memory-limit %d --plan-json: halvings %s, arena %s"
                     % (limit, plan.get("recompute_workspace_halvings"), plan["arena_bytes"]))
        print("plan: arena %d bytes, %d workspace halvings (%d bytes less at their steps)"
              % (plan["arena_bytes"], plan["recompute_workspace_halvings"], plan["recompute_workspace_bytes"]))
    run(build, d, shell=True)
    if args.target == "cu":
        gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0 if \
            any(os.access(os.path.join(p, "nvidia-smi"), os.X_OK) for p in os.environ["PATH"].split(":")) else False
        if not gpu:
            print("built %s with nvcc; no GPU here, so it was not run" % src)
            return
    exe = "./train_cuda" if args.target == "cu" else "./train"
    feed = ["--data", "data.npy"] + (["--targets", "targets.npy"] if graph_loss else ["--labels", "labels.npy"])
    ck = os.path.join(d, "ck")
    if os.path.isdir(ck):
        for f in os.listdir(ck):
            os.remove(os.path.join(ck, f))
    if args.optimizer == "adamw":
        hyper = ["--lr", str(ADAMW["lr"]), "--beta1", str(ADAMW["betas"][0]), "--beta2", str(ADAMW["betas"][1]),
                 "--eps", str(ADAMW["eps"]), "--weight-decay", str(ADAMW["weight_decay"])]
    else:
        hyper = ["--lr", str(LR), "--momentum", str(MOMENTUM), "--weight-decay", str(WD)]
    out = run([exe] + feed + ["--steps", str(args.steps)] + hyper + train_opts +
              ["--checkpoint-dir", "ck", "--checkpoint-every", "1", "--keep-last", "0"], d)
    losses = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    data = np.load(os.path.join(d, "data.npy"))
    second = np.load(os.path.join(d, "targets.npy" if graph_loss else "labels.npy"))
    S, N = data.shape[0], clip[0]
    state = {k: v.double().numpy() for k, v in torch.load(os.path.join(d, name + ".pt")).items()}
    momenta = {}
    failed = []
    print("step  loss vcc      loss ref64    rel       ties   worst tensor (vcc-ref64 / allowed)")
    for k in range(1, args.steps + 1):
        idx = [((k - 1) * N + i) % S for i in range(N)]
        OPT["k"] = k
        l64, s64, s32, ties, sens, (lr_k, coef), l32, tie_loss, together, free32 = ref_step(name, clip, args.num_classes, state, momenta, data[idx],
                                                                second[idx])
        got = load_file(os.path.join(ck, "step%d.safetensors" % k))
        with safe_open(os.path.join(ck, "step%d.safetensors" % k), "np") as f:
            meta = f.metadata()
        resid, allowed = {}, {}
        for t, ref in s64.items():
            before = np.asarray(state.get(t, ref), dtype=np.float64)
            if t.endswith("num_batches_tracked"):
                if t in got and int(got[t]) != int(ref):
                    failed.append("step %d %s %d, want %d" % (k, t, int(got[t]), int(ref)))
                continue
            if t not in got:
                failed.append("step %d: checkpoint lacks %s" % (k, t))
                continue
            d32 = max(float(np.abs(r32[t] - ref).max()) for r32 in s32)
            free = max(float(np.abs(r32[t] - ref).max()) for r32 in free32)
            allowed[t] = max(args.update_factor * d32 + 4 * ulp(float(np.abs(ref).max())) + 2 * sens.get(t, 0.0),
                             args.update_factor * free, 1e-4 * float(np.abs(ref - before).max()), 1e-30)
            resid[t] = (got[t].astype(np.float64) - ref) / allowed[t]
        # the loss: within 1e-5, or twice PyTorch float32's own distance on this step, plus what the ReLU
        # ties the update check took on their other side move it
        r = abs(losses[k - 1] - l64) / max(abs(l64), 1e-30)
        r32 = max(abs(v - l64) for v in l32) / max(abs(l64), 1e-30)
        # every tie on float64's side is one of the steps a correct float32 program may take: the ties
        # (a float64 backward each) are weighed only where the step is not within its allowance without them
        taken = []
        if r > max(1e-5, 2 * r32) or any(float(np.abs(v).max()) > 1.0 for v in resid.values()):
            ties = [(desc, moved()) for desc, moved in ties]
            for _, moved in ties:
                for t in moved:
                    moved[t] /= np.float32(allowed[t])
            left, taken, picked = explain_by_ties(resid, ties)
            if len(picked) > 1:
                # the picked ties redone together in float64 (their single changes only add up to first order)
                both = together(picked)
                left = {t: v - both[t] / np.float32(allowed[t]) if t in both else v for t, v in resid.items()}
            resid = left
        r_ties = sum(tie_loss[t] for t in taken) / max(abs(l64), 1e-30)
        loss_allowed = max(1e-5, 2 * r32) + r_ties
        if r > loss_allowed and not args.loss_report_only:
            failed.append("step %d loss %.2e > %.2e" % (k, r, loss_allowed))
        elif r > loss_allowed:
            print("      (not asserted) step %d loss %.2e > %.2e" % (k, r, loss_allowed))
        worst, wname = 0.0, ""
        for t, v in resid.items():
            ratio = float(np.abs(v).max())
            if ratio > worst:
                worst, wname = ratio, t
            if ratio > 1.0:
                failed.append("step %d %s %.2e > %.2e" % (k, t, ratio * allowed[t], allowed[t]))
        print("%-5d %-13.7g %-13.7g %.2e  %2d/%-3d %s %.2f" % (k, losses[k - 1], l64, r, len(taken), len(ties),
                                                           wname, worst))
        if loss_allowed > 1e-5:
            print("      loss allowed %.2e: PyTorch float32's own loss is %.2e from float64 on this step, the taken "
                  "ties move it by %.2e" % (loss_allowed, r32, r_ties))
        for t in taken:
            print("      taken on its other side: %s" % t)
        if args.clip_grad_norm is not None or args.lr_schedule != "constant" or args.warmup_steps:
            print("      lr %.6g, clip factor %.6g" % (lr_k, coef))
        del ties
        # the next step starts from the trainer's own state
        state = {t: got[t].astype(np.float64) if t in got else v for t, v in state.items()}
        if args.optimizer == "adamw":
            momenta = {t[:-len(".exp_avg")]: {"exp_avg": got[t].astype(np.float64),
                                               "exp_avg_sq": got[t + "_sq"].astype(np.float64),
                                               "step": int(meta["step"])} for t in got if t.endswith(".exp_avg")}
        else:
            momenta = {t[:-len(".momentum")]: {"momentum_buffer": got[t].astype(np.float64)}
                       for t in got if t.endswith(".momentum")}
    with open(os.path.join(d, "steps.json"), "w") as f:
        json.dump({"losses": losses}, f)
    if failed:
        sys.exit("FAIL: " + "; ".join(failed[:12]) + (" ..." if len(failed) > 12 else ""))
    print("PASS: %d steps of %s with %s" % (args.steps, name, args.optimizer))


if __name__ == "__main__":
    main()
