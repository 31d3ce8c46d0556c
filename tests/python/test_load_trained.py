"""load_trained: a vcc trainer's safetensors file back into the PyTorch model.

    .venv/bin/python tests/python/test_load_trained.py --work DIR [--vcc BUILD/vcc]

1. strict round trip on a file written the way the trainer writes --out: keys = the model's
   state_dict keys (parameters, running_mean / running_var, num_batches_tracked), float32 tensors
   and an int64 counter, values unlike the model's (a second seed). Loaded with strict=True into a
   model of another seed: every entry bit-identical to the file's, the same tensor objects. Also:
   into a float64 copy (each value the float32 one, widened), and a counter stored with shape (1,).
2. errors, each leaving the model untouched: a missing parameter (strict=True and strict=False), an
   unexpected key (strict=True), no num_batches_tracked with strict=True (the message suggests
   strict=False), a shape mismatch, a non-integral float into the int64 counter; and what
   strict=False loads: without num_batches_tracked (the counters keep their values, the keys are
   reported missing), with a checkpoint's '.momentum' keys (ignored, reported unexpected); a real
   checkpoint (told apart by its metadata) loads with strict=True.
3. with --vcc, the real trainer: the test's small Conv3d-BN-ReLU-view-Linear model, exported with
   export_for_training, compiled, trained 3 SGD steps (lr 0.01, momentum 0.9, weight decay 1e-4,
   batch 2 of 4 seeded samples) with --out; load_trained (strict=True when the file holds every
   state_dict key, else strict=False with only num_batches_tracked missing) into the model, which is
   then compared with a deep copy trained by torch.optim.SGD on the same batches: every parameter and
   running statistic within 1e-5 of max|PyTorch| (per tensor); a num_batches_tracked in the file
   must equal the pre-export count + 3.
"""

import argparse
import copy
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import save_file

from checklib import check, finish
import vcc_torch  # noqa: E402  (checklib puts python/ on sys.path)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv3d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm3d(4)
        self.conv2 = torch.nn.Conv3d(4, 4, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm3d(4)
        self.fc = torch.nn.Linear(4 * 2 * 4 * 4, 5)

    def forward(self, x):  # (N, 3, 2, 4, 4) -> (N, 5)
        x = torch.relu(self.bn(self.conv(x)))
        x = torch.relu(self.bn2(self.conv2(x)) + x)
        return self.fc(x.view(x.size(0), -1))


def make(seed):
    torch.manual_seed(seed)
    m = Net().train()
    with torch.no_grad():
        for b in (m.bn, m.bn2):
            b.running_mean.uniform_(-1, 1)
            b.running_var.uniform_(0.5, 2)
            b.num_batches_tracked.fill_(seed * 10 + 3)
    return m


def trainer_like_file(model, path, drop=(), extra=None, counter_shape=None):
    """model's state_dict as a vcc trainer's --out: float32 tensors, int64 counters."""
    out = {}
    for k, v in model.state_dict().items():
        if k in drop:
            continue
        a = v.detach().cpu().numpy()
        a = a.astype(np.int64) if k.endswith("num_batches_tracked") else a.astype(np.float32)
        if counter_shape is not None and k.endswith("num_batches_tracked"):
            a = a.reshape(counter_shape)
        out[k] = np.ascontiguousarray(a)
    out.update(extra or {})
    save_file(out, path)
    return out


def same_bits(model, ref):
    sd, rd = model.state_dict(), ref.state_dict()
    return [k for k in rd if sd[k].dtype != rd[k].dtype or not torch.equal(sd[k], rd[k])]


def expect_error(label, fn, model, words):
    pre = copy.deepcopy(model)
    try:
        fn()
        check(False, f"{label}: raises VccLoadError")
        return
    except vcc_torch.VccLoadError as e:
        msg = str(e)
    print(f"      {label}: {msg}")
    check(all(w in msg for w in words) and not same_bits(model, pre),
          f"{label}: VccLoadError naming {words}, model untouched")


def round_trip(work):
    print("== strict round trip")
    src = make(1)
    path = os.path.join(work, "like_trainer.safetensors")
    trainer_like_file(src, path)
    model = make(2)
    objects = dict(model.state_dict(keep_vars=True))
    res = vcc_torch.load_trained(model, path)
    check(not res.missing_keys and not res.unexpected_keys, f"strict=True: nothing missing or unexpected ({res})")
    diff = same_bits(model, src)
    check(not diff, f"{len(src.state_dict())} entries bit-identical to the file's: differ {diff[:4]}")
    check(all(model.state_dict(keep_vars=True)[k] is t for k, t in objects.items()), "the same tensor objects")

    m64 = make(3).double()
    vcc_torch.load_trained(m64, path)
    sd, rd = m64.state_dict(), src.state_dict()
    widened = all(sd[k].dtype == (torch.int64 if k.endswith("tracked") else torch.float64) and
                  torch.equal(sd[k], rd[k].to(sd[k].dtype)) for k in rd)
    check(widened, "float32 file into a float64 model: each value widened exactly, counters int64")

    path1 = os.path.join(work, "counter_shape1.safetensors")
    trainer_like_file(src, path1, counter_shape=(1,))
    model = make(4)
    vcc_torch.load_trained(model, path1)
    check(not same_bits(model, src) and model.bn.num_batches_tracked.dim() == 0,
          "a counter of shape (1,) loads into the 0-d num_batches_tracked")


def errors(work):
    print("== errors and strict=False")
    src = make(1)
    model = make(2)
    p = os.path.join(work, "missing.safetensors")
    trainer_like_file(src, p, drop=("fc.weight",))
    expect_error("missing parameter, strict=True", lambda: vcc_torch.load_trained(model, p), model,
                 ["missing keys", "'fc.weight'"])
    expect_error("missing parameter, strict=False", lambda: vcc_torch.load_trained(model, p, strict=False),
                 model, ["missing keys", "'fc.weight'"])
    p = os.path.join(work, "unexpected.safetensors")
    trainer_like_file(src, p, extra={"head.weight": np.zeros(3, np.float32)})
    expect_error("unexpected key, strict=True", lambda: vcc_torch.load_trained(model, p), model,
                 ["unexpected keys", "'head.weight'"])
    p = os.path.join(work, "no_counters.safetensors")
    nbt = ("bn.num_batches_tracked", "bn2.num_batches_tracked")
    trainer_like_file(src, p, drop=nbt)
    expect_error("no num_batches_tracked, strict=True", lambda: vcc_torch.load_trained(model, p), model,
                 ["'bn.num_batches_tracked'", "'bn2.num_batches_tracked'", "strict=False"])
    p = os.path.join(work, "bad_shape.safetensors")
    trainer_like_file(src, p, extra={"fc.bias": np.zeros(6, np.float32)})
    expect_error("shape mismatch", lambda: vcc_torch.load_trained(model, p), model, ["'fc.bias'", "[6]", "[5]"])
    p = os.path.join(work, "float_counter.safetensors")
    trainer_like_file(src, p, extra={"bn.num_batches_tracked": np.array(2.5, np.float32)})
    expect_error("non-integral float counter", lambda: vcc_torch.load_trained(model, p), model,
                 ["'bn.num_batches_tracked'", "non-integral"])

    p = os.path.join(work, "no_counters.safetensors")
    counters = {k: int(model.state_dict()[k]) for k in nbt}
    res = vcc_torch.load_trained(model, p, strict=False)
    sd, rd = model.state_dict(), src.state_dict()
    loaded = all(torch.equal(sd[k], rd[k]) for k in rd if k not in nbt)
    kept = all(int(sd[k]) == counters[k] for k in nbt)
    check(loaded and kept and sorted(res.missing_keys) == sorted(nbt) and not res.unexpected_keys,
          f"strict=False without counters: all else loaded, counters kept {counters}, missing {res.missing_keys}")
    p = os.path.join(work, "checkpoint_like.safetensors")
    mom = {"fc.weight.momentum": np.zeros((5, 128), np.float32), "fc.bias.momentum": np.zeros(5, np.float32)}
    trainer_like_file(make(5), p, extra=mom)
    res = vcc_torch.load_trained(model, p, strict=False)
    check(not same_bits(model, make(5)) and sorted(res.unexpected_keys) == sorted(mom),
          f"strict=False with momentum buffers: loaded, unexpected {res.unexpected_keys}")
    try:
        vcc_torch.load_trained(model, os.path.join(work, "absent.safetensors"))
        check(False, "a missing file raises FileNotFoundError")
    except FileNotFoundError as e:
        check("absent.safetensors" in str(e), f"a missing file: FileNotFoundError ({e})")


def real_trainer(work, vcc):
    print("== the vcc trainer's --out")
    from safetensors.numpy import load_file

    steps, lr, momentum, wd, batch = 3, 0.01, 0.9, 1e-4, 2
    model = make(6)
    rng = np.random.default_rng(0)
    data = rng.standard_normal((4, 3, 2, 4, 4), dtype=np.float32)
    labels = rng.integers(0, 5, size=(4,), dtype=np.int64)
    np.save(os.path.join(work, "data.npy"), data)
    np.save(os.path.join(work, "labels.npy"), labels)
    ref = copy.deepcopy(model)
    pre_counts = {k: int(v) for k, v in model.state_dict().items() if k.endswith("num_batches_tracked")}

    vcc_torch.export_for_training(model, torch.from_numpy(data[:batch]), os.path.join(work, "net.onnx"))

    def run(cmd, shell=False):
        p = subprocess.run(cmd, cwd=work, shell=shell, capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"FAIL: {cmd} exited {p.returncode}\n{p.stdout}{p.stderr}")
        return p.stdout

    build = run([vcc, "net.onnx", "-o", "train.c"]).strip()
    run(build, shell=True)
    out = run(["./train", "--data", "data.npy", "--labels", "labels.npy", "--steps", str(steps), "--lr", str(lr),
               "--momentum", str(momentum), "--weight-decay", str(wd), "--out", "trained.safetensors"])
    losses = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]

    opt = torch.optim.SGD(ref.parameters(), lr=lr, momentum=momentum, weight_decay=wd)
    ref_losses = []
    for k in range(steps):
        idx = [(k * batch + i) % len(data) for i in range(batch)]
        loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(data[idx])), torch.from_numpy(labels[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        ref_losses.append(float(loss))
    lerr = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
    check(len(losses) == steps and lerr <= 1e-5, f"losses {losses} vs PyTorch {[round(v, 6) for v in ref_losses]}: "
                                                 f"worst relative {lerr:.1e}")

    path = os.path.join(work, "trained.safetensors")
    keys = set(load_file(path))
    complete = keys >= set(model.state_dict())
    res = vcc_torch.load_trained(model, path, strict=complete)
    print(f"      file keys {len(keys)}; loaded with strict={complete}; missing {res.missing_keys}, "
          f"unexpected {res.unexpected_keys}")
    check(all(k.endswith("num_batches_tracked") for k in res.missing_keys),
          "nothing but num_batches_tracked missing from the trainer's file")
    worst = (0.0, "")
    sd, rd = model.state_dict(), ref.state_dict()
    for k in rd:
        if k.endswith("num_batches_tracked"):
            continue
        e = float((sd[k].double() - rd[k].double()).abs().max() / max(float(rd[k].abs().max()), 1e-30))
        worst = max(worst, (e, k))
    check(worst[0] <= 1e-5, f"{len(rd) - len(pre_counts)} parameters and running statistics vs PyTorch after "
                            f"{steps} steps: worst {worst[1]} {worst[0]:.1e} of max|PyTorch|")
    for k, n in pre_counts.items():
        if k in keys:
            check(int(sd[k]) == n + steps, f"{k} in the file: {int(sd[k])} = pre-export {n} + {steps}")

    # a checkpoint of the same run loads strictly too: its momentum buffers are the optimizer's state
    shutil.rmtree(os.path.join(work, "ck"), ignore_errors=True)
    run(["./train", "--data", "data.npy", "--labels", "labels.npy", "--steps", str(steps), "--lr", str(lr),
         "--momentum", str(momentum), "--weight-decay", str(wd), "--checkpoint-dir", "ck", "--checkpoint-every", "1"])
    ck = os.path.join(work, "ck", "step%d.safetensors" % steps)
    fresh = make(6)
    res = vcc_torch.load_trained(fresh, ck)
    same = all(torch.equal(fresh.state_dict()[k], model.state_dict()[k]) for k in model.state_dict())
    check(not res.missing_keys and not res.unexpected_keys and same,
          f"the step-{steps} checkpoint loads with strict=True and equals the --out file")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True)
    ap.add_argument("--vcc")
    args = ap.parse_args()
    torch.set_num_threads(2)
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    round_trip(work)
    errors(work)
    if args.vcc:
        real_trainer(work, os.path.abspath(args.vcc))
    finish()


if __name__ == "__main__":
    main()
