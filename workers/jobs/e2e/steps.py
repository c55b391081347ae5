"""One timed call of an end-to-end job: marks at every step's end on the device's timeline, and the host's own time
per step when asked.  Shared by the models' calls (workers.jobs.e2e.ltx, workers.jobs.e2e.image, workers.jobs.e2e.llm):
a diffusers pipeline marks its steps from ``callback_on_step_end`` (:func:`pipeline_call`), ``generate`` from a
stopping criterion called after every token (workers.jobs.e2e.llm)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import torch


class Clock:
    """Marks on the device's timeline (CUDA events, no host sync) or the host clock on the CPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.device = device

    def mark(self):
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def ms(self, a, b) -> float:
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)


@dataclass
class Call:
    total_s: float
    step_ms: list[float]  # steps 2..N (the first step carries the call's set-up: the pipeline's, or the prefill)
    output: torch.Tensor  # what is compared against eager: the final latents (fp32), or the decoder's logits
    host_ms: list[float] = field(default_factory=list)  # with host_probe: the host's time per step, steps 2..N
    first_ms: float | None = None  # the first step's time from the call's start (the decoder's prefill)

    @property
    def latents(self) -> torch.Tensor:
        return self.output

    @property
    def ms_per_step(self) -> float:
        return statistics.fmean(self.step_ms)


@dataclass
class Setup:
    """A model ready for a job's calls: ``model`` is what the modes inject, compile and graph (a diffusion
    transformer, or the decoder), ``start`` what its output began from (the initial latents; zeros for logits),
    ``inputs`` the call's inputs, ``config`` the job's ``details["config"]``."""

    model: torch.nn.Module
    source: str
    start: torch.Tensor
    inputs: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    pipe: Any = None  # the diffusers pipeline (diffusion models)

    @property
    def latents(self) -> torch.Tensor:
        return self.start


class StepMarks:
    """The marks of one call: ``step_end()`` at every step's end (the device's timeline), and with ``host_probe``
    the device drained there and the host's time to issue the next step taken from there to its end."""

    def __init__(self, device: torch.device, host_probe: bool = False, on_first=None):
        self.clock = Clock(device)
        self.on_first = on_first  # called once, at the first step's end (after its mark)
        self.host_probe = host_probe
        self.marks: list[Any] = []
        self.host_ms: list[float] = []
        self._issued = 0.0  # the host clock when the current step began to be issued
        self.start = None
        self.t0 = 0.0

    def begin(self) -> None:
        self.clock.sync()
        self.t0 = time.perf_counter()
        self.start = self.clock.mark()

    def step_end(self) -> None:
        if self.host_probe and self.marks:
            self.host_ms.append((time.perf_counter() - self._issued) * 1e3)
        self.marks.append(self.clock.mark())
        if self.on_first is not None and len(self.marks) == 1:
            self.on_first()
        if self.host_probe:
            self.clock.sync()
            self._issued = time.perf_counter()

    def finish(self, steps: int, output: torch.Tensor) -> Call:
        """The call after ``steps`` steps (RuntimeError if fewer marked): step times 2..N, the first step's."""
        self.clock.sync()
        total = time.perf_counter() - self.t0
        if len(self.marks) < steps:
            raise RuntimeError(f"the call ran {len(self.marks)} steps, expected {steps}")
        marks = self.marks[:steps]  # generate may run a step past the last (a deferred stop check) and drop it
        first = self.clock.ms(self.start, marks[0])
        step_ms = [first] if steps == 1 else [self.clock.ms(a, b) for a, b in zip(marks[:-1], marks[1:])]
        return Call(total, step_ms, output, self.host_ms[: max(steps - 1, 0)], first)


def pipeline_call(
    pipe: Any, kwargs: dict[str, Any], steps: int, seed: int, device: torch.device, host_probe: bool = False
) -> Call:
    """One timed call ``pipe(**kwargs, num_inference_steps=steps, ...)`` of a diffusers pipeline, its final latents
    (fp32) kept as the output, every step marked from ``callback_on_step_end``."""
    marks = StepMarks(device, host_probe)
    final: list[torch.Tensor] = []

    def on_step_end(pipe, i, t, kw):
        marks.step_end()
        if i == steps - 1:
            final.append(kw["latents"].detach().float().clone())
        return {}

    torch.manual_seed(seed)
    marks.begin()
    pipe(
        **kwargs,
        num_inference_steps=steps,
        callback_on_step_end=on_step_end,
        callback_on_step_end_tensor_inputs=["latents"],
        return_dict=False,
    )
    if not final:
        raise RuntimeError(f"the pipeline ran {len(marks.marks)} steps, expected {steps}")
    return marks.finish(steps, final[0])
