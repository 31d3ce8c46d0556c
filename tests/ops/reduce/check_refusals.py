"""The reduce family's refusals (ir/ops/reduce.c): forms of ReduceSum, ReduceMean, ReduceMax, ReduceMin
vcc does not compile, each refused cleanly with the node, the op and the reason (tests/ops/refusals.py).

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
    rf.Refusal("axes_not_constant", [N("ReduceSum", ["X", "axes"], ["Y"])],
               inputs={"X": (2, 3), "axes": ((1,), "int64")}, opset=13,
               expect=["'n0'", "ReduceSum input 'axes'", "must be a constant 1-D int64 tensor"]),
    rf.Refusal("axes_not_constant_18", [N("ReduceMax", ["X", "axes"], ["Y"])],
               inputs={"X": (2, 3), "axes": ((1,), "int64")}, opset=18,
               expect=["'n0'", "ReduceMax input 'axes'", "must be a constant"]),
    rf.Refusal("axes_2d", [N("ReduceMean", ["X", "axes"], ["Y"])], inputs={"X": (2, 3)},
               inits={"axes": np.array([[1]], np.int64)}, opset=18,
               expect=["'n0'", "ReduceMean input 'axes'", "must be a constant 1-D int64 tensor"]),
    rf.Refusal("axes_input_opset11", [N("ReduceSum", ["X", "axes"], ["Y"])], inputs={"X": (2, 3)},
               inits={"axes": np.array([1], np.int64)}, opset=11,
               expect=["'n0'", "ReduceSum input 'axes'", "exists from opset 13; the model imports opset 11"]),
    rf.Refusal("axes_input_opset17", [N("ReduceMean", ["X", "axes"], ["Y"])], inputs={"X": (2, 3)},
               inits={"axes": np.array([1], np.int64)}, opset=17,
               expect=["'n0'", "ReduceMean input 'axes'", "exists from opset 18; the model imports opset 17"]),
    rf.Refusal("three_inputs", [N("ReduceSum", ["X", "axes", "X"], ["Y"])], inputs={"X": (2, 3)},
               inits={"axes": np.array([1], np.int64)}, opset=13,
               expect=["'n0'", "(ReduceSum)", "lists 3 inputs", "ReduceSum has 1 to 2 inputs"]),
    rf.Refusal("axes_attr_opset13", [N("ReduceSum", ["X"], ["Y"], axes=[1])], inputs={"X": (2, 3)}, opset=13,
               expect=["'n0'", "ReduceSum attribute 'axes'", "exists in opsets 1-12"]),
    rf.Refusal("noop_opset17", [N("ReduceMin", ["X"], ["Y"], noop_with_empty_axes=1)], inputs={"X": (2, 3)},
               opset=17, expect=["'n0'", "ReduceMin attribute 'noop_with_empty_axes'", "exists from opset 18"]),
    rf.Refusal("keepdims_value", [N("ReduceMax", ["X"], ["Y"], axes=[0], keepdims=2)], inputs={"X": (2, 3)},
               expect=["'n0'", "ReduceMax attribute 'keepdims'", "must be 0 or 1"]),
    rf.Refusal("noop_value", [N("ReduceSum", ["X"], ["Y"], noop_with_empty_axes=3)], inputs={"X": (2, 3)},
               expect=["'n0'", "ReduceSum attribute 'noop_with_empty_axes'", "must be 0 or 1"]),
    rf.Refusal("axis_out_of_range", [N("ReduceSum", ["X"], ["Y"], axes=[2])], inputs={"X": (2, 3)}, opset=11,
               expect=["'n0' (ReduceSum)", "axis 2 is out of range for an input of rank 2"]),
    rf.Refusal("axis_negative_out_of_range", [N("ReduceMean", ["X", "axes"], ["Y"])], inputs={"X": (2, 3)},
               inits={"axes": np.array([-3], np.int64)}, opset=18,
               expect=["'n0' (ReduceMean)", "axis -3 is out of range for an input of rank 2"]),
    rf.Refusal("axis_twice", [N("ReduceMin", ["X"], ["Y"], axes=[1, -1])], inputs={"X": (2, 3)},
               expect=["'n0' (ReduceMin)", "axis -1 is given twice"]),
    rf.Refusal("too_many_axes", [N("ReduceMax", ["X"], ["Y"], axes=[0, 1, 0])], inputs={"X": (2, 3)},
               expect=["'n0' (ReduceMax)", "3 axes for an input of rank 2"]),
]

if __name__ == "__main__":
    sys.exit(rf.main(CASES))
