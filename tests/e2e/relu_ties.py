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
gives the picked ones' flips, to redo them together. MaxPool windows have ties of the same kind (two
largest inputs within float32's rounding of each other): every nn.MaxPool module is patched the same way
(_MaxPool, find_pool_ties below).
"""

import math

import numpy as np
import torch
import torch.nn.functional as F


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


TIES = {"pre": [], "flip": {}, "mask": None, "names": [], "modules": {}, "gout": None,
        "pools": [], "pool_idx": None, "pool_flip": {}, "pool_gout": None}


def _relu_forward(self, x):
    TIES["pre"].append(x.detach().clone())
    TIES["names"].append(TIES["modules"].get(id(self), "relu"))
    return _ReLU.apply(x, len(TIES["pre"]) - 1)


torch.nn.ReLU.forward = _relu_forward  # every model's ReLUs are nn.ReLU modules


# ---- MaxPool ties: a window whose two largest inputs are within float32's rounding of each other may send
# its gradient to either of them in a correct float32 program (s3d_small's features.4 on an AVX-512 EPYC:
# one such window moved a BN bias's update by 300 times its allowance). Every nn.MaxPool{1,2,3}d module
# records its input and runs its backward through _MaxPool:
#   TIES["pools"]      per MaxPool call of the forward pass: {"x": input (detached), "idx": argmax (flat per
#                      (n, c) plane, as return_indices gives), "name", "k", "s", "p", "ceil"}
#   TIES["pool_idx"]   None, or per call the argmax the backward must route by (float64's: the float32
#                      references take float64's side of every window, like every ReLU)
#   TIES["pool_flip"]  {call: (flat output positions, flat input positions)}: those windows send their
#                      gradient to the given input (the runner-up) instead
#   TIES["pool_gout"]  None, or a dict the backward fills with each call's output gradient (flat)

def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _MaxPool(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k, rec):
        nsp = x.dim() - 2
        pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nsp - 1]
        y, idx = pool(x, rec["k"], rec["s"], rec["p"], ceil_mode=rec["ceil"], return_indices=True)
        forced = TIES["pool_idx"][k] if TIES["pool_idx"] is not None else None
        ctx.idx = forced if forced is not None else idx
        ctx.shape, ctx.k = x.shape, k
        rec["idx"] = idx
        return y

    @staticmethod
    def backward(ctx, g):
        if TIES["pool_gout"] is not None:
            TIES["pool_gout"][ctx.k] = g.detach().reshape(-1).clone()
        n, c = ctx.shape[0], ctx.shape[1]
        idx = ctx.idx.reshape(-1)
        flip = TIES["pool_flip"].get(ctx.k)
        if flip is not None:
            idx = idx.clone()
            idx[flip[0]] = flip[1]
        dx = torch.zeros(n * c, ctx.shape[2:].numel(), dtype=g.dtype)
        dx.scatter_add_(1, idx.reshape(n * c, -1), g.reshape(n * c, -1))
        return dx.reshape(ctx.shape), None, None


def _maxpool_forward(self, x):
    nsp = x.dim() - 2
    if _tuple(self.dilation, nsp) != (1,) * nsp or self.return_indices:
        raise NotImplementedError("relu_ties: MaxPool with dilation or return_indices")
    rec = {"x": x.detach().clone(), "name": TIES["modules"].get(id(self), "maxpool"), "k": _tuple(self.kernel_size, nsp),
           "s": _tuple(self.stride if self.stride is not None else self.kernel_size, nsp),
           "p": _tuple(self.padding, nsp), "ceil": bool(self.ceil_mode)}
    TIES["pools"].append(rec)
    return _MaxPool.apply(x, len(TIES["pools"]) - 1, rec)


for _cls in (torch.nn.MaxPool1d, torch.nn.MaxPool2d, torch.nn.MaxPool3d):
    _cls.forward = _maxpool_forward


def find_pool_ties(pools64, pools32s):
    """The MaxPool windows whose two largest float64 inputs are within float32's rounding of each other
    (0 < gap <= max|x32 - x64| over that call, either float32 run; two equal ones are copies of one value,
    as a stride-1 pool after another pool holds, or a ReLU's zeros, and both programs take the first, as
    PyTorch does), one entry per pair of inputs (the argmax and the runner-up) with every window where they
    are the two largest: [(call, [flat output positions], [flat input positions of the runner-up], gap)]."""
    out = []
    for k, rec in enumerate(pools64):
        x = rec["x"]
        err = max(float((r[k]["x"].double() - x).abs().max()) for r in pools32s)
        nsp, ins = x.dim() - 2, x.shape[2:]
        outs = rec["idx"].shape[2:]
        pad = []
        for i in reversed(range(nsp)):  # F.pad lists the last dim first; the end padded for ceil_mode
            end = max(rec["p"][i], (outs[i] - 1) * rec["s"][i] + rec["k"][i] - ins[i] - rec["p"][i])
            pad += [rec["p"][i], end]
        u = F.pad(x, pad, value=-float("inf"))
        for i in range(nsp):
            u = u.unfold(2 + i, rec["k"][i], rec["s"][i]).narrow(2 + i, 0, outs[i])
        top = u.reshape(*u.shape[:2 + nsp], -1).topk(2, dim=-1)
        v1, v2 = top.values[..., 0], top.values[..., 1]
        tie = ((v1 - v2) <= err) & (v1 > v2)
        first = rec["idx"].reshape(-1)
        groups = {}  # (argmax, runner-up) -> the windows where they are the two largest
        for o in torch.nonzero(tie.reshape(-1)).reshape(-1).tolist():
            pos = int(top.indices.reshape(-1, 2)[o, 1])
            rest, flat, coords = o, 0, []
            for i in reversed(range(nsp)):  # the output position's spatial coordinates
                coords.append(rest % outs[i])
                rest //= outs[i]
            coords.reverse()
            local = []
            for i in reversed(range(nsp)):  # the runner-up's place in its window
                local.append(pos % rec["k"][i])
                pos //= rec["k"][i]
            local.reverse()
            for i in range(nsp):
                flat = flat * ins[i] + coords[i] * rec["s"][i] - rec["p"][i] + local[i]
            plane = o // math.prod(outs)
            g = groups.setdefault((plane, int(first[o]), flat), [[], [], 0.0])
            g[0].append(o)
            g[1].append(flat)
            g[2] = max(g[2], float(v1.reshape(-1)[o] - v2.reshape(-1)[o]))
        # a float32 program orders two values one way in every window that holds them both
        out += [(k, o, a, gap) for o, a, gap in groups.values()]
    return out


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
