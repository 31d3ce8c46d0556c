"""The layout family's refusals (ir/ops/layout.c): Gather forms vcc does not compile, and the Resize forms it
does not (nearest with a filter's attributes, cubic before opset 11, a flipped or computed crop) or that ONNX
leaves ambiguous (where its spec and its reference implementation sample differently), each refused cleanly
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
X4 = (1, 1, 4, 4)


def f32(*v):
    return np.array(v, dtype=np.float32)


def i64(*v):
    return np.array(v, dtype=np.int64)


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
    rf.Refusal("resize_cubic_opset10", [N("Resize", ["X", "scales"], ["Y"], mode="cubic")], inputs={"X": X4},
               inits={"scales": f32(1, 1, 2, 2)}, opset=10,
               expect=["'n0'", "Resize", "mode", "cubic exists from opset 11"]),
    rf.Refusal("resize_antialias_nearest", [N("Resize", ["X", "", "scales"], ["Y"], antialias=1)], inputs={"X": X4},
               inits={"scales": f32(1, 1, 0.5, 0.5)}, opset=18,
               expect=["'n0'", "Resize", "antialias", "applies to linear and cubic modes only"]),
    rf.Refusal("resize_exclude_outside_nearest", [N("Resize", ["X", "", "scales"], ["Y"], exclude_outside=1)],
               inputs={"X": X4}, inits={"scales": f32(1, 1, 2, 2)}, opset=13,
               expect=["'n0'", "Resize", "exclude_outside", "applies to linear and cubic modes only"]),
    rf.Refusal("resize_tf_crop_flipped", [N("Resize", ["X", "roi", "", "sizes"], ["Y"], mode="linear",
                                           coordinate_transformation_mode="tf_crop_and_resize")],
               inputs={"X": X4}, inits={"roi": f32(0, 0, 0.8, 0, 1, 1, 0.2, 1), "sizes": i64(1, 1, 3, 3)}, opset=13,
               expect=["'n0' (Resize)", "the roi of axis 2", "start <= end"]),
    rf.Refusal("resize_tf_crop_computed_roi", [N("Resize", ["X", "roi", "", "sizes"], ["Y"], mode="linear",
                                                coordinate_transformation_mode="tf_crop_and_resize")],
               inputs={"X": X4, "roi": (8,)}, inits={"sizes": i64(1, 1, 3, 3)}, opset=13,
               expect=["'n0'", "Resize input 'roi'", "must be a constant float tensor"]),
    rf.Refusal("resize_tf_crop_no_roi", [N("Resize", ["X", "", "", "sizes"], ["Y"], mode="cubic",
                                          coordinate_transformation_mode="tf_crop_and_resize")],
               inputs={"X": X4}, inits={"sizes": i64(1, 1, 3, 3)}, opset=13,
               expect=["'n0' (Resize)", "tf_crop_and_resize needs the roi input", "(8 values)"]),
    rf.Refusal("resize_tf_crop_scales_cropped", [N("Resize", ["X", "roi", "scales"], ["Y"], mode="linear",
                                                  coordinate_transformation_mode="tf_crop_and_resize")],
               inputs={"X": X4}, inits={"roi": f32(0, 0, 0.25, 0, 1, 1, 0.75, 1), "scales": f32(1, 1, 2, 1)},
               opset=13, expect=["'n0' (Resize)", "tf_crop_and_resize with scales on axis 2 is ambiguous",
                                 "is 4, its reference implementation's floor(in * scale) 8"]),
    rf.Refusal("resize_cubic_align_corners_fraction", [N("Resize", ["X", "", "scales"], ["Y"], mode="cubic",
                                                        coordinate_transformation_mode="align_corners")],
               inputs={"X": X4}, inits={"scales": f32(1, 1, 0.8, 0.8)}, opset=19,
               expect=["'n0' (Resize)", "align_corners with a scale that does not give a whole length on axis 2",
                       "give sizes instead of scales"]),
    rf.Refusal("resize_cubic_pytorch_half_pixel_to_one", [N("Resize", ["X", "", "", "sizes"], ["Y"], mode="cubic",
                                                           coordinate_transformation_mode="pytorch_half_pixel")],
               inputs={"X": X4}, inits={"sizes": i64(1, 1, 4, 1)}, opset=13,
               expect=["'n0' (Resize)", "pytorch_half_pixel with an output length of 1 on axis 3 is ambiguous",
                       "cubic mode"]),
    rf.Refusal("resize_antialias_pytorch_half_pixel_to_one",
               [N("Resize", ["X", "", "", "sizes"], ["Y"], mode="linear", antialias=1,
                  coordinate_transformation_mode="pytorch_half_pixel")],
               inputs={"X": X4}, inits={"sizes": i64(1, 1, 1, 2)}, opset=18,
               expect=["'n0' (Resize)", "on axis 2 is ambiguous", "an antialiasing filter"]),
]

if __name__ == "__main__":
    sys.exit(rf.main(CASES))
