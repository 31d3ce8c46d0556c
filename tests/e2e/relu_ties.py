"""ReLU ties in float32 training checks: recording every ReLU's input, forcing or flipping its backward.

A ReLU input within float32's rounding of zero may land on either side in a correct float32 program, and
its gradient then passes or not; deep in a net one such element moves whole channels' gradients (a
relative change of 1e-6 in mc3_18's layer2 convolution output flips one in layer4 and moves a layer4
weight gradient by 6e-2 of its largest element). A check against float64 must therefore allow the ties
the program under test took on their other side, and nothing else. Importing this module makes every
torch.nn.ReLU module (every model here uses modules, not F.relu) record its input and run its backward
through _ReLU:

  TIES["pre"]    the ReLU inputs of the current forward pass, in call order (detached copies)
  TIES["names"]  their modules' names, from TIES["modules"] ({id(module): name}, set by the caller)
  TIES["mask"]   None, or one bool tensor per ReLU call: the backward passes the gradient where it is
                 True instead of where x > 0 (a float32 run made to take float64's side of every ReLU,
                 so its distance from float64 is rounding alone)
  TIES["flip"]   {call index: flat indices}: those elements take the other side in backward
  TIES["gout"]   None, or a dict the backward fills with each call's output gradient dloss/dy (flat)

explain_by_ties(resid, ties) picks the ties that account for a residual (see its doc comment); tie_flips
gives the picked ones' flips, to redo them together.
"""

import numpy as np
import torch


class _ReLU(torch.autograd.Function):
    """max(x, 0), recorded: its backward passes the gradient where x > 0, or where the forced mask of
    its call says (TIES["mask"][k] at the forward, a bool tensor of x's shape), except at the flat indices
    TIES["flip"][k] of the step's k-th ReLU call, where it does the opposite (that element's other side)."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        ctx.mask = TIES["mask"][k] if TIES["mask"] is not None else None
        return x.clamp_min(0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if TIES["gout"] is not None:
            TIES["gout"][ctx.k] = g.detach().reshape(-1).clone()
        mask = (x > 0 if ctx.mask is None else ctx.mask).reshape(-1)
        flip = TIES["flip"].get(ctx.k)
        if flip is not None:
            mask = mask.clone()
            mask[flip] = ~mask[flip]
        return g * mask.reshape(x.shape), None


TIES = {"pre": [], "flip": {}, "mask": None, "names": [], "modules": {}, "gout": None}


def _relu_forward(self, x):
    TIES["pre"].append(x.detach().clone())
    TIES["names"].append(TIES["modules"].get(id(self), "relu"))
    return _ReLU.apply(x, len(TIES["pre"]) - 1)


torch.nn.ReLU.forward = _relu_forward  # every model's ReLUs are nn.ReLU modules


def find_ties(pre64, pre32s):
    """The ReLU elements within float32's rounding of zero: for each call k, the flat indices i with
    |pre64[k][i]| <= max|pre32[k] - pre64[k]| over the float32 runs pre32s (each a list like pre64).
    Returns [(k, i, x64, err)]."""
    out = []
    for k, x64 in enumerate(pre64):
        err = max(float((r[k].double() - x64).abs().max()) for r in pre32s)
        for i in torch.nonzero(x64.reshape(-1).abs() <= err).reshape(-1).tolist():
            out.append((k, i, float(x64.reshape(-1)[i]), err))
    return out


def explain_by_ties(resid, ties):
    """Greedily picks ties whose flip (each {tensor: update change}, divided like resid by its tensor's
    allowed distance) most lowers sum(resid**2), while one does; returns the residual left (the single
    changes summed), the picked ties' descriptions and their indices into ties."""
    cur = dict(resid)
    norm2 = [sum(float(np.dot(v.reshape(-1), v.reshape(-1))) for v in m.values()) for _, m in ties]
    picked = []
    while True:
        best, gain_best = -1, 0.0
        for i, (_, m) in enumerate(ties):
            if i in picked:
                continue
            gain = 2.0 * sum(float(np.dot(v.reshape(-1).astype(np.float64), cur[t].reshape(-1)))
                             for t, v in m.items()) - norm2[i]
            if gain > gain_best:
                best, gain_best = i, gain
        if best < 0:
            break
        picked.append(best)
        for t, v in ties[best][1].items():
            cur[t] = cur[t] - v
    return cur, [ties[i][0] for i in picked], picked


def tie_flips(at, picked):
    """TIES["flip"]'s form, {call: [flat indices]}, for the ties picked (indices into at, whose entries are
    each tie's (call, flat index)): those ties on their other side at once."""
    flips = {}
    for j in picked:
        flips.setdefault(at[j][0], []).append(at[j][1])
    return flips
