"""An independent PyTorch reference for training an ONNX graph: every supported ONNX op is evaluated with
torch.nn.functional, gradients come from torch autograd, the update is torch.optim.SGD.

    losses, grads, state = train(model_path, data, labels, batch, steps, lr, momentum, weight_decay, dtype)

Semantics followed (the same contract vcc's trainer implements, from the ONNX spec and PyTorch):
  Conv                 ONNX Conv: cross-correlation, explicit pads [b1..bn, e1..en] (asymmetric via F.pad),
                       auto_pad SAME_UPPER/SAME_LOWER/VALID, strides, dilations, group
  BatchNormalization   training form (training_mode=1 from opset 14, five outputs in opsets 7-13): batch statistics, running = running*momentum + batch*(1-momentum),
                       unbiased running variance (PyTorch F.batch_norm(training=True), momentum = 1 - ONNX momentum)
  Relu, Add, GlobalAveragePool, Flatten, Reshape, Identity, Gemm (alpha, beta, transA, transB)
  loss                 nn.CrossEntropyLoss (mean) on the single graph output, nn.MSELoss (mean) against targets,
                       or the graph's own scalar output
Batches: step k (0-based) trains on samples (k*batch + i) % S.

Letters: N batch, C channels, T frames, H height, W width, K classes, S samples.
"""

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _conv(x, w, b, a):
    nsp = w.dim() - 2
    strides = list(a.get("strides", [1] * nsp))
    dil = list(a.get("dilations", [1] * nsp))
    ks = list(w.shape[2:])
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads_b, pads_e = [], []
        for i in range(nsp):
            n = x.shape[2 + i]
            out = -(-n // strides[i])
            total = max(0, (out - 1) * strides[i] + (ks[i] - 1) * dil[i] + 1 - n)
            small, big = total // 2, total - total // 2
            pads_b.append(small if auto == "SAME_UPPER" else big)
            pads_e.append(big if auto == "SAME_UPPER" else small)
    elif auto == "VALID":
        pads_b = pads_e = [0] * nsp
    else:
        pads = list(a.get("pads", [0] * (2 * nsp)))
        pads_b, pads_e = pads[:nsp], pads[nsp:]
    fpad = []
    for i in reversed(range(nsp)):  # F.pad wants the last dim first
        fpad += [pads_b[i], pads_e[i]]
    x = F.pad(x, fpad)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nsp]
    return conv(x, w, b, stride=strides, dilation=dil, groups=a.get("group", 1))


def forward(model, env, params):
    """Evaluate the graph; env holds inputs, params maps initializer names to tensors (trainable or buffers)."""
    for node in model.graph.node:
        a = _attrs(node)
        get = lambda i: env[node.input[i]] if i < len(node.input) and node.input[i] else None  # noqa: E731
        op = node.op_type
        if op == "Conv":
            y = _conv(get(0), get(1), get(2), a)
        elif op == "BatchNormalization":
            opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
            training = a.get("training_mode", 0) == 1 if opset >= 14 else len([o for o in node.output if o]) > 1
            if not training:
                raise ValueError("reference handles the training form only")
            rm, rv = get(3), get(4)
            y = F.batch_norm(get(0), rm, rv, get(1), get(2), training=True,
                             momentum=1.0 - a.get("momentum", 0.9), eps=a.get("epsilon", 1e-5))
        elif op == "Relu":
            y = F.relu(get(0))
        elif op == "Add":
            y = get(0) + get(1)
        elif op == "GlobalAveragePool":
            x = get(0)
            y = x.mean(dim=tuple(range(2, x.dim())), keepdim=True)
        elif op == "Flatten":
            x = get(0)
            ax = a.get("axis", 1)
            ax = ax + x.dim() if ax < 0 else ax
            y = x.reshape(int(np.prod(x.shape[:ax])), -1)
        elif op == "Reshape":
            shape = [int(v) for v in get(1).tolist()]
            x = get(0)
            shape = [x.shape[i] if (v == 0 and not a.get("allowzero", 0)) else v for i, v in enumerate(shape)]
            y = x.reshape(shape)
        elif op == "Identity":
            y = get(0)
        elif op == "Gemm":
            A, B, Cc = get(0), get(1), get(2)
            if a.get("transA", 0):
                A = A.t()
            if a.get("transB", 0):
                B = B.t()
            y = a.get("alpha", 1.0) * (A @ B)
            if Cc is not None:
                y = y + a.get("beta", 1.0) * Cc
        else:
            raise ValueError("reference has no rule for %s" % op)
        env[node.output[0]] = y
    return env[model.graph.output[0].name]


def train(model_path, data, labels, batch, steps, lr, momentum, weight_decay, dtype=torch.float32, grads_step=1,
          loss="ce", targets=None):
    """Train like vcc's trainer. loss: "ce" (nn.CrossEntropyLoss on the output, labels), "mse" (nn.MSELoss of the
    output against targets), "graph" (the output is the loss; a second graph input is fed from targets).
    Returns (per-step losses, {param: gradient at step grads_step (1-based)}, {param or BN buffer: value after
    the last step})."""
    model = onnx.load(model_path)
    bn_buffers = set()
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            bn_buffers.update(node.input[3:5])
    consts, params, buffers = {}, {}, {}
    for init in model.graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype != np.float32:
            consts[init.name] = torch.from_numpy(arr.copy())
        elif init.name in bn_buffers:
            buffers[init.name] = torch.tensor(arr, dtype=dtype)
        else:
            params[init.name] = torch.tensor(arr, dtype=dtype, requires_grad=True)
    opt = torch.optim.SGD(list(params.values()), lr=lr, momentum=momentum, weight_decay=weight_decay)
    inputs = [i.name for i in model.graph.input if i.name not in params and i.name not in buffers
              and i.name not in consts]
    S = data.shape[0]
    losses, grads = [], {}
    for k in range(steps):
        idx = [(k * batch + i) % S for i in range(batch)]
        env = dict(consts)
        env.update(params)
        env.update(buffers)
        env[inputs[0]] = torch.tensor(data[idx], dtype=dtype)
        if loss == "graph" and len(inputs) > 1:
            env[inputs[1]] = torch.tensor(targets[idx], dtype=dtype)
        out = forward(model, env, params)
        if loss == "mse":
            value = F.mse_loss(out, torch.tensor(targets[idx], dtype=dtype))
        elif loss == "graph":
            value = out.reshape(())
        else:
            value = F.cross_entropy(out, torch.from_numpy(labels[idx]))
        opt.zero_grad()
        value.backward()
        if k + 1 == grads_step:
            grads = {n: p.grad.detach().double().numpy().copy() for n, p in params.items()}
        opt.step()
        losses.append(float(value))
    state = {n: p.detach().double().numpy() for n, p in params.items()}
    state.update({n: b.double().numpy() for n, b in buffers.items()})
    return losses, grads, state
