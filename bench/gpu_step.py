#!/usr/bin/python3
"""vcc's CUDA trainer against PyTorch on a GPU: one training step's speed, memory and loss, in two phases.

The machine with the GPU has nvcc and PyTorch (with cuDNN and cuBLAS in its wheels), but no vcc and
no package registry, and only a small folder travels to it. So vcc's part runs here and the GPU's part
there, and the folder between them is about 1 MB (no weights). The GPU phase needs torch, numpy and,
for r3d_18, torchvision; not onnx, not the safetensors package.

    .venv/bin/python bench/gpu_step.py prepare [--out build/gpu_step] [--models r3d_18,vivit_224]
    python3 bench/gpu_step.py run [--work build/gpu_step] [--steps 10 --warmup 2]     # on the GPU machine

prepare (here, with vcc built in build/vcc): for each model, export the ONNX training form
(python/vcc_torch.py export_for_training) into --scratch, compile it with vcc into OUT/<model>/train.cu
(fp32; and train_<p>.cu for every other precision `vcc --help` lists under --precision, when it has
that option) and write OUT/<model>/manifest.json:
    model        how to build the PyTorch model again (the builder, its arguments, the clip shape)
    seed         torch.manual_seed before building it
    programs     per precision: the .cu file, the nvcc command vcc printed, the arena bytes (--plan-json),
                 whether the trainer takes --cudnn-search (cudnn_search) and --cuda-graph (cuda_graph)
    plans        per precision vcc plans but builds no CUDA trainer for (none today: fp32, tf32 and bf16
                 all build): the arena bytes of its plan (--plan-json), which the run phase puts beside
                 PyTorch's peak at that mode
    tensors      (per program) the trainer's weight file: each tensor's name, dtype and shape, in order
    constants    the tensors of that file that are not state_dict entries of the model (none for
                 today's exports), whose values are carried in OUT/<model>/constants.safetensors
vcc runs in --scratch/<model> (default build/gpu_step_scratch), and only the program moves to OUT: the
ONNX file and vcc's train.safetensors are removed once read (unless --keep-scratch; r3d_18's weights
alone are 133 MB), the plan stays. The folder OUT is what the GPU machine needs, with the tracked files
of the repository (this script, bench/train_step.py, bench/attention_memory.py, models/video_nets.py,
models/clipshape.py).

run (on the GPU machine, with its python3): for each model of WORK, build the PyTorch model with the
manifest's seed, write the trainer's weight file from its state_dict by the manifest's names (plus the
carried constants; a missing name or a shape that differs is an error), write data.npy / labels.npy
(seeded normal clips and uniform labels, one batch per step), build train.cu with nvcc (cuDNN and cuBLAS
found as tests/cuda/cuda_build.sh finds them: $CUDNN_INCLUDE/$CUDNN_LIB, $CUBLAS_INCLUDE/$CUBLAS_LIB,
the CUDA toolkit, the system, the nvidia/* pip wheels; -arch=sm_XY of the device PyTorch sees, which
is what -arch=native picks; the library folders in the rpath; all builds at once, in the background),
run the trainer for WARMUP + STEPS steps and time each step as the gap between its `step k loss v`
lines (read as they come), then PyTorch on the same weights, batches and SGD (lr 0.01, momentum 0.9,
weight decay 0: the trainer gets lr and momentum on its command line and keeps its default weight
decay, 0, which its option does not take): eager float32 with TF32 off, eager with TF32 on, eager
under bf16 autocast, and torch.compile float32 (in a child process with a time limit; skipped when it
fails or runs out of time). Each figure is the median over the STEPS timed steps (each PyTorch step
ends with the loss read back, as the trainer's does). It prints a line per result as it comes and
then the table:

    model, precision   the trainer's precision (vcc's) or PyTorch's mode (tf32, bf16 autocast); "fp32
                       heuristic" is the fp32 trainer run again with --cudnn-search heuristic (cuDNN's
                       ranked algorithms instead of its default timed search; PyTorch's rows time theirs,
                       torch.backends.cudnn.benchmark), where the trainer has that option; "<p> graph"
                       is the trainer of precision p run again with --cuda-graph on (every step after
                       the first one CUDA graph launch), where it has that option and the model allows
                       it (SGD at a constant rate, no Dropout)
    vcc samples/s      batch / median step seconds of the CUDA trainer
    eager, compile     the same for PyTorch eager and torch.compile at that precision
    vcc/eager          vcc samples/s over PyTorch eager samples/s (above 1: vcc is faster)
    arena MiB          vcc's whole planned arena (parameters, gradients, momentum, activations, workspaces)
    torch MiB          torch.cuda.max_memory_allocated over PyTorch eager's run at that precision
                       (less the data set, which it keeps on the GPU)
    loss rel diff      step 1's loss, |vcc - PyTorch| / |PyTorch|, both float32 from the same weights
                       and batch (expected ~1e-5 or better; TF32 and bf16 rows compare with PyTorch
                       float32's loss and show what those modes change)

A model that fails (its build, its trainer, PyTorch) is reported at once, naming the model and the
stage, and the others are still measured; the run then exits 1 after the table, as it does when step
1's losses disagree.

Where the GPU machine is reached by a remote-run tool that copies the repository's tracked files and
the ignored paths it is told to carry (a device `run` tool with `carry`), carry the prepared folder:
    run(command="PYTHONUNBUFFERED=1 python3 bench/gpu_step.py run --work build/gpu_step",
        carry=["build/gpu_step"], timeout_s=600)
The whole run (nvcc builds included) is sized for under 10 minutes on an H200 (--budget 540 s).

For the tests: `prepare --target c` writes C trainers (train.c) and `run --device cpu` runs the whole
run phase with them and PyTorch on the CPU.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, HERE)

from train_step import STEP_RE, log  # noqa: E402  (the trainer's `step k loss v` line; a flushed print)
LR, MOMENTUM, WEIGHT_DECAY = 0.01, 0.9, 0.0
# --cuda-graph on against off, each step's loss, relative (see run_model): fp32, and the reduced precisions,
# whose two runs part further (on an H200 r3d_18's tf32 runs were 1.4e-4 apart at step 7, its fp32 ones 5.8e-5)
GRAPH_LOSS_TOL = {"fp32": 1e-4, "tf32": 1e-3, "bf16": 1e-3}
SEED = 0

# name -> how the PyTorch model is built (see build_model); clip is (N, C, T, H, W)
MODELS = {
    "r3d_18": dict(kind="torchvision", arch="r3d_18", clip=[8, 3, 16, 112, 112], num_classes=400),
    "vivit_224": dict(kind="attention_memory", spec="vivit_224", clip=[8, 3, 8, 224, 224]),
    # small ones, for the tests of the CPU-side pieces
    "vivit_tiny": dict(kind="attention_memory", spec="vivit_tiny", clip=[2, 3, 4, 32, 32]),
    "x3d_s_tiny": dict(kind="video_nets", name="x3d_s_tiny", clip=[2, 3, 4, 32, 32], num_classes=10),
}
DEFAULT_MODELS = "r3d_18,vivit_224"

DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
          "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


class Failure(Exception):
    """A stage of one model failed; the message says which and why."""


# ---------------------------------------------------------------------------------------------------
# safetensors, by hand: 8-byte little-endian header length, a JSON header {name: {dtype, shape,
# data_offsets [begin, end)} (offsets into the data after the header)}, the raw little-endian bytes


def read_safetensors_header(path):
    """The header of a safetensors file: (ordered list of (name, dtype, shape, (begin, end))), data offset)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise Failure(f"{path}: not a safetensors file (shorter than 8 bytes)")
        n = struct.unpack("<Q", raw)[0]
        head = json.loads(f.read(n).decode("utf-8"))
    entries = [(k, v["dtype"], list(v["shape"]), tuple(v["data_offsets"])) for k, v in head.items()
               if k != "__metadata__"]
    entries.sort(key=lambda e: e[3][0])
    return entries, 8 + n


def read_safetensors(path, names=None):
    """{name: (dtype, shape, raw bytes)} of a safetensors file (only `names`, when given)."""
    entries, base = read_safetensors_header(path)
    out = {}
    with open(path, "rb") as f:
        for name, dtype, shape, (b, e) in entries:
            if names is not None and name not in names:
                continue
            f.seek(base + b)
            out[name] = (dtype, shape, f.read(e - b))
    return out


def write_safetensors(path, tensors, metadata=None):
    """Write [(name, dtype, shape, raw bytes)] in that order (header padded with spaces to 8 bytes);
    through a temporary file renamed into place."""
    head, off = {}, 0
    if metadata:
        head["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, dtype, shape, data in tensors:
        if dtype not in DTYPES:
            raise Failure(f"{path}: {name}: unknown safetensors dtype {dtype}")
        head[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    hb = json.dumps(head, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for _, _, _, data in tensors:
            f.write(data)
    os.replace(tmp, path)


def tensor_bytes(t, dtype):
    """The raw little-endian bytes of torch tensor t as safetensors dtype `dtype` (float tensors are
    converted to another float dtype; any other difference is an error)."""
    import torch
    want = getattr(torch, DTYPES[dtype])
    if t.dtype != want:
        if not (t.dtype.is_floating_point and want.is_floating_point):
            raise Failure(f"dtype {t.dtype} where the trainer reads {dtype}")
        t = t.to(want)
    t = t.detach().cpu().contiguous().reshape(-1)
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def weights_from_state(tensors, state, constants):
    """The trainer's weight file, [(name, dtype, shape, bytes)] in the manifest's order: each name from
    the state dict (its shape must match), else from the carried constants; a name in neither fails."""
    out, missing = [], []
    for name, dtype, shape in tensors:
        if name in state:
            t = state[name]
            if list(t.shape) != list(shape):
                raise Failure(f"{name}: the model's state_dict has shape {list(t.shape)}, the trainer reads {shape}")
            try:
                out.append((name, dtype, shape, tensor_bytes(t, dtype)))
            except Failure as e:
                raise Failure(f"{name}: {e}") from None
        elif name in constants:
            out.append((name,) + tuple(constants[name]))
        else:
            missing.append(name)
    if missing:
        raise Failure(f"{len(missing)} tensor(s) of the trainer's weight file are neither in the model's "
                      f"state_dict nor among the carried constants: {', '.join(missing[:8])}"
                      f"{' ...' if len(missing) > 8 else ''}")
    return out


# ---------------------------------------------------------------------------------------------------
# models and data


def build_model(spec, seed):
    """The PyTorch model of a manifest's spec, seeded, in train() mode, on the CPU."""
    import torch
    torch.manual_seed(seed)
    kind = spec["kind"]
    if kind == "torchvision":
        import torchvision
        m = getattr(torchvision.models.video, spec["arch"])(num_classes=spec["num_classes"])
    elif kind == "attention_memory":
        import attention_memory
        m, _ = attention_memory.build(dict(attention_memory.SPECS[spec["spec"]], clip=tuple(spec["clip"])))
    elif kind == "video_nets":
        import video_nets
        m = video_nets.build_model(spec["name"], num_classes=spec["num_classes"], clip=tuple(spec["clip"]),
                                   dropout=0.0)
    else:
        raise Failure(f"unknown model kind {kind!r}")
    return m.train()


def num_classes(spec):
    if "num_classes" in spec:
        return spec["num_classes"]
    import attention_memory
    return attention_memory.SPECS[spec["spec"]]["num_classes"]


def make_data(clip, classes, samples, seed):
    """Seeded clips (S, C, T, H, W) float32 (standard normal) and labels (S,) int64 in [0, K)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((samples,) + tuple(clip[1:]), dtype=np.float32)
    labels = rng.integers(0, classes, size=(samples,), dtype=np.int64)
    return data, labels


# ---------------------------------------------------------------------------------------------------
# prepare (the machine with vcc)


def vcc_precisions(vcc):
    """The precisions vcc compiles for: ["fp32"] plus what `vcc --help` lists for --precision, if any."""
    r = subprocess.run([vcc, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return ["fp32"] + [p for p in precisions_in_help(r.stdout) if p not in ("fp32", "f32", "float32")]


def precisions_in_help(text):
    """The precision names on the help lines of --precision (and the lines continuing them)."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if "--precision" in ln:
            block = [ln] + [x for x in lines[i + 1:i + 4] if x.startswith(" " * 8) and not x.lstrip().startswith("-")]
            names = re.findall(r"\b(fp\d+\w*|bf16\w*|tf32|f16|f32|bfloat16|float16|float32)\b",
                               " ".join(block))
            return list(dict.fromkeys(names))
    return []


def program_name(build):
    """The binary a build command makes: the word after -o."""
    argv = shlex.split(build)
    if "-o" not in argv[:-1]:
        raise Failure(f"no -o in the build command: {build}")
    return argv[argv.index("-o") + 1]


def vcc_compile(vcc, onnx_path, out_dir, precision, plan_path, target="cu"):
    """vcc ONNX -o train[_p].cu (or .c) --plan-json plan_path in the ONNX file's folder, then the program
    moved to out_dir (its weight file stays); returns the program's manifest entry."""
    stem = "train" if precision == "fp32" else f"train_{precision}"
    extra = [] if precision == "fp32" else ["--precision", precision]
    cu = os.path.join(os.path.dirname(onnx_path), stem + "." + target)
    r = subprocess.run([vcc, onnx_path, "-o", cu, "--plan-json", plan_path] + extra, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise Failure(f"vcc {os.path.basename(onnx_path)} ({precision}) failed: {r.stderr.strip()[-2000:]}")
    with open(cu) as f:
        first = f.readline()
        # whether the trainer takes --cudnn-search (a CUDA trainer of a vcc that has it): the run phase's
        # "fp32 heuristic" row
        text = f.read()
        search = target == "cu" and '"--cudnn-search"' in text
        # whether it takes --cuda-graph (the run phase's "<precision> graph" rows)
        graph = target == "cu" and '"--cuda-graph"' in text
    prefix = "// build (from this file's folder): "
    if not first.startswith(prefix):
        raise Failure(f"{cu}: no `{prefix.strip()}` first line")
    with open(plan_path) as f:
        plan = json.load(f)
    weights = os.path.join(os.path.dirname(cu), stem + ".safetensors")
    shutil.move(cu, os.path.join(out_dir, stem + "." + target))  # the scratch folder may be another file system
    return {"precision": precision, "source": stem + "." + target, "build": first[len(prefix):].strip(),
            "program": program_name(first[len(prefix):]), "weights": weights,
            "arena_bytes": plan["arena_bytes"], "lower_bound_bytes": plan.get("lower_bound_bytes"),
            "cudnn_search": search, "cuda_graph": graph}


def prepare_model(args, name, precisions):
    import torch
    from vcc_torch import export_for_training
    spec = MODELS[name]
    out_dir = os.path.join(args.out, name)
    scratch = os.path.join(args.scratch, name)
    shutil.rmtree(out_dir, ignore_errors=True)  # nothing stale travels (an earlier build's binary, say)
    os.makedirs(out_dir, exist_ok=True)
    os.makedirs(scratch, exist_ok=True)
    t0 = time.perf_counter()
    model = build_model(spec, SEED)
    onnx_path = os.path.join(scratch, name + ".onnx")
    torch.manual_seed(SEED)
    export_for_training(model, torch.randn(*spec["clip"]), onnx_path)
    log(f"  export: {onnx_path} ({time.perf_counter() - t0:.0f} s)")
    state = model.state_dict()
    programs, plans, tensors, constants = [], [], None, {}
    for p in precisions:
        try:
            prog = vcc_compile(args.vcc, onnx_path, out_dir, p, os.path.join(scratch, f"plan_{p}.json"), args.target)
        except Failure as e:
            if p == "fp32":
                raise
            # no trainer at this precision: its plan alone, for the arena beside PyTorch's at that mode
            plan_path = os.path.join(scratch, f"plan_{p}.json")
            r = subprocess.run([args.vcc, onnx_path, "--precision", p, "--plan-json", plan_path],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if r.returncode == 0:
                with open(plan_path) as f:
                    plans.append({"precision": p, "arena_bytes": json.load(f)["arena_bytes"]})
                log(f"  vcc ({p}): no trainer ({str(e).splitlines()[-1][-200:]}); its plan: arena "
                    f"{plans[-1]['arena_bytes'] / 2**20:.1f} MiB")
            else:
                log(f"  warning: {p} skipped (a name read off `vcc --help`): {e}")
            continue
        # vcc's own weight file stays in the scratch folder: only its header travels (in the manifest)
        wdst = prog.pop("weights")
        entries, _ = read_safetensors_header(wdst)
        prog["tensors"] = [[n, d, s] for n, d, s, _ in entries]
        constants.update(read_safetensors(wdst, [n for n, _, _, _ in entries if n not in state]))
        tensors = tensors or prog["tensors"]
        programs.append(prog)
        if not args.keep_scratch:
            os.remove(wdst)
        log(f"  vcc ({p}): {os.path.join(out_dir, prog['source'])}, arena {prog['arena_bytes'] / 2**20:.1f} MiB, "
            f"build: {prog['build']}")
    if not args.keep_scratch:
        os.remove(onnx_path)
    if constants:
        write_safetensors(os.path.join(out_dir, "constants.safetensors"),
                          [(n,) + tuple(v) for n, v in constants.items()])
    manifest = {"name": name, "model": spec, "seed": SEED, "programs": programs, "plans": plans,
                "constants": sorted(constants), "lr": LR, "momentum": MOMENTUM, "weight_decay": WEIGHT_DECAY}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    log(f"  manifest: {len(tensors)} tensors, {len(constants)} not in the state_dict"
        f"{' (carried in constants.safetensors)' if constants else ''}")


def folder_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def cmd_prepare(args):
    args.vcc = os.path.abspath(args.vcc)
    if not os.access(args.vcc, os.X_OK):
        sys.exit(f"gpu_step: error: --vcc {args.vcc}: not an executable (build vcc first)")
    sys.path.insert(0, os.path.join(ROOT, "python"))
    precisions = vcc_precisions(args.vcc)
    log(f"vcc precisions: {', '.join(precisions)}")
    os.makedirs(args.out, exist_ok=True)
    names = parse_models(args.models)
    for name in names:
        log(f"== {name} {'x'.join(map(str, MODELS[name]['clip']))}")
        try:
            prepare_model(args, name, precisions)
        except Failure as e:
            sys.exit(f"gpu_step: error: prepare {name}: {e}")
    with open(os.path.join(args.out, "models.json"), "w") as f:
        json.dump({"models": names}, f)
    size = folder_bytes(args.out)
    log(f"{args.out}: {size / 2**20:.1f} MiB to carry")
    if size > args.max_mib * 2**20:
        sys.exit(f"gpu_step: error: {args.out} holds {size / 2**20:.1f} MiB, over --max-mib {args.max_mib}")
    return 0


def parse_models(text):
    names = [m.strip() for m in text.split(",") if m.strip()]
    for m in names:
        if m not in MODELS:
            sys.exit(f"gpu_step: error: unknown model {m!r} (choose from {', '.join(MODELS)})")
    return names


# ---------------------------------------------------------------------------------------------------
# run (the machine with the GPU): nvcc


def _pip_nvidia_dirs():
    """site-packages/nvidia/* folders (cuDNN, cuBLAS wheels as PyTorch installs them)."""
    import site
    roots = []
    for sp in list(site.getsitepackages()) + [site.getusersitepackages()]:
        d = os.path.join(sp, "nvidia")
        if os.path.isdir(d):
            roots += sorted(os.path.join(d, x) for x in os.listdir(d))
    return roots


def _find_lib(d, name):
    if not os.path.isdir(d):
        return None
    if os.path.exists(os.path.join(d, f"lib{name}.so")):
        return os.path.join(d, f"lib{name}.so")
    vers = sorted(f for f in os.listdir(d) if re.fullmatch(rf"lib{name}\.so\.\d+(\.\d+)*", f))
    return os.path.join(d, vers[0]) if vers else None


def find_library(header, lib, env_inc, env_lib, cuda_root):
    """(include dir, library path) of a header and its library from one place: the environment's folders,
    the CUDA toolkit, the system, then the nvidia/* pip wheels."""
    places = []
    if os.environ.get(env_inc) or os.environ.get(env_lib):
        places.append(([os.environ.get(env_inc, "")], [os.environ.get(env_lib, "")]))
    for r in [cuda_root, os.path.join(cuda_root, "targets", "x86_64-linux")]:
        places.append(([os.path.join(r, "include")], [os.path.join(r, "lib64"), os.path.join(r, "lib")]))
    places.append((["/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/local/include"],
                   ["/usr/lib/x86_64-linux-gnu", "/usr/local/lib", "/usr/lib64", "/usr/lib"]))
    for r in _pip_nvidia_dirs():
        places.append(([os.path.join(r, "include")], [os.path.join(r, "lib")]))
    for incs, libs in places:
        inc = next((d for d in incs if d and os.path.isfile(os.path.join(d, header))), None)
        so = next((p for p in (_find_lib(d, lib) for d in libs if d) if p), None)
        if inc and so:
            return inc, so
    raise Failure(f"{header} and lib{lib}.so not found together (set {env_inc} and {env_lib})")


def nvcc_command(printed, workdir, arch=None):
    """The build command vcc printed (`nvcc -O2 train.cu -o train_cuda -lcudnn -lcublas`, run in the
    file's folder) with what this machine needs: cuDNN/cuBLAS include folders as -isystem, their
    libraries linked through unversioned names in workdir/lib (pip wheels ship only libcudnn.so.9) and
    their folders in the rpath, and the arch: `arch` if given, else -arch=native where nvcc has it."""
    argv = shlex.split(printed)
    if argv[0] != "nvcc":  # a C trainer's build command (prepare --target c): as vcc printed it
        return argv, []
    nvcc = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.access(p, os.X_OK)), None)
    if not nvcc:
        raise Failure("nvcc not found (put it on PATH)")
    cuda_root = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    argv[0] = nvcc
    libdir = os.path.join(workdir, "lib")
    os.makedirs(libdir, exist_ok=True)
    extra, rpaths = [], []
    for header, lib, ei, el in (("cudnn.h", "cudnn", "CUDNN_INCLUDE", "CUDNN_LIB"),
                                ("cublas_v2.h", "cublas", "CUBLAS_INCLUDE", "CUBLAS_LIB")):
        inc, so = find_library(header, lib, ei, el, cuda_root)
        default = ("/usr/include", "/usr/local/include", os.path.join(cuda_root, "include"))
        if inc not in default and inc not in extra:
            extra += ["-isystem", inc]
        link = os.path.join(libdir, f"lib{lib}.so")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(so, link)
        if os.path.dirname(so) not in rpaths:
            rpaths.append(os.path.dirname(so))
    if arch is None:
        h = subprocess.run([nvcc, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
        arch = "-arch=native" if "native" in h else ""
    extra += shlex.split(arch) + ["-L" + libdir]
    for d in rpaths:
        extra += ["-Xlinker", "-rpath", "-Xlinker", d]
    return argv[:1] + extra + argv[1:], rpaths


class Build:
    """An nvcc build started in workdir (in the background: the models' builds overlap each other and
    the weight files' writing); wait() returns (seconds, nvcc's output) or raises Failure."""

    def __init__(self, printed, workdir, arch=None):
        self.argv, self.libdirs = nvcc_command(printed, workdir, arch)
        log(f"  build: {' '.join(shlex.quote(a) for a in self.argv)}")
        self.t0 = time.perf_counter()
        self.out = tempfile.TemporaryFile(mode="w+")  # not a pipe: nobody reads it until wait()
        self.p = subprocess.Popen(self.argv, cwd=workdir, stdout=self.out, stderr=subprocess.STDOUT, text=True)

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def wait(self, timeout=400):
        try:
            self.p.wait(timeout=max(1.0, timeout - (time.perf_counter() - self.t0)))
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise Failure(f"nvcc took longer than {timeout} s") from None
        self.out.seek(0)
        out = self.out.read()
        if self.p.returncode != 0:
            raise Failure(f"nvcc failed (exit status {self.p.returncode}):\n{out[-4000:]}")
        return time.perf_counter() - self.t0, out


def build_trainer(printed, workdir, arch=None, timeout=400):
    """Build with nvcc in workdir and wait; returns (seconds, nvcc's output)."""
    return Build(printed, workdir, arch).wait(timeout)


# ---------------------------------------------------------------------------------------------------
# run: the trainer and PyTorch


def trainer_args(steps, weights="weights.safetensors"):
    return ["--data", "data.npy", "--labels", "labels.npy", "--weights", weights, "--steps", str(steps),
            "--lr", repr(LR), "--momentum", repr(MOMENTUM)]  # --weight-decay: the trainer's default, 0


def run_trainer(argv, cwd, last, timeout, libdirs=()):
    """Run a trainer, reading its `step k loss v` lines as they come; returns ({k: loss}, {k: the
    perf_counter time its line arrived}, start time)."""
    import selectors
    if timeout <= 0:
        raise Failure("no time left for the trainer (--budget)")
    t0 = time.perf_counter()
    errf = tempfile.TemporaryFile(mode="w+")  # read when it has ended: a pipe could fill and block it
    env = dict(os.environ)
    if libdirs:  # beside the rpath: cuDNN loads its own parts (libcudnn_*.so.9) with dlopen
        env["LD_LIBRARY_PATH"] = os.pathsep.join(list(libdirs) + [x for x in [env.get("LD_LIBRARY_PATH")] if x])
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=errf, text=True, bufsize=1)
    losses, at = {}, {}
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    try:
        while True:
            left = timeout - (time.perf_counter() - t0)
            if left <= 0:
                raise Failure(f"the trainer took longer than {timeout:.0f} s (at step {max(at, default=0)})")
            if not sel.select(left):
                continue
            line = p.stdout.readline()
            if not line:
                break
            m = STEP_RE.match(line.strip())
            if m:
                k = int(m.group(1))
                at[k], losses[k] = time.perf_counter(), float(m.group(2))
                log(f"    step {k} loss {m.group(2)}  {at[k] - t0:.3f} s")
        rc = p.wait(timeout=max(1.0, timeout - (time.perf_counter() - t0)))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    errf.seek(0)
    err = errf.read()
    if rc != 0 or last not in losses:
        raise Failure(f"the trainer exited with status {rc} after {len(losses)} step(s): {err.strip()[-2000:]}")
    return losses, at, t0


def step_seconds(at, warmup, last):
    """The timed steps' durations: the gaps between consecutive step lines after the warm-up."""
    return [at[k] - at[k - 1] for k in range(warmup + 1, last + 1)]


def set_tf32(torch, on):
    """TF32 in matrix products and convolutions on or off: the fp32_precision settings where torch has
    them (2.9 on; it warns about the allow_tf32 flags and refuses a mix of the two), else the flags."""
    try:
        torch.backends.cuda.matmul.fp32_precision = "tf32" if on else "ieee"
        torch.backends.cudnn.conv.fp32_precision = "tf32" if on else "ieee"
    except (AttributeError, AssertionError, RuntimeError):
        torch.backends.cuda.matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on


def torch_bench(spec, seed, mode, data_path, labels_path, warmup, steps, device="cuda"):
    """PyTorch's training loop on the GPU in `mode` (fp32, tf32, bf16, compile); the model's weights
    from build_model(spec, seed), the trainer's batches and SGD. Returns {losses, step_s, max_alloc}."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    set_tf32(torch, mode == "tf32" or mode == "bf16")
    torch.backends.cudnn.benchmark = True
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    model = build_model(spec, seed).to(dev)
    x_all = torch.from_numpy(np.load(data_path)).to(dev)
    y_all = torch.from_numpy(np.load(labels_path)).to(dev)
    n, s = spec["clip"][0], x_all.shape[0]
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    fwd = torch.compile(model) if mode == "compile" else model
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    losses, times = [], []
    for k in range(warmup + steps):
        idx = torch.tensor([(k * n + i) % s for i in range(n)], device=dev)
        x, y = x_all.index_select(0, idx), y_all.index_select(0, idx)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if mode == "bf16":
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                loss = F.cross_entropy(fwd(x), y)
        else:
            loss = F.cross_entropy(fwd(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())  # the trainer reads its loss back every step too
        times.append(time.perf_counter() - t0)
    return {"losses": losses, "step_s": times[warmup:],
            "max_alloc": (torch.cuda.max_memory_allocated() - x_all.numel() * 4 - y_all.numel() * 8) if cuda else None}


def torch_bench_child(args):
    """`run --torch-child MODE`: one torch_bench in its own process (torch.compile, with a time limit)."""
    with open(os.path.join(args.work, args.model_dir, "manifest.json")) as f:
        man = json.load(f)
    d = os.path.join(args.work, args.model_dir)
    r = torch_bench(man["model"], man["seed"], args.torch_child, os.path.join(d, "data.npy"),
                    os.path.join(d, "labels.npy"), args.warmup, args.steps, args.device)
    print("RESULT " + json.dumps(r), flush=True)
    return 0


def torch_in_child(args, name, mode, timeout):
    argv = [sys.executable, os.path.abspath(__file__), "run", "--work", args.work, "--torch-child", mode,
            "--model-dir", name, "--warmup", str(args.warmup), "--steps", str(args.steps), "--device", args.device]
    # its own process group: on a timeout the compiler's worker processes end with it
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, f"took longer than {timeout:.0f} s"
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    line = next((ln for ln in out.splitlines() if ln.startswith("RESULT ")), None)
    if p.returncode != 0 or not line:
        tail = " / ".join(out.strip().splitlines()[-2:])
        return None, f"failed (exit status {p.returncode}): {tail[-600:]}"
    return json.loads(line[len("RESULT "):]), None


def samples_per_s(n, step_s):
    return n / statistics.median(step_s)


def time_trainer(args, d, prog, wname, label, extra, libdirs, n, last, deadline):
    """Run prog's trainer in d for `last` steps from the weights wname (plus the options extra), log its
    speed and step-1 loss under label, and return {"sps", "loss1", "arena"}; Failure when it fails."""
    losses, at, _ = run_trainer([os.path.join(d, prog["program"])] + trainer_args(last, wname) + extra, d, last,
                                timeout=min(args.trainer_timeout, deadline - time.perf_counter()), libdirs=libdirs)
    st = step_seconds(at, args.warmup, last)
    r = {"sps": samples_per_s(n, st), "loss1": losses[1], "arena": prog["arena_bytes"], "losses": losses}
    log(f"  vcc {label}: {r['sps']:.1f} samples/s (median of {len(st)} steps, "
        f"{statistics.median(st) * 1e3:.1f} ms/step), step 1 loss {losses[1]!r}")
    return r


def run_model(args, name, rows, deadline, builds):
    import torch
    d = os.path.join(args.work, name)
    with open(os.path.join(d, "manifest.json")) as f:
        man = json.load(f)
    spec, n, last = man["model"], man["model"]["clip"][0], args.warmup + args.steps
    log(f"== {name} {'x'.join(map(str, spec['clip']))}")
    state = build_model(spec, man["seed"]).state_dict()
    consts = {}
    if man["constants"]:
        consts = read_safetensors(os.path.join(d, "constants.safetensors"))
    data, labels = make_data(spec["clip"], num_classes(spec), n * last, man["seed"])
    import numpy as np
    np.save(os.path.join(d, "data.npy"), data)
    np.save(os.path.join(d, "labels.npy"), labels)
    del data
    vcc = {}
    for prog in man["programs"]:
        p = prog["precision"]
        wname = f"weights_{p}.safetensors"
        write_safetensors(os.path.join(d, wname), weights_from_state(prog["tensors"], state, consts))
        secs, _ = builds[name, p].wait(timeout=args.nvcc_timeout)
        log(f"  built {prog['program']} ({p}) in {secs:.0f} s (started with the other builds)")
        vcc[p] = time_trainer(args, d, prog, wname, p, [], builds[name, p].libdirs, n, last, deadline)
        if p == "fp32" and prog["source"].endswith(".cu") and prog.get("cudnn_search"):
            # the same program with cuDNN's heuristic algorithm choice instead of its default timed search
            # (--cudnn-search, which CUDA trainers of this vcc take), to see what the timing buys
            # (an extra row: its failure, or no time left for it, is logged and the model goes on)
            q = "fp32 heuristic"
            try:
                vcc[q] = time_trainer(args, d, prog, wname, q, ["--cudnn-search", "heuristic"],
                                      builds[name, p].libdirs, n, last, deadline)
            except Failure as e:
                log(f"  vcc {q}: skipped: {e}")
        if prog["source"].endswith(".cu") and prog.get("cuda_graph"):
            # the same program with the step captured as one CUDA graph (an extra row, as above)
            q = f"{p} graph"
            try:
                vcc[q] = time_trainer(args, d, prog, wname, q, ["--cuda-graph", "on"], builds[name, p].libdirs, n,
                                      last, deadline)
                # a graph launch runs the step's own kernels, but the two runs are two processes: each times
                # its own cuDNN algorithms, and some backward algorithms sum with atomics, so two runs of
                # one program part in the last digits from step 2 on (the heuristic run above shows it
                # too). Every step's loss within GRAPH_LOSS_TOL[p] (relative) of the run without the graph.
                a, b = vcc[q]["losses"], vcc[p]["losses"]
                tol = GRAPH_LOSS_TOL.get(p.split()[0], 1e-3)
                worst = max((abs(a[k] - b[k]) / abs(b[k]) for k in a if k in b), default=float("inf"))
                ok = a.keys() == b.keys() and worst <= tol
                log(f"  vcc {q}: losses {'agree with' if ok else 'DIFFER from'} --cuda-graph off, worst step "
                    f"{worst:.1e} relative (allowed {tol:g}; bitwise the same: {a == b})")
                if not ok:
                    bad = vcc.pop(q)["losses"]
                    raise Failure(f"losses differ from the eager run: {bad} vs {vcc[p]['losses']}")
            except Failure as e:
                log(f"  vcc {q}: no row: {e}")
    del state
    data_p, labels_p = os.path.join(d, "data.npy"), os.path.join(d, "labels.npy")
    eager = {}
    for mode in ("fp32", "tf32", "bf16"):
        try:
            r = torch_bench(spec, man["seed"], mode, data_p, labels_p, args.warmup, args.steps, args.device)
        except Exception as e:  # an out-of-memory error, a kernel PyTorch lacks...
            raise Failure(f"PyTorch eager {mode}: {type(e).__name__}: {e}") from None
        if args.device == "cuda":
            torch.cuda.empty_cache()
        eager[mode] = r
        log(f"  torch eager {mode}: {samples_per_s(n, r['step_s']):.1f} samples/s, step 1 loss {r['losses'][0]!r}, "
            f"max allocated {mib(r['max_alloc'])} MiB")
    left = deadline - time.perf_counter() - args.reserve
    compiled, why = None, "skipped: no time left"
    if args.no_compile:
        why = "skipped (--no-compile)"
    elif left > 60:
        compiled, why = torch_in_child(args, name, "compile", min(args.compile_timeout, left))
    if compiled:
        log(f"  torch.compile fp32: {samples_per_s(n, compiled['step_s']):.1f} samples/s, "
            f"step 1 loss {compiled['losses'][0]!r}")
    else:
        log(f"  torch.compile fp32: {why}")
    ref = eager["fp32"]["losses"][0]
    for p, v in vcc.items():
        e = eager.get(p.split()[0], eager["fp32"])  # "tf32 graph" against eager tf32, "fp32 heuristic" fp32
        rows.append({"model": name, "precision": p, "vcc": v["sps"], "eager": samples_per_s(n, e["step_s"]),
                     "compile": samples_per_s(n, compiled["step_s"]) if compiled and p == "fp32" else None,
                     "arena": v["arena"], "torch_mem": e["max_alloc"], "diff": abs(v["loss1"] - ref) / abs(ref)})
    plans = {q["precision"]: q["arena_bytes"] for q in man.get("plans", [])}
    for mode in ("tf32", "bf16"):
        if mode not in vcc:
            e = eager[mode]
            rows.append({"model": name, "precision": mode + (" (torch; vcc plan only)" if mode in plans else " (torch)"),
                         "vcc": None, "eager": samples_per_s(n, e["step_s"]), "compile": None,
                         "arena": plans.get(mode), "torch_mem": e["max_alloc"],
                         "diff": abs(e["losses"][0] - ref) / abs(ref)})


def mib(b):
    return "-" if b is None else f"{b / 2**20:.0f}"


def print_table(rows):
    def f(v, fmt):
        return "-" if v is None else fmt.format(v)
    log("")
    log("| model | precision | vcc samples/s | PyTorch eager samples/s | PyTorch compile samples/s | vcc/eager "
        "| vcc arena MiB | PyTorch max allocated MiB | arena/PyTorch | step-1 loss rel diff |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = r["vcc"] / r["eager"] if r["vcc"] is not None else None
        mem = r["arena"] / r["torch_mem"] if r["arena"] is not None and r["torch_mem"] else None
        log(f"| {r['model']} | {r['precision']} | {f(r['vcc'], '{:.1f}')} | {r['eager']:.1f} | "
            f"{f(r['compile'], '{:.1f}')} | {f(ratio, '{:.2f}')} | {f(r['arena'] and r['arena'] / 2**20, '{:.1f}')} | "
            f"{mib(r['torch_mem'])} | {f(mem, '{:.2f}')} | {r['diff']:.1e} |")


def cmd_run(args):
    args.work = os.path.abspath(args.work)
    if args.torch_child:
        return torch_bench_child(args)
    t_start = time.perf_counter()
    deadline = t_start + args.budget
    try:
        with open(os.path.join(args.work, "models.json")) as f:
            names = json.load(f)["models"]
    except OSError as e:
        sys.exit(f"gpu_step: error: {args.work}: {e.strerror} (run `gpu_step.py prepare` on the machine with vcc "
                 f"and carry its --out folder)")
    if args.models:
        want = parse_models(args.models)
        missing = [m for m in want if m not in names]
        if missing:
            sys.exit(f"gpu_step: error: {args.work} has no prepared {', '.join(missing)} (it has {', '.join(names)})")
        names = want
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_step: error: PyTorch sees no CUDA device")
    dev_name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    log(f"device: {dev_name}; torch {torch.__version__}; steps {args.warmup} warm-up + "
        f"{args.steps} timed")
    rows, builds = [], {}
    arch = None  # nvcc's -arch=native where it has it
    if args.device == "cuda":  # the device's own arch, as native would pick it, without nvcc's device query
        arch = "-arch=sm_%d%d" % torch.cuda.get_device_capability(0)
    for name in names:  # every nvcc build at once: they overlap the weights, data and the other steps
        with open(os.path.join(args.work, name, "manifest.json")) as f:
            for prog in json.load(f)["programs"]:
                try:
                    builds[name, prog["precision"]] = Build(prog["build"], os.path.join(args.work, name), arch)
                except Failure as e:
                    sys.exit(f"gpu_step: error: {name}: {e}")
    failed = []  # a model that fails does not keep the others from being measured
    try:
        for name in names:
            try:
                run_model(args, name, rows, deadline, builds)
            except Failure as e:
                failed.append(f"{name}: {e}")
                log(f"gpu_step: error: {name}: {e}")
    finally:
        for b in builds.values():  # a model that failed before its build was waited for
            b.stop()
    if rows:
        print_table(rows)
    log(f"(total {time.perf_counter() - t_start:.0f} s)")
    bad = [r for r in rows if r["vcc"] is not None and r["precision"] == "fp32" and not r["diff"] <= args.loss_tol]
    if bad:
        failed.append(f"step-1 loss of vcc fp32 differs from PyTorch fp32 by more than {args.loss_tol:g} (relative) "
                      f"for {', '.join(r['model'] for r in bad)}")
    if failed:
        sys.exit("gpu_step: error: " + "; ".join(failed))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="export, compile with vcc, write the manifests (the machine with vcc)")
    p.add_argument("--out", default=os.path.join(ROOT, "build", "gpu_step"), help="the folder to carry")
    p.add_argument("--scratch", default=os.path.join(ROOT, "build", "gpu_step_scratch"),
                   help="ONNX files, vcc's weights and plans (not carried)")
    p.add_argument("--vcc", default=os.path.join(ROOT, "build", "vcc"))
    p.add_argument("--models", default=DEFAULT_MODELS, help="comma-separated: " + ", ".join(MODELS))
    p.add_argument("--max-mib", type=float, default=20.0, help="fail when --out grows above this")
    p.add_argument("--keep-scratch", action="store_true",
                   help="keep the ONNX files and vcc's weight files in --scratch (removed once read)")
    p.add_argument("--target", default="cu", choices=("cu", "c"),
                   help="c: C trainers (train.c), to try the run phase on a CPU (run --device cpu)")
    r = sub.add_parser("run", help="build, time and compare on the GPU machine")
    r.add_argument("--work", default=os.path.join(ROOT, "build", "gpu_step"), help="prepare's --out folder")
    r.add_argument("--models", default=None, help="a subset of the prepared models")
    r.add_argument("--warmup", type=int, default=2, help="untimed steps at the start of every run")
    r.add_argument("--steps", type=int, default=10, help="timed steps of every run")
    r.add_argument("--budget", type=float, default=540.0, help="seconds for the whole run")
    r.add_argument("--reserve", type=float, default=60.0,
                   help="seconds kept back for the later models when deciding to try torch.compile")
    r.add_argument("--trainer-timeout", type=float, default=240.0)
    r.add_argument("--nvcc-timeout", type=float, default=400.0, help="seconds from the builds' start")
    r.add_argument("--compile-timeout", type=float, default=150.0)
    r.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    r.add_argument("--loss-tol", type=float, default=1e-4, help="largest accepted step-1 loss relative difference")
    r.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                   help="cpu: PyTorch on the CPU, for a run of C trainers (prepare --target c), as the tests do")
    r.add_argument("--torch-child", default=None, help=argparse.SUPPRESS)
    r.add_argument("--model-dir", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        args.out, args.scratch = os.path.abspath(args.out), os.path.abspath(args.scratch)
        return cmd_prepare(args)
    if args.warmup < 1 or args.steps < 1:
        ap.error("--warmup and --steps must be at least 1")
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
