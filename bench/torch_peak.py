"""PyTorch's peak memory for one training step, measured the way vcc's memory benchmarks compare against.

    from torch_peak import cpu_peak, cuda_peak
    peak = cpu_peak(make, step)     # bytes

make() builds and returns the state a step needs (a model, its input, labels...), drawing from torch's
RNG; step(state, opt) runs forward and backward of one training step and returns nothing; the optimizer
is torch.optim.SGD(lr 0.01, momentum 0.9), vcc's default.

cpu_peak: torch.profiler with profile_memory=True is on from before the model is built; one warm-up
step, then the measured step (zero_grad(set_to_none=True), forward, backward, optimizer.step()). The
allocator's records are summed in time order, each at the granularity of the innermost op that made it
(the profiler gives each op its own allocations, net), and the figure is the largest running sum during
the measured step: parameters, gradients, momentum, the input and every activation live at once. A
temporary an op allocates and frees inside itself is not seen, so the figure is a lower bound of
PyTorch's peak by at most one op's scratch.

cuda_peak: the same two steps on the GPU; torch.cuda.max_memory_allocated over the measured step, with
everything the first step left (parameters, gradients freed by zero_grad, momentum) counted, as the
allocator reports it.
"""


def _setup(make, device):
    """The state make() builds, moved to device, and its SGD optimizer."""
    import torch
    state = make()
    model = state[0]
    model.to(device)
    state = tuple(s.to(device) if isinstance(s, torch.Tensor) else s for s in state)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return state, opt


def cpu_peak(make, step):
    """Peak live bytes of the second of two training steps on the CPU (see the module docstring)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function
    torch.manual_seed(0)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        state, opt = _setup(make, "cpu")
        for k in range(2):
            with record_function("step%d" % k):
                opt.zero_grad(set_to_none=True)
                step(state, opt)
                opt.step()
    events = sorted(prof.profiler.function_events, key=lambda e: e.time_range.start)
    window = [e for e in events if e.name == "step1"][0].time_range
    live = peak = 0
    for e in events:
        live += e.self_cpu_memory_usage
        if window.start <= e.time_range.start <= window.end:
            peak = max(peak, live)
    return peak


def cuda_peak(make, step):
    """torch.cuda.max_memory_allocated over the second of two training steps on the GPU, or None without
    one."""
    import torch
    if not torch.cuda.is_available():
        return None
    torch.manual_seed(0)
    state, opt = _setup(make, "cuda")
    for k in range(2):
        if k == 1:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        opt.zero_grad(set_to_none=True)
        step(state, opt)
        opt.step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()
