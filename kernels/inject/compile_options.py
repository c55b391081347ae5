"""Inductor options for ``torch.compile`` of a model with the kernels injected.

Inductor launches the Triton kernels it generates through its static launcher (one C call with the arguments), but
the user-defined Triton kernels a graph calls (the injected kernels are such: ``torch.library.triton_op`` +
``wrap_triton``) through Triton's own Python launch path, unless ``static_launch_user_defined_triton_kernels`` is
set; torch 2.11 leaves it off.  On the H200 (docs/perf/ltx-e2e-h200.md, host cost of compiled injected blocks)
one launch of ours took ~21 µs of host time in a compiled LTX-Video block and one of Inductor's ~12 µs; an injected
block makes five such launches, 28 blocks per forward, and the plain-call step of ``triton+compile`` is bound by the
host.  Inductor checks each kernel and keeps Triton's launcher for one the static launcher cannot take (scratch memory,
tensor descriptors, launch hooks), so the option changes how kernels are launched, never what they compute; a model
without user-defined Triton kernels compiles to the same code with or without it.

    model.compile_repeated_blocks(fullgraph=True, options=compile_options())
    torch.compile(model, fullgraph=True, options=compile_options("max-autotune-no-cudagraphs"))

(``torch.compile`` takes ``mode`` or ``options``, not both: ``compile_options(mode)`` carries the mode's own options.)

Inductor compiles kernels in worker processes once its pool is up (it starts during the process's first compile),
and torch (2.11, 2.13) hands the workers ``use_static_triton_launcher`` but not this option: they read it from their
environment only, ``TORCHINDUCTOR_STATIC_LAUNCH_USER_DEFINED_TRITON_KERNELS``.  So ``compile_options`` also switches
the option on for the whole process: it sets that variable (where it is unset) and the option in this process's
Inductor config (for kernels compiled in this process).  Call it before the process's first ``torch.compile``;
workers started earlier keep Triton's launcher for our kernels (slower to launch, the same results).  Measured on the
H200: kernels compiled by workers started after the call (docs/perf/ltx-e2e-h200.md) and kernels
compiled in-process with the config set (the GPU test ``test_ltx_compiled_with_static_launch_of_our_kernels``) are
launched statically.
"""

from __future__ import annotations

import os
from typing import Any

STATIC_LAUNCH = "static_launch_user_defined_triton_kernels"
STATIC_LAUNCH_ENV = "TORCHINDUCTOR_STATIC_LAUNCH_USER_DEFINED_TRITON_KERNELS"


def compile_options(mode: str | None = None) -> dict[str, Any]:
    """``torch.compile`` options: those of ``mode`` (None or ``"default"``: none) plus the static launch of
    user-defined Triton kernels where this torch has that option, which is also switched on for this process and
    its compile workers (see above).  An unknown mode raises torch's RuntimeError."""
    import torch._inductor
    import torch._inductor.config as inductor_config

    options = dict(torch._inductor.list_mode_options(mode)) if mode not in (None, "default") else {}
    if hasattr(inductor_config, STATIC_LAUNCH):
        options[STATIC_LAUNCH] = True
        setattr(inductor_config, STATIC_LAUNCH, True)
        os.environ.setdefault(STATIC_LAUNCH_ENV, "1")
    return options
