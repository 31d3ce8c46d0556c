"""The layout family's refusals (ir/ops/layout.c): Gather forms vcc does not compile, each refused cleanly
with the node, the op and the reason (tests/ops/refusals.py).

    check_refusals.py --vcc BUILD/vcc --work DIR [--only NAME]
"""

import os
import sys

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import refusals as rf  # noqa: E402

N = helper.make_node
CASES = [
    rf.Refusal("gather_runtime_indices", [N("Gather", ["X", "I"], ["Y"], axis=1)],
               inputs={"X": (2, 5), "I": ((3,), "int64")},
               expect=["'n0' (Gather)", "indices 'I'", "computed at run time", "constant int64 or int32 indices"]),
    rf.Refusal("gather_index_past_end", [N("Gather", ["X", "I"], ["Y"], axis=1)], inputs={"X": (2, 5)},
               inits={"I": np.array([0, 5], dtype=np.int64)},
               expect=["'n0' (Gather)", "index 5 at position 1 is out of range for an axis of 5"]),
    rf.Refusal("gather_index_before_start", [N("Gather", ["X", "I"], ["Y"])], inputs={"X": (3, 2)},
               inits={"I": np.array([[-4]], dtype=np.int64)},
               expect=["'n0' (Gather)", "index -4 at position 0 is out of range for an axis of 3"]),
    rf.Refusal("gather_axis_out_of_range", [N("Gather", ["X", "I"], ["Y"], axis=2)], inputs={"X": (3, 2)},
               inits={"I": np.array([0], dtype=np.int64)},
               expect=["'n0' (Gather)", "axis value 2 is out of range for rank 2"]),
]

if __name__ == "__main__":
    sys.exit(rf.main(CASES))
