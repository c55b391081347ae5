"""How a public kernel function launches its kernel, made once for every kernel: :class:`PublicKernel`.

A kernel module declares its kernel's parts — the argument check, the outputs it allocates, the launch — and
:class:`PublicKernel` makes of them everything else a public function needs: the ``kernelfleet::<name>`` torch op
(so torch.compile, make_fx and export see the launch), its forward-only autograd formula, the eager path (a direct
launch, replayed from the call's launch plan on a repeated geometry: :mod:`kernels.launch_plans`) and the ``_into``
variant that writes into given outputs.  The public functions themselves are written in their modules (their
signatures and docstrings are the API) and hand their arguments to their PublicKernel.

Also here, the small helpers every launch shares: the launcher for a traced or a direct launch, and the layout of
outputs.  The per-architecture launch tables are in :mod:`kernels.arch` (shared) and each kernel's module
(:mod:`kernels.launch_table`), the argument checks in :mod:`kernels.checks`, the direct launcher in
:mod:`kernels.fast_launch`.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any, Callable, Sequence

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from kernels.fast_launch import PLAIN_TENSORS, direct_launcher
from kernels.launch_plans import LaunchPlans


def no_backward(op_name: str):
    """A setup_context/backward pair for torch.library ops that are inference-only."""

    def backward(ctx, *grads):
        raise RuntimeError(f"{op_name} is forward-only (inference); backward is not implemented")

    def setup_context(ctx, inputs, output):
        return None

    return backward, setup_context


def eager_direct(*args: Any) -> bool:
    """Whether a public kernel function may launch its kernel directly instead of calling its torch op; ``args``:
    the call's arguments (those that are not tensors are not looked at).

    The op's dispatch costs tens of microseconds of host time per call, which is the whole runtime of a small
    kernel.  A direct launch computes the same thing, so it is taken in plain eager calls; the op is used while
    torch.compile traces (so it sees the op), for tensor subclasses and fake tensors, and when autograd has to
    record the op (so that backward raises its forward-only error).
    """
    if torch.compiler.is_compiling() or torch.jit.is_tracing() or _get_current_dispatch_mode() is not None:
        return False  # traced (torch.compile, jit.trace, make_fx, export, fake tensors): the op must be seen
    grad = torch.is_grad_enabled()
    for t in args:
        if isinstance(t, torch.Tensor) and (type(t) not in PLAIN_TENSORS or (grad and t.requires_grad)):
            return False
    return True


def launcher(kernel, traced: bool):
    """``wrap_triton(kernel)`` inside an op body (so tracing sees the launch); the kernel itself for direct eager
    launches, where wrap_triton's higher-order-op dispatch would cost far more than the kernel at small sizes."""
    return torch.library.wrap_triton(kernel) if traced else direct_launcher(kernel)


class PublicKernel:
    """A public kernel function's op, eager path and ``_into`` variant, made from the kernel's parts.

    ``name``: the public function's name, which its op (``kernelfleet::<name>``) and its launch plans take too.
    The parts, each called with the call's arguments in the public function's order (``args``) or with the op's
    arguments (``op_args``, what ``prepare(*args)`` returns):

    * ``check(*args)``: raise on bad input (TypeError, ValueError) naming the argument;
    * ``prepare(*args)``: the op's arguments (defaults to ``args`` unchanged), for arguments already checked: a
      float ``eps``, what a layout argument means...;
    * ``new_outs(*op_args)``: the outputs, a tuple with one tensor per name of ``outs``;
    * ``launch(outs, *op_args, traced, config=None)``: the launch (``traced``: inside the op; ``config``: the
      ``_into`` caller's launch knobs, None for the table's).  Its annotated positional parameters after ``outs``
      are the op's schema;
    * ``check_out(outs, *op_args)``: raise when given outputs (a tuple) are not the ones ``new_outs`` would make.

    ``outs``: the outputs' names (``("out",)`` for one), in the ``_into`` variant's errors.
    """

    def __init__(
        self,
        name: str,
        *,
        check: Callable[..., None],
        new_outs: Callable[..., tuple],
        launch: Callable[..., None],
        check_out: Callable[..., None],
        prepare: Callable[..., tuple] | None = None,
        outs: Sequence[str] = ("out",),
    ):
        self.name = name
        self.check = check
        self.prepare = prepare or _same
        self.new_outs = new_outs
        self.launch = launch
        self.check_out = check_out
        self.out_names = tuple(outs)
        self.plans = LaunchPlans(name)  # eager calls' launches, per argument geometry
        self.op = _register_op(name, launch, new_outs, len(self.out_names))

    def __call__(self, *args):
        """The public function's call: the direct launch in plain eager calls (:func:`eager_direct`), the op
        otherwise.  Returns the output, or the tuple of outputs."""
        if not eager_direct(*args):
            self.check(*args)
            return self.op(*self.prepare(*args))
        # With a plan for this geometry (every argument as in a call that passed the checks): allocate and replay
        # it; without one: check, allocate, launch, and record the launches as the key's plan.
        key, plan = self.plans.find(*args)
        if plan is None:
            self.check(*args)
        op_args = self.prepare(*args)
        outs = self.new_outs(*op_args)
        if plan is not None:
            plan(args + outs)
        else:
            with self.plans.record(key, args + outs):
                self.launch(outs, *op_args, traced=False)
        return outs[0] if len(outs) == 1 else outs

    def into(self, out, args: tuple, config=None):
        """The ``_into`` variant: check ``args`` and the given ``out`` (a tensor, or a tuple of one per output) and
        launch into it with the launch knobs ``config`` (None: the launch table's).  Returns ``out`` (a tuple for
        several outputs)."""
        self.check(*args)
        n = len(self.out_names)
        if n == 1:
            outs = (out,)
        elif isinstance(out, (tuple, list)) and len(out) == n:
            outs = tuple(out)
        else:
            raise TypeError(f"out must be a pair ({', '.join(self.out_names)}) of tensors, got {type(out).__name__}")
        op_args = self.prepare(*args)
        self.check_out(outs, *op_args)
        self.launch(outs, *op_args, traced=False, config=config)
        return out if n == 1 else outs


def _same(*args) -> tuple:
    return args


def _register_op(name: str, launch: Callable[..., None], new_outs: Callable[..., tuple], n_outs: int):
    """``kernelfleet::<name>`` as a triton op whose body allocates with ``new_outs`` and launches with ``launch``
    (traced), its schema ``launch``'s annotated positional parameters after ``outs``; forward-only.  Returns the
    op (``torch.ops.kernelfleet.<name>``)."""
    hints = typing.get_type_hints(launch)
    params = [
        p.replace(annotation=hints[p.name])
        for p in list(inspect.signature(launch).parameters.values())[1:]
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]
    returns = torch.Tensor if n_outs == 1 else tuple[(torch.Tensor,) * n_outs]
    signature = inspect.Signature(params, return_annotation=returns)

    def body(*args, **kwargs):
        if kwargs:
            args = signature.bind(*args, **kwargs).args
        outs = new_outs(*args)
        launch(outs, *args, traced=True)
        return outs[0] if n_outs == 1 else outs

    body.__signature__ = signature
    body.__name__ = body.__qualname__ = f"{name}_op"
    body.__module__ = launch.__module__
    qualified = f"kernelfleet::{name}"
    torch.library.triton_op(qualified, body, mutates_args=())
    backward, setup_context = no_backward(qualified)
    torch.library.register_autograd(qualified, backward, setup_context=setup_context)
    return getattr(torch.ops.kernelfleet, name)


def table_strides(t: torch.Tensor) -> tuple[int, int]:
    """(stride_b, stride_s) of a cos/sin table, ``[S, D]`` or ``[B, S, D]``; stride 0 over the batch when it is
    shared (an ``[S, D]`` table, or a batch of one)."""
    st = t.stride()
    if len(st) == 2:
        return 0, st[0]
    return (st[0] if t.shape[0] > 1 else 0), st[1]


def unit_last(t: torch.Tensor | None) -> torch.Tensor | None:
    """``t`` itself when its last dim is unit-stride (what the kernels address), else a contiguous copy."""
    return t if t is None or t.stride(-1) == 1 else t.contiguous()


def out_like(t: torch.Tensor) -> torch.Tensor:
    """An output for ``t``: laid out like ``t`` where its last dim is unit-stride, else contiguous (as for the
    contiguous copy that :func:`unit_last` makes)."""
    return torch.empty_like(t) if t.stride(-1) == 1 else torch.empty(t.shape, dtype=t.dtype, device=t.device)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1): ``triton.next_power_of_2`` without its per-call cost
    (a @jit function called from Python); for plain ints only."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def cdiv(a, b):
    """Ceiling division for ints and SymInts (``triton.cdiv`` without its per-call cost)."""
    return (a + b - 1) // b
