"""What a kernel lets a tuning run change: its launch knobs, their legal values, and the launch its table picks today.

A kernel's entry declares a :class:`Tune` (``KernelEntry.tune``): the knobs by name, in the order candidate names
list them, and for a shape on an architecture the legal candidates (dicts of knob -> value), the candidate its launch
table (or the architecture's rule) picks now, the ``_config`` override a candidate launches with, and the width
bucket the shape falls in (what a launch-table row is keyed by: shapes of one bucket compile alike).  A block that
must cover a whole row (a row kernel's width, the next power of two of the row) is never a knob.

A candidate is timed as an implementation of its own, named :func:`impl_name` (``triton[num_warps=8,
rows_per_program=1]``), so the store keeps each as a series of its own.  workers/jobs/tune.py runs the candidates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from kernels.arch import for_arch

Candidate = dict[str, int]
Shape = Sequence[int]


@dataclass(frozen=True)
class Tune:
    """A kernel's tunable launch knobs (see the module docstring)."""

    knobs: tuple[str, ...]
    # (shape, arch) -> the legal candidates, each a dict of every knob
    candidates: Callable[[Shape, str], list[Candidate]]
    # (shape, arch) -> the candidate the kernel's launch table (or the architecture's rule) picks today
    current: Callable[[Shape, str], Candidate]
    # (candidate, shape) -> the ``_config`` override of the kernel's ``*_into`` function
    config: Callable[[Candidate, Shape], Any]
    # shape -> the width bucket (``block=2048``): shapes of one bucket launch the same compiled kernel per candidate
    bucket: Callable[[Shape], str]
    # launch(**inputs, out=..., _config=...): the entry's Triton implementation with a launch override
    launch: Callable[..., Any]
    # what the knobs are, for people (the help and the docs)
    description: str = ""
    # the launch table whose rows record the choices (the entry's ``launch_table``), and how: (row, {bucket:
    # candidate}) -> the row with those choices (``tune table`` writes them, orchestrator/reports/tune_table.py)
    table: Any = None
    with_choices: Callable[[Any, dict[str, Candidate]], Any] | None = None


TRITON = "triton"
_NAME = re.compile(r"^triton\[([a-z_]+=\d+(?:,[a-z_]+=\d+)*)\]$")


def impl_name(tune: Tune, candidate: Candidate) -> str:
    """``triton[knob=value,...]``, the knobs in the entry's declared order."""
    missing = [k for k in tune.knobs if k not in candidate]
    if missing or set(candidate) - set(tune.knobs):
        raise ValueError(f"candidate {candidate} does not name exactly the knobs {', '.join(tune.knobs)}")
    return TRITON + "[" + ",".join(f"{k}={int(candidate[k])}" for k in tune.knobs) + "]"


def parse_impl(tune: Tune, name: str) -> Candidate:
    """The candidate an implementation name (:func:`impl_name`) stands for; ValueError for any other name."""
    m = _NAME.match(name)
    if not m:
        raise ValueError(f"{name!r} is not a tune candidate's name (triton[{'=N,'.join(tune.knobs)}=N])")
    candidate = {k: int(v) for k, v in (part.split("=") for part in m.group(1).split(","))}
    if list(candidate) != list(tune.knobs):
        raise ValueError(f"{name!r}: expected the knobs {', '.join(tune.knobs)} in that order")
    return candidate


def is_candidate_name(name: str) -> bool:
    return bool(_NAME.match(name))


def choices(tune: Tune, shape: Shape, arch: str) -> list[Candidate]:
    """The legal candidates of ``shape`` on ``arch`` with the current choice among them (first when the legal set
    lacks it), without duplicates."""
    current = tune.current(shape, arch)
    out: list[Candidate] = []
    seen: set[tuple] = set()
    for c in [*tune.candidates(shape, arch), current]:
        key = tuple(c[k] for k in tune.knobs)
        if key not in seen:
            seen.add(key)
            out.append({k: int(c[k]) for k in tune.knobs})
    return out


# ------------------------------------------------------------------------------------------------ legal values
WARPS = (1, 2, 4, 8, 16)  # num_warps Triton launches (a program of at most 16 warps: 1024 lanes on wave64)


def pow2_range(lo: int, hi: int) -> list[int]:
    """Powers of two from ``lo`` to ``hi``, both included (``lo`` itself a power of two)."""
    out, v = [], max(1, lo)
    while v <= hi:
        out.append(v)
        v *= 2
    return out


def warps_for_elements(elements: int, arch: str, per_lane: tuple[int, int]) -> list[int]:
    """The warps that give each lane of a program of ``elements`` between ``per_lane[0]`` and ``per_lane[1]``
    elements on ``arch`` (its warp size), at most 1024 lanes a program."""
    warp = for_arch(arch).warp_size
    lo, hi = per_lane
    return [w for w in WARPS if w * warp <= 1024 and lo <= elements // (w * warp) and elements <= hi * w * warp]
