"""A model exported with export_for_training compiles, and its training steps match PyTorch.

    .venv/bin/python tests/python/test_export_stepwise.py --vcc BUILD/vcc --model r3d_18 --work DIR \
        [--shape 2x3x8x56x56] [--samples 4] [--steps 3]

1. models/export_torchvision.py (which exports with python/vcc_torch.py's export_for_training):
   the torchvision model at --shape, seed 0, --samples seeded random clips and labels;
2. checks the file is the helper's: metadata "vcc.export" = "training", one
   "vcc.num_batches_tracked.<module>" per BatchNormalization node's module, each equal to the
   saved pre-export state dict's count, and every initializer named like a state dict entry equal
   to it (running statistics included);
3. tests/e2e/test_stepwise.py for --steps steps (lr 0.01, momentum 0.9, weight decay 1e-4): vcc
   compiles the file, its trainer runs, and each step's loss and BatchNorm running statistics
   match PyTorch float64 from the trainer's own state to 1e-5 relative (parameters by the coarser
   per-update rule that test documents).
"""

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcc", required=True)
    ap.add_argument("--model", default="r3d_18")
    ap.add_argument("--work", required=True)
    ap.add_argument("--shape", default="2x3x8x56x56")
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    export_dir = os.path.join(work, "export")

    cmd = [sys.executable, os.path.join(ROOT, "models", "export_torchvision.py"), "--model", args.model,
           "--shape", args.shape, "--samples", str(args.samples), "--seed", "0", "--out", export_dir]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(p.stdout.strip().splitlines()[0] if p.stdout.strip() else "", flush=True)
    if p.returncode:
        sys.exit(f"FAIL: export exited {p.returncode}\n{p.stdout}{p.stderr}")

    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper

    onnx_path = os.path.join(export_dir, f"{args.model}.onnx")
    proto = onnx.load(onnx_path)
    state = torch.load(os.path.join(export_dir, f"{args.model}.pt"))
    meta = {q.key: q.value for q in proto.metadata_props}
    bn_modules = sorted({n.input[3].rsplit(".", 1)[0] for n in proto.graph.node if n.op_type == "BatchNormalization"})
    want = {"vcc.export": "training"}
    want.update({f"vcc.num_batches_tracked.{m}": str(int(state[f"{m}.num_batches_tracked"])) for m in bn_modules})
    failed = []
    if meta != want:
        failed.append(f"metadata_props {len(meta)} entries, expected {len(want)}: "
                      f"extra {sorted(set(meta) - set(want))[:3]}, missing {sorted(set(want) - set(meta))[:3]}")
    inits = [i for i in proto.graph.initializer if i.name in state]
    bad = [i.name for i in inits if not np.array_equal(numpy_helper.to_array(i), state[i.name].numpy())]
    if bad:
        failed.append(f"initializers differ from the pre-export state: {bad[:4]}")
    print(f"export_for_training file: metadata {len(meta)} entries ('vcc.export' = {meta.get('vcc.export')!r}, "
          f"{len(bn_modules)} BatchNorm counters), {len(inits)} initializers equal the pre-export state dict, "
          f"{len(bad)} differ", flush=True)
    if failed:
        sys.exit("FAIL: " + "; ".join(failed))

    cmd = [sys.executable, os.path.join(ROOT, "tests", "e2e", "test_stepwise.py"), "--vcc", os.path.abspath(args.vcc),
           "--model", onnx_path, "--data", os.path.join(export_dir, "data.npy"),
           "--labels", os.path.join(export_dir, "labels.npy"), "--steps", str(args.steps), "--lr", "0.01",
           "--momentum", "0.9", "--weight-decay", "1e-4", "--work", os.path.join(work, "stepwise")]
    print("$ " + " ".join(cmd), flush=True)
    sys.exit(subprocess.run(cmd).returncode)


if __name__ == "__main__":
    main()
