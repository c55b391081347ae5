"""A module's calls replayed from CUDA graphs (HIP graphs on ROCm): the injected kernels without the host's cost.

A denoising step's transformer call launches hundreds of kernels; from Python, on a busy host, enqueueing them can
take longer than the device takes to run them, and then the step time is the host's.  A CUDA graph launches the
whole forward at once:

    from kernels.inject import inject, cuda_graphs, remove_cuda_graphs
    inject(pipe)
    cuda_graphs(pipe.transformer)    # every later call of the transformer replays a graph
    video = pipe(...)
    remove_cuda_graphs(pipe.transformer)

:class:`GraphedForward` stands in for ``module.forward``.  For each new call geometry (the tensors' shapes, strides,
dtypes and devices, and the values of everything else) it copies the tensors into static buffers, runs the forward
twice on a side stream (lazy initialisation, Triton JIT, torch.compile's compilation) and captures a third run; that
call and every later one with the same geometry copy their tensors into the buffers and replay the graph.  Graphs
share one memory pool.  What it needs and costs:

* **Static shapes.** Each geometry is a graph of its own (at most :data:`MAX_GRAPHS` per module, beyond that a call
  runs the plain forward) and its memory stays reserved until :func:`remove_cuda_graphs`.
* **Outputs are the graph's own.** The next replay overwrites them, which suits a denoising loop (diffusers'
  pipelines turn the prediction into new tensors before the next call), not a caller that keeps outputs across
  calls: clone what you keep.
* **Decisions are frozen at the capture.** Whatever the forward decides in Python (an injected processor's checks,
  torch.compile's guards) is decided once.  A model changed afterwards (weights replaced, kernels injected or
  restored) needs :func:`remove_cuda_graphs` and a new :func:`cuda_graphs`.
* CPU calls pass through unchanged (nothing to capture).
* **Inference only.** A graph replays kernels, not autograd: a call made with autograd recording and an input or a
  parameter of the module that requires grad (training, a LoRA step) runs the plain forward (no capture, no replay),
  whose injected kernels themselves take the model's own code for such calls (:mod:`kernels.inject.grad`).  Calls
  under ``torch.no_grad()``/``inference_mode()`` (diffusers' pipelines) or with nothing requiring grad are captured
  and replayed.

The e2e job's ``+graph`` modes (``workers.jobs.e2e.job``) use it; ``docs/perf/ltx-e2e-h200.md`` has what it is worth on
LTX-Video.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from kernels.inject.grad import grad_enabled, wants_grad

WARMUP_CALLS = 2  # forwards before a capture, on a side stream
MAX_GRAPHS = 4  # geometries kept per module; beyond that a call runs the forward as it is


def _geometry(leaves: list) -> tuple | None:
    """What a graph is specific to, per flattened argument; None when an argument cannot be keyed."""
    key = []
    for a in leaves:
        if isinstance(a, torch.Tensor):
            key.append((tuple(a.shape), a.stride(), a.dtype, a.device))
        else:
            key.append((type(a), a))
    try:
        hash(tuple(key))
    except TypeError:
        return None
    return tuple(key)


class _Graph:
    __slots__ = ("graph", "inputs", "slots", "output")

    def __init__(self, graph, inputs, slots, output):
        self.graph, self.inputs, self.slots, self.output = graph, inputs, slots, output


class GraphedForward:
    """``module.forward`` replayed from CUDA graphs (see the module doc); ``replays`` and ``captures`` count."""

    def __init__(self, forward: Callable[..., Any], module: torch.nn.Module | None = None):
        self.forward = forward
        self.module = module  # whose parameters a call's gradient check looks at
        self.graphs: dict[tuple, _Graph] = {}
        self.pool = None
        self.replays = 0
        self.captures = 0
        self.plain_for_grad = 0  # calls run plainly because autograd wanted a gradient

    def __call__(self, *args, **kwargs):
        leaves, spec = tree_flatten((args, kwargs))
        if grad_enabled() and self._wants_grad(leaves):
            self.plain_for_grad += 1
            return self.forward(*args, **kwargs)
        geometry = _geometry(leaves)
        if geometry is None:
            return self.forward(*args, **kwargs)
        key = (spec, geometry)
        g = self.graphs.get(key)
        if g is None:
            if len(self.graphs) >= MAX_GRAPHS or not any(isinstance(a, torch.Tensor) and a.is_cuda for a in leaves):
                return self.forward(*args, **kwargs)
            g = self.graphs[key] = self._capture(leaves, spec)
        for slot, buf in zip(g.slots, g.inputs):
            buf.copy_(leaves[slot])
        g.graph.replay()
        self.replays += 1
        return g.output

    def _wants_grad(self, leaves: list) -> bool:
        if self.module is not None:
            return wants_grad(self.module, leaves)
        return any(isinstance(a, torch.Tensor) and a.requires_grad for a in leaves)

    def _capture(self, leaves: list, spec) -> _Graph:
        slots = [i for i, a in enumerate(leaves) if isinstance(a, torch.Tensor)]
        inputs = [leaves[i].clone() for i in slots]
        static = list(leaves)
        for i, buf in zip(slots, inputs):
            static[i] = buf
        args, kwargs = tree_unflatten(static, spec)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_CALLS):
                self.forward(*args, **kwargs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            output = self.forward(*args, **kwargs)
        self.pool = graph.pool()
        self.captures += 1
        return _Graph(graph, inputs, slots, output)

    def release(self) -> None:
        """Drop every graph and its memory (the caller then empties the allocator's cache)."""
        self.graphs.clear()
        self.pool = None


def cuda_graphs(module: torch.nn.Module) -> GraphedForward:
    """Make ``module``'s calls replay CUDA graphs (an instance attribute over the class's ``forward``); returns the
    wrapper, whose ``captures`` and ``replays`` count."""
    if "forward" in vars(module):
        raise RuntimeError(f"{type(module).__name__} already has its own forward on the instance")
    graphed = GraphedForward(module.forward, module)
    module.forward = graphed
    return graphed


def remove_cuda_graphs(module: torch.nn.Module) -> None:
    """Undo :func:`cuda_graphs`: the class's ``forward`` again, the graphs' memory given back."""
    graphed = vars(module).get("forward")
    if not isinstance(graphed, GraphedForward):
        return
    del module.forward
    graphed.release()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
