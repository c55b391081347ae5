"""Launch plans: an eager call's launches, recorded once per argument geometry and replayed.

The launches are the direct launches of :mod:`kernels.fast_launch`; a public kernel function's eager path
(:meth:`kernels.launch.PublicKernel.__call__`) finds, replays and records the plans.
"""

from __future__ import annotations

import contextlib

import torch

from kernels import fast_launch


def plan_key(*items) -> tuple:
    """What a recorded launch depends on, besides the tensors' addresses: each tensor's shape, strides, dtype,
    device and 16-byte alignment (Triton specialises on it), the type and value of everything else, and the
    current device."""
    return (fast_launch.current_device(),) + tuple(
        [
            (t.shape, t.stride(), t.dtype, t.device, t.data_ptr() & 15) if isinstance(t, torch.Tensor) else (type(t), t)
            for t in items
        ]
    )


class _Plan:
    """The launches of one call: for each, the C launch function, its leading arguments and whether the kernel's
    arguments go packed in one sequence (:func:`kernels.fast_launch._raw_launch`), the grid, the argument
    values with the tensors' addresses left to fill in (slot -> index of the call's tensor), and the constexprs."""

    __slots__ = ("launches",)

    def __init__(self, launches):
        self.launches = launches

    def __call__(self, tensors) -> None:
        stream = fast_launch.current_stream(fast_launch.current_device())
        for (fn, prefix, packed), (g0, g1, g2), values, slots, constexprs in self.launches:
            values = values.copy()
            for slot, i in slots:
                values[slot] = tensors[i].data_ptr()
            if packed:
                fn(g0, g1, g2, stream, *prefix, (*values, *constexprs))
            else:
                fn(g0, g1, g2, stream, *prefix, *values, *constexprs)


MAX_PLANS = 1024  # per function
_UNPLANNABLE = object()  # a key whose launches cannot be replayed from the call's tensors
PLANS: dict[str, "LaunchPlans"] = {}  # every public function's plans, by the function's name


class LaunchPlans:
    """Per public kernel function: ``plan_key`` -> the call's launches, so that a repeated eager call (the same
    shapes, strides, dtypes, devices, alignment and scalars: every call of a model's layer) skips the argument
    checks and the launch set-up, both already done for that key, and only allocates its outputs and launches.

    Without a plan (``find``), the caller runs its full path (checks included) inside ``record``, which keeps the
    launches if each one can be repeated from the call's tensors alone: every tensor the kernel takes must be one of
    the call's own tensors (inputs and outputs) at its address.  A view at an offset, a copy, or two of the call's
    tensors at one address leave the key unrecorded, and each such call takes the full path."""

    def __init__(self, name: str):
        self.plans: dict = {}
        PLANS[name] = self

    def find(self, *items) -> tuple[tuple | None, _Plan | None]:
        """``(key, plan)`` of a call on ``items`` (its tensors and scalars, in a fixed order); ``(None, None)``
        when the fast launch is not in use, ``(key, None)`` when nothing is recorded for the key."""
        if not fast_launch.fast_launch_active():
            return None, None
        key = plan_key(*items)
        try:
            plan = self.plans.get(key)
        except TypeError:  # an unhashable scalar: the full path's checks reject it
            return None, None
        if plan is _UNPLANNABLE:
            return None, None  # known not to replay: the full path, without recording again
        return key, plan

    @contextlib.contextmanager
    def record(self, key, tensors):
        if key is None:
            yield
            return
        fast_launch.start_recording()
        try:
            yield
        finally:
            launches = fast_launch.stop_recording()
        if launches is None:
            self._keep(key, _UNPLANNABLE)
            return
        addresses = [t.data_ptr() if isinstance(t, torch.Tensor) else None for t in tensors]
        plan = []
        for raw, grid3, values, tensor_slots, constexprs in launches:
            slots = []
            for slot in tensor_slots:
                at = [i for i, a in enumerate(addresses) if a == values[slot]]
                if len(at) != 1:
                    self._keep(key, _UNPLANNABLE)
                    return
                slots.append((slot, at[0]))
            plan.append((raw, grid3, values, tuple(slots), constexprs))
        self._keep(key, _Plan(tuple(plan)))

    def _keep(self, key, plan) -> None:
        if len(self.plans) >= MAX_PLANS:  # shapes that never repeat (e.g. a growing sequence): start over
            self.plans.clear()
        self.plans[key] = plan


def forget_launches() -> None:
    """Drop every direct launcher's kept kernels and every public function's launch plans (they hold the
    constexprs a launch was recorded with), so the next calls take the full path again: after a change to what
    the launch table says, e.g."""
    fast_launch.forget_direct_launches()
    for plans in PLANS.values():
        plans.plans.clear()
