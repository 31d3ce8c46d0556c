"""The generated trainer as a user meets it: build commands, binary names, resume, checkpoints, messages.

    test_trainer.py CASE --vcc BUILD/vcc --tiny BUILD/tests/e2e/tiny --work DIR [--cmake CMAKE --build BUILD]

Cases (each one CTest test, trainer_<case>):
  build_command  vcc run in DIR with -o 'sub dir/it's here/t.c': the printed command, run by sh -c in DIR,
                 builds 'sub dir/it's here/t', which runs from DIR (its weights found beside it); the file's
                 first line says it builds from the file's folder and does; a .cu output prints a command
                 that builds t_cuda; vcc --help names both binaries
  cuda           (exit 77 without nvcc and cudnn.h) train.c and train.cu side by side in 'side by side/':
                 both printed commands, run from DIR, build train and train_cuda; train_cuda either trains
                 (a GPU: losses within 1e-4 of the C trainer's) or says in one line that there is no CUDA
                 device, exit status 1, with no source position in the line
  resume         a 6-step run on 5 samples (batch 2, so the data position matters) and the same run killed
                 with SIGKILL once 'step 3' is printed, then resumed with --resume DIR: the printed lines
                 are the uninterrupted run's, string for string, with no step missing or repeated, and the
                 final --out files are byte-identical; with --checkpoint-every 1 and 2; SIGTERM writes the
                 checkpoint of the step in flight and exits 143; a finished run resumed trains nothing,
                 a larger --steps extends it
  kill_write     SIGKILL while a checkpoint is being written (its .tmp is on disk): no file by the final
                 name is left half-written, every checkpoint loads with the safetensors package, --resume DIR
                 continues from the previous step with the uninterrupted run's losses and removes the
                 .tmp; a damaged newest checkpoint is skipped with a warning
  keep_last      --keep-last 2 leaves the 2 newest; the defaults leave only the last step's; 0 keeps all
  refuse         a fresh run pointed at another run's checkpoint folder is refused and the folder left
                 untouched; so is a resumed run writing into a third run's folder, a resume with another
                 --lr or other data, a resume from a plain weights file, --weights with --resume, and a
                 second trainer on a folder another running trainer writes into
  install        `cmake --install BUILD --prefix P` installs P/bin/vcc, which compiles a model from another
                 folder into a trainer that builds and trains, needing no file of the source or build tree
  messages       errors begin with the binary's own name; int32 labels and float64 data get
                 "labels must be int64 ('<i8'), got int32 ('<i4')" and "data must be float32 ('<f4'), got
                 float64 ('<f8')"; --help/-h and unknown options for the trainer and the forward program
  outputs        train --out/--save-grads, eval --logits and fwd -o given a FIFO, a character device (a
                 private clone of /dev/null, as root), a folder or a symlink to a FIFO: one line naming the
                 file, status 1, before the run, the file left as it was; also an empty name, a missing
                 folder and "folder/"; a symlink to a regular file is replaced by the output, its target kept;
                 fwd -o a link to /proc/self/fd/1 (what /dev/stdout is) with stdout redirected to a file:
                 refused as the program's standard output, the link kept
  tmp_files      symlinks planted at <out>.tmp (and ck/step1.safetensors.tmp) for every writer: the files
                 they name are intact, the outputs are new files with mode 0666 & ~umask, no temporary left
  same_file      an output naming the file of an input or of another output (same text, "./" spelling, a
                 hard link, the default weights beside the program, two outputs not yet written) is a usage
                 error (status 2) naming both options; the inputs are unchanged
  fifo_inputs    a FIFO as --data, --labels, --weights, --resume, eval's inputs and fwd's: refused at once
                 with "fifo: not a regular file (a FIFO)", status 1
  numbers        --lr/--momentum/--weight-decay take plain decimals only (0x10, ' 0.1', +0.1, inf, nan,
                 1e-400, 1e39 refused), --steps/--checkpoint-every/--keep-last plain digits; an option given
                 twice is a usage error in all three programs
  stdout         train, eval, and --help with stdout on /dev/full: status 1 and "<program>: cannot write to
                 standard output: No space left on device" (skipped, 77, without /dev/full)
  eval_logits    eval --logits into a missing folder is refused before evaluating; eval --logits without
                 --labels prints "samples S logits written to L (S, K)"
  signal         the first SIGINT to a trainer with a checkpoint folder is acknowledged on stderr at once;
                 the run still writes the step's checkpoint and exits 130
  state_shape    --weights with a tensor of another shape or dtype: "tensor 'X' is F32 (...) in the file; the
                 program needs F32 (...)"
  many_tensors   --weights holding 200,000 extra zero-size tensors loads and trains (quadratic parsing took
                 minutes)
  resume_lock    --resume DIR while another trainer writes into DIR is refused before "resuming from ..."
  optim_usage    an SGD and an AdamW trainer of the tiny res3d: --optimizer with another or an unknown name,
                 --beta1/--beta2/--eps on SGD, --momentum on AdamW (usage errors, status 2, one line saying
                 how to recompile), --beta1 1 or 1.5, --beta2 2, a negative --eps, --clip-grad-norm 0 and an
                 unknown --lr-schedule (one line naming the option, non-zero status); --optimizer naming
                 the compiled one is accepted; a checkpoint of one optimizer is refused by the other's
                 trainer, naming both; vcc refuses an unknown --optimizer, --momentum with adamw and
                 --optimizer with --eval
  optim_resume   for each optimizer, a 6-step run with --lr-schedule cosine --warmup-steps 2 and
                 --clip-grad-norm, and the same run stopped after step 3 (--steps 3 ... is not the same
                 schedule, so the run is cut by SIGKILL) and resumed: the losses are the uninterrupted run's,
                 string for string, and the --out files byte-identical; the AdamW checkpoint holds
                 <p>.exp_avg and <p>.exp_avg_sq for every parameter; a resume with another --warmup-steps,
                 --lr-schedule, --clip-grad-norm or (cosine) --steps is refused
  keep_grads     the SGD and AdamW trainers compiled without vcc --keep-grads refuse --save-grads and
                 --clip-grad-norm (usage error, status 2, one line naming vcc MODEL.onnx --keep-grads), write
                 no file, say so in --help, and train without them

Models: the fixture's tiny res3d and conv1d (tests/e2e/tiny_models.py), and for resume/kill_write a
model whose checkpoint is 32 MiB (a Gemm with a (512, 8192) weight, plus its momentum), so a checkpoint
write lasts long enough to be interrupted. Prints one line per check; exits 0 when all pass, 1 otherwise.
"""

import argparse
import filecmp
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time

import numpy as np
from safetensors import safe_open

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from tiny_models import Builder  # noqa: E402

# a checkpoint's temporary file while it is written: step<k>.safetensors.tmp.<6 random characters>
TMP_NAME = re.compile(r"step[0-9]+\.safetensors\.tmp(\.[A-Za-z0-9]{6})?$")
FIRST_LINE = "// build (from this file's folder): "
# How the printed command links OpenBLAS: plain, or its OpenMP build's folder by -L and rpath where CMake
# found one (CMakeLists.txt, VCC_OPENBLAS_OPENMP_DIR).
BLAS_LINK = r"(?: -L(\S+) -Wl,-rpath,\1)? -lopenblas -lm"
FAILURES = []


def check(ok, what, detail=""):
    print("%-4s %s%s" % ("ok" if ok else "FAIL", what, (": " + detail) if detail and not ok else ""))
    if not ok:
        FAILURES.append(what)
    return ok


def run(cmd, cwd, rc=0, shell=False):
    """Run cmd in cwd; the CompletedProcess; stops the case when the exit status is not rc (None: any)."""
    p = subprocess.run(cmd, cwd=cwd, shell=shell, capture_output=True, text=True)
    if rc is not None and p.returncode != rc:
        raise SystemExit("FAIL: %s exited %d (expected %d)\n%s%s" % (cmd, p.returncode, rc, p.stdout, p.stderr))
    return p


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def steps_of(text):
    return [line for line in text.splitlines() if line.startswith("step ")]


def compile_trainer(vcc, model, work, out):
    """vcc MODEL -o OUT in work, then the printed command in work; the printed command."""
    cmd = run([vcc, model, "-o", out], work).stdout.strip()
    run(cmd, work, shell=True)
    return cmd


def big_model(work):
    """A model whose checkpoint takes a while to write: (2, 3, 4, 16, 16) -> conv, BN, residual, a Gemm
    with a (512, 8192) weight; 5 samples."""
    b = Builder(7)
    x = b.node("Relu", [b.bn(b.conv("input", 3, 8, (3, 3, 3), pads=[1] * 6), 8)])
    y = b.bn(b.conv(x, 8, 8, (3, 3, 3), pads=[1] * 6), 8)
    x = b.node("Flatten", [b.node("Relu", [b.node("Add", [y, x])])], axis=1)
    b.fc(x, 8 * 4 * 16 * 16, 512)
    b.save(work, "big", [2, 3, 4, 16, 16], 512, samples=5)
    return os.path.join(work, "big")


def meta(path):
    with safe_open(path, "np") as f:
        return f.metadata() or {}


def case_build_command(a):
    w = fresh(os.path.join(a.work, "build command"))
    sub = os.path.join("sub dir", "it's here")
    os.makedirs(os.path.join(w, sub))
    model, data, labels = (os.path.join(a.tiny, "res3d", f) for f in ("model.onnx", "data.npy", "labels.npy"))
    printed = run([a.vcc, model, "-o", os.path.join(sub, "t.c")], w).stdout.strip()
    check("'sub dir/it'\\''s here/t.c' -o 'sub dir/it'\\''s here/t'" in printed, "the printed command quotes the paths",
          printed)
    p = run(printed, w, rc=None, shell=True)
    check(p.returncode == 0 and os.access(os.path.join(w, sub, "t"), os.X_OK),
          "sh -c '<printed command>' run where vcc ran builds sub dir/it's here/t", p.stderr)
    p = run([os.path.join(sub, "t"), "--data", data, "--labels", labels], w, rc=None)
    check(p.returncode == 0 and p.stdout.startswith("step 1 loss "),
          "the trainer runs from there, its default weights found beside it", p.stderr)
    first = open(os.path.join(w, sub, "t.c")).readline().rstrip("\n")
    check(re.fullmatch(re.escape(FIRST_LINE + "cc -O2 -march=native -std=c11 -fopenmp t.c -o t") + BLAS_LINK, first),
          "the first line is the build command from the file's folder, and says so", first)
    os.remove(os.path.join(w, sub, "t"))
    p = run(first[len(FIRST_LINE):], os.path.join(w, sub), rc=None, shell=True)
    check(p.returncode == 0 and os.path.exists(os.path.join(w, sub, "t")), "the first line builds in the file's folder",
          p.stderr)
    m = re.search(BLAS_LINK + "$", first)
    if m and m.group(1) and shutil.which("ldd"):
        # the rpath wins over the system's libopenblas.so.0 (the same soname, another build)
        libs = run(["ldd", os.path.join(w, sub, "t")], w).stdout
        blas = [ln.strip() for ln in libs.splitlines() if "libopenblas" in ln]
        check(len(blas) == 1 and os.path.join(m.group(1), "libopenblas.so.0") in blas[0],
              f"the trainer loads OpenBLAS from {m.group(1)}", "\n".join(blas))
    printed = run([a.vcc, model, "-o", os.path.join(sub, "t.cu")], w).stdout.strip()
    want = ("nvcc -O2 --default-stream per-thread 'sub dir/it'\\''s here/t.cu' -o 'sub dir/it'\\''s here/t_cuda' "
            "-lcudnn -lcublas")
    check(printed == want, "a .cu output prints the command that builds t_cuda", printed)
    first = open(os.path.join(w, sub, "t.cu")).readline().rstrip("\n")
    check(first == FIRST_LINE + "nvcc -O2 --default-stream per-thread t.cu -o t_cuda -lcudnn -lcublas",
          "the .cu's first line builds t_cuda", first)
    usage = run([a.vcc, "--help"], w).stdout
    check("X_cuda" in usage and "builds the binary X" in usage, "vcc --help names the binaries of X.c and X.cu")


def have_cuda():
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return False
    cuda = os.path.dirname(os.path.dirname(nvcc))
    dirs = (cuda + "/include", "/usr/include", "/usr/local/include")
    return any(os.path.exists(os.path.join(d, "cudnn.h")) for d in dirs)


def case_cuda(a):
    if not have_cuda():
        print("skip: nvcc or cudnn.h not found")
        sys.exit(77)
    w = fresh(os.path.join(a.work, "cuda"))
    os.makedirs(os.path.join(w, "side by side"))
    model, data, labels = (os.path.join(a.tiny, "res3d", f) for f in ("model.onnx", "data.npy", "labels.npy"))
    for out in ("train.c", "train.cu"):
        printed = run([a.vcc, model, "-o", os.path.join("side by side", out)], w).stdout.strip()
        p = run(printed, w, rc=None, shell=True)
        check(p.returncode == 0 and not p.stderr.strip(), "%s builds with the printed command, no diagnostics" % out,
              p.stderr[-2000:])
    binaries = sorted(f for f in os.listdir(os.path.join(w, "side by side"))
                      if os.access(os.path.join(w, "side by side", f), os.X_OK))
    check(binaries == ["train", "train_cuda"], "train and train_cuda side by side", str(binaries))
    args = ["--data", data, "--labels", labels, "--steps", "2"]
    c = run([os.path.join("side by side", "train")] + args, w)
    g = run([os.path.join("side by side", "train_cuda")] + args, w, rc=None)
    # --cuda-graph: refused where a kernel argument changes from step to step, before any device is needed
    for extra, what in ((["--cuda-graph", "yes"], "--cuda-graph needs on or off"),
                        (["--cuda-graph", "on", "--lr-schedule", "cosine"], "constant learning rate"),
                        (["--cuda-graph", "on", "--warmup-steps", "1"], "constant learning rate")):
        r = run([os.path.join("side by side", "train_cuda")] + args + extra, w, rc=None)
        check(r.returncode == 2 and what in r.stderr, "train_cuda %s is refused: %s" % (" ".join(extra), what),
              r.stderr)
    printed = run([a.vcc, model, "-o", "adamw.cu", "--optimizer", "adamw"], w).stdout.strip()
    run(printed, w, shell=True)
    r = run(["./adamw_cuda"] + args + ["--cuda-graph", "on"], w, rc=None)
    check(r.returncode == 2 and "AdamW's bias correction changes every step" in r.stderr,
          "an AdamW trainer refuses --cuda-graph on", r.stderr)
    if g.returncode == 0:
        lc = [float(x.split()[3]) for x in steps_of(c.stdout)]
        lg = [float(x.split()[3]) for x in steps_of(g.stdout)]
        check(len(lg) == 2 and all(abs(x - y) <= 1e-4 * abs(x) for x, y in zip(lc, lg)),
              "train_cuda (a GPU is present) prints the C trainer's losses within 1e-4", "%s vs %s" % (lc, lg))
        # a CUDA graph replays the step's own kernels: the same losses and weights, bit for bit
        many = ["--data", data, "--labels", labels, "--steps", "4"]
        e = run([os.path.join("side by side", "train_cuda")] + many + ["--out", "eager.safetensors"], w)
        q = run([os.path.join("side by side", "train_cuda")] + many + ["--cuda-graph", "on", "--out", "graph.safetensors"],
                w, rc=None)
        same = q.returncode == 0 and filecmp.cmp(os.path.join(w, "eager.safetensors"),
                                                 os.path.join(w, "graph.safetensors"), shallow=False)
        check(same and steps_of(q.stdout) == steps_of(e.stdout),
              "--cuda-graph on: 4 steps print the eager run's losses and save its weights byte for byte",
              q.stderr[-2000:] + "\n" + q.stdout + "\nvs\n" + e.stdout)
    else:
        err = g.stderr.strip()
        print("     train_cuda without a GPU: %s" % err)
        check(g.returncode == 1 and len(err.splitlines()) == 1 and
              err.startswith("train_cuda: no CUDA device found (cudaGetDeviceCount") and ".cu:" not in err,
              "no GPU: one sentence naming the program, exit status 1, no source position", err)


def kill_after(cmd, cwd, line_prefix, sig=signal.SIGKILL):
    """Start cmd, send it sig once a stdout line starts with line_prefix; its exit status, the lines it
    printed and its stderr."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in p.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith(line_prefix):
            p.send_signal(sig)
            break
    rest, err = p.communicate()
    lines += [x for x in rest.splitlines() if x]
    return p.returncode, lines, err


def resumed_from(stderr):
    """The step a resumed run said it starts from ("<program>: resuming from F at step k of S")."""
    for line in stderr.splitlines():
        if ": resuming from " in line:
            return int(line.split(" at step ")[1].split()[0])
    return None


def case_resume(a):
    w = fresh(os.path.join(a.work, "resume"))
    d = big_model(w)
    compile_trainer(a.vcc, os.path.join(d, "model.onnx"), w, "train.c")
    def train(steps):
        return ["./train", "--data", os.path.join(d, "data.npy"), "--labels", os.path.join(d, "labels.npy"), "--steps",
                str(steps), "--lr", "0.05", "--momentum", "0.9", "--weight-decay", "0.001"]
    common = train(6)
    ref = steps_of(run(common + ["--out", "ref.safetensors"], w).stdout)
    check(len(ref) == 6, "the uninterrupted run prints 6 steps", str(ref))
    for every in ("1", "2"):
        ck = "ck_every" + every
        cmd = common + ["--checkpoint-dir", ck, "--checkpoint-every", every, "--keep-last", "0", "--out",
                        "out%s.safetensors" % every]
        rc, first, _ = kill_after(cmd, w, "step 3 ")
        check(rc == -signal.SIGKILL and first == ref[:len(first)] and len(first) >= 3,
              "--checkpoint-every %s: killed after step 3, the lines so far are the uninterrupted run's" % every,
              "rc %s, %s" % (rc, first))
        p = run(cmd + ["--resume", ck], w, rc=None)
        k = resumed_from(p.stderr)
        second = steps_of(p.stdout)
        print("     killed after %d lines; resumed from step %s: %s" % (len(first), k, second))
        check(p.returncode == 0 and k is not None and k <= len(first) + 1 and second == ref[k:],
              "--checkpoint-every %s: the resumed run prints steps %s..6 exactly as the uninterrupted run"
              % (every, None if k is None else k + 1),
              p.stderr)
        both = {line.split()[1]: line for line in first + second}
        check(sorted(both.values(), key=lambda x: int(x.split()[1])) == ref,
              "--checkpoint-every %s: together the two runs printed every step once, as the uninterrupted run" % every)
        same = open(os.path.join(w, "ref.safetensors"), "rb").read() == \
            open(os.path.join(w, "out%s.safetensors" % every), "rb").read()
        check(same, "--checkpoint-every %s: the resumed run's --out file is byte-identical to the uninterrupted run's"
              % every)
        m = meta(os.path.join(w, ck, "step6.safetensors"))
        check(m.get("step") == "6" and m.get("data_position") == "2" and m.get("samples") == "5" and
              m.get("lr") == "0.05" and len(m.get("run", "")) == 16 and len(m.get("model", "")) == 16,
              "the checkpoint's metadata: step 6, data position 12 mod 5 = 2, lr, run and model ids", str(m))
    # SIGTERM: the step in flight finishes, its checkpoint is written (though the default is every 100)
    rc, first, err = kill_after(common + ["--checkpoint-dir", "ck_term"], w, "step 3 ", signal.SIGTERM)
    last = len(first)
    check(rc == 128 + signal.SIGTERM and first == ref[:last] and
          os.path.exists(os.path.join(w, "ck_term", "step%d.safetensors" % last)) and "--resume ck_term" in err,
          "SIGTERM after step 3: exit status 143 after step %d's checkpoint, with how to resume" % last, err.strip())
    p = run(common + ["--resume", "ck_term"], w, rc=None)
    check(p.returncode == 0 and steps_of(p.stdout) == ref[last:], "the run stopped by SIGTERM resumes to the same losses",
          p.stderr)
    p = run(common + ["--resume", "ck_every1"], w)
    check(steps_of(p.stdout) == [] and "nothing left to train" in p.stderr,
          "resuming a finished run with the same --steps trains nothing", p.stderr)
    p = run(train(8) + ["--resume", "ck_every1"], w)
    ext = steps_of(p.stdout)
    check([x.split()[1] for x in ext] == ["7", "8"], "a larger --steps extends the run from where it stopped", str(ext))


def case_kill_write(a):
    w = fresh(os.path.join(a.work, "kill_write"))
    d = big_model(w)
    compile_trainer(a.vcc, os.path.join(d, "model.onnx"), w, "train.c")
    common = ["./train", "--data", os.path.join(d, "data.npy"), "--labels", os.path.join(d, "labels.npy"), "--steps",
              "6", "--lr", "0.05", "--checkpoint-every", "1", "--keep-last", "0"]
    ref = steps_of(run(common[:-4], w).stdout)
    caught = None
    for attempt in range(10):
        ck = os.path.join(w, "ck")
        shutil.rmtree(ck, ignore_errors=True)
        p = subprocess.Popen(common + ["--checkpoint-dir", "ck"], cwd=w, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        tmp = None
        while p.poll() is None and tmp is None:
            names = os.listdir(ck) if os.path.isdir(ck) else []
            tmp = next((n for n in names if TMP_NAME.match(n) and not n.startswith(("step0.", "step1."))), None)
            if tmp is None:
                time.sleep(0.0005)
        if tmp is not None:
            p.kill()
        p.communicate()
        if tmp is not None and os.path.exists(os.path.join(ck, tmp)):
            caught = int(tmp[4:].split(".")[0])
            break
        print("     attempt %d: the write finished before the kill; again" % (attempt + 1))
    if not check(caught is not None, "SIGKILL landed while a checkpoint was being written"):
        return
    names = sorted(os.listdir(ck))
    print("     killed while writing step %d: %s" % (caught, names))
    check("step%d.safetensors" % caught not in names, "no file by the final name for the interrupted write")
    good = True
    for n in names:
        if n.endswith(".safetensors"):
            try:
                good &= meta(os.path.join(ck, n)).get("step") == n[4:-12]
            except Exception as e:  # noqa: BLE001 - any failure to read is the finding
                good = False
                print("     %s: %s" % (n, e))
    check(good, "every stepK.safetensors left loads with the safetensors package and says step K")
    p = run(common + ["--checkpoint-dir", "ck", "--resume", "ck"], w, rc=None)
    check(p.returncode == 0 and resumed_from(p.stderr) == caught - 1 and steps_of(p.stdout) == ref[caught - 1:],
          "--resume picks step %d, the newest complete one, and prints the uninterrupted run's losses" % (caught - 1),
          p.stderr + p.stdout)
    check(not any(".tmp" in n for n in os.listdir(ck)), "the resumed run removed the cut-short temporary file")
    # the newest checkpoint damaged (cut short by something else than the writer): skipped, with a warning
    with open(os.path.join(ck, "step6.safetensors"), "r+b") as f:
        f.truncate(os.path.getsize(os.path.join(ck, "step6.safetensors")) // 2)
    p = run(common + ["--checkpoint-dir", "ck", "--resume", "ck"], w, rc=None)
    check(p.returncode == 0 and "warning: skipping" in p.stderr and resumed_from(p.stderr) == 5 and
          steps_of(p.stdout) == ref[5:], "a damaged step6 is skipped with a warning; step 6 is redone from step 5",
          p.stderr)


def case_keep_last(a):
    w = fresh(os.path.join(a.work, "keep_last"))
    t = os.path.join(a.tiny, "res3d")
    compile_trainer(a.vcc, os.path.join(t, "model.onnx"), w, "train.c")
    common = ["./train", "--data", os.path.join(t, "data.npy"), "--labels", os.path.join(t, "labels.npy"), "--steps",
              "6"]

    def files(ck):
        names = [n for n in os.listdir(os.path.join(w, ck)) if n.endswith(".safetensors")]
        return sorted(names, key=lambda n: int(n[4:].split(".")[0]))

    run(common + ["--checkpoint-dir", "k2", "--checkpoint-every", "1", "--keep-last", "2"], w)
    check(files("k2") == ["step5.safetensors", "step6.safetensors"], "--keep-last 2 keeps step5 and step6",
          str(files("k2")))
    run(common + ["--checkpoint-dir", "kdef"], w)
    check(files("kdef") == ["step6.safetensors"], "the defaults (every 100 steps and the last) leave step6 only",
          str(files("kdef")))
    run(common + ["--checkpoint-dir", "k0", "--checkpoint-every", "2", "--keep-last", "0"], w)
    check(files("k0") == ["step2.safetensors", "step4.safetensors", "step6.safetensors"],
          "--checkpoint-every 2 --keep-last 0 keeps step2, step4, step6", str(files("k0")))
    p = run(common + ["--keep-last", "2"], w, rc=2)
    check("--keep-last needs --checkpoint-dir" in p.stderr, "--keep-last without a folder is a usage error", p.stderr)


def snapshot(path):
    return {n: (os.stat(os.path.join(path, n)).st_mtime_ns, os.path.getsize(os.path.join(path, n)))
            for n in os.listdir(path)}


def case_refuse(a):
    w = fresh(os.path.join(a.work, "refuse"))
    t = os.path.join(a.tiny, "res3d")
    compile_trainer(a.vcc, os.path.join(t, "model.onnx"), w, "train.c")
    data, labels = os.path.join(t, "data.npy"), os.path.join(t, "labels.npy")
    common = ["./train", "--data", data, "--labels", labels, "--steps", "2", "--lr", "0.05"]
    run(common + ["--checkpoint-dir", "runA"], w)
    before = snapshot(os.path.join(w, "runA"))
    p = run(common + ["--checkpoint-dir", "runA"], w, rc=1)
    err = p.stderr.strip()
    check(err.startswith("train: runA: holds the checkpoints of another run") and "--resume runA" in err and
          "another --checkpoint-dir" in err and p.stdout == "",
          "a fresh run in another run's folder is refused before training, saying how to resume or move on", err)
    check(snapshot(os.path.join(w, "runA")) == before, "the other run's checkpoints are untouched")
    run(common + ["--checkpoint-dir", "runC"], w)
    base = common[:-4]  # without --steps and --lr: an option given twice is a usage error
    p = run(base + ["--lr", "0.05", "--steps", "4", "--resume", "runA/step2.safetensors", "--checkpoint-dir", "runC"], w,
            rc=1)
    check("runC: holds the checkpoints of another run" in p.stderr,
          "a resumed run does not write into a third run's folder", p.stderr.strip())
    p = run(base + ["--lr", "0.01", "--steps", "4", "--resume", "runA"], w, rc=1)
    check("the run used --lr 0.05, this command line gives --lr 0.01" in p.stderr,
          "a resume with another --lr is refused, naming it", p.stderr.strip())
    np.save(os.path.join(w, "other.npy"), np.load(data)[::-1].copy())
    p = run(["./train", "--data", "other.npy", "--labels", labels, "--steps", "4", "--lr", "0.05", "--resume", "runA"],
            w, rc=1)
    check("the run trained on other data" in p.stderr, "a resume with other data is refused", p.stderr.strip())
    p = run(common + ["--resume", "train.safetensors"], w, rc=1)
    check("not a resumable vcc checkpoint" in p.stderr and "--weights train.safetensors" in p.stderr,
          "a plain weights file is not a checkpoint to resume (the message points to --weights)", p.stderr.strip())
    p = run(common + ["--resume", "runA", "--weights", "train.safetensors"], w, rc=2)
    check("exclude each other" in p.stderr, "--weights with --resume is a usage error", p.stderr.strip())
    p = run(common + ["--resume", "empty"], w, rc=1)
    os.makedirs(os.path.join(w, "empty"))
    p2 = run(common + ["--resume", "empty"], w, rc=1)
    check("empty: cannot open" in p.stderr and "holds no checkpoint" in p2.stderr,
          "--resume of a missing or empty folder says so", (p.stderr + p2.stderr).strip())
    check(snapshot(os.path.join(w, "runA")) == before, "after all that, runA is still untouched")
    # two trainers at once on one folder: the second is refused while the first runs
    first = subprocess.Popen(base + ["--steps", "100000000", "--checkpoint-dir", "busy", "--checkpoint-every",
                                            "0"], cwd=w, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first.stdout.readline()
    p = run(common + ["--checkpoint-dir", "busy"], w, rc=None)
    first.kill()
    first.communicate()
    check(p.returncode == 1 and "busy: another trainer (process %d) is writing checkpoints here" % first.pid in p.stderr,
          "a second trainer on a folder in use is refused, naming the first's process", p.stderr.strip())


def case_messages(a):
    w = fresh(os.path.join(a.work, "messages"))
    t = os.path.join(a.tiny, "res3d")
    compile_trainer(a.vcc, os.path.join(t, "model.onnx"), w, "train.c")
    data, labels = np.load(os.path.join(t, "data.npy")), np.load(os.path.join(t, "labels.npy"))
    np.save(os.path.join(w, "data.npy"), data)
    np.save(os.path.join(w, "labels.npy"), labels)
    np.save(os.path.join(w, "labels_i32.npy"), labels.astype(np.int32))
    np.save(os.path.join(w, "data_f64.npy"), data.astype(np.float64))
    p = run(["./train", "--data", "data.npy", "--labels", "labels_i32.npy"], w, rc=1)
    check(p.stderr == "train: labels_i32.npy: labels must be int64 ('<i8'), got int32 ('<i4')\n",
          "int32 labels: the plain message", p.stderr.strip())
    p = run(["./train", "--data", "data_f64.npy", "--labels", "labels.npy"], w, rc=1)
    check(p.stderr == "train: data_f64.npy: data must be float32 ('<f4'), got float64 ('<f8')\n",
          "float64 data: the plain message", p.stderr.strip())
    shutil.copy(os.path.join(w, "train"), os.path.join(w, "my_trainer"))
    for label, args, rc in (("a missing file", ["--data", "nope.npy", "--labels", "labels.npy"], 1),
                            ("a bad --lr", ["--data", "data.npy", "--labels", "labels.npy", "--lr", "-1"], 1),
                            ("an unknown option", ["--bogus"], 2),
                            ("a missing --labels", ["--data", "data.npy"], 2)):
        p = run(["./my_trainer"] + args, w, rc=rc)
        lines = p.stderr.splitlines()
        check(len(lines) == 1 and lines[0].startswith("my_trainer: "),
              "a renamed trainer names itself in the error line (%s)" % label, p.stderr.strip())
    p = run(["./my_trainer", "--bogus"], w, rc=2)
    check(p.stderr == "my_trainer: unknown option '--bogus' (see my_trainer --help)\n", "unknown option: status 2",
          p.stderr.strip())
    for flag in ("--help", "-h"):
        p = run(["./train", flag], w)
        check(p.stdout.startswith("usage: train --data X.npy --labels Y.npy") and "--resume DIR|FILE" in p.stdout and
              "total steps of the run" in p.stdout and "(S, 3, 4, 12, 12)" in p.stdout,
              "train %s: the usage with the compiled shapes, status 0" % flag)
    c = os.path.join(a.tiny, "conv1d")
    printed = run([a.vcc, os.path.join(c, "model.onnx"), "--forward-only", "-o", "fwd.c"], w).stdout.strip()
    run(printed, w, shell=True)
    np.save(os.path.join(w, "x.npy"), np.load(os.path.join(c, "data.npy"))[:2])
    np.save(os.path.join(w, "x_i32.npy"), np.load(os.path.join(c, "data.npy"))[:2].astype(np.int32))
    p = run(["./fwd", "--help"], w)
    check(p.stdout.startswith("usage: fwd IN.npy... -o OUT.npy...") and "input float32 (2, 3, 20)" in p.stdout and
          not os.path.exists(os.path.join(w, "--help")), "fwd --help: the usage, not an input file named --help")
    p = run(["./fwd", "--bogus", "x.npy", "-o", "y.npy"], w, rc=2)
    check(p.stderr == "fwd: unknown option '--bogus' (see fwd --help)\n", "fwd: unknown option, status 2",
          p.stderr.strip())
    p = run(["./fwd", "x.npy"], w, rc=2)
    check(p.stderr.startswith("fwd: expected 1 input and 1 output .npy files"), "fwd: a missing output, status 2",
          p.stderr.strip())
    p = run(["./fwd", "x_i32.npy", "-o", "y.npy"], w, rc=1)
    check(p.stderr == "fwd: x_i32.npy: input 'input' must be float32 ('<f4'), got int32 ('<i4')\n",
          "fwd: an int32 input gets the plain message", p.stderr.strip())
    shutil.copy(os.path.join(w, "fwd"), os.path.join(w, "eval_once"))
    p = run(["./eval_once", "nope.npy", "-o", "y.npy"], w, rc=1)
    check(p.stderr.startswith("eval_once: nope.npy: cannot open"), "a renamed forward program names itself",
          p.stderr.strip())
    p = run(["./fwd", "x.npy", "-o", "y.npy"], w)
    check(os.path.exists(os.path.join(w, "y.npy")), "fwd evaluates the model")


def programs(a, w, which=("train", "eval", "fwd")):
    """The tiny res3d model's trainer (vcc --keep-grads: it writes --save-grads), evaluation and forward-only
    programs built in w, with data.npy, labels.npy (4 samples) and x.npy (one batch, the forward program's
    input) beside them."""
    t = os.path.join(a.tiny, "res3d")
    shutil.copy(os.path.join(t, "model.onnx"), os.path.join(w, "m.onnx"))
    flags = {"train": ["--keep-grads"], "eval": ["--eval"], "fwd": ["--forward-only"]}
    for name in which:
        run(run([a.vcc, "m.onnx", "-o", name + ".c"] + flags[name], w).stdout.strip(), w, shell=True)
    data = np.load(os.path.join(t, "data.npy"))
    np.save(os.path.join(w, "data.npy"), data)
    np.save(os.path.join(w, "labels.npy"), np.load(os.path.join(t, "labels.npy")))
    np.save(os.path.join(w, "x.npy"), data[:2])


def run_t(cmd, cwd, timeout=30, stdout=subprocess.PIPE):
    """Run cmd in cwd with a time limit: (exit status, stdout, stderr); status None when it ran past the
    limit (it is killed)."""
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", "(killed after %d s)" % timeout
    return p.returncode, p.stdout or "", p.stderr


def kind(path):
    """What is at path, not following a final symlink: fifo, chr, dir, lnk, reg or missing."""
    try:
        m = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    for k, f in (("fifo", stat.S_ISFIFO), ("chr", stat.S_ISCHR), ("dir", stat.S_ISDIR), ("lnk", stat.S_ISLNK),
                 ("reg", stat.S_ISREG)):
        if f(m):
            return k
    return "other"


TRAIN = ["./train", "--data", "data.npy", "--labels", "labels.npy"]
EVAL = ["./eval", "--data", "data.npy", "--labels", "labels.npy"]


def refused(label, rc, out, err, want_rc, prog, must):
    """Check a refusal: status want_rc, one stderr line starting with '<prog>: ' holding every string of
    must, nothing on stdout (refused before the run)."""
    lines = err.splitlines()
    return check(rc == want_rc and len(lines) == 1 and lines[0].startswith(prog + ": ") and
                 all(s in err for s in must) and out == "", label, "rc %s, stdout %r, stderr %r" % (rc, out, err))


def case_outputs(a):
    w = fresh(os.path.join(a.work, "outputs"))
    programs(a, w)
    os.mkfifo(os.path.join(w, "fifo"))
    specials = {"fifo": "a FIFO"}
    try:  # a private clone of /dev/null: what a run as root would do to the real one
        os.mknod(os.path.join(w, "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        specials["null"] = "a character device"
    except PermissionError:
        print("     (not root: no character device to test with)")
    os.makedirs(os.path.join(w, "folder"))
    specials["folder"] = "a folder"
    os.symlink("fifo", os.path.join(w, "fifo_link"))
    specials["fifo_link"] = "a FIFO"
    before = {n: kind(os.path.join(w, n)) for n in specials}
    writers = (("train --out", "train", lambda p: TRAIN + ["--out", p]),
               ("train --save-grads", "train", lambda p: TRAIN + ["--save-grads", p]),
               ("eval --logits", "eval", lambda p: EVAL + ["--logits", p]),
               ("fwd -o", "fwd", lambda p: ["./fwd", "x.npy", "-o", p]))
    for label, prog, cmd in writers:
        for path, what in specials.items():
            rc, out, err = run_t(cmd(path), w)
            refused("%s %s (%s): refused before the run, naming it" % (label, path, what), rc, out, err, 1, prog,
                    ["%s: not a regular file (%s)" % (path, what)])
        for path, must in (("", ["the file name is empty"]), ("no/such/o.npy", ["no/such/o.npy: cannot write: "]),
                           ("folder/", ["folder/: not a regular file (a folder)"])):
            rc, out, err = run_t(cmd(path), w)
            refused("%s %r: refused before the run" % (label, path), rc, out, err, 1, prog, must)
    after = {n: kind(os.path.join(w, n)) for n in specials}
    check(after == before, "every FIFO, device, folder and symlink is still what it was", "%s -> %s" % (before, after))
    left = [n for n in os.listdir(w) if ".tmp" in n]
    check(not left, "no temporary file left behind", str(left))
    # a symlink to a regular file is an ordinary output: the rename replaces the link, the file it named stays
    open(os.path.join(w, "target.txt"), "w").write("precious\n")
    os.symlink("target.txt", os.path.join(w, "reg_link"))
    rc, out, err = run_t(["./fwd", "x.npy", "-o", "reg_link"], w)
    check(rc == 0 and kind(os.path.join(w, "reg_link")) == "reg" and
          open(os.path.join(w, "target.txt")).read() == "precious\n",
          "fwd -o a symlink to a regular file replaces the link and leaves its target alone", err)
    # this program's standard output redirected to a file, named through a link to /proc/self/fd/1 (what
    # /dev/stdout is): refused before the run, the link kept (a rename would replace /dev/stdout itself)
    os.symlink("/proc/self/fd/1", os.path.join(w, "stdout_link"))
    with open(os.path.join(w, "captured.txt"), "w") as cap:
        p = subprocess.run(["./fwd", "x.npy", "-o", "stdout_link"], cwd=w, stdout=cap, stderr=subprocess.PIPE,
                           text=True)
    check(p.returncode == 1 and "stdout_link: this program's standard output" in p.stderr and
          os.path.islink(os.path.join(w, "stdout_link")) and os.path.getsize(os.path.join(w, "captured.txt")) == 0,
          "fwd -o its own standard output (redirected to a file) refused, the link kept", p.stderr)


def case_tmp_files(a):
    w = fresh(os.path.join(a.work, "tmp_files"))
    programs(a, w)
    links = {"o.safetensors.tmp": "a.txt", "g.safetensors.tmp": "b.txt", "lg.npy.tmp": "c.txt", "y.npy.tmp": "d.txt",
             os.path.join("ck", "step1.safetensors.tmp"): "e.txt"}
    os.makedirs(os.path.join(w, "ck"))
    for link, target in links.items():
        open(os.path.join(w, target), "w").write("precious\n")
        os.symlink(os.path.abspath(os.path.join(w, target)), os.path.join(w, link))
    old = os.umask(0o027)
    try:
        p1 = run(TRAIN + ["--out", "o.safetensors", "--save-grads", "g.safetensors", "--checkpoint-dir", "ck"], w,
                 rc=None)
        p2 = run(EVAL + ["--logits", "lg.npy"], w, rc=None)
        p3 = run(["./fwd", "x.npy", "-o", "y.npy"], w, rc=None)
    finally:
        os.umask(old)
    check(p1.returncode == 0 and p2.returncode == 0 and p3.returncode == 0, "the three programs write their outputs",
          p1.stderr + p2.stderr + p3.stderr)
    intact = {t: open(os.path.join(w, t), "rb").read()[:40] for t in links.values()}
    check(all(v == b"precious\n" for v in intact.values()),
          "a symlink at <out>.tmp is never followed: the files it names are intact", str(intact))
    outs = ["o.safetensors", "g.safetensors", "lg.npy", "y.npy", os.path.join("ck", "step1.safetensors")]
    modes = {o: oct(os.stat(os.path.join(w, o)).st_mode & 0o777) for o in outs if os.path.exists(os.path.join(w, o))}
    check(len(modes) == 5 and all(m == oct(0o640) for m in modes.values()),
          "every output is a new file with mode 0666 & ~umask (umask 027: 0640)", str(modes))
    left = sorted(n for n in os.listdir(w) + os.listdir(os.path.join(w, "ck")) if ".tmp." in n)
    check(not left, "no temporary file left behind", str(left))


def case_same_file(a):
    w = fresh(os.path.join(a.work, "same_file"))
    programs(a, w)
    os.link(os.path.join(w, "data.npy"), os.path.join(w, "hard.npy"))
    shutil.copy(os.path.join(w, "train.safetensors"), os.path.join(w, "w.safetensors"))
    keep = {n: open(os.path.join(w, n), "rb").read() for n in ("data.npy", "labels.npy", "x.npy", "w.safetensors",
                                                                 "train.safetensors")}
    cases = (("train --out over --data", TRAIN + ["--out", "data.npy"], "train", ["--out", "--data", "data.npy"]),
             ("train --out ./labels.npy over --labels", TRAIN + ["--out", "./labels.npy"], "train",
              ["--out", "--labels"]),
             ("train --out a hard link of --data", TRAIN + ["--out", "hard.npy"], "train", ["--out", "--data"]),
             ("train --save-grads over --weights", TRAIN + ["--weights", "w.safetensors", "--save-grads",
                                                            "./w.safetensors"], "train", ["--save-grads", "--weights"]),
             ("train --out over the default weights", TRAIN + ["--out", "train.safetensors"], "train",
              ["--out", "--weights"]),
             ("train --out and --save-grads the same new file", TRAIN + ["--out", "new.st", "--save-grads",
                                                                         ".//new.st"], "train",
              ["--out", "--save-grads"]),
             ("eval --logits over --data", EVAL + ["--logits", "data.npy"], "eval", ["--logits", "--data"]),
             ("eval --logits over --labels", EVAL + ["--logits", "./labels.npy"], "eval", ["--logits", "--labels"]),
             ("fwd -o over its input", ["./fwd", "x.npy", "-o", "x.npy"], "fwd", ["x.npy"]),
             ("fwd -o over --weights", ["./fwd", "x.npy", "-o", "fwd.safetensors"], "fwd", ["--weights"]))
    for label, cmd, prog, must in cases:
        rc, out, err = run_t(cmd, w)
        refused(label + ": a usage error naming both", rc, out, err, 2, prog, must + ["name the same file"])
    same = all(open(os.path.join(w, n), "rb").read() == b for n, b in keep.items())
    check(same, "every input is unchanged")
    check(not os.path.exists(os.path.join(w, "new.st")), "nothing was written")
    rc, out, err = run_t(EVAL + ["--logits", "l.npy"], w)
    check(rc == 0 and os.path.exists(os.path.join(w, "l.npy")), "distinct files are fine", err)


def case_fifo_inputs(a):
    w = fresh(os.path.join(a.work, "fifo_inputs"))
    programs(a, w)
    os.mkfifo(os.path.join(w, "fifo"))
    cases = (("train --data", "train", ["./train", "--data", "fifo", "--labels", "labels.npy"]),
             ("train --labels", "train", ["./train", "--data", "data.npy", "--labels", "fifo"]),
             ("train --weights", "train", TRAIN + ["--weights", "fifo"]),
             ("train --resume", "train", TRAIN + ["--resume", "fifo"]),
             ("eval --data", "eval", ["./eval", "--data", "fifo", "--labels", "labels.npy"]),
             ("eval --labels", "eval", ["./eval", "--data", "data.npy", "--labels", "fifo"]),
             ("eval --weights", "eval", EVAL + ["--weights", "fifo"]),
             ("fwd input", "fwd", ["./fwd", "fifo", "-o", "y.npy"]),
             ("fwd --weights", "fwd", ["./fwd", "x.npy", "-o", "y.npy", "--weights", "fifo"]))
    for label, prog, cmd in cases:
        rc, out, err = run_t(cmd, w, timeout=20)
        refused("%s FIFO: refused at once, not waiting for a writer" % label, rc, out, err, 1, prog,
                ["fifo: not a regular file (a FIFO)"])


def case_numbers(a):
    w = fresh(os.path.join(a.work, "numbers"))
    programs(a, w)
    for opt in ("--lr", "--momentum", "--weight-decay"):
        for bad in ("0x10", " 0.1", "0.1 ", "+0.1", "-1", "inf", "nan", "", "1,5", "0x1p-3", "1e", ".", "1e-400",
                    "1e39", "1e-46"):
            rc, out, err = run_t(TRAIN + ["--steps", "0", opt, bad], w)
            refused("%s %r refused" % (opt, bad), rc, out, err, 1, "train", [opt, repr(bad)[1:-1]])
        for good in ("0.05", "5", "5.", ".5", "1e-3", "2.5E+1", "0", "3e38", "1e-40"):
            rc, out, err = run_t(TRAIN + ["--steps", "0", opt, good], w)
            check(rc == 0, "%s %r accepted" % (opt, good), err)
    for opt in ("--steps", "--checkpoint-every", "--keep-last"):
        for bad in (" 3", "3 ", "+3", "-1", "0x3", "1e3", "3.0", "", "99999999999999999999", "\t3"):
            shutil.rmtree(os.path.join(w, "ck"), ignore_errors=True)
            steps = [] if opt == "--steps" else ["--steps", "0"]
            rc, out, err = run_t(TRAIN + steps + ["--checkpoint-dir", "ck", opt, bad], w)
            refused("%s %r refused" % (opt, bad), rc, out, err, 1, "train", [opt])
    shutil.rmtree(os.path.join(w, "ck"), ignore_errors=True)
    for opt, prog, cmd in (("--data", "train", TRAIN + ["--data", "x.npy"]),
                           ("--out", "train", TRAIN + ["--out", "a.st", "--out=b.st"]),
                           ("--lr", "train", TRAIN + ["--lr", "0.1", "--lr", "0.2"]),
                           ("--steps", "train", TRAIN + ["--steps=1", "--steps", "1"]),
                           ("--data", "eval", EVAL + ["--data", "x.npy"]),
                           ("--logits", "eval", EVAL + ["--logits", "a.npy", "--logits", "b.npy"]),
                           ("--weights", "fwd", ["./fwd", "x.npy", "-o", "y.npy", "--weights", "fwd.safetensors",
                                                 "--weights", "fwd.safetensors"])):
        rc, out, err = run_t(cmd, w)
        refused("%s %s twice: a usage error" % (prog, opt), rc, out, err, 2, prog, [opt, "given twice", "--help"])
    left = sorted(n for n in os.listdir(w) if n.endswith(".st") or n in ("a.npy", "b.npy", "y.npy"))
    check(not left, "nothing was written", str(left))


def case_stdout(a):
    w = fresh(os.path.join(a.work, "stdout"))
    programs(a, w)
    if not os.path.exists("/dev/full"):
        print("skip: no /dev/full")
        sys.exit(77)
    msg = "cannot write to standard output: No space left on device"
    for label, prog, cmd in (("train", "train", TRAIN + ["--steps", "2"]),
                             ("train --help", "train", ["./train", "--help"]),
                             ("eval --labels", "eval", EVAL),
                             ("eval --logits", "eval", ["./eval", "--data", "data.npy", "--logits", "l.npy"]),
                             ("fwd --help", "fwd", ["./fwd", "--help"])):
        with open("/dev/full", "w") as full:
            rc, _, err = run_t(cmd, w, stdout=full)
        check(rc == 1 and err == "%s: %s\n" % (prog, msg), "%s > /dev/full: status 1 and '%s: %s'" % (label, prog, msg),
              "rc %s, stderr %r" % (rc, err))
    with open("/dev/full", "w") as full:
        rc, _, err = run_t(["./fwd", "x.npy", "-o", "y.npy"], w, stdout=full)
    check(rc == 0 and err == "", "fwd, which prints nothing, is not affected", err)


def case_eval_logits(a):
    w = fresh(os.path.join(a.work, "eval_logits"))
    programs(a, w, ("eval",))
    rc, out, err = run_t(EVAL + ["--logits", "no/such/l.npy"], w)
    refused("eval --logits into a missing folder: refused before evaluating", rc, out, err, 1, "eval",
            ["no/such/l.npy: cannot write: "])
    rc, out, err = run_t(["./eval", "--data", "data.npy", "--logits", "l.npy"], w)
    k = np.load(os.path.join(w, "l.npy")).shape[1] if rc == 0 else 0
    check(rc == 0 and out == "samples 4 logits written to l.npy (4, %d)\n" % k,
          "eval --logits without --labels says what it wrote", "rc %s, stdout %r, stderr %r" % (rc, out, err))


def case_signal(a):
    w = fresh(os.path.join(a.work, "signal"))
    programs(a, w, ("train",))
    p = subprocess.Popen(TRAIN + ["--steps", "100000000", "--checkpoint-dir", "ck", "--checkpoint-every", "0"], cwd=w,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.readline()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate()
    lines = err.splitlines()
    check(p.returncode == 130 and len(lines) == 2 and
          lines[0] == "train: stopping after this step to write its checkpoint to ck; a second signal stops at once "
                      "without it" and "--resume ck" in lines[1],
          "the first SIGINT is acknowledged at once, then the checkpoint is written and the run ends with 130",
          "rc %s, stderr %r" % (p.returncode, err))
    check(any(n.endswith(".safetensors") for n in os.listdir(os.path.join(w, "ck"))), "the checkpoint is there")


def case_state_shape(a):
    from safetensors.numpy import load_file, save_file
    w = fresh(os.path.join(a.work, "state_shape"))
    programs(a, w, ("train", "eval"))
    t = load_file(os.path.join(w, "train.safetensors"))
    name = next(n for n, v in t.items() if v.ndim == 5)
    want = "F32 (%s)" % ", ".join(str(d) for d in t[name].shape)
    shape = t[name].shape[:-1] + (t[name].shape[-1] + 1,)
    bad = dict(t)
    bad[name] = np.zeros(shape, np.float32)
    save_file(bad, os.path.join(w, "shape.safetensors"))
    bad[name] = t[name].astype(np.float64)
    save_file(bad, os.path.join(w, "dtype.safetensors"))
    for prog, f, got in (("train", "shape", "F32 (%s)" % ", ".join(str(d) for d in shape)),
                         ("eval", "shape", "F32 (%s)" % ", ".join(str(d) for d in shape)),
                         ("train", "dtype", want.replace("F32", "F64"))):
        cmd = (TRAIN if prog == "train" else EVAL) + ["--weights", f + ".safetensors"]
        rc, out, err = run_t(cmd, w)
        expect = "%s: %s.safetensors: tensor '%s' is %s in the file; the program needs %s\n" % (prog, f, name, got, want)
        check(rc == 1 and err == expect, "%s, a tensor of the wrong %s: what the file has and what is needed" % (prog, f),
              "rc %s, stderr %r, expected %r" % (rc, err, expect))


def case_many_tensors(a):
    from safetensors.numpy import load_file, save_file
    w = fresh(os.path.join(a.work, "many_tensors"))
    programs(a, w, ("train",))
    t = load_file(os.path.join(w, "train.safetensors"))
    for i in range(200000):
        t["extra.%d" % i] = np.zeros((0,), np.float32)
    save_file(t, os.path.join(w, "many.safetensors"))
    start = time.monotonic()
    rc, out, err = run_t(TRAIN + ["--weights", "many.safetensors"], w, timeout=60)
    took = time.monotonic() - start
    print("     200,000 extra tensors: the run took %.2f s" % took)
    check(rc == 0 and out.startswith("step 1 loss ") and took < 10,
          "weights with 200,000 extra tensors load in well under 10 s (a quadratic reader takes minutes)",
          "rc %s, %.1f s, %s" % (rc, took, err))


def case_resume_lock(a):
    w = fresh(os.path.join(a.work, "resume_lock"))
    programs(a, w, ("train",))
    run(TRAIN + ["--steps", "2", "--checkpoint-dir", "busy"], w)
    first = subprocess.Popen(TRAIN + ["--steps", "100000000", "--resume", "busy", "--checkpoint-every", "0"], cwd=w,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first.stdout.readline()
    rc, out, err = run_t(TRAIN + ["--steps", "4", "--resume", "busy"], w)
    first.kill()
    first.communicate()
    refused("--resume of a folder another trainer writes into: refused before resuming anything", rc, out, err, 1,
            "train", ["busy: another trainer (process %d)" % first.pid])
    check("resuming" not in err, "no 'resuming from' line before the refusal", err)


def case_install(a):
    w = fresh(os.path.join(a.work, "install"))
    prefix, elsewhere = os.path.join(w, "prefix"), fresh(os.path.join(w, "elsewhere"))
    p = run([a.cmake, "--install", a.build, "--prefix", prefix], w, rc=None)
    vcc = os.path.join(prefix, "bin", "vcc")
    if not check(p.returncode == 0 and os.access(vcc, os.X_OK), "cmake --install puts vcc in P/bin", p.stderr):
        return
    installed = sorted(os.path.relpath(os.path.join(r, f), prefix) for r, _, fs in os.walk(prefix) for f in fs)
    print("     installed: %s" % ", ".join(installed))
    check(installed == ["bin/vcc", "share/doc/vcc/README.md", "share/doc/vcc/design.md"],
          "the install holds vcc and its documentation, nothing else", str(installed))
    if shutil.which("ldd"):
        libs = run(["ldd", vcc], w).stdout
        tree = [line for line in libs.splitlines() if a.build in line or os.path.dirname(a.tiny) in line]
        check(not tree, "the installed vcc links no library of the build tree", "\n".join(tree))
    t = os.path.join(a.tiny, "res3d")
    shutil.copy(os.path.join(t, "model.onnx"), os.path.join(elsewhere, "m.onnx"))
    os.makedirs(os.path.join(elsewhere, "out"))
    p = run([vcc, "m.onnx", "-o", "out/train.c"], elsewhere, rc=None)
    check(p.returncode == 0 and re.search(re.escape("out/train.c -o out/train") + BLAS_LINK + "$", p.stdout.strip()),
          "P/bin/vcc compiles a model in another folder", p.stderr)
    b = run(p.stdout.strip(), elsewhere, rc=None, shell=True)
    r = run(["out/train", "--data", os.path.join(t, "data.npy"), "--labels", os.path.join(t, "labels.npy")], elsewhere,
            rc=None)
    check(b.returncode == 0 and r.returncode == 0 and r.stdout.startswith("step 1 loss "),
          "its trainer builds with the printed command and trains", b.stderr + r.stderr)


def optim_trainers(a, w, keep=True):
    """The tiny res3d's trainers compiled with --optimizer sgd (./sgd) and adamw (./adamw) in w, with data.npy
    and labels.npy beside them; with keep, compiled with --keep-grads (their --clip-grad-norm needs it)."""
    t = os.path.join(a.tiny, "res3d")
    for name in ("sgd", "adamw"):
        run(run([a.vcc, os.path.join(t, "model.onnx"), "-o", name + ".c", "--optimizer", name] +
                (["--keep-grads"] if keep else []), w).stdout.strip(), w, shell=True)
    for f in ("data.npy", "labels.npy"):
        shutil.copy(os.path.join(t, f), os.path.join(w, f))


def case_optim_usage(a):
    w = fresh(os.path.join(a.work, "optim_usage"))
    optim_trainers(a, w)
    feed = ["--data", "data.npy", "--labels", "labels.npy", "--steps", "0"]
    for prog, args, want_rc, must in (
            ("sgd", ["--optimizer", "adamw"], 2, ["--optimizer adamw", "compiled for sgd", "vcc MODEL.onnx --optimizer adamw"]),
            ("adamw", ["--optimizer", "sgd"], 2, ["--optimizer sgd", "compiled for adamw", "--optimizer sgd"]),
            ("sgd", ["--optimizer", "adam"], 2, ["--optimizer", "sgd or adamw", "'adam'"]),
            ("sgd", ["--beta1", "0.9"], 2, ["--beta1", "AdamW", "compiled for SGD", "--optimizer adamw"]),
            ("sgd", ["--beta2", "0.99"], 2, ["--beta2", "AdamW", "--optimizer adamw"]),
            ("sgd", ["--eps", "1e-8"], 2, ["--eps", "AdamW", "--optimizer adamw"]),
            ("adamw", ["--momentum", "0.9"], 2, ["--momentum", "SGD", "compiled for AdamW", "--optimizer sgd"]),
            ("adamw", ["--beta1", "1"], 1, ["--beta1", "[0, 1)", "'1'"]),
            ("adamw", ["--beta1", "1.5"], 1, ["--beta1", "[0, 1)"]),
            ("adamw", ["--beta2", "2"], 1, ["--beta2", "[0, 1)"]),
            ("adamw", ["--beta1", "-0.1"], 1, ["--beta1", "'-0.1'"]),
            ("adamw", ["--eps", "-1e-8"], 1, ["--eps", "'-1e-8'"]),
            ("adamw", ["--clip-grad-norm", "0"], 1, ["--clip-grad-norm", "> 0"]),
            ("sgd", ["--lr-schedule", "linear"], 2, ["--lr-schedule", "constant or cosine", "'linear'"]),
            ("sgd", ["--warmup-steps", "1.5"], 1, ["--warmup-steps"])):
        rc, out, err = run_t(["./" + prog] + feed + args, w)
        refused("%s %s refused" % (prog, " ".join(args)), rc, out, err, want_rc, prog, must)
    for prog, args in (("sgd", ["--optimizer", "sgd", "--momentum", "0.5"]),
                       ("adamw", ["--optimizer", "adamw", "--beta1", "0", "--beta2", "0.5", "--eps", "0"]),
                       ("adamw", ["--clip-grad-norm", "1", "--lr-schedule", "cosine", "--warmup-steps", "3"])):
        rc, out, err = run_t(["./" + prog] + feed + args, w)
        check(rc == 0, "%s %s accepted" % (prog, " ".join(args)), err)
    # vcc's own --optimizer
    model = os.path.join(a.tiny, "res3d", "model.onnx")
    for args, must in ((["--optimizer", "adam"], ["--optimizer", "sgd or adamw", "'adam'"]),
                       (["--optimizer", "adamw", "--momentum", "0.5"], ["--momentum", "--beta1"]),
                       (["--optimizer", "adamw", "--eval"], ["--optimizer", "--eval"])):
        rc, out, err = run_t([a.vcc, model, "-o", "x.c"] + args, w)
        refused("vcc %s refused" % " ".join(args), rc, out, err, 2, "vcc", must)
    check(not os.path.exists(os.path.join(w, "x.c")), "vcc wrote nothing for a refused --optimizer")
    # a checkpoint of the other optimizer
    for prog, other in (("sgd", "adamw"), ("adamw", "sgd")):
        run(["./" + other, "--data", "data.npy", "--labels", "labels.npy", "--steps", "1", "--checkpoint-dir",
             "ck_" + other], w)
        rc, out, err = run_t(["./" + prog, "--data", "data.npy", "--labels", "labels.npy", "--steps", "2",
                              "--resume", "ck_" + other], w)
        refused("%s refuses a checkpoint of %s" % (prog, other), rc, out, err, 1, prog,
                ["--optimizer " + other, "--optimizer " + prog])


def case_optim_resume(a):
    w = fresh(os.path.join(a.work, "optim_resume"))
    optim_trainers(a, w)
    for prog, hyper in (("sgd", ["--lr", "0.05", "--momentum", "0.9", "--weight-decay", "0.001"]),
                        ("adamw", ["--lr", "0.01", "--beta1", "0.8", "--beta2", "0.99", "--weight-decay", "0.05"])):
        def train(steps, *extra):
            return (["./" + prog, "--data", "data.npy", "--labels", "labels.npy", "--steps", str(steps)] + hyper +
                    ["--lr-schedule", "cosine", "--warmup-steps", "2", "--clip-grad-norm", "0.5"] + list(extra))
        ref = steps_of(run(train(6, "--out", prog + "_ref.safetensors"), w).stdout)
        # the run stopped after step 3 (a checkpoint each step; a SIGTERM run would stop at a random step)
        ck = prog + "_ck"
        rc, first, _ = kill_after(train(6, "--checkpoint-dir", ck, "--checkpoint-every", "1", "--keep-last", "0"), w,
                                  "step 3 ")
        for f in os.listdir(os.path.join(w, ck)):  # resume from step 3's checkpoint exactly
            if f.startswith("step") and f != "step3.safetensors":
                os.remove(os.path.join(w, ck, f))
        p = run(train(6, "--out", prog + "_resumed.safetensors", "--resume", ck), w, rc=None)
        print("     %s: uninterrupted %s; resumed from step %s: %s" % (prog, ref, resumed_from(p.stderr),
                                                                      steps_of(p.stdout)))
        check(p.returncode == 0 and resumed_from(p.stderr) == 3 and first[:3] == ref[:3] and
              steps_of(p.stdout) == ref[3:],
              "%s, cosine schedule with warmup and clipping: resumed at step 3, the losses are the uninterrupted "
              "run's" % prog, p.stderr)
        same = open(os.path.join(w, prog + "_ref.safetensors"), "rb").read() == \
            open(os.path.join(w, prog + "_resumed.safetensors"), "rb").read()
        check(same, "%s: the resumed run's --out file is byte-identical to the uninterrupted run's" % prog)
        st = os.path.join(w, ck, "step3.safetensors")
        with safe_open(st, "np") as f:
            names = set(f.keys())
        params = [n[:-len(".exp_avg")] for n in names if n.endswith(".exp_avg")]
        if prog == "adamw":
            check(params and all(n + ".exp_avg_sq" in names for n in params) and
                  not any(n.endswith(".momentum") for n in names) and meta(st).get("optimizer") == "adamw" and
                  meta(st).get("step") == "3", "the AdamW checkpoint holds exp_avg, exp_avg_sq and step 3",
                  str(sorted(names)))
        else:
            check(not params and meta(st).get("optimizer") == "sgd", "the SGD checkpoint holds no AdamW state")
        for bad, opt in ((["--warmup-steps", "3"], "--warmup-steps"), (["--lr-schedule", "constant"], "--lr-schedule"),
                         (["--clip-grad-norm", "1"], "--clip-grad-norm")):
            cmd = train(6, "--resume", st)
            for i in range(0, len(cmd) - 1):
                if cmd[i] == bad[0]:
                    cmd[i + 1] = bad[1]
            rc, out, err = run_t(cmd, w)
            refused("%s: a resume with another %s is refused" % (prog, opt), rc, out, err, 1, prog, [opt])
        rc, out, err = run_t(train(8, "--resume", st), w)
        refused("%s: a resume of a cosine run with another --steps is refused" % prog, rc, out, err, 1, prog,
                ["--steps 6", "--steps 8"])


def case_keep_grads(a):
    w = fresh(os.path.join(a.work, "keep_grads"))
    optim_trainers(a, w, keep=False)
    feed = ["--data", "data.npy", "--labels", "labels.npy", "--steps", "1"]
    for prog in ("sgd", "adamw"):
        for args, what in ((["--save-grads", "g.safetensors"], "the gradients after the step"),
                           (["--clip-grad-norm", "1"], "the norm of all gradients before the first update")):
            rc, out, err = run_t(["./" + prog] + feed + args, w)
            refused("%s without --keep-grads: %s refused" % (prog, args[0]), rc, out, err, 2, prog,
                    [args[0], what, "vcc MODEL.onnx --keep-grads"])
        check(not os.path.exists(os.path.join(w, "g.safetensors")), "%s wrote no gradients file" % prog)
        rc, out, err = run_t(["./" + prog, "--help"], w)
        check(rc == 0 and out.count("(a program compiled with vcc --keep-grads)") == 2,
              "%s --help says --save-grads and --clip-grad-norm need vcc --keep-grads" % prog, out)
        rc, out, err = run_t(["./" + prog] + feed, w)
        check(rc == 0 and out.startswith("step 1 loss "), "%s trains without them" % prog, err)


def case_threads(a):
    """--threads N. The runtime's OpenMP loops never change a number: at 1, 2 and 3 threads (3 oversubscribes
    a 2-core machine and splits every loop unevenly) the trainer built with vcc's command (-fopenmp) and
    the same trainer built without -fopenmp (where --threads sets OpenBLAS's threads alone) print the same
    losses and write the same weights, byte for byte, and so do the evaluation and forward programs. A
    fixed count repeats itself bit for bit. Across counts only OpenBLAS's sgemm differs (its blocking
    depends on the thread count): the losses agree to 1e-5. Bad counts are refused naming the option;
    --help gives the default."""
    w = fresh(os.path.join(a.work, "threads"))
    d = big_model(w)
    cmd = compile_trainer(a.vcc, os.path.join(d, "model.onnx"), w, "train.c")
    check(" -fopenmp " in cmd, "the build command has -fopenmp", cmd)
    run(cmd.replace(" -fopenmp", "").replace(" -o train ", " -o train_serial "), w, shell=True)
    programs(a, w, ("eval", "fwd"))
    for prog in ("eval", "fwd"):
        run(run([a.vcc, "m.onnx", "-o", prog + ".c"] + {"eval": ["--eval"], "fwd": ["--forward-only"]}[prog],
                w).stdout.strip().replace(" -fopenmp", "").replace(" -o %s " % prog, " -o %s_serial " % prog),
            w, shell=True)
    feed = ["--data", os.path.join(d, "data.npy"), "--labels", os.path.join(d, "labels.npy"),
            "--steps", "3", "--lr", "0.05", "--momentum", "0.9"]

    def train(prog, n, tag):
        out = "%s_%s_%s.safetensors" % (prog, n, tag)
        p = run(["./" + prog] + feed + ["--threads", n, "--out", out], w)
        return steps_of(p.stdout), open(os.path.join(w, out), "rb").read()

    def evaluate(prog, n):
        run(["./" + prog, "--data", "data.npy", "--logits", "l.npy", "--threads", n], w)
        run(["./" + prog.replace("eval", "fwd"), "x.npy", "-o", "y.npy", "--threads=" + n], w)
        return np.load(os.path.join(w, "l.npy")).tobytes(), np.load(os.path.join(w, "y.npy")).tobytes()

    losses = {}
    for n in ("1", "2", "3"):
        omp, serial = train("train", n, "a"), train("train_serial", n, "a")
        losses[n] = [float(x.split()[3]) for x in omp[0]]
        print("     --threads %s: %s" % (n, omp[0]))
        check(len(omp[0]) == 3 and omp == serial,
              "--threads %s: the -fopenmp trainer's losses and weights are the serial loops' byte for byte" % n,
              "%s vs %s" % (omp[0], serial[0]))
        check(evaluate("eval", n) == evaluate("eval_serial", n),
              "--threads %s: eval's logits and fwd's outputs are the serial loops' byte for byte" % n)
    check(train("train", "2", "a") == train("train", "2", "b"), "--threads 2 twice: the same bytes")
    for n in ("2", "3"):
        check(all(abs(x - y) <= 1e-5 * abs(y) for x, y in zip(losses[n], losses["1"])),
              "--threads %s's losses are --threads 1's to 1e-5" % n, "%s vs %s" % (losses[n], losses["1"]))
    # the OpenMP workers sleep between loops (OMP_WAIT_POLICY=passive in the running program's environment)
    # when sgemm has its own thread pool (OpenBLAS's pthreads build); with its OpenMP build the trainer keeps
    # libgomp's default (nothing set); a policy the caller chose is kept either way. Which OpenBLAS a run
    # loads is read from ldd under the same environment.
    pthread_dir = "/usr/lib/%s-linux-gnu/openblas-pthread" % os.uname().machine
    for given, libdir in ((None, None), ("active", None), (None, pthread_dir), ("active", pthread_dir)):
        env = dict(os.environ)
        env.pop("OMP_WAIT_POLICY", None)
        env.pop("LD_LIBRARY_PATH", None)
        if given:
            env["OMP_WAIT_POLICY"] = given
        if libdir:
            if not os.path.exists(os.path.join(libdir, "libopenblas.so.0")):
                print("     (no %s: the pthreads OpenBLAS case is not run)" % libdir)
                continue
            env["LD_LIBRARY_PATH"] = libdir
        ldd = subprocess.run(["ldd", "./train"], cwd=w, env=env, stdout=subprocess.PIPE, text=True).stdout
        # (the real path: /lib/<arch>/libopenblas.so.0 is an alternatives link to one of the two builds)
        blas = [os.path.realpath(l.split("=>")[1].split()[0]) for l in ldd.splitlines()
                if "libopenblas" in l and "=>" in l]
        pthreads = bool(blas) and "openmp" not in blas[0]
        want = [] if not given and not pthreads else [("OMP_WAIT_POLICY=" + (given or "passive")).encode()]
        p = subprocess.Popen(["./train"] + feed[:-6] + ["--steps", "50"], cwd=w, env=env, stdout=subprocess.PIPE, text=True)
        p.stdout.readline()
        with open("/proc/%d/environ" % p.pid, "rb") as f:
            seen = [x for x in f.read().split(b"\0") if x.startswith(b"OMP_WAIT_POLICY=")]
        p.kill()
        p.wait()
        check(seen == want, "OMP_WAIT_POLICY %s, OpenBLAS %s: the trainer runs with %s"
              % (given, blas[0] if blas else "?", want[0].decode() if want else "libgomp's default"), str(seen))
    for prog, base in (("train", feed), ("eval", ["--data", "data.npy", "--logits", "l.npy"]), ("fwd", ["x.npy", "-o", "y.npy"])):
        for bad in ("0", "-1", "two", "5000"):
            rc, out, err = run_t(["./" + prog] + base + ["--threads", bad], w)
            refused("%s --threads %s: refused" % (prog, bad), rc, out, err, 1, prog, ["--threads"])
        rc, out, err = run_t(["./" + prog, "--help"], w)
        check(rc == 0 and "--threads N" in out and "the physical cores, here " in out,
              "%s --help lists --threads and its default" % prog, out)

CASES = {"build_command": case_build_command, "cuda": case_cuda, "resume": case_resume,
         "kill_write": case_kill_write, "keep_last": case_keep_last, "refuse": case_refuse,
         "install": case_install, "messages": case_messages, "outputs": case_outputs, "tmp_files": case_tmp_files,
         "same_file": case_same_file, "fifo_inputs": case_fifo_inputs, "numbers": case_numbers, "stdout": case_stdout,
         "eval_logits": case_eval_logits, "signal": case_signal, "state_shape": case_state_shape,
         "many_tensors": case_many_tensors, "resume_lock": case_resume_lock, "optim_usage": case_optim_usage,
         "optim_resume": case_optim_resume, "keep_grads": case_keep_grads, "threads": case_threads}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--tiny", required=True, help="the vcc_tiny fixture's folder (res3d/, conv1d/)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--cmake", default="cmake", help="install: the cmake to run")
    ap.add_argument("--build", help="install: the build folder to install from")
    a = ap.parse_args()
    a.vcc, a.tiny, a.work = (os.path.abspath(x) for x in (a.vcc, a.tiny, a.work))
    os.makedirs(a.work, exist_ok=True)
    CASES[a.case](a)
    if FAILURES:
        sys.exit("FAIL: %d check(s): %s" % (len(FAILURES), "; ".join(FAILURES)))
    print("PASS")


if __name__ == "__main__":
    main()
