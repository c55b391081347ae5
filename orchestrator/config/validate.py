"""Check a composed configuration's values against the kernel registry, before anything is scheduled."""

from __future__ import annotations

import math
from typing import Any

from orchestrator.config.compose import ConfigError, conf_dir, conf_files, kernel_grids
from workers import kinds
from workers.jobs import isa_targets
from workers.spec import FLUSH_MODES

# The most memory one GPU of the fleet's kinds has (workers.device.gpu_types): a job whose tensors need more runs
# nowhere
LARGEST_GPU, LARGEST_GPU_MEMORY_BYTES = "AMD Instinct MI355X", 288 * 10**9


def effective_grid(cfg: dict, kname: str) -> dict[str, Any]:
    """A kernel's grid after the sweep-level overrides (sweep.shapes/dtypes/impls win over the kernel's own)."""
    k = cfg["kernels"][kname]
    sw = cfg["sweep"]
    return {
        "name": k["name"],
        "shapes": sw["shapes"] if sw.get("shapes") is not None else k["shapes"],
        "dtypes": sw["dtypes"] if sw.get("dtypes") is not None else k["dtypes"],
        "impls": sw["impls"] if sw.get("impls") is not None else k["impls"],
    }


def selected_kernels(cfg: dict) -> list[str]:
    names = list(cfg["kernels"])
    only = cfg["sweep"].get("kernels")
    if only is None:
        return names
    for n in only:
        if n not in names:
            raise ConfigError(
                f"sweep.kernels: {n!r} is not in this sweep; kernels here: {', '.join(names)} "
                f"(add one with +kernel@kernels.NAME=NAME)"
            )
    return list(only)


def _check_members(where: str, values: list, allowed: list, what: str) -> None:
    if not values:
        raise ConfigError(f"{where}: empty; allowed: {', '.join(allowed)}")
    for v in values:
        if v not in allowed:
            raise ConfigError(f"{where}: unknown {what.format(v)}; allowed: {', '.join(allowed)}")


def check_kernel_grids() -> None:
    """Every file of conf/kernel/ names a kernel of the registry's kernels/entries/, and every such kernel has a
    default grid: its entry's ``grid``, or conf/kernel/<name>.yaml."""
    from kernels import registry

    kernels, files = set(registry.builtin()), set(conf_files("kernel"))
    folder = conf_dir() / "kernel"
    for name in sorted(files - kernels):
        raise ConfigError(
            f"{folder / name}.yaml: no kernel {name!r} is registered (kernels/entries/); registered "
            f"kernels: {', '.join(sorted(kernels))}"
        )
    for name in sorted(kernels - set(kernel_grids())):
        raise ConfigError(
            f"kernel {name!r} (kernels/entries/) has no grid: declare grid=Grid(shapes=...) in its entry, or add "
            f"{folder / name}.yaml with its name, shapes, dtypes and impls"
        )


def _check_name(name: str) -> None:
    """A sweep name the store can hold (the runs table's column) on SQLite and PostgreSQL alike."""
    from orchestrator.store.models import Run

    limit = Run.sweep.type.length
    if not name.strip() or len(name) > limit or "\x00" in name:
        raise ConfigError(
            f"sweep.name: expected 1 to {limit} characters without NUL, got {len(name)} characters ({name[:40]!r}...)"
        )


def check_isa(cfg: dict) -> None:
    """The checks of a sweep with isa jobs (workers/kinds/isa.py): its compile targets are known."""
    _check_members("sweep.archs", list(cfg["sweep"]["archs"]), list(isa_targets.TARGETS), "compile target {!r}")


def validate(cfg: dict) -> None:
    from kernels import registry

    check_kernel_grids()
    sw = cfg["sweep"]
    known = kinds.names()
    if not sw["kinds"]:
        raise ConfigError(f"sweep.kinds: empty, so nothing would run; allowed: {', '.join(known)}")
    for kind in sw["kinds"]:
        if kind not in known:
            raise ConfigError(f"sweep.kinds: unknown job kind {kind!r}; allowed: {', '.join(known)}")
    for key in ("warmup_ms", "rep_ms", "timeout_s"):
        if not (sw[key] > 0 and math.isfinite(sw[key])):
            raise ConfigError(f"sweep.{key}: must be a finite number > 0, got {sw[key]}")
    for key in ("rounds", "batch_size"):
        if sw[key] < 1:
            raise ConfigError(f"sweep.{key}: must be >= 1, got {sw[key]}")
    if sw["flush"] not in FLUSH_MODES:
        raise ConfigError(f"sweep.flush: unknown {sw['flush']!r}; allowed: {', '.join(FLUSH_MODES)}")
    if sw["max_retries"] < 0:
        raise ConfigError(f"sweep.max_retries: must be >= 0, got {sw['max_retries']}")
    if sw.get("seed") is not None and sw["seed"] < 0:  # the same rule `python -m workers run` applies to a plan
        raise ConfigError(f"sweep.seed: must be an integer >= 0 (or null: fresh inputs every run), got {sw['seed']}")
    _check_name(str(sw["name"]))
    wanted = [kinds.kind_of(k) for k in sw["kinds"]]
    for kind in wanted:  # each kind's own checks (its declaration's validator, workers/kinds/)
        if kind.validator:
            kinds.resolve(kind.validator)(cfg)
    wants_kernels = any(k.per_kernel for k in wanted)
    compiled = [k.name for k in wanted if k.compile_only]
    names = selected_kernels(cfg)
    if wants_kernels and not names:
        raise ConfigError(
            "kernels: this sweep names no kernel; add one with +kernel@kernels.NAME=NAME; "
            f"known kernels: {', '.join(registry.kernel_names())}"
        )
    for kname in names:
        grid = effective_grid(cfg, kname)
        where = f"kernels.{kname}"
        try:
            entry = registry.get(grid["name"])
        except registry.UnknownKernelError as exc:
            raise ConfigError(f"{where}.name: {exc}") from None
        _check_members(f"{where}.impls", grid["impls"], entry.impl_names(), f"implementation {{!r}} of {entry.name}")
        _check_members(f"{where}.dtypes", grid["dtypes"], list(entry.dtypes), f"dtype {{!r}} for {entry.name}")
        if compiled and "triton" not in entry.impls:
            raise ConfigError(
                f"{where}: {entry.name} has no triton implementation to compile (sweep.kinds has {compiled[0]})"
            )
        if not grid["shapes"]:
            raise ConfigError(f"{where}.shapes: empty")
        for i, shape in enumerate(grid["shapes"]):
            if (
                not isinstance(shape, (list, tuple))
                or not shape
                or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)
            ):
                raise ConfigError(f"{where}.shapes[{i}]: {shape!r} is not a shape (a list of sizes >= 0)")
            try:
                entry.check_shape(tuple(shape))
            except ValueError as exc:
                raise ConfigError(f"{where}.shapes[{i}]: {list(shape)}: {exc}") from None
            for dt in grid["dtypes"]:
                nbytes = entry.bytes_moved(tuple(shape), registry.dtype_of(dt))
                if nbytes > LARGEST_GPU_MEMORY_BYTES:
                    raise ConfigError(
                        f"{where}.shapes[{i}]: {list(shape)} in {dt} needs {nbytes / 1e9:,.0f} GB for "
                        f"its inputs and outputs alone, more than any GPU holds (the largest, "
                        f"{LARGEST_GPU}, has {LARGEST_GPU_MEMORY_BYTES / 1e9:.0f} GB)"
                    )
