"""The correctness job: every implementation against a float64 reference, on fresh random inputs and on the input
cases that break kernels on GPUs (workers/jobs/input_cases.py: large and near-max values, zero and tiny rows, NaN/inf,
row widths around the block, strided rows).

Outputs are poisoned with NaN before the call wherever the implementation writes into a given buffer, so an
element it never wrote fails the check; NaN never passes.  Metrics per implementation: ``rel_err``
(||out-ref||/||ref||), ``max_abs`` and ``correct`` (1.0/0.0) against the entry's tolerances for the dtype.
"""

from __future__ import annotations

import random
import traceback
from dataclasses import dataclass
from typing import Any

import torch

from kernels import registry
from kernels.registry import Impl, KernelEntry
from workers.jobs import autotune_pick, input_cases
from workers.spec import STATUS_INCORRECT, STATUS_OK, STATUS_SKIPPED, JobResult, JobSpec, Measurement


@dataclass
class Check:
    rel_err: float
    max_abs: float
    ok: bool
    note: str = ""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def compare(out: Any, ref: Any, tol: tuple[float, float], scaled: bool = False) -> Check:
    """``out`` against the float64 ``ref`` within ``tol`` = (relative L2, max-abs).

    Where the reference is not finite once rounded to the output's dtype (NaN, inf, or beyond the dtype's range), the
    output must be the same (NaN, or inf of that sign); everywhere else it must be finite and within the tolerance
    over those elements.  ``scaled``: the inputs were scaled away from the random case's magnitude, so the max-abs
    limit scales with the reference's largest finite value (when above 1)."""
    outs, refs = _as_tuple(out), _as_tuple(ref)
    if len(outs) != len(refs):
        return Check(float("inf"), float("inf"), False, f"{len(outs)} outputs, reference has {len(refs)}")
    worst_rel, worst_abs, note, abs_limit = 0.0, 0.0, "", tol[1]
    for i, (o, r) in enumerate(zip(outs, refs)):
        if tuple(o.shape) != tuple(r.shape):
            return Check(
                float("inf"), float("inf"), False, f"output {i} has shape {tuple(o.shape)}, expected {tuple(r.shape)}"
            )
        o64 = o.detach().to(device=r.device, dtype=torch.float64)
        expected = r.to(o.dtype).to(torch.float64) if o.is_floating_point() else r
        special = ~torch.isfinite(expected)
        if special.any():
            same = (torch.isnan(o64) & torch.isnan(expected)) | (o64 == expected)
            wrong = int((special & ~same).sum())
            if wrong:
                return Check(
                    float("nan"),
                    float("nan"),
                    False,
                    f"output {i}: {wrong} of {int(special.sum())} NaN/inf elements of the reference not reproduced",
                )
            o64, r = o64[~special], r[~special]
        if not torch.isfinite(o64).all():
            bad = int((~torch.isfinite(o64)).sum())
            return Check(
                float("nan"), float("nan"), False, f"output {i}: {bad} non-finite elements (unwritten or overflow)"
            )
        if o64.numel() == 0:
            continue
        diff = o64 - r
        denom = torch.linalg.vector_norm(r).item()
        rel = torch.linalg.vector_norm(diff).item() / (denom if denom > 0 else 1.0)
        mabs = diff.abs().max().item()
        if scaled:
            abs_limit = max(abs_limit, tol[1] * r.abs().max().item())
        worst_rel, worst_abs = max(worst_rel, rel), max(worst_abs, mabs)
    ok = worst_rel <= tol[0] and worst_abs <= abs_limit
    if not ok:
        note = f"rel_err {worst_rel:.3g} (limit {tol[0]:.3g}), max_abs {worst_abs:.3g} (limit {abs_limit:.3g})"
    return Check(worst_rel, worst_abs, ok, note)


def poisoned(out: Any) -> Any:
    for t in _as_tuple(out):
        if t.is_floating_point():
            t.fill_(float("nan"))
    return out


def call(impl: Impl, fn, inputs: dict, entry: KernelEntry, poison: bool) -> Any:
    if poison and impl.accepts_out:
        out = poisoned(entry.alloc_out(inputs))
        result = fn(**inputs, out=out)
        return out if result is None else result
    return fn(**inputs)


def check_impl(
    entry: KernelEntry,
    impl: Impl,
    fn,
    inputs: dict,
    ref: Any,
    dtype_name: str,
    device: torch.device,
    scaled: bool = False,
) -> Check:
    out = call(impl, fn, inputs, entry, poison=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    chk = compare(out, ref, entry.tolerances[dtype_name], scaled)
    triton = impl.name == "triton" or impl.name.startswith("triton[")
    if (
        not chk.ok
        and triton
        and dtype_name == "bf16"
        and device.type == "cpu"
        and chk.rel_err < INTERPRETER_ROUNDING_REL
    ):
        chk.note += f"; {INTERPRETER_ROUNDING_HINT}"
    return chk


# A bf16 result off by about one rounding step on a CPU: the mark of Triton's interpreter, which truncates a plain
# .to(tl.bfloat16) where a GPU (and torch) rounds to nearest even (kernels/rounding.py)
INTERPRETER_ROUNDING_REL = 2.0**-7
INTERPRETER_ROUNDING_HINT = (
    "if a Triton kernel stores with .to(tl.bfloat16): Triton's interpreter truncates it, store "
    "kernels.rounding.round_to(value, out_ptr.dtype.element_ty) instead (rounds as a GPU does)"
)


def job_seed(spec: JobSpec) -> int:
    seed = spec.params.get("seed")
    return int(seed) if seed is not None else random.SystemRandom().randrange(2**31)


def prepare(spec: JobSpec, device: torch.device) -> tuple[KernelEntry, torch.dtype, dict, int]:
    """Entry, dtype, fresh inputs and the seed they came from; ValueError for a shape/dtype the kernel rejects."""
    entry = registry.get(spec.kernel or "")
    dtype = registry.dtype_of(spec.dtype)
    if spec.dtype not in entry.dtypes:
        raise ValueError(f"{entry.name} does not support dtype {spec.dtype}; allowed: {', '.join(entry.dtypes)}")
    entry.check_shape(tuple(spec.shape))
    seed = job_seed(spec)
    gen = torch.Generator().manual_seed(seed)
    return entry, dtype, entry.make_inputs(tuple(spec.shape), dtype, device, gen), seed


def resolve_impls(entry: KernelEntry, names: list[str], device: torch.device) -> tuple[dict[str, Impl], dict]:
    usable, unavailable = {}, {}
    for name in names:
        impl = entry.impls.get(name)
        if impl is None:
            unavailable[name] = f"unknown implementation; {entry.name} has {', '.join(entry.impl_names())}"
            continue
        reason = impl.unavailable(device)
        if reason:
            unavailable[name] = reason
        else:
            usable[name] = impl
    return usable, unavailable


def skipped(spec: JobSpec, unavailable: dict[str, str], details: dict[str, Any]) -> JobResult:
    """The result of a kernel job none of whose implementations can run on this device, with each one's reason."""
    return JobResult(
        spec.key,
        STATUS_SKIPPED,
        details=details,
        error="no implementation can run here: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()),
    )


def _check_case(entry, impl, fn, spec, name, case, inputs, ref, device) -> Check:
    try:
        with autotune_pick.compiling(key=autotune_pick.job_key(spec, name)):  # for the micro job's record
            return check_impl(entry, impl, fn, inputs, ref, spec.dtype, device, case.scaled)
    except Exception as exc:  # an implementation that raises is a failed implementation, not a failed job
        msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return Check(float("nan"), float("nan"), False, msg)


def run(spec: JobSpec, device: torch.device) -> JobResult:
    """Every implementation on every input case (workers/jobs/input_cases.py, the random case first): ``rel_err`` and
    ``max_abs`` are the random case's, ``correct`` is 1.0 only when every case passed; ``details.cases`` holds each
    case's figures per implementation, and the error names each failed case."""
    entry, dtype, inputs, seed = prepare(spec, device)
    usable, unavailable = resolve_impls(entry, spec.impls, device)
    # the cases' order in a list: a results file writes the ``cases`` mapping with its keys sorted
    case_names = [c.name for c in input_cases.CASES]
    details: dict[str, Any] = {
        "seed": seed,
        "unavailable": unavailable,
        "errors": {},
        "cases": {},
        "case_names": case_names,
    }
    if not usable:
        return skipped(spec, unavailable, details)
    fns = {name: impl.make() for name, impl in usable.items()}
    first: dict[str, Check] = {}
    failed: dict[str, list[str]] = {name: [] for name in usable}
    for case in input_cases.CASES:
        gen = torch.Generator().manual_seed(seed)
        case_inputs = inputs if case is input_cases.RANDOM else case.make(entry, tuple(spec.shape), dtype, device, gen)
        if case_inputs is None:
            details["cases"][case.name] = {"applies": False}
            continue
        ref = entry.reference(case_inputs)
        figures = {}
        for name, impl in usable.items():
            chk = _check_case(entry, impl, fns[name], spec, name, case, case_inputs, ref, device)
            first.setdefault(name, chk)
            figures[name] = {"rel_err": chk.rel_err, "max_abs": chk.max_abs, "ok": chk.ok, "note": chk.note}
            if not chk.ok:
                failed[name].append(f"case {case.name}: {chk.note}")
                if case is input_cases.RANDOM:
                    details["errors"][name] = chk.note
        details["cases"][case.name] = figures
    measurements = []
    for name in usable:
        chk = first[name]
        measurements += [
            Measurement(name, "rel_err", chk.rel_err),
            Measurement(name, "max_abs", chk.max_abs),
            Measurement(name, "correct", 0.0 if failed[name] else 1.0),
        ]
    errors = [f"{name}: {'; '.join(notes)}" for name, notes in failed.items() if notes]
    status = STATUS_INCORRECT if errors else STATUS_OK
    return JobResult(spec.key, status, measurements, error="; ".join(errors) or None, details=details)
