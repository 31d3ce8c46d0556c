"""The scatter family (ir/ops/scatter.c): ScatterND and ScatterElements with constant indices, reduction none
and add, every opset form, checked by tests/ops/op_check.py (forward against PyTorch float64, gradients of
data and updates against PyTorch float64 autograd and central finite differences).

    test_scatter.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda | --cuda-one]

References: ScatterND is torch's index_put with the index tuples as one index tensor per dim
(accumulate=True for reduction add); ScatterElements is torch.scatter (none) and torch.scatter_add (add)
along the axis, negative indices taken modulo the dim. Those references are checked first against
onnxruntime on the case's values; one that disagrees fails the run before any vcc figure counts. The
cases: rows, single elements and negative indices of ScatterND, the index grid torch exports for
x[:, :, 1:, 1:] = v (MViT's relative positions are added that way), duplicates summed under add, and
ScatterElements along each axis, with updates shorter than data, negative axis and indices, int32
indices, and duplicates under add.
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402


def i64(v):
    return np.array(v, dtype=np.int64)


def nd_ref(add=False):
    """ONNX ScatterND: data with updates[i0, ...] at data[indices[i0, ...]] (a row of data[k:])."""
    return lambda X, indices, U: X.index_put(tuple(indices.to(torch.int64).unbind(-1)), U, accumulate=add)


def elements_ref(axis, add=False):
    """ONNX ScatterElements: updates[c] at data[c with c_axis = indices[c]], negative indices from the back."""
    def ref(X, indices, U):
        idx = torch.remainder(indices.to(torch.int64), X.shape[axis])
        return (torch.scatter_add if add else torch.scatter)(X, axis, idx, U)
    return ref


def sc(name, op, data, indices, ref, opset, attrs=None):
    upd = tuple(indices.shape[:-1]) + tuple(data[indices.shape[-1]:]) if op == "ScatterND" else indices.shape
    return oc.Case(name, op, inputs={"X": data, "U": upd}, consts={"indices": indices}, order=["X", "indices", "U"],
                   ref=ref, attrs=attrs, opset=opset)


def slice_grid(shape, start):
    """The index grid torch exports for x[:, :, start:, start:] = v on x of shape (B, H, L, L) (ScatterND data
    X (B, H, L, L), updates U (B, H, L - start, L - start))."""
    b, h, l1, l2 = shape
    g = np.stack(np.meshgrid(np.arange(b), np.arange(h), np.arange(start, l1), np.arange(start, l2), indexing="ij"),
                 -1)
    return g.astype(np.int64)


CASES = [
    # ScatterND: rows of data[1:] (k = 1), single elements (k = rank), negative indices
    sc("scatternd_rows_opset11", "ScatterND", (5, 3, 4), i64([[1], [4], [0]]), nd_ref(), 11),
    sc("scatternd_elements_opset13", "ScatterND", (4, 5), i64([[[0, 1], [3, 4], [2, 2]], [[1, 0], [0, 4], [3, 0]]]),
       nd_ref(), 13),
    sc("scatternd_negative_opset13", "ScatterND", (4, 5, 2), i64([[-1, 0], [2, -2]]), nd_ref(), 13),
    sc("scatternd_none_opset18", "ScatterND", (3, 4), i64([[2], [0]]), nd_ref(), 18, {"reduction": "none"}),
    sc("scatternd_add_duplicates_opset16", "ScatterND", (4, 3), i64([[1], [3], [1], [1]]), nd_ref(True), 16,
       {"reduction": "add"}),
    sc("scatternd_add_elements_opset18", "ScatterND", (3, 4), i64([[0, 1], [2, 3], [0, 1]]), nd_ref(True), 18,
       {"reduction": "add"}),
    # x[:, :, 1:, 1:] = v as torch exports it: one index tuple per element of the slice
    sc("scatternd_slice_grid_opset17", "ScatterND", (2, 2, 5, 5), slice_grid((2, 2, 5, 5), 1), nd_ref(), 17),
    # ScatterElements: each axis, updates shorter than data, negative axis and indices, int32, add
    sc("scatter_elements_axis0_opset11", "ScatterElements", (3, 4), i64([[0, 1, 2, 0], [2, 0, 1, 1]]),
       elements_ref(0), 11),
    sc("scatter_elements_axis1_shorter_opset13", "ScatterElements", (3, 5), i64([[4, 0, 2], [1, 3, 0]]),
       elements_ref(1), 13, {"axis": 1}),
    sc("scatter_elements_negative_opset16", "ScatterElements", (2, 3, 4), i64([[[-1, 0], [1, -2]], [[2, -4], [0, 3]]]),
       elements_ref(2), 16, {"axis": -1, "reduction": "none"}),
    sc("scatter_elements_add_duplicates_opset16", "ScatterElements", (4, 3), i64([[1, 0, 3], [1, 2, 3], [1, 0, 0]]),
       elements_ref(0, True), 16, {"reduction": "add"}),
    sc("scatter_elements_int32_opset18", "ScatterElements", (3, 4), np.array([[3, 1], [0, 2]], dtype=np.int32),
       elements_ref(1), 18, {"axis": 1}),
    sc("scatter_elements_5d_time_add_opset18", "ScatterElements", (2, 2, 4, 2, 3),
       np.random.default_rng(5).integers(-4, 4, size=(2, 2, 6, 2, 3)).astype(np.int64), elements_ref(2, True), 18,
       {"axis": 2, "reduction": "add"}),
]


def check_references(cases):
    """Each case's reference against onnxruntime on the case's values; returns the failures."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    bad = []
    for c in cases:
        vals = c.values()
        m = oc._model(c, vals, [tuple(oc._ref_outputs(c, vals)[0].shape)], trainable=False)
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        want = sess.run(None, vals)[0]
        e = oc._err(oc._ref_outputs(c, vals)[0].detach().numpy(), want)
        print("%-40s reference vs onnxruntime %9.2e" % (c.name, e))
        if e > 1e-6:
            bad.append("%s: the reference differs from onnxruntime by %.1e" % (c.name, e))
    return bad


if __name__ == "__main__":
    sys.exit(oc.main(CASES, references=check_references))
