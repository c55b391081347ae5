"""The GPU's SM clock and power draw while a stretch of work runs, sampled beside it.

On an H200 the faster LTX-Video modes draw the 700 W limit and their SM clock drops to ~1640-1710 MHz, where
``eager+graph`` holds ~1890-1930 MHz (docs/perf/ltx-e2e-h200.md, where the time goes).  The same kernels then
take longer, so a step time means little without the clock it ran at.  The e2e job logs each mode's timed calls
with :class:`ClockLog` and reports the median and lowest SM clock, the median and highest power, and the share of
samples at the power limit.

In-process through the vendor library (:mod:`workers.device.libs`) where it is installed: NVML on NVIDIA (the GPU
named by its UUID), amdsmi on ROCm (the GPU named by its PCI address), read every 200 ms by a sampling thread
(one library call of a few microseconds each time; the calls timed run on the device).  Where NVML is missing,
``nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,power.limit --format=csv -lms 200 -i GPU-<uuid>`` runs as a
child process for the stretch (the UUID names the physical GPU whatever CUDA_VISIBLE_DEVICES does to the indices);
its output is parsed with :mod:`workers.device.parsers.nvidia_smi`.  ROCm without amdsmi: nothing is logged (no recorded
sample of a streaming ``amd-smi`` query to build a parser from), and the summary says so; the amdsmi path has run on
no AMD GPU (its tests use a module fake).  The summary's ``source`` names what sampled.  On the CPU nothing is
logged.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Callable

import torch

from workers.device import libs as gpu_libs
from workers.device.detect import find_tool
from workers.device.parsers import nvidia_smi
from workers.device.parsers.text_values import number

QUERY = ("timestamp", "clocks.sm", "power.draw", "power.limit")
INTERVAL_MS = 200
AT_LIMIT = 0.95  # a sample drawing 95 % of the power limit or more counts as at the limit
STOP_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Sample:
    sm_mhz: float | None
    power_w: float | None
    power_limit_w: float | None


def parse_samples(text: str) -> list[Sample]:
    """The samples of a ``nvidia-smi --query-gpu=... --format=csv -lms N`` log (header kept, units in the names).

    The header names the current SM clock ``clocks.current.sm`` whichever alias was queried (``clocks.sm``)."""
    out = []
    for rec in nvidia_smi.parse_query(text):
        sm = rec.get("clocks.current.sm", rec.get("clocks.sm"))
        out.append(Sample(number(sm), number(rec.get("power.draw")), number(rec.get("power.limit"))))
    return out


def summarize(samples: list[Sample]) -> dict[str, Any]:
    """Median and lowest SM clock, median and highest power, the power limit and the share of samples at it."""
    clocks = [s.sm_mhz for s in samples if s.sm_mhz is not None]
    power = [s.power_w for s in samples if s.power_w is not None]
    limits = [s.power_limit_w for s in samples if s.power_limit_w is not None]
    out: dict[str, Any] = {"samples": len(samples), "interval_ms": INTERVAL_MS}
    if clocks:
        out["sm_mhz_median"] = statistics.median(clocks)
        out["sm_mhz_min"] = min(clocks)
    if power:
        out["power_w_median"] = statistics.median(power)
        out["power_w_max"] = max(power)
    if limits and power:
        limit = statistics.median(limits)
        out["power_limit_w"] = limit
        out["at_power_limit"] = round(sum(p >= AT_LIMIT * limit for p in power) / len(power), 4)
    return out


def _bdf(props) -> str | None:
    """The PCI address ``0000:c1:00.0`` of a torch device (its properties' domain, bus and device ids)."""
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    return f"{getattr(props, 'pci_domain_id', 0):04x}:{bus:02x}:{getattr(props, 'pci_device_id', 0):02x}.0"


def _uuid(props) -> str | None:
    uuid = getattr(props, "uuid", None)
    if not uuid:
        return None
    uuid = str(uuid)
    return uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"


class ClockLog:
    """A context manager: the GPU is sampled while the ``with`` body runs; then :meth:`summary`.

    With ``reader`` (a vendor library's reading of one GPU: :func:`workers.device.libs.reader_for`), a thread calls it
    every ``INTERVAL_MS``; without, ``nvidia-smi`` logs ``target`` (what ``nvidia-smi -i`` takes: an index, a PCI
    bus id or ``GPU-<uuid>``).  ``why_not`` (no target) says why nothing is logged."""

    def __init__(
        self,
        target: str | None,
        why_not: str | None = None,
        exe: str | None = None,
        reader: Callable[[], gpu_libs.Reading] | None = None,
        source: str = "nvidia-smi",
    ):
        self.target = target
        self.why_not = why_not
        self.exe = exe
        self.reader = reader
        self.source = source
        self.text: str | None = None
        self.error: str | None = None
        self.samples: list[Sample] = []
        self._proc: subprocess.Popen | None = None
        self._file = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_device(cls, device: torch.device) -> "ClockLog":
        """The log of ``device``'s GPU: through NVML or amdsmi where present, else ``nvidia-smi`` on NVIDIA; on the
        CPU, or on ROCm without amdsmi, a log of nothing."""
        if device.type != "cuda":
            return cls(None, "not a GPU")
        backend = "hip" if torch.version.hip else "cuda"
        name, lib = gpu_libs.library_for(backend)
        note = f"{name} not available"
        if lib is not None:
            props = torch.cuda.get_device_properties(device)
            source, read = gpu_libs.reader_for(backend, uuid=_uuid(props), bdf=_bdf(props))
            if source is not None:
                return cls(_uuid(props) or _bdf(props), reader=read, source=source)
            note = read
        if backend == "hip":
            return cls(None, f"no clock log on ROCm without amdsmi ({note})")
        exe = find_tool("nvidia-smi")
        if exe is None:
            return cls(None, "nvidia-smi not found")
        uuid = _uuid(torch.cuda.get_device_properties(device))
        if not uuid:  # no UUID from torch: the index (right unless CUDA_VISIBLE_DEVICES renumbers the GPUs)
            return cls(str(device.index if device.index is not None else torch.cuda.current_device()), exe=exe)
        return cls(uuid, exe=exe)

    def _sample(self) -> None:
        r = self.reader()
        self.samples.append(Sample(r.sm_mhz, r.power_w, r.power_limit_w))

    def _sampling(self) -> None:
        try:
            while not self._stop.wait(INTERVAL_MS / 1000.0):
                self._sample()
        except Exception as exc:  # noqa: BLE001 - a failing library ends the log, not the job
            self.error = f"{self.source} reading failed: {exc}"

    def __enter__(self) -> "ClockLog":
        if self.target is None:
            return self
        if self.reader is not None:
            self.samples, self.error = [], None
            self._stop.clear()
            try:
                self._sample()  # the state the stretch starts in
            except Exception as exc:  # noqa: BLE001
                self.error = f"{self.source} reading failed: {exc}"
                return self
            self._thread = threading.Thread(target=self._sampling, name="clock-log", daemon=True)
            self._thread.start()
            return self
        self._file = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        try:
            self._proc = subprocess.Popen(
                [
                    self.exe or "nvidia-smi",
                    f"--query-gpu={','.join(QUERY)}",
                    "--format=csv",
                    "-lms",
                    str(INTERVAL_MS),
                    "-i",
                    self.target,
                ],
                stdout=self._file,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
            )
        except OSError as exc:
            self.error = f"nvidia-smi did not start: {exc}"
            self._file.close()
            self._file = None
        return self

    def __exit__(self, *exc) -> bool:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=STOP_TIMEOUT_S)
            self._thread = None
            if self.error is None:
                try:
                    self._sample()  # the state the stretch ends in
                except Exception as exc:  # noqa: BLE001
                    self.error = f"{self.source} reading failed: {exc}"
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._file is not None:
            self._file.seek(0)
            self.text = self._file.read()
            self._file.close()
            self._file = None
        return False

    def summary(self) -> dict[str, Any] | None:
        """What the log saw (see :func:`summarize`); ``{"skipped": why}`` or ``{"error": ...}`` where it saw
        nothing; None on the CPU."""
        if self.why_not == "not a GPU":
            return None
        if self.why_not:
            return {"skipped": self.why_not}
        if self.error:
            return {"error": self.error, "source": self.source}
        if self.reader is not None:
            return {**summarize(self.samples), "source": self.source}
        text = self.text or ""
        if not text.endswith("\n"):  # stopped in the middle of a line: keep the whole lines
            text = text[: text.rfind("\n") + 1]
        try:
            samples = parse_samples(text)
        except ValueError as exc:
            return {"error": f"unreadable nvidia-smi log: {exc}"}
        if not samples:
            return {
                "error": "nvidia-smi logged no samples (a stretch shorter than its first sample, or the GPU "
                f"{self.target} unknown to it)"
            }
        return {**summarize(samples), "source": self.source}
