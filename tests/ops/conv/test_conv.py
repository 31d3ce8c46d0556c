"""The conv family (ir/ops/conv.c): Conv and ConvTranspose, forward and gradients, every attribute variant
ONNX defines, checked with tests/ops/op_check.py against PyTorch float64 and central finite differences.

The references compute from ONNX's definitions, not from vcc's code:
  Conv           ONNX Operators "Conv": explicit pads [b1..bn, e1..en] applied with F.pad (so asymmetric
                 pads are exact), auto_pad SAME_UPPER/SAME_LOWER: output ceil(D / stride), total padding
                 (out-1)*stride + dilation*(k-1) + 1 - D split with the odd one at the end (UPPER) or the
                 begin (LOWER); VALID: none; then F.conv{1,2,3}d with strides, dilations, groups, bias.
  ConvTranspose  ONNX Operators "ConvTranspose": F.conv_transpose{1,2,3}d with no padding gives the full
                 output of length L = stride*(D-1) + dilation*(k-1) + 1; output element o is full[o + pb]
                 (0 outside [0, L)), o in [0, O) with
                   O = stride*(D-1) + output_padding + dilation*(k-1) + 1 - pb - pe   (explicit pads), or
                   O = output_shape, or D*stride (auto_pad SAME_*), the total padding
                       stride*(D-1) + output_padding + dilation*(k-1) + 1 - O split as
                       pb = floor(total/2) for SAME_UPPER, total - floor(total/2) otherwise;
                 then the bias. A negative total (output_shape past the input's reach) leaves elements
                 only the bias reaches.
Cases cover 1-3 spatial dims, bias or not, strides, dilations, groups and depthwise (group = C, as X3D),
every auto_pad, explicit asymmetric pads, kernel_shape, and for ConvTranspose output_padding,
output_shape (spatial and whole-shape forms, smaller and larger than the natural size), at opsets 1, 11
and 17.

    test_conv.py --vcc BUILD/vcc --work DIR [--only NAME] [--cuda | --cuda-one] [--chunked]
                 [--cpu-conv dnnl|im2col] [--dnnl-batch-chunks [--expect-refused]] [--dnnl-memory-limit]
                 [--dnnl-slabs]
                 [--dnnl-winograd [--dnnl-winograd-slabs]] [--filter-chunk-cap]
(--cuda without a GPU exits 77: the CUDA programs are only worth building one by one where they run.)

--cpu-conv compiles every program with that C conv backend (vcc's default, im2col, when absent): dnnl,
oneDNN's convolutions (runtime/cpu/conv_dnnl.h; weight gradients only where it has a direct kernel), im2col + OpenBLAS for the
rest; im2col, im2col + OpenBLAS for every pass. With dnnl, each case's trainer is also run once with
oneDNN's verbose log (DNNL_VERBOSE=1), which must show convolutions executed by oneDNN wherever it takes
the case (it refuses the negative pads of cropping ConvTransposes: those cases must show none, and
compute with im2col), and for a Conv case with explicit pads the kernel it ran must be the taps that read
the input (dead_taps: the runtime leaves out the taps that read only zero padding, the *_dead_taps cases).

--dnnl-memory-limit runs BATCH_CHUNK_CASES with --cpu-conv dnnl at the smallest arena --memory-limit
reaches (smallest_arena: the one vcc's refusal of a 1-byte limit names), where the weight-gradient pass's
workspace at the peak has shrunk to oneDNN's execution on one sample: checked against PyTorch as above,
and oneDNN's verbose log must show N executions of minibatch 1, as --dnnl-batch-chunks.

--dnnl-slabs runs SLAB_CASES, convolutions with a spatial dim of kernel 1, stride 1 and no padding, with
--cpu-conv dnnl under a --workspace-limit (dnnl_slab_limit) where one sample's blocked copies do not fit
and half of that dim's do: checked against PyTorch as above, and oneDNN's verbose log must show the
forward and backward-data passes run in 2N executions of minibatch 1 and half that dim each
(runtime/cpu/conv_dnnl.h's slabs).

--dnnl-winograd runs WINO_CASES, 3x3 convolutions of stride 1 and pads 1 over 2-D images (3-D ones with one
live depth tap, and a 2-D one) with channels in multiples of 16, with --cpu-conv dnnl: checked against
PyTorch as above, and oneDNN's verbose log must show the forward and backward-data passes on its direct
kernels and each weight-gradient pass as its Winograd convolution of the expected images per execution
where oneDNN runs AVX-512 code, and its direct kernels elsewhere (check_wino). With
--dnnl-winograd-slabs, WINO_SLAB_CASES, their programs capped at WINO_SLAB images per Winograd execution.

--filter-chunk-cap builds every C program with -DVCC_CONV_FILTER_CHUNK_BYTES=256 (FILTER_CAP), so the
weight gradients computed on im2col run in chunks of a few columns (one where a column is larger) while
the workspace holds them all: the chunks the runtime cuts below its workspace's, checked as above.

--chunked (run with --cpu-conv im2col) compiles every program with a --workspace-limit that makes each conv op (Conv, ConvTranspose and
their ConvGradData/ConvGradFilter) unfold its input in several chunks of output positions: every other
case gets room for a quarter of its output positions (P = max(1, OUT // 4), the limit 3 bytes above
those columns' bytes), the others the limit 4, below one column, so one position at a time (and vcc's
note that the limit is exceeded). Besides the checks above, each case's trainer plan (--plan-json) must
give every conv workspace exactly the columns of P positions: (W's dim 1) * prod(kernel) * P floats,
with OUT the output positions of the case's convolution geometry (Conv: Y's spatial sizes; ConvTranspose:
X's, the output of the Conv it is the adjoint of), and no more bytes than the limit unless P is 1.
"""

import json
import math
import os
import re
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import op_check as oc  # noqa: E402

CONV = [None, F.conv1d, F.conv2d, F.conv3d]
CONVT = [None, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d]


def _ints(a, key, n, dflt):
    return list(a.get(key, [dflt] * n))


def conv_ref(attrs):
    """ONNX Conv with attrs, as a function of X, W[, B]."""
    def f(X, W, B=None):
        n = X.dim() - 2
        s, d = _ints(attrs, "strides", n, 1), _ints(attrs, "dilations", n, 1)
        k = list(W.shape[2:])
        auto = attrs.get("auto_pad", "NOTSET")
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            pb, pe = [], []
            for i in range(n):
                D = X.shape[2 + i]
                out = -(-D // s[i])
                total = max(0, (out - 1) * s[i] + d[i] * (k[i] - 1) + 1 - D)
                small, big = total // 2, total - total // 2
                pb.append(small if auto == "SAME_UPPER" else big)
                pe.append(big if auto == "SAME_UPPER" else small)
        elif auto == "VALID":
            pb, pe = [0] * n, [0] * n
        else:
            p = _ints(attrs, "pads", 2 * n, 0)
            pb, pe = p[:n], p[n:]
        spec = []
        for i in reversed(range(n)):  # F.pad lists the last dim first
            spec += [pb[i], pe[i]]
        return CONV[n](F.pad(X, spec), W, B, stride=s, dilation=d, groups=attrs.get("group", 1))
    return f


def convt_ref(attrs):
    """ONNX ConvTranspose with attrs, as a function of X, W[, B]."""
    def f(X, W, B=None):
        n = X.dim() - 2
        s, d = _ints(attrs, "strides", n, 1), _ints(attrs, "dilations", n, 1)
        op = _ints(attrs, "output_padding", n, 0)
        k = list(W.shape[2:])
        auto = attrs.get("auto_pad", "NOTSET")
        full = CONVT[n](X, W, None, stride=s, dilation=d, groups=attrs.get("group", 1))
        out_shape = attrs.get("output_shape")
        if out_shape is not None and len(out_shape) == n + 2:
            out_shape = out_shape[2:]
        y = full
        for i in range(n):
            D, L = X.shape[2 + i], full.shape[2 + i]
            natural = s[i] * (D - 1) + op[i] + d[i] * (k[i] - 1) + 1
            if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
                O = out_shape[i] if out_shape is not None else D * s[i]
                total = natural - O
                pb = total // 2 if auto == "SAME_UPPER" else total - total // 2
            else:
                p = _ints(attrs, "pads", 2 * n, 0) if auto == "NOTSET" else [0] * (2 * n)
                pb, O = p[i], natural - p[i] - p[n + i]
            # element o of the output is full[o + pb], zero outside [0, L)
            idx = torch.arange(O) + pb
            ok = (idx >= 0) & (idx < L)
            sel = torch.index_select(y, 2 + i, idx.clamp(0, L - 1))
            mask = ok.to(sel.dtype).reshape([1] * (2 + i) + [O] + [1] * (n - 1 - i))
            y = sel * mask
        if B is not None:
            y = y + B.reshape([1, -1] + [1] * n)
        return y
    return f


def conv(name, x, w, bias=True, opset=17, grad_tol=1e-6, **attrs):
    inputs = {"X": x, "W": w}
    if bias:
        inputs["B"] = (w[0],)
    return oc.Case(name, "Conv", inputs=inputs, attrs=attrs, opset=opset, ref=conv_ref(attrs), grad_tol=grad_tol)


def convt(name, x, w, bias=True, opset=17, grad_tol=1e-6, **attrs):
    inputs = {"X": x, "W": w}
    if bias:
        inputs["B"] = (w[1] * attrs.get("group", 1),)
    return oc.Case(name, "ConvTranspose", inputs=inputs, attrs=attrs, opset=opset, ref=convt_ref(attrs),
                   grad_tol=grad_tol)


CASES = [
    # ---- Conv
    conv("conv1d_pads", (2, 3, 9), (4, 3, 3), pads=[1, 1]),
    conv("conv1d_stride_dilation_nobias", (2, 3, 11), (4, 3, 3), bias=False, strides=[2], dilations=[2]),
    conv("conv1d_same_upper_opset1", (2, 2, 9), (3, 2, 4), opset=1, auto_pad="SAME_UPPER", strides=[3]),
    conv("conv2d_kernel_shape", (2, 3, 6, 5), (4, 3, 3, 2), kernel_shape=[3, 2]),
    conv("conv2d_pads_asymmetric", (2, 3, 7, 6), (4, 3, 3, 3), pads=[2, 0, 1, 2], strides=[2, 1]),
    conv("conv2d_same_upper_odd", (2, 3, 8, 7), (4, 3, 3, 4), auto_pad="SAME_UPPER", strides=[2, 2]),
    conv("conv2d_same_lower_odd", (2, 3, 8, 7), (4, 3, 3, 4), auto_pad="SAME_LOWER", strides=[2, 2]),
    conv("conv2d_same_upper_dilated_opset11", (2, 2, 9, 7), (3, 2, 3, 2), opset=11, auto_pad="SAME_UPPER",
         dilations=[2, 3]),
    conv("conv2d_valid", (2, 3, 7, 6), (4, 3, 3, 3), auto_pad="VALID", strides=[2, 2]),
    conv("conv2d_groups", (2, 4, 6, 5), (6, 2, 3, 2), group=2, pads=[1, 0, 1, 1]),
    conv("conv2d_depthwise_multiplier", (2, 4, 6, 6), (8, 1, 3, 3), group=4, pads=[1, 1, 1, 1], strides=[2, 1]),
    conv("conv3d_stride_pads", (2, 3, 4, 5, 5), (4, 3, 2, 3, 3), pads=[1, 1, 1, 0, 1, 1], strides=[1, 2, 2]),
    # r3d_18's stage-entry convolutions at 8 channels (oneDNN's AVX2 channel block): 3x3x3 stride 2 pad 1
    # on even sizes (the end pad is one more than the output needs) and the 1x1x1 stride-2 shortcut
    conv("conv3d_r3d_stage_entry", (2, 8, 8, 6, 6), (16, 8, 3, 3, 3), bias=False, pads=[1] * 6, strides=[2, 2, 2]),
    conv("conv3d_r3d_shortcut", (2, 8, 8, 6, 6), (16, 8, 1, 1, 1), bias=False, strides=[2, 2, 2]),
    conv("conv3d_depthwise_x3d", (2, 6, 4, 6, 6), (6, 1, 3, 3, 3), bias=False, group=6, pads=[1, 1, 1, 1, 1, 1],
         strides=[1, 2, 2]),
    conv("conv3d_same_lower_groups", (2, 4, 5, 5, 6), (4, 2, 2, 3, 2), auto_pad="SAME_LOWER", group=2,
         strides=[2, 2, 3]),
    conv("conv3d_dilated_pointwise", (2, 4, 3, 4, 4), (5, 4, 1, 1, 1), dilations=[2, 2, 2]),
    # taps that read only zero padding for every output position (dead_taps below): r3d_18's 3x3x3 layer4
    # convolutions once the clip is down to depth 1, a grouped and strided one, a kernel taller than its
    # input with dead taps at both ends, a dilated one
    conv("conv3d_dead_taps_depth1", (2, 8, 1, 5, 5), (8, 8, 3, 3, 3), pads=[1] * 6),
    conv("conv3d_dead_taps_grouped_strided", (2, 8, 1, 6, 5), (8, 4, 3, 3, 3), bias=False, group=2, pads=[1] * 6,
         strides=[1, 2, 1]),
    conv("conv2d_dead_taps_both_ends", (2, 3, 2, 6), (4, 3, 5, 3), pads=[2, 1, 2, 1]),
    conv("conv2d_dead_taps_dilated", (2, 3, 1, 7), (4, 3, 3, 3), bias=False, dilations=[2, 1], pads=[2, 1, 2, 1]),
    # ---- ConvTranspose
    convt("convt1d_default", (2, 3, 5), (3, 2, 3)),
    convt("convt1d_same_upper_opset1", (2, 2, 4), (2, 3, 4), opset=1, auto_pad="SAME_UPPER", strides=[2]),
    convt("convt2d_torch_style", (2, 3, 4, 5), (3, 4, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1],
          output_padding=[1, 1]),
    convt("convt2d_pads_asymmetric", (2, 3, 4, 4), (3, 2, 3, 3), strides=[3, 2], pads=[2, 0, 1, 1]),
    convt("convt2d_same_upper_odd", (2, 2, 3, 4), (2, 3, 3, 3), auto_pad="SAME_UPPER", strides=[2, 2]),
    convt("convt2d_same_lower_odd_opset11", (2, 2, 3, 4), (2, 3, 3, 3), opset=11, auto_pad="SAME_LOWER",
          strides=[2, 2]),
    convt("convt2d_valid", (2, 2, 3, 4), (2, 3, 2, 3), auto_pad="VALID", strides=[2, 1]),
    convt("convt2d_output_shape_smaller", (2, 2, 3, 3), (2, 2, 3, 3), strides=[3, 2], output_shape=[8, 6]),
    convt("convt2d_output_shape_larger", (2, 2, 3, 3), (2, 2, 3, 3), strides=[3, 2], output_shape=[12, 9]),
    convt("convt2d_output_shape_same_upper", (2, 2, 3, 3), (2, 2, 3, 3), auto_pad="SAME_UPPER", strides=[2, 2],
          output_shape=[5, 8]),
    convt("convt2d_output_shape_padding", (1, 1, 3, 3), (1, 2, 3, 3), strides=[3, 2], output_padding=[1, 1],
          output_shape=[10, 8]),
    convt("convt2d_groups_dilations_nobias", (2, 4, 4, 3), (4, 3, 2, 3), bias=False, group=2, dilations=[2, 1],
          strides=[1, 2], pads=[0, 1, 1, 0]),
    convt("convt2d_outpad_below_dilation", (2, 2, 4, 4), (2, 3, 2, 2), dilations=[2, 2], output_padding=[1, 1]),
    convt("convt2d_depthwise", (2, 4, 5, 4), (4, 1, 3, 3), group=4, strides=[2, 2], pads=[1, 1, 1, 1]),
    convt("convt3d_stride_outpad", (2, 3, 3, 3, 4), (3, 2, 2, 3, 3), strides=[2, 2, 1], pads=[0, 1, 1, 0, 1, 1],
          output_padding=[1, 1, 0]),
    convt("convt3d_unet_up", (2, 4, 2, 4, 4), (4, 4, 1, 4, 4), strides=[1, 2, 2], pads=[0, 1, 1, 0, 1, 1],
          dilations=[1, 1, 1], group=1, kernel_shape=[1, 4, 4]),
    convt("convt3d_output_shape_whole", (1, 2, 2, 3, 3), (2, 2, 2, 2, 3), strides=[2, 2, 2],
          output_shape=[1, 2, 5, 7, 8], kernel_shape=[2, 2, 3]),
]

# --dnnl-batch-chunks: convolutions whose activations are large next to their weights, so that under
# dnnl_chunk_limit oneDNN's weight-gradient pass fits one sample per execution and not two
BATCH_CHUNK_CASES = [
    conv("conv3d_wgrad_batch_chunks", (3, 16, 8, 16, 16), (16, 16, 3, 3, 3), pads=[1] * 6, grad_tol=1e-5),
    conv("conv3d_wgrad_batch_chunks_strided", (4, 16, 8, 16, 16), (32, 16, 3, 3, 3), bias=False, pads=[1] * 6,
         strides=[1, 2, 2], grad_tol=1e-5),
    # depth 1: oneDNN runs the (1, 3, 3) taps that read the input, into a window of dw and of the accumulator
    conv("conv3d_wgrad_batch_chunks_dead_taps", (3, 16, 1, 24, 24), (16, 16, 3, 3, 3), pads=[1] * 6, grad_tol=1e-5),
]


# --dnnl-slabs: convolutions with a spatial dim of kernel 1, stride 1 and no padding (R(2+1)D's (1, 3, 3)
# and (3, 1, 1) convolutions, a grouped 1x1x1 one) under dnnl_slab_limit: one sample does not fit the
# workspace, half of that dim does (activations large next to the 64 KiB vcc plans for scratchpads)
SLAB_CASES = [
    conv("conv3d_slabs_depth", (2, 16, 8, 32, 32), (32, 16, 1, 3, 3), pads=[0, 1, 1, 0, 1, 1], strides=[1, 2, 2],
         grad_tol=1e-5),
    conv("conv3d_slabs_height", (2, 16, 4, 32, 32), (16, 16, 3, 1, 1), bias=False, pads=[1, 0, 0, 1, 0, 0],
         grad_tol=1e-5),
    conv("conv3d_slabs_pointwise_grouped", (2, 32, 6, 24, 24), (32, 16, 1, 1, 1), group=2, grad_tol=1e-5),
]


# --dnnl-winograd: 3x3 convolutions of stride 1 and pads 1 over 2-D images with channels in multiples of 16
# (a (1, 3, 3) one, as mc3_18's and R(2+1)D's; a 3x3x3 one at depth 1, whose one live depth tap makes it
# one; a 2-D one; 3x3x3 ones at depth 5 and 2), whose backward passes runtime/cpu/conv_dnnl.h runs as
# oneDNN's Winograd F(4x4, 3x3) convolution on AVX-512 (the forward on its direct kernels), under a fixed --workspace-limit of WINO_LIMIT (without one, the plan of a graph this small
# gives the room back: its conv workspaces are its peak)
WINO_CASES = [
    conv("conv3d_wino_133", (2, 16, 8, 8, 8), (16, 16, 1, 3, 3), pads=[0, 1, 1, 0, 1, 1], grad_tol=1e-5),
    conv("conv3d_wino_dead_taps", (2, 16, 1, 24, 24), (32, 16, 3, 3, 3), bias=False, pads=[1] * 6, grad_tol=1e-5),
    conv("conv2d_wino", (4, 32, 12, 12), (16, 32, 3, 3), pads=[1] * 4, grad_tol=1e-5),
    # 3x3x3 ones (r3d_18's), run as three 2-D convolutions, one per depth tap, that add up
    conv("conv3d_wino_taps", (2, 16, 5, 12, 12), (32, 16, 3, 3, 3), pads=[1] * 6, grad_tol=1e-5),
    conv("conv3d_wino_taps_depth2", (2, 32, 2, 24, 24), (16, 32, 3, 3, 3), bias=False, pads=[1] * 6, grad_tol=1e-5),
    # a ConvTranspose of that geometry: its forward is the conv's backward-data pass, computed as a forward
    # value (direct kernels); only its weight gradient runs Winograd. Large enough that its forward's im2col
    # workspace would hold Winograd's need too; its weight gradient sums 25088 products per weight, and
    # central differences at this size are themselves 7e-6 from autograd, hence 2e-5.
    convt("convt2d_wino", (2, 16, 112, 112), (16, 32, 3, 3), pads=[1] * 4, grad_tol=2e-5),
]
# --dnnl-winograd-slabs: a (1, 3, 3) convolution whose programs are built with at most WINO_SLAB images per
# Winograd execution (-DVCC_DNNL_WINO_MAX_IMAGES): each sample's depth in two slabs, the weight gradient
# summed over slabs and samples
WINO_SLAB_CASES = [
    conv("conv3d_wino_slabs", (2, 16, 16, 8, 8), (16, 16, 1, 3, 3), bias=False, pads=[0, 1, 1, 0, 1, 1],
         grad_tol=1e-5),
]
# Winograd computes each output from transformed operands, each transform a rounded sum of up to 36 terms
# with coefficients up to 8 (F(4x4, 3x3)): its forward lands a few float32 roundings further from float64
# than a direct sum, so the forward is held to WINO_FWD_TOL, not op_check's 1e-6
WINO_FWD_TOL = 4e-6
for _c in WINO_CASES + WINO_SLAB_CASES:
    _c.fwd_tol = WINO_FWD_TOL
WINO_LIMIT = 32 << 20
WINO_SLAB = 8
WINO_MIN_TILES = 32  # runtime/cpu/conv_dnnl.h's VCC_DNNL_WINO_MIN_TILES


def wino_images(case):
    """(images per sample, images of the batch, tiles per image): a 3-D case's depth positions, a 2-D one's
    samples; 4x4 output tiles (the output is the input's size: stride 1, pads 1)."""
    x = case.inputs["X"]
    per = x[2] if len(x) == 5 else 1
    return per, x[0] * per, -(-x[-2] // 4) * -(-x[-1] // 4)


def check_wino(cases, work, slab=None):
    """--dnnl-winograd(-slabs): each case's trainer, run once more with oneDNN's verbose log at one thread.
    Where oneDNN runs AVX-512 code (its log's isa line), the forward and backward-data passes run on its
    direct kernels (no Winograd: their outputs feed every later value), and every weight-gradient
    execution is its Winograd convolution (jit_wino_4x3) of a 2-D problem (kh3, kw3, no depth) with the
    expected images per execution (a 3-D case: one sample's depth positions, or slab of them; a 3x3x3 one:
    per sample D for the middle depth tap, D - 1 for each other; a 2-D one: the batch). Elsewhere (AVX2)
    none is, and oneDNN's direct kernels ran."""
    bad = []
    for c in cases:
        d = os.path.join(work, c.name)
        r = run_verbose(d)
        avx512 = bool(re.search(r"_verbose,info,cpu,isa:.*AVX-512", r.stdout))
        per, total, tiles = wino_images(c)
        mb = slab or (per if len(c.inputs["X"]) == 5 else total)
        assert mb * tiles >= WINO_MIN_TILES and per % mb == 0 if per > 1 else True, c.name
        taps = c.inputs["W"][2:] == (3, 3, 3) and per > 1
        tr = c.op == "ConvTranspose"
        if taps:  # per sample: the middle tap over D images, the others D - 1
            mbs = [per, per - 1, per - 1] * c.inputs["X"][0]
        else:
            mbs = [mb] * (total // mb)
        # the forward and backward-data passes on oneDNN's direct kernels, the weight gradient on Winograd
        want_mbs = {"forward_training": [], "backward_data": [], "backward_weights": mbs}
        for kind in ("forward_training", "backward_data", "backward_weights"):
            got = re.findall(r"(?:onednn|dnnl)_verbose,exec,cpu,convolution,([^,]*),%s,.*?,mb(\d+)(\S*?)," % kind,
                             r.stdout)
            if avx512:
                want = [("jit_wino_4x3:avx512_core", str(m)) for m in want_mbs[kind]]
                wino = [(impl, m, p) for impl, m, p in got if "wino" in impl]
                ok = [(impl, m) for impl, m, _ in wino] == want and all("kd" not in p and "kh3" in p for _, _, p in wino)
                # the forward itself: direct kernels (a ConvTranspose's: the backward-data pass)
                if kind == ("backward_data" if tr else "forward_training"):
                    ok = ok and len(got) > len(wino)
            else:
                # (no weight gradient of a 3x3x3 one: oneDNN's AVX2 kernel for it is its gemm convolution)
                want = "no jit_wino executions"
                ok = (got or (taps and kind == "backward_weights")) and not any("wino" in impl for impl, _, _ in got)
            ok = ok and r.returncode == 0
            print("%-40s %-28s %s %s" % (c.name, "oneDNN " + kind, ",".join("%s/mb%s" % (i, m) for i, m, _ in got) or "-",
                                         "ok" if ok else "FAIL"))
            if not ok:
                bad.append("%s: oneDNN %s executions %s, expected %s (rc %d)" % (c.name, kind, got, want, r.returncode))
    return bad


def slab_dim(case):
    """The spatial dim runtime/cpu/conv_dnnl.h cuts case into slabs along (vcc_dnnl_slab_dim: the first of
    kernel 1, stride 1, no padding, extent above 1)."""
    x, w = case.inputs["X"], case.inputs["W"]
    nsp = len(x) - 2
    pads = case.attrs.get("pads", [0] * 2 * nsp)
    strides = case.attrs.get("strides", [1] * nsp)
    return next(i for i in range(nsp) if w[2 + i] == 1 and strides[i] == 1 and pads[i] == 0 and
                pads[nsp + i] == 0 and x[2 + i] > 1)


def dnnl_blocked_floats(case):
    """(x, y, w): the floats of one sample's blocked input and output and of the blocked weights of `case` (a
    Conv) as ir/ops/conv.c's dnnl_ws_bytes counts them: channels rounded up to 16, per group for the
    weights, whose kernel holds the taps that read the input only (dead_taps)."""
    x, w = case.inputs["X"], case.inputs["W"]
    y = conv_ref(case.attrs)(torch.zeros(x), torch.zeros(w))
    r16 = lambda c: -(-c // 16) * 16
    g = case.attrs.get("group", 1)
    return (r16(x[1]) * math.prod(x[2:]), r16(w[0]) * math.prod(y.shape[2:]),
            r16(w[0] // g) * r16(x[1] // g) * g * math.prod(dead_taps(case) or w[2:]))


def dnnl_slab_limit(case):
    """The --workspace-limit under which vcc plans oneDNN's forward and backward-data passes of `case` for one
    sample and half of slab_dim's extent per execution (ir/ops/conv.c, dnnl_ws_bytes without the weights:
    blocked input and output of the slab, one blocked weight, alignment and 64 KiB)."""
    xf, yf, wts = dnnl_blocked_floats(case)
    ext = case.inputs["X"][2 + slab_dim(case)]
    return 4 * ((xf + yf) // ext * (ext // 2) + wts) + 3 * 64 + 65536


def check_slabs(cases, work):
    """--dnnl-slabs: each case's trainer, run once more with oneDNN's verbose log at one thread, computes
    its forward and backward-data passes with oneDNN in slabs: 2N executions of each, minibatch 1, half
    of slab_dim's extent each."""
    bad = []
    for c in cases:
        d, n = os.path.join(work, c.name), c.inputs["X"][0]
        ext, dim = c.inputs["X"][2 + slab_dim(c)], "dhw"[slab_dim(c)]
        r = run_verbose(d)
        for kind in ("forward_training", "backward_data"):
            got = re.findall(r"(?:onednn|dnnl)_verbose,exec,cpu,convolution,[^,]*,%s,.*?,(?:g\d+)?(mb\d+)\S*?_i%s(\d+)" %
                             (kind, dim), r.stdout)
            ok = r.returncode == 0 and got == [("mb1", str(ext // 2))] * (2 * n)
            print("%-40s %-22s %9s %s" % (c.name, "oneDNN " + kind, ",".join("%s/%s%s" % (m, dim, e) for m, e in got)
                                          or "-", "ok  " if ok else "FAIL"))
            if not ok:
                bad.append("%s: oneDNN %s executions %s, expected %d of mb1 with %s%d (rc %d)" % (
                    c.name, kind, got, 2 * n, dim, ext // 2, r.returncode))
    return bad


def dnnl_chunk_limit(case):
    """The --workspace-limit under which vcc plans oneDNN's weight-gradient pass of `case` (a Conv) for one
    sample per execution (ir/ops/conv.c, dnnl_ws_bytes with the weights: blocked input and output of one
    sample, three blocked weights, the plain accumulator, alignment and 64 KiB)."""
    x, w = case.inputs["X"], case.inputs["W"]
    xf, yf, wts = dnnl_blocked_floats(case)
    plain_w = w[0] * (x[1] // case.attrs.get("group", 1)) * math.prod(w[2:])
    return 4 * (xf + yf + 3 * wts + plain_w) + 4 * 64 + 65536


def smallest_arena(vcc, onnx_path, cwd, options):
    """--dnnl-memory-limit: the --memory-limit of the smallest arena vcc names for a trainer of onnx_path with
    options (its refusal of a 1-byte limit: with the conv workspaces at the peak shrunk, where that goes
    lower); nothing for a --forward-only program, which has no backward to recompute."""
    if "--forward-only" in options:
        return []
    p = subprocess.run([vcc, onnx_path, "--memory-limit", "1"] + options, cwd=cwd, capture_output=True, text=True)
    m = re.search(r"workspaces at the peak shrunk too .*? it is (\d+) bytes", p.stderr) or \
        re.search(r"reachable by recomputation is (\d+) bytes", p.stderr)
    if not m:
        sys.exit("FAIL: vcc --memory-limit 1 named no smallest arena: %s" % p.stderr)
    return ["--memory-limit", m.group(1)]


def run_verbose(d):
    """One step of the trainer built in d (lr 0), at one thread, with oneDNN's verbose log on stdout."""
    env = dict(os.environ, DNNL_VERBOSE="1", OMP_NUM_THREADS="1")
    return subprocess.run([os.path.join(d, "train"), "--data", "data.npy", "--targets", "targets.npy", "--lr", "0",
                           "--steps", "1", "--threads", "1"], cwd=d, capture_output=True, text=True, env=env)


def check_batch_chunks(cases, work, refused=False):
    """--dnnl-batch-chunks: each case's trainer, run once more with oneDNN's verbose log at one thread,
    computes its weight gradient with oneDNN one sample per execution: N backward_weights executions,
    each of minibatch 1 (the later ones summed into dw by runtime/cpu/conv_dnnl.h). On a CPU where
    oneDNN's only weight-gradient kernel for the case is its gemm convolution (AVX2), which the trainer
    refuses, there must be no backward_weights execution at all (im2col computed it; said so). With
    refused (--expect-refused: oneDNN held to AVX2 by DNNL_MAX_CPU_ISA), only the latter is right, except
    for a case whose taps that read the input (dead_taps) are one deep: without depth padding oneDNN's
    AVX2 kernel takes it, so N executions of minibatch 1 are the only right answer there."""
    bad = []
    for c in cases:
        d, n = os.path.join(work, c.name), c.inputs["X"][0]
        r = run_verbose(d)
        mbs = [int(m) for m in re.findall(r"(?:onednn|dnnl)_verbose,exec,cpu,convolution,[^,]*,backward_weights,"
                                          r".*?,mb(\d+)", r.stdout)]
        depth1 = (dead_taps(c) or [0])[0] == 1
        ok = r.returncode == 0 and mbs in ((([1] * n,) if depth1 else ([],)) if refused else ([1] * n, []))
        print("%-40s %-22s %9s %s%s" % (c.name, "oneDNN wgrad minibatch", ",".join(map(str, mbs)) or "-",
                                        "ok  " if ok else "FAIL",
                                        "  no direct oneDNN weight-gradient kernel on this CPU: im2col ran, the "
                                        "chunked sum is not exercised here" if ok and not mbs else ""))
        if not ok:
            bad.append("%s: oneDNN backward_weights minibatches %s, expected %d of 1 (rc %d)" % (
                c.name, mbs, n, r.returncode))
    return bad


def chunking(case):
    """(limit, P, columns of the whole buffer) for case in --chunked mode (see the module's comment)."""
    x, w = case.inputs["X"], case.inputs["W"]
    rows = w[1] * math.prod(w[2:])
    if case.op == "Conv":
        y = conv_ref(case.attrs)(torch.zeros(x), torch.zeros(w))
        out = math.prod(y.shape[2:])
    else:
        out = math.prod(x[2:])
    if CASES.index(case) % 2:
        return 4, 1, out
    p = max(1, out // 4)
    return 4 * rows * p + 3, p, out


# --filter-chunk-cap: every C program built with -DVCC_CONV_FILTER_CHUNK_BYTES=FILTER_CAP, so each weight
# gradient on im2col runs in chunks of at most that many bytes of columns (at least one column), however
# large the workspace (runtime/cpu/conv.h)
FILTER_CAP = 256


def filter_chunks(case):
    """(rows, output positions, columns per chunk under FILTER_CAP) of case's weight gradient on im2col; a
    pointwise Conv (kernel 1, stride 1, no padding) reads x as its columns, in one chunk."""
    w = case.inputs["W"]
    rows = w[1] * math.prod(w[2:])
    out = chunking(case)[2]
    nsp = len(w) - 2
    if (case.op == "Conv" and all(k == 1 for k in w[2:]) and all(v == 1 for v in case.attrs.get("strides", [1] * nsp))
            and not any(case.attrs.get("pads", [0] * 2 * nsp)) and "auto_pad" not in case.attrs):
        return rows, out, out
    return rows, out, max(1, FILTER_CAP // (4 * rows))


def check_plans(cases, vcc, work):
    """--chunked: every conv workspace of each case's trainer plan is the columns of P positions."""
    bad = []
    for c in cases:
        limit, p, out = chunking(c)
        rows = c.inputs["W"][1] * math.prod(c.inputs["W"][2:])
        d, before = os.path.join(work, c.name), len(bad)
        r = subprocess.run([vcc, "train.onnx", "--loss", "mse", "--keep-grads", "--workspace-limit", str(limit),
                            "--cpu-conv", "im2col", "--plan-json", "plan.json"], cwd=d, capture_output=True, text=True)
        if r.returncode:
            bad.append("%s: vcc exited %d: %s" % (c.name, r.returncode, r.stderr[-300:]))
            continue
        with open(os.path.join(d, "plan.json")) as f:
            plan = json.load(f)
        ws = [t for t in plan["tensors"] if t["category"] == "workspace" and t["name"].endswith(".ws")]
        kinds = sorted({t["name"].split("/")[-1] for t in ws})
        if len(ws) != 3:
            bad.append("%s: %d conv workspaces in the trainer, expected 3 (%s)" % (c.name, len(ws), kinds))
        for t in ws:
            if t["bytes"] != 4 * rows * p or (p > 1 and t["bytes"] > limit):
                bad.append("%s: %s has %d bytes, expected %d (limit %d)" % (c.name, t["name"], t["bytes"],
                                                                           4 * rows * p, limit))
        over = "above --workspace-limit" in r.stderr
        if over != (4 * rows * p > limit):
            bad.append("%s: vcc's note on a workspace above the limit is %s" % (c.name, "there" if over else "missing"))
        print("%-40s %-22s %9d %s  limit %d: %d chunks of %d of %d output positions" %
              (c.name, "plan workspaces", 4 * rows * p, "ok  " if len(bad) == before else "FAIL",
               limit, -(-out // p), p, out))
    return bad


def dead_taps(case):
    """For a Conv case with explicit (or no) pads: the kernel oneDNN should run, per spatial dim the taps
    from the first to the last one that reads an input position for some output position (tap t of
    output o reads o * stride - pad_begin + t * dilation; ONNX Operators "Conv"), all of them where a
    pad cut by the dropped taps would be negative; None for other cases."""
    if case.op != "Conv" or case.attrs.get("auto_pad", "NOTSET") != "NOTSET":
        return None
    x, w = case.inputs["X"], case.inputs["W"]
    nsp = len(x) - 2
    pads = case.attrs.get("pads", [0] * 2 * nsp)
    strides = case.attrs.get("strides", [1] * nsp)
    dil = case.attrs.get("dilations", [1] * nsp)
    kernel = []
    for i in range(nsp):
        n_in, k, s, d, pb, pe = x[2 + i], w[2 + i], strides[i], dil[i], pads[i], pads[nsp + i]
        n_out = (n_in + pb + pe - ((k - 1) * d + 1)) // s + 1
        live = [t for t in range(k) if any(0 <= o * s - pb + t * d < n_in for o in range(n_out))]
        if not live or pb - live[0] * d < 0 or pe - (k - 1 - live[-1]) * d < 0:
            kernel.append(k)
        else:
            kernel.append(live[-1] - live[0] + 1)
    return kernel


def check_dnnl_ran(cases, work):
    """--cpu-conv dnnl: each case's trainer (built by op_check in WORK/<case>) defines VCC_CONV_DNNL, and
    run once more with oneDNN's verbose log (DNNL_VERBOSE=1) it executes oneDNN convolutions, unless every
    conv geometry of the program has a negative pad (a cropping ConvTranspose, which oneDNN does not
    take: then it must execute none)."""
    bad = []
    for c in cases:
        d = os.path.join(work, c.name)
        if not c.grad or not os.path.exists(os.path.join(d, "train.c")):
            continue
        src = open(os.path.join(d, "train.c")).read()
        if "#define VCC_CONV_DNNL 1" not in src:
            bad.append("%s: train.c does not define VCC_CONV_DNNL" % c.name)
            continue
        table = src[src.index("static VccConvDesc vcc_conv["):]
        table = table[:table.index("};")]
        descs = [re.findall(r"\{([-0-9, ]+)\}", ln) for ln in table.splitlines()[1:]]
        takes = any(all(int(v) >= 0 for g in ds[5:7] for v in g.split(",")) for ds in descs if len(ds) >= 7)
        r = run_verbose(d)
        lines = [ln for ln in r.stdout.splitlines() if re.match(r"(onednn|dnnl)_verbose,exec,cpu,convolution,", ln)]
        n = len(lines)
        ok = r.returncode == 0 and (n > 0) == takes
        print("%-40s %-22s %9d %s" % (c.name, "oneDNN conv executions", n, "ok  " if ok else "FAIL"))
        if not ok:
            bad.append("%s: %d oneDNN convolution executions, expected %s (rc %d)" % (
                c.name, n, "some" if takes else "none", r.returncode))
        # the kernel each execution ran: the taps that read the input (dead_taps), from its problem
        # descriptor (..._kd3..._kh3..._kw3...)
        want = dead_taps(c)
        if want is not None and n:
            got = sorted({tuple(int(k) for k in re.findall(r"k[dhw](\d+)", ln.split(",")[-2])) for ln in lines})
            ok = got == [tuple(want)]
            print("%-40s %-22s %9s %s" % (c.name, "kernel run", "x".join(map(str, want)), "ok  " if ok else "FAIL"))
            if not ok:
                bad.append("%s: oneDNN ran kernels %s, expected %s (the taps that read the input)" % (
                    c.name, got, tuple(want)))
    return bad


def run_checked(cases, check):
    """Checks cases (op_check.main), then check(work folder) on the programs built there; exits with
    op_check's status, or 1 where check names problems (each printed as FAIL)."""
    rc = oc.main(cases)
    problems = check(os.path.abspath(sys.argv[sys.argv.index("--work") + 1]))
    for b in problems:
        print("FAIL " + b)
    sys.exit(rc or (1 if problems else 0))


if __name__ == "__main__":
    cpu_conv = "im2col"  # vcc's default
    if "--cpu-conv" in sys.argv:
        i = sys.argv.index("--cpu-conv")
        cpu_conv = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    if "--dnnl-batch-chunks" in sys.argv:
        sys.argv.remove("--dnnl-batch-chunks")
        refused = "--expect-refused" in sys.argv
        if refused:
            sys.argv.remove("--expect-refused")
        for c in BATCH_CHUNK_CASES:
            c.flags += ["--cpu-conv", "dnnl", "--workspace-limit", str(dnnl_chunk_limit(c))]
        run_checked(BATCH_CHUNK_CASES, lambda work: check_batch_chunks(BATCH_CHUNK_CASES, work, refused))
    if "--dnnl-memory-limit" in sys.argv:
        # the same convolutions compiled at the smallest arena --memory-limit reaches: the workspace of the
        # weight-gradient pass at the peak shrinks to oneDNN's execution on one sample (passes/remat.c,
        # vcc_conv_ws_halved), and the trainer runs it so
        sys.argv.remove("--dnnl-memory-limit")
        for c in BATCH_CHUNK_CASES:
            c.flags += ["--cpu-conv", "dnnl", smallest_arena]
        run_checked(BATCH_CHUNK_CASES, lambda work: check_batch_chunks(BATCH_CHUNK_CASES, work))
    if "--dnnl-winograd" in sys.argv:
        sys.argv.remove("--dnnl-winograd")
        slabs = "--dnnl-winograd-slabs" in sys.argv
        if slabs:
            sys.argv.remove("--dnnl-winograd-slabs")
            os.environ["VCC_OPS_CFLAGS"] = "-DVCC_DNNL_WINO_MAX_IMAGES=%d" % WINO_SLAB
        cases = WINO_SLAB_CASES if slabs else WINO_CASES
        for c in cases:
            c.flags += ["--cpu-conv", "dnnl", "--workspace-limit", str(WINO_LIMIT)]
        run_checked(cases, lambda work: check_wino(cases, work, WINO_SLAB if slabs else None))
    if "--dnnl-slabs" in sys.argv:
        sys.argv.remove("--dnnl-slabs")
        for c in SLAB_CASES:
            c.flags += ["--cpu-conv", "dnnl", "--workspace-limit", str(dnnl_slab_limit(c))]
        run_checked(SLAB_CASES, lambda work: check_slabs(SLAB_CASES, work))
    for c in CASES:
        c.flags += ["--cpu-conv", cpu_conv]
    # ops_conv_cuda runs every case's CUDA programs against the C ones: on a GPU only (without one,
    # ops_conv_test_conv_cuda_build already builds the family's whole CUDA runtime)
    if "--cuda" in sys.argv and not oc._gpu():
        print("skip: no GPU, nothing to run the CUDA programs on")
        sys.exit(77)
    if "--filter-chunk-cap" in sys.argv:
        sys.argv.remove("--filter-chunk-cap")
        os.environ["VCC_OPS_CFLAGS"] = "-DVCC_CONV_FILTER_CHUNK_BYTES=%d" % FILTER_CAP
        split = 0
        for c in CASES:
            rows, out, p = filter_chunks(c)
            split += p < out
            print("%-40s weight gradient: %d columns of %d rows in chunks of %d" % (c.name, out, rows, p))
        rc = oc.main(CASES)
        if split < len(CASES) // 2:
            print("FAIL only %d of %d cases run their weight gradient in more than one chunk" % (split, len(CASES)))
            rc = rc or 1
        sys.exit(rc)
    a = sys.argv
    only = a[a.index("--only") + 1] if "--only" in a else None
    checked = [c for c in CASES if not only or only in c.name]
    if "--chunked" in sys.argv:
        sys.argv.remove("--chunked")
        for c in CASES:
            c.flags += ["--workspace-limit", str(chunking(c)[0])]
        vcc = os.path.abspath(a[a.index("--vcc") + 1])
        run_checked(CASES, lambda work: check_plans(checked, vcc, work))
    run_checked(CASES, lambda work: check_dnnl_ran(checked, work) if cpu_conv == "dnnl" else [])
