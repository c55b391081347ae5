"""A kernel's own launch parameters, one row per GPU architecture: the table each kernel module keeps beside its kernel.

What every kernel shares on an architecture (warp size, the rule for warps by row width, the elementwise block) is in
:mod:`kernels.arch`; what one kernel chooses for itself is a row of its table, a frozen dataclass of that kernel's
knobs (a subclass of :class:`LaunchRow`) with two fields every row has: ``measured``, whether a measurement on that
architecture chose the row's values, and ``source``, where that measurement is written down.  An architecture without
a row takes the table's ``default`` (the kernel's rule, measured nowhere).

The table is plain data to programs too: :meth:`LaunchTable.records` lists its rows as dicts (``arch`` and the row's
fields), :meth:`LaunchTable.with_records` makes the table those records describe, and :meth:`LaunchTable.row_source`
writes a row as the Python that declares it, so a tuning run can read a kernel's table and propose a new one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Generic, Mapping, TypeVar

import torch

from kernels.arch import launch_arch


@dataclass(frozen=True)
class LaunchRow:
    """The fields every row of every kernel's launch table has."""

    measured: bool = False  # a measurement on this architecture chose the row's values
    source: str = ""  # where that measurement is recorded (a docs/perf page and its section)


R = TypeVar("R", bound=LaunchRow)


class LaunchTable(Generic[R]):
    """One kernel's launch rows by architecture name (``sm_90``, ``gfx950``, ...), and its ``default`` row."""

    def __init__(self, kernel: str, default: R, rows: Mapping[str, R] | None = None):
        self.kernel = kernel
        self.default = default
        self.rows: dict[str, R] = dict(rows or {})
        for arch, row in self.rows.items():
            if type(row) is not type(default):
                raise TypeError(f"{kernel}: the {arch} row is a {type(row).__name__}, not a {type(default).__name__}")

    def for_arch(self, arch: str) -> R:
        """The row of ``arch``, or the default row where the table has none."""
        return self.rows.get(arch, self.default)

    def for_device(self, device: torch.device | None = None) -> R:
        """The row a launch on ``device`` uses (:func:`kernels.arch.launch_arch`: the compile target's inside
        :func:`kernels.arch.compile_target`)."""
        return self.for_arch(launch_arch(device))

    def records(self) -> list[dict[str, Any]]:
        """Every row as plain data, ``{"arch": ..., **fields}``, by architecture name."""
        return [{"arch": arch, **_fields(row)} for arch, row in sorted(self.rows.items())]

    def with_records(self, records: list[dict[str, Any]]) -> "LaunchTable[R]":
        """The table whose rows ``records`` (as :meth:`records` gives them) describe; a field a record leaves out
        takes the default row's value, and a field the rows do not have is a TypeError."""
        rows = {
            record["arch"]: dataclasses.replace(
                self.default, **{k: _frozen(v) for k, v in record.items() if k != "arch"}
            )
            for record in records
        }
        return LaunchTable(self.kernel, self.default, rows)

    def row_source(self, row: R) -> str:
        """``row`` as the Python that declares it in the kernel's module (a value of the ``rows=`` argument): the
        fields that differ from the default row's."""
        args = ", ".join(f"{k}={v!r}" for k, v in _fields(row).items() if v != getattr(self.default, k))
        return f"{type(row).__name__}({args})"


def _fields(row: LaunchRow) -> dict[str, Any]:
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}


def _frozen(value: Any) -> Any:
    """Lists (as JSON gives them) as tuples, so a row made from records is hashable and equals the declared one."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value
