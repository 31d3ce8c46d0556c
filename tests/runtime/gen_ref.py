#!/usr/bin/python3
"""PyTorch references for the CPU runtime kernels (runtime/vcc_cpu.h), then runs the C checker.

    /usr/bin/python3 tests/runtime/gen_ref.py OUTDIR [CHECKER]

Writes random float32 inputs and the PyTorch outputs / gradients into OUTDIR as .npy files, then
(if CHECKER is given) runs `CHECKER OUTDIR` and exits with its status. References are computed in
float64 from the float32 inputs, so they carry no float32 rounding of their own.

Shape legend: N batch, C channels, K filters/classes, T H W spatial, S = prod(spatial), G groups.

Files (case index i, tensor name t): OUTDIR/<kind>_<i>_<t>.npy, and OUTDIR/manifest.npy =
int64 [n_conv, n_bn, n_gemm, n_xent, n_pool, n_relu, n_sgd].

  conv_i_p   int64 [nsp, N, C, K, G, has_bias, in[3], kernel[3], stride[3], dil[3], pb[3], pe[3]]
             (per-dim arrays padded with 1 / 0 past nsp)
  conv_i_{x, w, b, y, dy, dx, dw, db}: F.conv{1,2,3}d on F.pad(x) (asymmetric pads), autograd of
             L = sum(y * dy)
  bn_i_p     int64 [N, C, S];  bn_i_f  float32 [eps, pytorch_momentum]
  bn_i_{x, gamma, beta, rm, rv, y, rm_out, rv_out, mean, invstd, dy, dx, dgamma, dbeta}:
             F.batch_norm(training=True); mean / invstd = batch mean, 1/sqrt(biased var + eps)
  gemm_i_p   int64 [transA, transB, M, N, K, c_rows, c_cols] (c_rows == 0: no C);
  gemm_i_f   float32 [alpha, beta];  gemm_i_{A, B, C, Y, dY, dA, dB, dC}
  xent_i_{logits, labels, loss, prob, dloss, dlogits}: F.cross_entropy (mean), softmax
  pool_i_p   int64 [NC, S];  pool_i_{x, y, dy, dx}: F.adaptive_avg_pool3d(x, 1)
  relu_i_{x, y, dy, dx}: torch.relu (x contains 0, -0, NaN)
  sgd_i_f    float32 [lr, momentum, wd];  sgd_i_{p0, g1, g2, g3, p1, p2, p3, v3}:
             torch.optim.SGD(lr, momentum, weight_decay), 3 steps with the given grads
"""

import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(1234)
rng = np.random.default_rng(1234)

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)


def save(name, a):
    a = np.ascontiguousarray(a)
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    np.save(os.path.join(OUT, name + ".npy"), a)


def randf(*shape, scale=1.0, offset=0.0):
    """float32-representable random values, returned as float64."""
    return (rng.standard_normal(shape) * scale + offset).astype(np.float32).astype(np.float64)


def t64(a, grad=False):
    return torch.tensor(a, dtype=torch.float64, requires_grad=grad)


# --------------------------------------------------------------------------------------------- conv
# (nsp, N, C, K, G, bias, in, kernel, stride, dilation, pad_begin, pad_end)
CONV_CASES = [
    (3, 2, 3, 4, 1, True, (4, 6, 5), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
    (3, 2, 4, 6, 1, False, (4, 7, 8), (3, 3, 3), (1, 2, 2), (1, 1, 1), (0, 1, 1), (0, 1, 1)),
    (3, 2, 4, 6, 2, True, (5, 6, 7), (2, 3, 2), (2, 1, 1), (2, 1, 2), (1, 0, 2), (0, 2, 1)),
    (2, 3, 6, 9, 3, True, (9, 8), (3, 2), (2, 2), (2, 2), (1, 0), (2, 1)),
    (1, 2, 3, 5, 1, True, (11,), (4,), (3,), (1,), (2,), (0,)),
    (1, 2, 4, 4, 4, False, (10,), (3,), (1,), (3,), (1,), (4,)),
    (3, 2, 8, 6, 1, True, (3, 4, 5), (1, 1, 1), (1, 1, 1), (1, 1, 1), (0, 0, 0), (0, 0, 0)),
    (3, 2, 8, 6, 1, False, (4, 5, 6), (1, 1, 1), (2, 2, 2), (1, 1, 1), (0, 0, 0), (0, 0, 0)),
    (3, 2, 4, 4, 4, True, (5, 4, 4), (3, 1, 1), (1, 1, 1), (1, 1, 1), (1, 0, 0), (1, 0, 0)),
    (3, 2, 3, 5, 1, False, (3, 8, 8), (1, 3, 3), (1, 2, 2), (1, 1, 1), (0, 1, 1), (0, 1, 1)),
    (3, 2, 16, 32, 1, True, (8, 14, 14), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
    (3, 1, 2, 3, 1, True, (2, 3, 3), (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
    (2, 1, 2, 2, 1, True, (3, 3), (2, 2), (1, 2), (1, 1), (3, 0), (3, 4)),
    (2, 2, 4, 8, 2, True, (6, 6), (1, 1), (1, 1), (1, 1), (1, 0), (0, 1)),
]


def conv_case(i, c):
    nsp, N, C, K, G, bias, inn, ker, st, dil, pb, pe = c
    x = randf(N, C, *inn)
    w = randf(K, C // G, *ker, scale=0.5)
    b = randf(K) if bias else None
    xt, wt = t64(x, True), t64(w, True)
    bt = t64(b, True) if bias else None
    pads = []
    for d in reversed(range(nsp)):
        pads += [pb[d], pe[d]]
    xp = F.pad(xt, pads)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nsp]
    y = conv(xp, wt, bt, stride=st, dilation=dil, groups=G)
    dy = randf(*y.shape)
    (y * t64(dy)).sum().backward()
    pad3 = lambda v, fill: list(v) + [fill] * (3 - nsp)
    p = [nsp, N, C, K, G, int(bias)] + pad3(inn, 1) + pad3(ker, 1) + pad3(st, 1) + pad3(dil, 1) \
        + pad3(pb, 0) + pad3(pe, 0)
    save(f"conv_{i}_p", np.array(p, dtype=np.int64))
    save(f"conv_{i}_x", x)
    save(f"conv_{i}_w", w)
    save(f"conv_{i}_y", y.detach().numpy())
    save(f"conv_{i}_dy", dy)
    save(f"conv_{i}_dx", xt.grad.numpy())
    save(f"conv_{i}_dw", wt.grad.numpy())
    if bias:
        save(f"conv_{i}_b", b)
        save(f"conv_{i}_db", bt.grad.numpy())


# ----------------------------------------------------------------------------------------------- bn
# (N, C, spatial, eps, pytorch momentum, x offset)
BN_CASES = [
    ((2, 3, (4, 5, 6)), 1e-5, 0.1, 0.0),
    ((4, 5, (7, 3)), 1e-3, 0.1, 0.0),
    ((3, 4, (2, 3, 3)), 1e-5, 0.1, 100.0),  # large mean: variance must not cancel
    ((3, 2, (1,)), 1e-5, 0.3, 0.0),         # m = 3 (unbiased factor 3/2)
]


def bn_case(i, c):
    (N, C, sp), eps, mom, off = c
    x = randf(N, C, *sp, scale=2.0, offset=off)
    gamma, beta = randf(C), randf(C)
    rm, rv = randf(C), np.abs(randf(C)) + 0.5
    xt, gt, bt = t64(x, True), t64(gamma, True), t64(beta, True)
    rmt, rvt = t64(rm), t64(rv)
    y = F.batch_norm(xt, rmt, rvt, gt, bt, training=True, momentum=mom, eps=eps)
    dy = randf(*y.shape)
    (y * t64(dy)).sum().backward()
    dims = [0] + list(range(2, x.ndim))
    xd = torch.tensor(x)
    mean = xd.mean(dim=dims)
    var = xd.var(dim=dims, unbiased=False)
    S = int(np.prod(sp))
    save(f"bn_{i}_p", np.array([N, C, S], dtype=np.int64))
    save(f"bn_{i}_f", np.array([eps, mom], dtype=np.float32))
    for name, a in (("x", x), ("gamma", gamma), ("beta", beta), ("rm", rm), ("rv", rv),
                    ("y", y.detach().numpy()), ("rm_out", rmt.numpy()), ("rv_out", rvt.numpy()),
                    ("mean", mean.numpy()), ("invstd", (1.0 / torch.sqrt(var + eps)).numpy()),
                    ("dy", dy), ("dx", xt.grad.numpy()), ("dgamma", gt.grad.numpy()),
                    ("dbeta", bt.grad.numpy())):
        save(f"bn_{i}_{name}", a)


# --------------------------------------------------------------------------------------------- gemm
# (transA, transB, M, N, K, c_shape or None, alpha, beta); case 0 is nn.Linear
GEMM_CASES = [
    (0, 1, 4, 10, 32, "1N", 1.0, 1.0),
    (0, 0, 5, 7, 3, "MN", 1.0, 1.0),
    (1, 0, 6, 4, 9, "M1", 0.5, 2.0),
    (1, 1, 3, 8, 5, "11", -1.5, 0.25),
    (0, 1, 7, 3, 6, None, 2.0, 1.0),
    (1, 1, 17, 33, 65, "1N", 1.0, 1.0),
]


def gemm_case(i, c):
    ta, tb, M, N, K, cs, alpha, beta = c
    A = randf(*((K, M) if ta else (M, K)))
    B = randf(*((N, K) if tb else (K, N)))
    At, Bt = t64(A, True), t64(B, True)
    opA = At.t() if ta else At
    opB = Bt.t() if tb else Bt
    Y = alpha * (opA @ opB)
    cr = cc = 0
    if cs is not None:
        cr = M if cs[0] == "M" else 1
        cc = N if cs[1] == "N" else 1
        Cm = randf(cr, cc)
        Ct = t64(Cm, True)
        Y = Y + beta * Ct
    dY = randf(M, N)
    (Y * t64(dY)).sum().backward()
    if i == 0:  # the same numbers through nn.functional.linear: x (M, K), W (N, K), b (N)
        yl = F.linear(t64(A), t64(B), t64(Cm[0]))
        assert torch.allclose(yl, Y.detach())
    save(f"gemm_{i}_p", np.array([ta, tb, M, N, K, cr, cc], dtype=np.int64))
    save(f"gemm_{i}_f", np.array([alpha, beta], dtype=np.float32))
    save(f"gemm_{i}_A", A)
    save(f"gemm_{i}_B", B)
    save(f"gemm_{i}_Y", Y.detach().numpy())
    save(f"gemm_{i}_dY", dY)
    save(f"gemm_{i}_dA", At.grad.numpy())
    save(f"gemm_{i}_dB", Bt.grad.numpy())
    if cs is not None:
        save(f"gemm_{i}_C", Cm)
        save(f"gemm_{i}_dC", Ct.grad.numpy())


# --------------------------------------------------------------------------------------------- xent
XENT_CASES = [(5, 7, 1.0, 1.0), (4, 400, 20.0, 0.7), (1, 3, 50.0, 1.0)]


def xent_case(i, c):
    N, K, scale, dloss = c
    logits = randf(N, K, scale=scale)
    labels = rng.integers(0, K, size=N).astype(np.int64)
    lt = t64(logits, True)
    loss = F.cross_entropy(lt, torch.tensor(labels))
    (loss * dloss).backward()
    save(f"xent_{i}_logits", logits)
    save(f"xent_{i}_labels", labels)
    save(f"xent_{i}_loss", np.array([loss.item()]))
    save(f"xent_{i}_prob", torch.softmax(t64(logits), dim=1).numpy())
    save(f"xent_{i}_dloss", np.array([dloss]))
    save(f"xent_{i}_dlogits", lt.grad.numpy())


# --------------------------------------------------------------------------------------------- pool
POOL_CASES = [(2, 3, (4, 5, 6)), (2, 512, (1, 7, 7))]


def pool_case(i, c):
    N, C, sp = c
    x = randf(N, C, *sp)
    xt = t64(x, True)
    y = F.adaptive_avg_pool3d(xt, 1)
    dy = randf(*y.shape)
    (y * t64(dy)).sum().backward()
    save(f"pool_{i}_p", np.array([N * C, int(np.prod(sp))], dtype=np.int64))
    save(f"pool_{i}_x", x)
    save(f"pool_{i}_y", y.detach().numpy())
    save(f"pool_{i}_dy", dy)
    save(f"pool_{i}_dx", xt.grad.numpy())


# --------------------------------------------------------------------------------------------- relu
def relu_case(i):
    x = randf(1000)
    x[:5] = [0.0, -0.0, np.nan, -np.inf, np.inf]
    xt = t64(x, True)
    y = torch.relu(xt)
    dy = randf(1000)
    (y * t64(dy)).sum().backward()
    save(f"relu_{i}_x", x)
    save(f"relu_{i}_y", y.detach().numpy())
    save(f"relu_{i}_dy", dy)
    save(f"relu_{i}_dx", xt.grad.numpy())


# ---------------------------------------------------------------------------------------------- sgd
SGD_CASES = [(0.1, 0.9, 0.01), (0.05, 0.0, 0.0), (0.01, 0.9, 0.0)]


def sgd_case(i, c):
    lr, mom, wd = c
    p0 = randf(257)
    p = torch.nn.Parameter(t64(p0))
    opt = torch.optim.SGD([p], lr=lr, momentum=mom, weight_decay=wd)
    save(f"sgd_{i}_f", np.array([lr, mom, wd], dtype=np.float32))
    save(f"sgd_{i}_p0", p0)
    for k in (1, 2, 3):
        g = randf(257)
        p.grad = t64(g)
        opt.step()
        save(f"sgd_{i}_g{k}", g)
        save(f"sgd_{i}_p{k}", p.detach().numpy())
    buf = opt.state[p].get("momentum_buffer")
    save(f"sgd_{i}_v3", buf.numpy() if buf is not None else np.zeros(257))


def main():
    for i, c in enumerate(CONV_CASES):
        conv_case(i, c)
    for i, c in enumerate(BN_CASES):
        bn_case(i, c)
    for i, c in enumerate(GEMM_CASES):
        gemm_case(i, c)
    for i, c in enumerate(XENT_CASES):
        xent_case(i, c)
    for i, c in enumerate(POOL_CASES):
        pool_case(i, c)
    relu_case(0)
    for i, c in enumerate(SGD_CASES):
        sgd_case(i, c)
    save("manifest", np.array([len(CONV_CASES), len(BN_CASES), len(GEMM_CASES), len(XENT_CASES),
                               len(POOL_CASES), 1, len(SGD_CASES)], dtype=np.int64))
    if len(sys.argv) > 2:
        sys.stdout.flush()
        sys.exit(subprocess.call([sys.argv[2], OUT]))


if __name__ == "__main__":
    main()
