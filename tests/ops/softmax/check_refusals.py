"""The softmax family's refusals (ir/ops/softmax.c): Softmax and LogSoftmax nodes vcc does not compile,
each refused cleanly with the node, the op and the reason (tests/ops/refusals.py).

    check_refusals.py --vcc BUILD/vcc --work DIR [--only NAME]
"""

import os
import sys

from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import refusals as rf  # noqa: E402

N = helper.make_node

CASES = [
    rf.Refusal("softmax_axis_past_rank", [N("Softmax", ["X"], ["Y"], axis=3)], inputs={"X": (2, 3, 4)}, opset=13,
               expect=["'n0' (Softmax)", "axis 3 is outside [-3, 3)"]),
    rf.Refusal("logsoftmax_axis_below", [N("LogSoftmax", ["X"], ["Y"], axis=-3)], inputs={"X": (2, 3)}, opset=11,
               expect=["'n0' (LogSoftmax)", "axis -3 is outside [-2, 2)"]),
    rf.Refusal("softmax_int64", [N("Softmax", ["X"], ["Y"])], inputs={"X": ((2, 3), "int64")}, opset=13,
               expect=["'n0' (Softmax)", "expected f32"]),
]

if __name__ == "__main__":
    sys.exit(rf.main(CASES))
