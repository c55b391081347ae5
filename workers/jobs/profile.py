"""The profile job: where the time of each implementation of a kernel goes, kernel by kernel.

For every implementation in ``spec.impls`` that can run on the device: warm up, then capture ``iters`` calls with
a profiler and reduce the capture to :class:`~workers.device.parsers.KernelRow` rows (name, calls, total/avg ns, % of
time).

* CUDA (and the CPU, for tests): ``torch.profiler`` with CPU+CUDA activities; each call is a ``record_function``
  range, kernels are attributed to the call that launched them; the chrome trace is kept (gzipped) as an artifact.
  On the CPU there are no device kernels: the rows are host ops by self time, and the result says so.
* ROCm: ``rocprofv3 --kernel-trace --stats`` runs :mod:`workers.jobs.profile_target` in a child process, in rocprofv3's
  default output format: the ``rocpd`` SQLite database on ROCm >= 7.0 (read with :mod:`workers.device.parsers.rocpd`,
  the database kept as an artifact), CSV before it (:mod:`workers.device.parsers.rocprofv3`); the dispatches between its
  two fence kernels are the timed calls.  Without rocprofv3 on PATH the job falls back to torch.profiler and says so in
  ``details["profiler_note"]``.  **The rocprofv3 path has not run on AMD hardware**: its parsing is tested on
  recorded rocprofv3 CSV output and on databases built from the documented rocpd schema only.
* NVIDIA, on request (``profiler=ncu``): Nsight Compute (``ncu --csv --page raw --metrics gpu__time_duration.sum``)
  runs :mod:`workers.jobs.profile_target` the same way; each kernel is serialised and replayed, so its rows are
  isolated-kernel times.  Its parsing is tested on an H200's recorded ``ncu`` output; the job's run under ncu has
  not run on a GPU.

Result: measurements per implementation ``kernel_time_us`` (device kernel time per call; every call's value in
``samples`` when the capture can split calls) and ``kernels_per_call``; ``details["profile_rows"][impl]`` (row dicts),
``details["profile_source"][impl]``, ``details["artifacts"]`` (``{kind, name, data_b64, size}``, gzipped), and
``details["unavailable"]`` / ``details["impl_errors"]``.  ``spec.params``: ``warmup`` (5), ``iters`` (10), ``seed``
(0), ``profiler`` (``auto`` | ``torch`` | ``rocprofv3`` | ``ncu``), ``profile_timeout_s`` (600, per profiler child).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from workers.device.detect import find_tool
from workers.device.parsers import ncu, rocpd, rocprofv3, torch_profiler
from workers.device.parsers.kernel_row import KernelRow, rows_from_durations
from workers.jobs.profile_target import DEFAULT_ITERS, DEFAULT_WARMUP
from workers.kinds.profile import NAME as PROFILE
from workers.runtime.timing import mark_profiler_used
from workers.spec import STATUS_ERROR, STATUS_OK, STATUS_SKIPPED, JobResult, JobSpec, Measurement

ITER_RANGE = "kernelfleet.iter"
DEFAULT_TIMEOUT_S = 600.0
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ImplProfile:
    """The reduced capture of one implementation."""

    impl: str
    rows: list[KernelRow]
    iters: int
    kernel_ns_total: float  # device kernel time (host op self time on the CPU) over all captured calls
    kernels_total: int  # kernel dispatches (host ops on the CPU) over all captured calls
    per_call_ns: list[float] | None  # one value per call, when the capture can tell calls apart
    source: str  # what the rows are, in words
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def measurements(self) -> list[Measurement]:
        per_call_us = None if self.per_call_ns is None else [v / 1000.0 for v in self.per_call_ns]
        return [
            Measurement(self.impl, "kernel_time_us", self.kernel_ns_total / 1000.0 / self.iters, "us", per_call_us),
            Measurement(self.impl, "kernels_per_call", self.kernels_total / self.iters, "kernels"),
        ]


def artifact(kind: str, name: str, data: bytes) -> dict[str, Any]:
    """A gzipped artifact as JSON-safe data (``size`` is the gzipped size in bytes)."""
    packed = gzip.compress(data, mtime=0)
    return {"kind": kind, "name": name, "data_b64": base64.b64encode(packed).decode("ascii"), "size": len(packed)}


def artifact_bytes(art: dict[str, Any]) -> bytes:
    """The original bytes of an artifact made by :func:`artifact`."""
    return gzip.decompress(base64.b64decode(art["data_b64"]))


# ------------------------------------------------------------------------------------------------ torch.profiler


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def capture_torch_trace(fn: Callable[[], Any], device: torch.device, warmup: int, iters: int) -> str:
    """Warm ``fn`` up, then profile ``iters`` calls, each inside a ``record_function(ITER_RANGE.i)`` range; returns
    the chrome trace JSON text."""
    from torch.profiler import ProfilerActivity, profile, record_function

    for _ in range(warmup):
        fn()
    _sync(device)
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    mark_profiler_used()
    with profile(activities=activities) as prof:
        for i in range(iters):
            with record_function(f"{ITER_RANGE}.{i}"):
                fn()
        _sync(device)
    with tempfile.TemporaryDirectory(prefix="kf-trace-") as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        return path.read_text()


def summarize_torch_trace(impl: str, trace_text: str, iters: int, device_kernels: bool) -> ImplProfile:
    """Reduce a chrome trace of ``iters`` calls (each in an ``ITER_RANGE`` range) to an ImplProfile.

    ``device_kernels``: rows are GPU kernels (launched inside the ranges); otherwise host ops by self time."""
    trace = torch_profiler.parse_chrome_trace(trace_text)
    windows = torch_profiler.annotation_windows(trace, ITER_RANGE)
    notes: list[str] = []
    if len(windows) != iters:
        notes.append(f"found {len(windows)} '{ITER_RANGE}' ranges for {iters} calls; using every event of the trace")
        windows = []
    if device_kernels:
        source = "torch.profiler: device kernels"
        if windows:
            kernels = [k for w in windows for k in w.kernels]
            per_call: list[float] | None = [w.kernel_ns for w in windows]
        else:
            kernels, per_call = trace.kernels(), None
        rows = rows_from_durations((k.name, k.dur_ns) for k in kernels)
        total, count = sum(k.dur_ns for k in kernels), len(kernels)
        if count == 0:
            notes.append("the trace holds no device kernel events")
    else:
        source = "torch.profiler: host ops by self time (no GPU; not device kernels)"
        if windows:
            ops = [op for w in windows for op in w.ops]
            per_call = [w.op_self_ns for w in windows]
        else:
            ops, per_call = torch_profiler.cpu_op_self_times(trace), None
        rows = rows_from_durations((op.name, op.self_us * 1000.0) for op in ops)
        total, count = sum(op.self_us * 1000.0 for op in ops), len(ops)
    return ImplProfile(
        impl=impl,
        rows=rows,
        iters=iters,
        kernel_ns_total=total,
        kernels_total=count,
        per_call_ns=per_call,
        source=source,
        artifacts=[artifact("chrome_trace", f"{impl}.json.gz", trace_text.encode())],
        notes=notes,
    )


def profile_with_torch(impl: str, fn: Callable[[], Any], device: torch.device, warmup: int, iters: int) -> ImplProfile:
    text = capture_torch_trace(fn, device, warmup, iters)
    return summarize_torch_trace(impl, text, iters, device_kernels=device.type == "cuda")


# ------------------------------------------------------------------------------------------------ rocprofv3


def _periodic_calls(names: list[str], durations: list[float], iters: int) -> list[float] | None:
    """Per-call totals when the window's dispatches are ``iters`` repeats of one identical name sequence."""
    if iters <= 0 or not names or len(names) % iters:
        return None
    k = len(names) // iters
    first = names[:k]
    if any(names[i * k : (i + 1) * k] != first for i in range(1, iters)):
        return None
    return [sum(durations[i * k : (i + 1) * k]) for i in range(iters)]


def _fenced_profile(impl: str, window: list, rows: list, iters: int, source: str, artifacts: list) -> ImplProfile:
    """The profile of the timed calls, ``window``: the kernels (rocprofv3 dispatches or ncu kernels, each with a
    ``name`` and a ``duration_ns``) between the last two fences, ``rows`` their per-kernel rows."""
    durations = [float(k.duration_ns) for k in window]
    return ImplProfile(
        impl=impl,
        rows=rows,
        iters=iters,
        kernel_ns_total=sum(durations),
        kernels_total=len(window),
        per_call_ns=_periodic_calls([k.name for k in window], durations, iters),
        source=source,
        artifacts=artifacts,
    )


def summarize_rocprofv3(
    impl: str,
    trace_text: str | None,
    stats_text: str | None,
    manifest: dict[str, Any],
    dispatches: list[rocprofv3.KernelDispatch] | None = None,
    database: bytes | None = None,
) -> ImplProfile:
    """Reduce rocprofv3 output of one :mod:`workers.jobs.profile_target` run to an ImplProfile: its CSV kernel trace and
    stats, or the ``dispatches`` read from its rocpd database (whose bytes, ``database``, are kept as an artifact).

    With a fence in the manifest, the timed calls are the dispatches strictly between the last two fence dispatches
    (on the fences' agent).  Without a pair of fences, or without a trace, the whole run is used: per-call values are
    then divided by warm-up + timed calls, input setup is included, and a note says so.  Tested with recorded
    rocprofv3 files only; not yet run on AMD hardware."""
    iters = int(manifest.get("iters") or DEFAULT_ITERS)
    whole_run_calls = iters + int(manifest.get("warmup") or 0)
    fence = manifest.get("fence")

    def is_fence(name: str) -> bool:
        return bool(fence) and fence in name

    artifacts = []
    if database is not None:
        artifacts.append(artifact("rocprofv3_rocpd", f"{impl}.results.db.gz", database))
    if trace_text:
        artifacts.append(artifact("rocprofv3_kernel_trace", f"{impl}.kernel_trace.csv.gz", trace_text.encode()))
    if stats_text:
        artifacts.append(artifact("rocprofv3_kernel_stats", f"{impl}.kernel_stats.csv.gz", stats_text.encode()))
    trace = "rocprofv3 rocpd database" if dispatches is not None else "rocprofv3 kernel trace"
    if dispatches is None:
        dispatches = rocprofv3.parse_kernel_trace(trace_text) if trace_text else []
    dispatches = sorted(dispatches, key=lambda d: (d.start_ns, d.end_ns))
    fences = [d for d in dispatches if is_fence(d.name)]
    if len(fences) >= 2:
        opening, closing = fences[-2], fences[-1]
        window = [
            d
            for d in dispatches
            if d.agent == opening.agent
            and not is_fence(d.name)
            and d.start_ns >= opening.end_ns
            and d.end_ns <= closing.start_ns
        ]
        return _fenced_profile(
            impl,
            window,
            rocprofv3.kernel_rows_from_trace(window),
            iters,
            f"{trace}: dispatches between the fence kernels",
            artifacts,
        )
    whole_run = (
        f"rows cover the whole run ({whole_run_calls} calls with warm-up, input setup included); "
        f"kernel_time_us and kernels_per_call are divided by {whole_run_calls}"
    )
    if dispatches:
        window = [d for d in dispatches if not is_fence(d.name)]
        return ImplProfile(
            impl=impl,
            rows=rocprofv3.kernel_rows_from_trace(window),
            iters=whole_run_calls,
            kernel_ns_total=float(sum(d.duration_ns for d in window)),
            kernels_total=len(window),
            per_call_ns=None,
            source=f"{trace}: whole run",
            artifacts=artifacts,
            notes=[f"no pair of fence kernels in the trace: {whole_run}"],
        )
    if stats_text:
        rows = [r for r in rocprofv3.parse_stats(stats_text) if not is_fence(r.name)]
        return ImplProfile(
            impl=impl,
            rows=rows,
            iters=whole_run_calls,
            kernel_ns_total=sum(r.total_ns for r in rows),
            kernels_total=sum(r.calls for r in rows),
            per_call_ns=None,
            source="rocprofv3 kernel stats: whole run",
            artifacts=artifacts,
            notes=[f"no kernel trace, only rocprofv3's stats: {whole_run}"],
        )
    raise RuntimeError("rocprofv3 wrote neither a kernel trace nor kernel stats")


def find_rocpd_database(out_dir: Path, fence: str | None) -> Path | None:
    """The rocpd database (``<pid>_results.db``) under a rocprofv3 output directory; where several processes wrote
    one (compile workers), the one whose dispatches include the fence kernel."""
    found = sorted(out_dir.rglob("*.db"))
    if fence is not None:
        for path in found:
            if rocpd.holds_kernel(path, fence):
                return path
    return found[0] if found else None


def find_rocprofv3_csvs(out_dir: Path, fence: str | None) -> tuple[str | None, str | None]:
    """The kernel trace and kernel stats texts under a rocprofv3 output directory (files sit in ``<host>/`` or
    ``<host>/<pid>/`` and are named ``<pid>_kernel_trace.csv``).  When several processes wrote files (compile
    workers), the trace holding the fence kernels is chosen, with the stats file beside it."""
    traces = sorted(out_dir.rglob("*kernel_trace.csv"))
    chosen = None
    for path in traces:
        text = path.read_text(errors="replace")
        if fence is None or fence in text:
            chosen = (path, text)
            break
    if chosen is None and traces:
        chosen = (traces[0], traces[0].read_text(errors="replace"))
    stats_text = None
    if chosen is not None:
        sibling = chosen[0].with_name(chosen[0].name.replace("kernel_trace.csv", "kernel_stats.csv"))
        if sibling.is_file():
            stats_text = sibling.read_text(errors="replace")
    if stats_text is None:
        stats = sorted(out_dir.rglob("*kernel_stats.csv"))
        if stats:
            stats_text = stats[0].read_text(errors="replace")
    return (chosen[1] if chosen else None), stats_text


def _run_target_under(
    tool: str, tool_args: list[str], spec: JobSpec, impl: str, device: torch.device, timeout_s: float, tmp_path: Path
) -> tuple[subprocess.CompletedProcess, dict[str, Any]]:
    """Run :mod:`workers.jobs.profile_target` for one implementation under a profiler (``tool_args`` lead the command)
    in ``tmp_path``; the completed process and the target's manifest.  RuntimeError when it times out or the target
    did not finish."""
    spec_path, manifest_path = tmp_path / "spec.json", tmp_path / "manifest.json"
    spec_path.write_text(spec.to_json())
    cmd = [
        *tool_args,
        sys.executable,
        "-m",
        "workers.jobs.profile_target",
        str(spec_path),
        "--impl",
        impl,
        "--device",
        str(device),
        "--manifest",
        str(manifest_path),
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    try:
        proc = subprocess.run(
            cmd,
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{tool} run of {impl} passed its {timeout_s:.0f} s timeout") from None
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    if manifest.get("status") != "ok":
        reason = manifest.get("error") or f"{tool} exited {proc.returncode}: {proc.stderr[-2000:]}"
        raise RuntimeError(f"profile target failed for {impl}: {reason}")
    return proc, manifest


def profile_with_rocprofv3(
    spec: JobSpec, impl: str, device: torch.device, rocprofv3_exe: str, timeout_s: float
) -> ImplProfile:
    """Run :mod:`workers.jobs.profile_target` for one implementation under rocprofv3 and reduce its output: the rocpd
    database where rocprofv3 wrote one (its default since ROCm 7.0), else its CSV files."""
    with tempfile.TemporaryDirectory(prefix="kf-rocprof-") as tmp:
        out_dir = Path(tmp) / "out"
        args = [rocprofv3_exe, "--kernel-trace", "--stats", "-d", str(out_dir), "--"]
        proc, manifest = _run_target_under("rocprofv3", args, spec, impl, device, timeout_s, Path(tmp))
        database = find_rocpd_database(out_dir, manifest.get("fence"))
        if database is not None:
            dispatches = rocpd.read_kernel_dispatches(database)
            result = summarize_rocprofv3(impl, None, None, manifest, dispatches, database.read_bytes())
        else:
            trace_text, stats_text = find_rocprofv3_csvs(out_dir, manifest.get("fence"))
            result = summarize_rocprofv3(impl, trace_text, stats_text, manifest)
        if proc.returncode != 0:
            result.notes.append(f"rocprofv3 exited {proc.returncode} after the target finished")
        return result


# ------------------------------------------------------------------------------------------------ ncu

NCU_METRICS = ("gpu__time_duration.sum",)  # the kernel's GPU time: one replay pass per kernel


def summarize_ncu(impl: str, text: str, manifest: dict[str, Any]) -> ImplProfile:
    """Reduce ``ncu --csv --page raw`` output of one :mod:`workers.jobs.profile_target` run to an ImplProfile: the
    kernels strictly between the last two fence kernels (of the fences' process), in launch order; without a pair of
    fences the whole run.  ncu serialises and replays every kernel, so these are isolated-kernel times."""
    iters = int(manifest.get("iters") or DEFAULT_ITERS)
    whole_run_calls = iters + int(manifest.get("warmup") or 0)
    fence = manifest.get("fence")
    kernels = [k for k in sorted(ncu.parse(text), key=lambda k: k.id) if k.duration_ns is not None]
    if not kernels:
        raise RuntimeError("ncu reported no kernel with a GPU duration")
    artifacts = [artifact("ncu_raw", f"{impl}.ncu_raw.csv.gz", text.encode())]

    def is_fence(k) -> bool:
        return bool(fence) and fence in k.name

    fences = [i for i, k in enumerate(kernels) if is_fence(k)]
    if len(fences) >= 2:
        pid = kernels[fences[-1]].process_id
        window = [k for k in kernels[fences[-2] + 1 : fences[-1]] if k.process_id == pid and not is_fence(k)]
        return _fenced_profile(
            impl, window, ncu.kernel_rows(window), iters, "ncu raw page: kernels between the fence kernels", artifacts
        )
    window = [k for k in kernels if not is_fence(k)]
    return ImplProfile(
        impl=impl,
        rows=ncu.kernel_rows(window),
        iters=whole_run_calls,
        kernel_ns_total=sum(float(k.duration_ns) for k in window),
        kernels_total=len(window),
        per_call_ns=None,
        source="ncu raw page: whole run",
        artifacts=artifacts,
        notes=[
            f"no pair of fence kernels: rows cover the whole run ({whole_run_calls} calls with warm-up, input setup "
            f"included); kernel_time_us and kernels_per_call are divided by {whole_run_calls}"
        ],
    )


def profile_with_ncu(spec: JobSpec, impl: str, device: torch.device, ncu_exe: str, timeout_s: float) -> ImplProfile:
    """Run :mod:`workers.jobs.profile_target` for one implementation under Nsight Compute (``--page raw`` with the GPU
    duration only, every process) and reduce its CSV, which ncu prints on stdout among its own lines."""
    with tempfile.TemporaryDirectory(prefix="kf-ncu-") as tmp:
        args = [ncu_exe, "--csv", "--page", "raw", "--metrics", ",".join(NCU_METRICS), "--target-processes", "all"]
        proc, manifest = _run_target_under("ncu", args, spec, impl, device, timeout_s, Path(tmp))
        try:
            result = summarize_ncu(impl, proc.stdout, manifest)
        except ValueError as exc:
            raise RuntimeError(f"unreadable ncu output ({exc}): {proc.stderr[-2000:]}") from None
        if proc.returncode != 0:
            result.notes.append(f"ncu exited {proc.returncode} after the target finished")
        return result


# ------------------------------------------------------------------------------------------------ the job


PROFILERS = ("auto", "torch", "rocprofv3", "ncu")


def choose_profiler(device: torch.device, requested: str) -> tuple[str, str | None, str | None]:
    """(``torch`` | ``rocprofv3`` | ``ncu``, the profiler's executable, a note for the result).  ``auto``: rocprofv3
    on ROCm, torch.profiler elsewhere; ``ncu`` (Nsight Compute) only when asked for, on NVIDIA."""
    if requested not in PROFILERS:
        raise ValueError(f"params.profiler={requested!r}; allowed: {', '.join(PROFILERS)}")
    on_rocm = device.type == "cuda" and torch.version.hip is not None
    on_nvidia = device.type == "cuda" and torch.version.hip is None
    if requested == "torch" or (requested == "auto" and not on_rocm):
        return "torch", None, None
    if requested == "ncu":
        if not on_nvidia:
            return "torch", None, "ncu profiles NVIDIA devices only; used torch.profiler instead"
        exe = find_tool("ncu")
        if exe is None:
            return "torch", None, "ncu not found on this node; used torch.profiler instead"
        return "ncu", exe, None
    if not on_rocm:
        return "torch", None, "rocprofv3 profiles ROCm devices only; used torch.profiler instead"
    exe = find_tool("rocprofv3")
    if exe is None:
        return "torch", None, "rocprofv3 not found on this ROCm node; used torch.profiler instead"
    return "rocprofv3", exe, None


def profile_entry(spec: JobSpec, entry: Any, device: torch.device) -> JobResult:
    """The profile job for an already looked-up :class:`kernels.registry.KernelEntry`."""
    from kernels import registry

    params = spec.params or {}
    details: dict[str, Any] = {
        "profile_rows": {},
        "profile_source": {},
        "artifacts": [],
        "unavailable": {},
        "impl_errors": {},
    }
    try:
        warmup = int(params.get("warmup", DEFAULT_WARMUP))
        iters = int(params.get("iters", DEFAULT_ITERS))
        if iters < 1 or warmup < 0:
            raise ValueError(f"params.iters must be >= 1 and params.warmup >= 0 (got {iters}, {warmup})")
        timeout_s = float(params.get("profile_timeout_s", DEFAULT_TIMEOUT_S))
        which, tool_exe, note = choose_profiler(device, str(params.get("profiler", "auto")))
        entry.check_shape(spec.shape)
        dtype = registry.dtype_of(spec.dtype)
        names = list(spec.impls) or list(entry.default_impls) or entry.impl_names()
        unknown = [n for n in names if n not in entry.impls]
        if unknown:
            raise ValueError(f"unknown implementation(s) {unknown} of {entry.name}; known: {entry.impl_names()}")
    except Exception as exc:  # noqa: BLE001 - a bad job is a result, not a crash
        return JobResult(key=spec.key, status=STATUS_ERROR, error=f"{type(exc).__name__}: {exc}", details=details)
    details.update(profiler="torch.profiler" if which == "torch" else which, warmup=warmup, iters=iters)
    if note:
        details["profiler_note"] = note

    runnable = []
    for name in names:
        reason = entry.impls[name].unavailable(device)
        if reason is None:
            runnable.append(name)
        else:
            details["unavailable"][name] = reason
    if not runnable:
        return JobResult(
            key=spec.key, status=STATUS_SKIPPED, details=details, error="no implementation can run on this device"
        )

    inputs = None
    if which == "torch":
        try:
            gen = torch.Generator().manual_seed(int(params.get("seed") or 0))  # a sweep's seed null: seed 0
            inputs = entry.make_inputs(spec.shape, dtype, device, gen)
        except Exception as exc:  # noqa: BLE001
            return JobResult(
                key=spec.key,
                status=STATUS_ERROR,
                details=details,
                error=f"making inputs failed: {type(exc).__name__}: {exc}",
            )

    measurements: list[Measurement] = []
    for name in runnable:
        try:
            if which == "rocprofv3":
                prof = profile_with_rocprofv3(spec, name, device, tool_exe, timeout_s)  # type: ignore[arg-type]
            elif which == "ncu":
                prof = profile_with_ncu(spec, name, device, tool_exe, timeout_s)  # type: ignore[arg-type]
            else:
                fn = entry.impls[name].make()
                prof = profile_with_torch(name, lambda: fn(**inputs), device, warmup, iters)
        except Exception as exc:  # noqa: BLE001 - one implementation failing does not lose the others
            details["impl_errors"][name] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
            continue
        measurements.extend(prof.measurements())
        details["profile_rows"][name] = [r.to_dict() for r in prof.rows]
        details["profile_source"][name] = prof.source
        details["artifacts"].extend(prof.artifacts)
        if prof.notes:
            details.setdefault("notes", {})[name] = prof.notes

    failed = sorted(details["impl_errors"])
    if not details["profile_rows"]:
        return JobResult(
            key=spec.key,
            status=STATUS_ERROR,
            measurements=measurements,
            details=details,
            error=f"every implementation failed to profile: {', '.join(failed)}",
        )
    error = f"implementation(s) failed to profile: {', '.join(failed)}" if failed else None
    return JobResult(key=spec.key, status=STATUS_OK, measurements=measurements, details=details, error=error)


def run(spec: JobSpec, device: torch.device) -> JobResult:
    """The profile job, as the runner calls it (it fills the device, node and timing fields)."""
    from kernels import registry

    if spec.kind != PROFILE:
        return JobResult(key=spec.key, status=STATUS_ERROR, error=f"profile.run got a {spec.kind!r} job")
    if not spec.kernel:
        return JobResult(key=spec.key, status=STATUS_ERROR, error="a profile job needs spec.kernel")
    try:
        entry = registry.get(spec.kernel)
    except Exception as exc:  # noqa: BLE001 - unknown kernel, or a registry module that fails to import
        return JobResult(key=spec.key, status=STATUS_ERROR, error=f"{type(exc).__name__}: {exc}")
    return profile_entry(spec, entry, device)
