"""One colour per implementation (and per end-to-end mode) on every page and plot.

Known names have a fixed colour; a name not listed here (a new implementation or mode joins without an edit) gets
one from ``SPARE`` by a stable hash of its name, the same in every process.  The reds and greens of the Trends
page's verdict markers (regression, improvement) are kept out of both.
"""

from __future__ import annotations

import zlib

IMPL_COLORS = {
    "triton": "#7b3fbf",  # purple: the project's own kernel
    "eager": "#1f77b4",
    "compile": "#ff7f0e",
    "compile_max": "#8c564b",
    "F.rms_norm": "#17becf",
    "liger": "#e377c2",
}
MODE_COLORS = {  # end-to-end modes: the same hue as the implementation they run where there is one
    "eager": IMPL_COLORS["eager"],
    "triton": IMPL_COLORS["triton"],
    "compile": IMPL_COLORS["compile"],
    "triton+compile": "#bcbd22",
}
SPARE = ("#393b79", "#637939", "#7f7f7f", "#9c9ede", "#8ca252", "#bd9e39", "#843c39", "#5254a3", "#6b6ecf")


# The Overview's speed-up colours, on a log scale: red slower than the baseline, white even, blue faster
SPEEDUP_SCALE = [
    [0.0, "#b2182b"],
    [0.25, "#ef8a62"],
    [0.45, "#fddbc7"],
    [0.5, "#f7f7f7"],
    [0.55, "#d1e5f0"],
    [0.75, "#67a9cf"],
    [1.0, "#2166ac"],
]
# The Tune page: the launch table's current choice in the project's own colour, the fastest candidate in the
# speed-up scale's blue, both at once darker, the rest grey
TUNE_COLORS = {"current": IMPL_COLORS["triton"], "winner": "#2166ac", "both": "#3f007d", "other": "#bdbdbd"}
MARKED_CELL = "#d9d9d9"  # a cell that is not a speed (failed correctness, Triton's interpreter): grey
# The kernel classes of a profile (end to end page, Profiles page), muted, apart from the implementations' colours
CLASS_COLORS = {
    "kernelfleet": "#c5b0d5",
    "gemm": "#aec7e8",
    "attention": "#ffbb78",
    "inductor": "#98df8a",
    "elementwise": "#ff9896",
    "other": "#c49c94",
    "idle": "#c7c7c7",
}


def class_color(kernel_class: str | None) -> str:
    return CLASS_COLORS.get(kernel_class or "other", CLASS_COLORS["other"])


def _spare(name: str) -> str:
    return SPARE[zlib.crc32(name.encode()) % len(SPARE)]


def impl_color(impl: str) -> str:
    return IMPL_COLORS.get(impl) or _spare(impl)


def mode_color(mode: str) -> str:
    return MODE_COLORS.get(mode) or IMPL_COLORS.get(mode) or _spare(mode)


def rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"
