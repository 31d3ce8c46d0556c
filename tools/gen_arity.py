"""Writes ir/ops/arity.def: for each ONNX op vcc compiles (the F rows of ir/ops.def), the fewest and
most inputs and outputs its node may list in any opset version, from the onnx package's operator
schemas (onnx.defs.get_all_schemas_with_history; an omitted optional input written as "" counts, as
in the ONNX checker). Ops newer than the installed onnx package take their row from EXTRA.

    .venv/bin/python tools/gen_arity.py > ir/ops/arity.def
"""
import os
import re

import onnx
import onnx.defs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ONNX Operators, Swish-24: one input X, one output Y
EXTRA = {"Swish": (1, 1, 1, 1)}


def main():
    names = re.findall(r'^X\(\w+,\s*"(\w+)",\s*F,', open(os.path.join(ROOT, "ir", "ops.def")).read(), re.M)
    rows = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain not in ("", "ai.onnx"):
            continue
        r = rows.setdefault(s.name, [1 << 30, 0, 1 << 30, 0])
        r[0], r[1] = min(r[0], s.min_input), max(r[1], s.max_input)
        r[2], r[3] = min(r[2], s.min_output), max(r[3], s.max_output)
    print("/* ir/ops/arity.def: inputs and outputs an ONNX node may list, over every opset version:")
    print(" * A(\"Op\", min inputs, max inputs, min outputs, max outputs). Written by tools/gen_arity.py from")
    print(" * onnx %s's operator schemas; do not edit by hand. */" % onnx.__version__)
    for n in names:
        lo_in, hi_in, lo_out, hi_out = EXTRA[n] if n in EXTRA else rows[n]
        print('A("%s", %d, %d, %d, %d)' % (n, lo_in, hi_in, lo_out, hi_out))


if __name__ == "__main__":
    main()
