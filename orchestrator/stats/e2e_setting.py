"""The setting of an end-to-end job: what one series of its readings holds fixed -- the model (family and
configuration), the shape, the dtype and the length of a call (denoising steps, or tokens generated).  Two jobs of one
setting are comparable over time; jobs of two settings are not (25 and 121 frames of LTX-Video, 28 and 8 steps,
batch 1 and batch 8), so the trends draw one series per setting and name it in the legend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workers.jobs.e2e.spec import LLAMA, family_of


def setting_label(model: str | None, shape: Sequence[int] | str, dtype: str | None, params: Mapping[str, Any]) -> str:
    """``ltx-video 25x480x704 bf16 30 steps``; ``llama/tinyllama-1.1b batch 1 prompt 128 bf16 64 tokens``."""
    shape_text = shape if isinstance(shape, str) else "x".join(str(v) for v in shape)
    model = model or "?"
    if family_of(model) == LLAMA:
        parts = shape_text.split("x")
        what = f"batch {parts[0]} prompt {parts[1]}" if len(parts) == 2 else shape_text
        length = f"{params['new_tokens']} tokens" if params.get("new_tokens") is not None else ""
    else:
        what = shape_text
        length = f"{params['steps']} steps" if params.get("steps") is not None else ""
    return " ".join(p for p in (model, what, dtype or "", length) if p)
