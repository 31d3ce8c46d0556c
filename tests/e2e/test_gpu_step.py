"""The parts of bench/gpu_step.py that run without a GPU, on small models.

    test_gpu_step.py --vcc BUILD/vcc --work DIR --part cpu|nvcc

cpu   1. its safetensors writer against the safetensors package: a file it writes (float32, int64,
         bfloat16, a 0-dim tensor, an empty one) reads back through safetensors.torch
         with the same names, dtypes, shapes and values; a file the package writes reads back through its
         reader the same way;
      2. `gpu_step.py prepare` on vivit_tiny and x3d_s_tiny (LayerNorm and attention; BatchNorm with its
         int64 num_batches_tracked): each manifest lists the tensors of vcc's own weight file (its header,
         read by the safetensors package) in its order, and as constants exactly the names that are not
         state_dict keys of the PyTorch model;
      3. the weight file the GPU phase writes from a freshly built model's state_dict holds, tensor by
         tensor, the bytes of vcc's own train.safetensors, and a C trainer of the same ONNX file (`vcc -o
         train.c`, built with the command vcc printed) run for 2 steps from it prints the same
         `step k loss v` lines as from vcc's own file; a state_dict without one of the names is refused
         with an error naming it;
      4. the run phase end to end with C trainers (prepare --target c, run --device cpu): it builds the
         trainer, writes weights and data, times vcc's and PyTorch's steps and exits 0 only when step 1's
         losses agree to its --loss-tol (1e-4 relative); with a manifest naming a weight the model does
         not have, it exits 1 naming the model and the weight.
nvcc  `gpu_step.py prepare` on vivit_tiny, then the GPU phase's nvcc command for each of its programs,
      train.cu (fp32) and train_tf32.cu (the precisions `vcc --help` lists; cuDNN and cuBLAS found as on
      the GPU machine, -arch=sm_90): each builds and prints nothing, and `<program> --help` runs (its
      libraries load through the rpath) and names its precision; the manifest notes that they take
      --cudnn-search. Exits 77 (skipped) where nvcc, cuDNN
      or cuBLAS are missing.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import gpu_step  # noqa: E402

SKIP = 77


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def gpu_step_py(*argv):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu_step.py")] + list(argv),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(r.stdout, end="")
    if r.returncode != 0:
        fail(f"gpu_step.py {argv[0]} exited {r.returncode}")
    return r.stdout


def prepare(args, models, target="cu", sub=""):
    out, scratch = os.path.join(args.work, sub + "out"), os.path.join(args.work, sub + "scratch")
    gpu_step_py("prepare", "--vcc", args.vcc, "--out", out, "--scratch", scratch, "--models", models,
                "--target", target, "--keep-scratch")
    return out, scratch


def check_safetensors(work):
    import numpy as np
    import torch
    from safetensors.numpy import save_file
    from safetensors.torch import load_file as torch_load
    g = torch.Generator().manual_seed(1)
    t = {"a.weight": torch.randn(3, 4, generator=g), "b.num_batches_tracked": torch.tensor(7, dtype=torch.int64),
         "c.bf": torch.randn(5, generator=g).to(torch.bfloat16), "d.empty": torch.zeros(0, 2),
         "e.ints": torch.arange(-3, 3, dtype=torch.int64).reshape(2, 3)}
    dt = {torch.float32: "F32", torch.int64: "I64", torch.bfloat16: "BF16"}
    path = os.path.join(work, "written.safetensors")
    gpu_step.write_safetensors(path, [(k, dt[v.dtype], list(v.shape), gpu_step.tensor_bytes(v, dt[v.dtype]))
                                      for k, v in t.items()], metadata={"format": "pt"})
    back = torch_load(path)
    if sorted(back) != sorted(t):
        fail(f"safetensors.torch read names {sorted(back)}, wrote {sorted(t)}")
    for k, v in t.items():
        if back[k].dtype != v.dtype or back[k].shape != v.shape or not torch.equal(back[k], v):
            fail(f"{k}: safetensors.torch read {back[k].dtype} {tuple(back[k].shape)} {back[k]}, wrote {v}")
    # the other way: the package writes, gpu_step reads
    arrays = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "y": np.array([1, -2], dtype=np.int64)}
    p2 = os.path.join(work, "package.safetensors")
    save_file(arrays, p2)
    got = gpu_step.read_safetensors(p2)
    want = {"x": ("F32", [2, 3], arrays["x"].tobytes()), "y": ("I64", [2], arrays["y"].tobytes())}
    if got != want:
        fail(f"gpu_step.read_safetensors read {got}, the package wrote {want}")
    print("safetensors: writer and reader agree with the safetensors package")


def run_lines(argv, cwd):
    r = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}")
    return [ln for ln in r.stdout.splitlines() if ln.startswith("step ")]


def check_model(args, name, out, scratch):
    from safetensors import safe_open
    man = json.load(open(os.path.join(out, name, "manifest.json")))
    prog = man["programs"][0]
    vcc_weights = os.path.join(scratch, name, "train.safetensors")
    with safe_open(vcc_weights, "np") as f:
        keys = list(f.keys())
    names = [n for n, _, _ in prog["tensors"]]
    if sorted(names) != sorted(keys):
        fail(f"{name}: manifest lists {len(names)} tensors, vcc's file holds {len(keys)}")
    state = gpu_step.build_model(gpu_step.MODELS[name], man["seed"]).state_dict()
    want_consts = sorted(k for k in keys if k not in state)
    if man["constants"] != want_consts:
        fail(f"{name}: manifest constants {man['constants']}, not state_dict keys: {want_consts}")
    consts = {}
    if want_consts:
        consts = gpu_step.read_safetensors(os.path.join(out, name, "constants.safetensors"))
    ours = gpu_step.weights_from_state(prog["tensors"], state, consts)
    gone = names[len(names) // 2]
    try:
        gpu_step.weights_from_state(prog["tensors"], {k: v for k, v in state.items() if k != gone}, consts)
        fail(f"{name}: weights_from_state accepted a state_dict without {gone}")
    except gpu_step.Failure as e:
        if gone not in str(e):
            fail(f"{name}: the error for a missing {gone} does not name it: {e}")
    theirs = gpu_step.read_safetensors(vcc_weights)
    for n, d, s, data in ours:
        if theirs[n] != (d, s, data):
            fail(f"{name}: {n}: the weights written from the state_dict differ from vcc's ({d} {s})")
    # the C trainer of the same ONNX file, from vcc's file and from ours
    cdir = os.path.join(args.work, "c_" + name)
    shutil.rmtree(cdir, ignore_errors=True)
    os.makedirs(cdir)
    r = subprocess.run([args.vcc, os.path.join(scratch, name, name + ".onnx"), "-o", "train.c"], cwd=cdir,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        fail(f"{name}: vcc -o train.c: {r.stderr.strip()}")
    b = subprocess.run(shlex.split(r.stdout.strip()), cwd=cdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if b.returncode != 0:
        fail(f"{name}: {r.stdout.strip()}: {b.stdout}")
    gpu_step.write_safetensors(os.path.join(cdir, "ours.safetensors"), ours)
    spec = gpu_step.MODELS[name]
    import numpy as np
    data, labels = gpu_step.make_data(spec["clip"], gpu_step.num_classes(spec), 2 * spec["clip"][0], 0)
    np.save(os.path.join(cdir, "data.npy"), data)
    np.save(os.path.join(cdir, "labels.npy"), labels)
    a = run_lines(["./train"] + gpu_step.trainer_args(2, "train.safetensors"), cdir)
    o = run_lines(["./train"] + gpu_step.trainer_args(2, "ours.safetensors"), cdir)
    if len(a) != 2 or a != o:
        fail(f"{name}: the C trainer printed {a} from vcc's weights, {o} from the state_dict's")
    print(f"{name}: {len(ours)} tensors equal vcc's bytes; C trainer from both: {' / '.join(a)}")


def part_cpu(args):
    check_safetensors(args.work)
    out, scratch = prepare(args, "vivit_tiny,x3d_s_tiny")
    for name in ("vivit_tiny", "x3d_s_tiny"):
        check_model(args, name, out, scratch)
    # the whole run phase with C trainers and PyTorch on the CPU: its loss check is against PyTorch
    out, _ = prepare(args, "x3d_s_tiny", target="c", sub="c_")
    text = gpu_step_py("run", "--work", out, "--device", "cpu", "--warmup", "1", "--steps", "2", "--no-compile")
    if "| x3d_s_tiny | fp32 |" not in text:
        fail("run --device cpu printed no table row for x3d_s_tiny fp32")
    # a weight the state_dict lacks: the run names it and exits 1
    mpath = os.path.join(out, "x3d_s_tiny", "manifest.json")
    man = json.load(open(mpath))
    man["programs"][0]["tensors"][3][0] = "no.such.tensor"
    json.dump(man, open(mpath, "w"))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu_step.py"), "run", "--work", out, "--device",
                        "cpu", "--warmup", "1", "--steps", "1", "--no-compile"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 1 or "x3d_s_tiny" not in r.stdout or "no.such.tensor" not in r.stdout:
        fail(f"run with a weight no state_dict has: exit {r.returncode}, output:\n{r.stdout}")
    print("run with a weight no state_dict has: exit 1, " + r.stdout.strip().splitlines()[-1])


def part_nvcc(args):
    if not (shutil.which("nvcc") or os.access("/usr/local/cuda/bin/nvcc", os.X_OK)):
        print("SKIP: nvcc not found")
        sys.exit(SKIP)
    out, _ = prepare(args, "vivit_tiny")
    man = json.load(open(os.path.join(out, "vivit_tiny", "manifest.json")))
    d = os.path.join(out, "vivit_tiny")
    try:
        gpu_step.nvcc_command(man["programs"][0]["build"], d, arch="-arch=sm_90")
    except gpu_step.Failure as e:
        print(f"SKIP: {e}")
        sys.exit(SKIP)
    precisions = [prog["precision"] for prog in man["programs"]]
    if "tf32" not in precisions:
        fail(f"prepare compiled the precisions {precisions}; `vcc --help` lists fp32 and tf32")
    if not all(prog.get("cudnn_search") for prog in man["programs"]):
        fail("the manifest does not note --cudnn-search for every CUDA trainer (the run phase's heuristic row)")
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    for prog in man["programs"]:
        p = prog["precision"]
        try:
            secs, text = gpu_step.build_trainer(prog["build"], d, arch="-arch=sm_90", timeout=900)
        except gpu_step.Failure as e:
            fail(str(e))
        if text.strip():
            fail(f"nvcc printed diagnostics ({p}):\n{text}")
        exe = os.path.join(d, prog["program"])
        if not os.access(exe, os.X_OK):
            fail(f"no {prog['program']} after the build")
        print(f"{prog['source']} ({p}) built with no output in {secs:.0f} s")
        # it starts: the dynamic loader finds cuDNN and cuBLAS through the rpath alone (no GPU needed for
        # --help), and it names the precision it was compiled with
        r = subprocess.run([exe, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        name = os.path.basename(exe)
        if r.returncode != 0 or not r.stdout.startswith(f"usage: {name} "):
            fail(f"{name} --help exited {r.returncode}: {r.stdout[:500]}")
        if f"Precision: {p} " not in r.stdout:
            fail(f"{name} --help does not say 'Precision: {p}':\n{r.stdout[-600:]}")
        print(f"{name} --help: its libraries load, precision {p}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--part", choices=("cpu", "nvcc"), required=True)
    args = ap.parse_args()
    args.vcc, args.work = os.path.abspath(args.vcc), os.path.abspath(args.work)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    (part_cpu if args.part == "cpu" else part_nvcc)(args)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
