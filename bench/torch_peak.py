"""PyTorch's peak memory for one training step, measured the way vcc's memory benchmarks compare against.

    from torch_peak import cpu_peak, cuda_peak
    peak = cpu_peak(make, step)     # bytes

make() builds and returns the state a step needs (a model, its input, labels...), drawing from torch's
RNG; step(state, opt) runs forward and backward of one training step and returns nothing; the optimizer
is torch.optim.SGD(lr 0.01, momentum 0.9), vcc's default.

cpu_peak: torch.profiler with profile_memory=True is on from before the model is built; one warm-up
step, then the measured step (zero_grad(set_to_none=True), forward, backward, optimizer.step()). Every
allocator record (the profiler's "[memory]" events: one per allocation, +bytes, and per free, -bytes) is
summed in time order, and the figure is the largest running sum during the measured step: parameters,
gradients, momentum, the input, every activation and the scratch an op holds while it runs (the column
buffers of PyTorch's CPU convolutions), as torch.cuda.max_memory_allocated counts them on the GPU. The
records of a step come from the thread that runs it, in the allocator's order, so the figure is the same
from run to run. (Summing each op's
net allocations at its start instead, as an earlier version did, misses the scratch, undercounts by up
to 30% on torchvision's r3d_18, and moves by up to 20% between runs on small models: a parent op's net
is placed before its children's records.)

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
    events = prof.profiler.kineto_results.events()

    def t0(e):  # the event's start: microseconds in torch 1.13's kineto events, nanoseconds in torch 2.x's
        return e.start_ns() if hasattr(e, "start_ns") else e.start_us()

    def dur(e):
        return e.duration_ns() if hasattr(e, "duration_ns") else e.duration_us()

    step1 = [e for e in events if e.name() == "step1"][0]
    start, end = t0(step1), t0(step1) + dur(step1)
    mem = [e for e in events if e.name() == "[memory]"]
    live = peak = 0
    for e in sorted(mem, key=t0):  # stable: records of one clock tick keep their order
        live += e.nbytes()
        if start <= t0(e) <= end:
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
