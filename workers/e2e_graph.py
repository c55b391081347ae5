"""The e2e job's ``+graph`` modes: every call of a module's forward replayed from a CUDA graph.

A denoising step's transformer call launches about a thousand kernels; from Python, on a busy host, enqueueing them
can take longer than the device takes to run them, and then the step time measures the host.  A CUDA graph launches
the whole forward at once, so a graphed mode's step time is the device's: what the kernels themselves are worth,
whatever the host.  The same wrapper goes around every mode (eager, the kernels, torch.compile), so graphed modes
compare with each other; the modes without ``graph`` are what a user gets from plain calls.

:class:`GraphedForward` stands in for ``module.forward``.  For each new call geometry (the tensors' shapes, strides,
dtypes and devices, and the values of everything else) it copies the tensors into static buffers, runs the forward
twice on a side stream (lazy initialisation, Triton JIT, torch.compile's compilation) and captures a third run; that
call and every later one with the same geometry copy their tensors into the buffers and replay the graph.  Graphs
share one memory pool.  The output is the graph's own (static) output: the next replay overwrites it, which suits a
denoising loop (diffusers' pipelines turn the prediction into new tensors before the next call), not a caller that
keeps outputs across calls.  Whatever the forward decides in Python (an injected processor's checks, torch.compile's
guards) is decided once, at the capture: a model changed afterwards (weights replaced, kernels injected or
restored) needs :func:`uninstall` and a new :func:`install`, which the e2e job does between modes.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

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

    def __init__(self, forward: Callable[..., Any]):
        self.forward = forward
        self.graphs: dict[tuple, _Graph] = {}
        self.pool = None
        self.replays = 0
        self.captures = 0

    def __call__(self, *args, **kwargs):
        leaves, spec = tree_flatten((args, kwargs))
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


def install(module: torch.nn.Module) -> GraphedForward:
    """Make ``module``'s calls replay CUDA graphs (an instance attribute over the class's ``forward``)."""
    if "forward" in vars(module):
        raise RuntimeError(f"{type(module).__name__} already has its own forward on the instance")
    graphed = GraphedForward(module.forward)
    module.forward = graphed
    return graphed


def uninstall(module: torch.nn.Module) -> None:
    """Undo :func:`install`: the class's ``forward`` again, the graphs' memory given back."""
    graphed = vars(module).get("forward")
    if not isinstance(graphed, GraphedForward):
        return
    del module.forward
    graphed.release()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
