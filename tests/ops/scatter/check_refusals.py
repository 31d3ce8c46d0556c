"""The scatter family's refusals (ir/ops/scatter.c): ScatterND and ScatterElements forms vcc does not compile,
each refused cleanly with the node, the op and the reason (tests/ops/refusals.py): indices computed at run
time, an element named twice under reduction none (the result would depend on the order of the writes),
indices out of range, the reductions mul, max and min, and shapes that do not fit.

    check_refusals.py --vcc BUILD/vcc --work DIR [--only NAME]
"""

import os
import sys

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import refusals as rf  # noqa: E402

N = helper.make_node
ND = ["X", "I", "U"]


def i64(v):
    return np.array(v, dtype=np.int64)


CASES = [
    rf.Refusal("scatternd_runtime_indices", [N("ScatterND", ND, ["Y"])],
               inputs={"X": (4, 3), "I": ((2, 1), "int64"), "U": (2, 3)}, opset=13,
               expect=["'n0' (ScatterND)", "indices 'I'", "computed at run time", "constant int64 indices"]),
    rf.Refusal("scatternd_duplicate_none", [N("ScatterND", ND, ["Y"])], inputs={"X": (4, 3), "U": (3, 3)},
               inits={"I": i64([[1], [2], [1]])}, opset=13,
               expect=["'n0' (ScatterND)", "name element 3 of data (row-major) more than once",
                       "reduction none", "order of the writes"]),
    rf.Refusal("scatter_elements_duplicate_none", [N("ScatterElements", ND, ["Y"], axis=1)],
               inputs={"X": (2, 4), "U": (2, 2)}, inits={"I": i64([[0, 3], [-1, 3]])}, opset=16,
               expect=["'n0' (ScatterElements)", "name element 7 of data (row-major) more than once"]),
    rf.Refusal("scatternd_index_past_end", [N("ScatterND", ND, ["Y"])], inputs={"X": (4, 3), "U": (2,)},
               inits={"I": i64([[0, 2], [4, 0]])}, opset=13,
               expect=["'n0' (ScatterND)", "indices 'I': index tuple 1 names 4 for data dim 0, out of range for its size 4"]),
    rf.Refusal("scatter_elements_index_before_start", [N("ScatterElements", ND, ["Y"])],
               inputs={"X": (3, 2), "U": (1, 2)}, inits={"I": i64([[0, -4]])}, opset=13,
               expect=["'n0' (ScatterElements)",
                       "indices 'I': value -4 at flat position 1 is out of range for the axis, of size 3"]),
    rf.Refusal("scatter_elements_reduction_mul", [N("ScatterElements", ND, ["Y"], reduction="mul")],
               inputs={"X": (3, 2), "U": (1, 2)}, inits={"I": i64([[0, 1]])}, opset=16,
               expect=["ScatterElements attribute 'reduction'", "'n0'", "mul: vcc scatters with reduction none and add"]),
    rf.Refusal("scatternd_reduction_max", [N("ScatterND", ND, ["Y"], reduction="max")],
               inputs={"X": (3, 2), "U": (1, 2)}, inits={"I": i64([[1]])}, opset=18,
               expect=["ScatterND attribute 'reduction'", "'n0'", "max: vcc scatters with reduction none and add"]),
    rf.Refusal("scatternd_reduction_before_opset16", [N("ScatterND", ND, ["Y"], reduction="add")],
               inputs={"X": (3, 2), "U": (1, 2)}, inits={"I": i64([[1]])}, opset=13,
               expect=["ScatterND attribute 'reduction'", "'n0'", "exists from opset 16"]),
    rf.Refusal("scatternd_updates_shape", [N("ScatterND", ND, ["Y"])], inputs={"X": (4, 3), "U": (2, 2)},
               inits={"I": i64([[0], [1]])}, opset=13,
               expect=["'n0' (ScatterND)", "updates (2, 2), but data and indices need (2, 3)"]),
    rf.Refusal("scatternd_tuple_too_long", [N("ScatterND", ND, ["Y"])], inputs={"X": (4, 3), "U": (1,)},
               inits={"I": i64([[0, 1, 2]])}, opset=13,
               expect=["'n0' (ScatterND)", "indices (1, 3)", "do not index data (4, 3)"]),
    rf.Refusal("scatter_elements_rank", [N("ScatterElements", ND, ["Y"])], inputs={"X": (4, 3), "U": (2,)},
               inits={"I": i64([0, 1])}, opset=13,
               expect=["'n0' (ScatterElements)", "indices (2) must have the rank of data (4, 3)"]),
]

if __name__ == "__main__":
    sys.exit(rf.main(CASES))
