"""What an injection did: every module whose code was replaced (path + kind + kernels) and every module of a
kind a kernel could serve that was left as it is, with the reason.  Plain data, JSON-serialisable."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Kinds of replacement
KIND_ATTN_PROCESSOR = "attn_processor"  # a diffusers attention processor swapped for a kernelfleet one
KIND_BLOCK_FORWARD = "block_forward"  # a transformer block's forward replaced (fused norm/modulate/residual)
KIND_NORM_FORWARD = "norm_forward"  # a norm module's forward replaced (plain or adaptive norm)
KIND_ATTENTION_FORWARD = "attention_forward"  # a transformers attention module's forward replaced (RoPE)
KIND_ROPE_FORWARD = "rope_forward"  # a rotary-embedding module's forward replaced (tables shared by the batch)
KIND_ACTIVATION_FORWARD = "activation_forward"  # a projection + activation module's forward replaced (one GEMM)
KINDS = (
    KIND_ATTN_PROCESSOR,
    KIND_BLOCK_FORWARD,
    KIND_NORM_FORWARD,
    KIND_ATTENTION_FORWARD,
    KIND_ROPE_FORWARD,
    KIND_ACTIVATION_FORWARD,
)


@dataclass(frozen=True)
class Replaced:
    path: str  # module path from the object given to inject() ("transformer.transformer_blocks.0.attn1")
    kind: str  # one of KINDS
    module: str  # the module's class name
    kernels: tuple[str, ...]  # the kernelfleet kernels the replacement calls
    note: str = ""


@dataclass(frozen=True)
class Left:
    path: str
    module: str
    reason: str


@dataclass
class InjectionReport:
    target: str  # class name of what inject() was given
    kernels: tuple[str, ...]  # the kernels that were allowed
    families: tuple[str, ...] = ()  # model families recognised: ltx, flux, sd3, llama
    replaced: list[Replaced] = field(default_factory=list)
    left: list[Left] = field(default_factory=list)
    already_injected: bool = False  # True when inject() found its own earlier injection and changed nothing
    grad: str = "fallback"  # a call that autograd wants a gradient from: "fallback" (the model's code) or "error"

    def counts(self) -> dict[str, int]:
        """Number of replacements per kind."""
        return dict(Counter(r.kind for r in self.replaced))

    def counts_by(self, kind: str) -> dict[str, int]:
        """Replacements of one kind, counted per module class."""
        return dict(Counter(r.module for r in self.replaced if r.kind == kind))

    def left_counts(self) -> dict[str, int]:
        return dict(Counter(x.module for x in self.left))

    def paths(self, kind: str | None = None) -> list[str]:
        return [r.path for r in self.replaced if kind is None or r.kind == kind]

    def kernels_used(self) -> list[str]:
        return sorted({k for r in self.replaced for k in r.kernels})

    def summary(self) -> str:
        parts = [f"{n} {k}" for k, n in sorted(self.counts().items())] or ["nothing"]
        fam = ",".join(self.families) or "no known family"
        line = f"{self.target} ({fam}): replaced {', '.join(parts)}; left {len(self.left)}; grad={self.grad}"
        if self.already_injected:
            line += " (already injected; unchanged)"
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "kernels": list(self.kernels),
            "families": list(self.families),
            "replaced": [dataclasses.asdict(r) | {"kernels": list(r.kernels)} for r in self.replaced],
            "left": [dataclasses.asdict(x) for x in self.left],
            "already_injected": self.already_injected,
            "grad": self.grad,
            "counts": self.counts(),
        }

    def __str__(self) -> str:
        lines = [self.summary()]
        lines += [f"  + {r.path} [{r.kind}: {'+'.join(r.kernels)}]" for r in self.replaced]
        lines += [f"  - {x.path} ({x.module}): {x.reason}" for x in self.left]
        return "\n".join(lines)
