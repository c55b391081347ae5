"""The names an injection selects its replacements by: the registry's kernels that its rules use, and its rewrites.

Each name is a registered kernel's name (kernels/entries/, the name sweeps, the store and reports use) or a rewrite's,
checked when this module is imported: a misspelt name fails that import instead of silently turning a rule off, and a
kernel whose entry says no injection uses it (``not_injected``) cannot be named here.  The family modules
(:mod:`kernels.inject.ltx`, ``flux``, ``sd3``, ``llama``) select by these constants only
(:meth:`kernels.inject.state.Session.allowed` refuses any other name), so the kernels an injection can use are
exactly those named here (:data:`KERNELS`); any other kernel of the registry is not injectable, with its entry's
reason or for want of a rule.
"""

from __future__ import annotations

from kernels import registry

_KERNELS: list[str] = []


def _kernel(name: str) -> str:
    """``name`` as a kernel an injection rule uses; ValueError for a name the registry does not hold, or whose entry
    says no injection uses it."""
    entries = registry.builtin()
    if name not in entries:
        raise ValueError(f"injection rule: no kernel {name!r} in the registry; kernels: {', '.join(sorted(entries))}")
    if entries[name].not_injected:
        raise ValueError(f"injection rule: kernel {name!r} says no injection uses it ({entries[name].not_injected})")
    _KERNELS.append(name)
    return name


RMSNORM = _kernel("rmsnorm")
ROPE = _kernel("rope")
ROPE_ROTATE_HALF = _kernel("rope_rotate_half")
ADALN = _kernel("adaln")
ADALN_LAYER_NORM = _kernel("adaln_layer_norm")
ADD_RMS_NORM_MODULATE = _kernel("add_rms_norm_modulate")
GATED_RESIDUAL = _kernel("gated_residual")
QK_NORM_ROPE = _kernel("qk_norm_rope")
CROSS_ATTENTION = _kernel("cross_attention")

# The kernels the injection's rules use, sorted.
KERNELS = tuple(sorted(_KERNELS))

# Rewrites an injection can make that are not Triton kernels; selected like kernels ("all" includes them).
FUSED_QKV = "fused_qkv"
LINEAR_GELU = "linear_gelu"
REWRITES = {
    FUSED_QKV: "the projections that read one input (LTX-Video's attn1 q/k/v, attn2 k/v) as one GEMM each, the "
    "modules' weights made views of one concatenation (kernels.inject.fused_linear)",
    LINEAR_GELU: "a feed-forward's GELU-tanh projection as one GEMM with the GELU in the BLAS epilogue "
    "(LTX-Video, FLUX, SD3; kernels.inject.linear_gelu)",
}
if set(REWRITES) & set(registry.builtin()):
    raise ValueError(f"a rewrite takes a kernel's name: {sorted(set(REWRITES) & set(registry.builtin()))}")

NAMES = frozenset(KERNELS) | frozenset(REWRITES)  # every name a rule may select by


def not_injectable() -> dict[str, str]:
    """Every kernel of the registry that no rule uses, with why: its entry's ``not_injected`` reason, else that no
    injection rule uses it."""
    return {
        name: entry.not_injected or "no injection rule uses it (kernels/inject/rules.py)"
        for name, entry in sorted(registry.builtin().items())
        if name not in KERNELS
    }
