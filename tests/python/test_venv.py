"""The Python the tests run (VCC_PYTHON) is the project's environment and imports the pinned stack.

    .venv/bin/python tests/python/test_venv.py [--requirements python/requirements.txt]

Checks, each printed:
  - it is a virtual environment (sys.prefix != sys.base_prefix) that sees the system site packages;
  - onnx, onnxruntime, safetensors and protobuf have the versions pinned in python/requirements.txt
    and are loaded from the environment's own site-packages, not from /usr/lib/python3 (so Debian's
    python3-onnx and python3-protobuf, where installed system-wide, shadow none of them);
  - torch, torchvision and numpy import (Debian's, through --system-site-packages);
  - in fresh interpreters, `import torch; import onnx` and `import onnx; import torch` both work and
    an ONNX model exported by torch round-trips through onnx.checker and onnxruntime.
Exits 1 with the failed checks listed.
"""

import argparse
import os
import subprocess
import sys

from checklib import ROOT, check, finish

MODULES = {"protobuf": "google.protobuf"}  # PyPI name -> module, where they differ

ROUND_TRIP = r"""
import io, sys
import numpy as np
order = sys.argv[1]
if order == "torch-first":
    import torch, onnx
else:
    import onnx, torch
import onnxruntime as ort
m = torch.nn.Sequential(torch.nn.Conv3d(3, 2, 1), torch.nn.ReLU())
x = torch.randn(1, 3, 2, 2, 2)
f = io.BytesIO()
torch.onnx.export(m, (x,), f, opset_version=17, input_names=["input"], output_names=["y"])
p = onnx.load_from_string(f.getvalue())
onnx.checker.check_model(p, full_check=True)
y = ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"]).run(None, {"input": x.numpy()})[0]
err = float(np.abs(y - m(x).detach().numpy()).max())
assert err < 1e-6, err
print("%s: onnx %s from %s, max|ort - torch| = %.1e" % (order, onnx.__version__, onnx.__file__, err))
"""


def pins(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, _, version = line.partition("==")
                out[name.strip()] = version.strip()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requirements", default=os.path.join(ROOT, "python", "requirements.txt"))
    args = ap.parse_args()
    prefix = os.path.realpath(sys.prefix)
    check(sys.prefix != sys.base_prefix, f"virtual environment: prefix {sys.prefix}, base {sys.base_prefix}")
    cfg = os.path.join(sys.prefix, "pyvenv.cfg")
    system_site = os.path.exists(cfg) and "include-system-site-packages = true" in open(cfg).read()
    check(system_site, f"{cfg}: include-system-site-packages = true")

    wanted = pins(args.requirements)
    check(set(wanted) >= {"onnx", "onnxruntime", "safetensors", "protobuf"},
          f"{args.requirements} pins onnx, onnxruntime, safetensors, protobuf: {wanted}")
    import importlib
    for name, version in sorted(wanted.items()):
        try:
            mod = importlib.import_module(MODULES.get(name, name))
        except ImportError as e:
            check(False, f"import {name}: {e}")
            continue
        where = os.path.realpath(mod.__file__)
        check(mod.__version__ == version, f"{name} {mod.__version__} (pinned {version})")
        check(where.startswith(prefix + os.sep), f"{name} loaded from the environment: {where}")

    import numpy
    import torch
    import torchvision
    print(f"      torch {torch.__version__} ({torch.__file__}), torchvision {torchvision.__version__}, "
          f"numpy {numpy.__version__}")
    check(int(torch.__version__.split(".")[0]) >= 1, f"torch imports: {torch.__version__}")

    for order in ("torch-first", "onnx-first"):
        p = subprocess.run([sys.executable, "-c", ROUND_TRIP, order], capture_output=True, text=True)
        last = (p.stdout.strip().splitlines() or [""])[-1]
        check(p.returncode == 0, f"fresh interpreter, {order}: " + (last if p.returncode == 0 else
                                                                     p.stderr.strip().splitlines()[-1]))
    finish()


if __name__ == "__main__":
    main()
