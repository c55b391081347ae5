"""What torch.compile built and what its autotuner picked, for one implementation of a micro job.

Inductor loads every module it generates (the graph's output code and, on a GPU, its Triton kernels) through
``torch._inductor.codecache.PyCodeCache``, which keeps them in a list in load order.  The modules that appear
while one implementation compiles and first runs are that implementation's.  Each Triton kernel is a
``CachingAutotuner`` global of the output code; once the kernel has run, its one remaining launcher carries the
``triton.Config`` the autotuner chose (max-autotune's candidates, coordinate-descent tuning) or the single config
Inductor gave it.  Recorded per implementation (``details["autotune"][impl]``):

  kernels      the generated kernels' names (``triton_red_fused_...`` on a GPU, ``cpp_fused_...`` on a CPU)
  configs      kernel -> chosen config (``XBLOCK=1,R0_BLOCK=2048,num_warps=16,num_stages=1``), GPU only
  code_hash    sha256 (16 hex) of the generated output code
  fx_cache     the FX graph cache's verdict for this compilation: hit, miss or bypass; "in process" when an
               earlier job of this process compiled it (a correctness job before the micro job)
  pick         one string the regression rule compares between runs: the configs when there are any, else the
               code hash (a CPU has no autotuning: the code is what was picked)

Inductor's caches live in ``TORCHINDUCTOR_CACHE_DIR`` (default ``/tmp/torchinductor_<user>``), which every sandbox
child on a node shares, so a rerun normally loads the same kernels and autotune results.  ``fresh`` (the job
parameter ``fresh_autotune``) compiles with ``TORCHINDUCTOR_CACHE_DIR`` pointed at a new, empty directory: no
kernel, graph or autotune result is found, every choice is made again, and the node's cache is left as it was.
(Inductor's ``force_disable_caches`` would do the same but also keeps the generated modules out of
``PyCodeCache.modules``, where this module finds them.)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import tempfile
from typing import Any, Iterator

CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
# What each implementation compiled earlier in this process, by the caller's key (kernel, impl, shape, dtype): the
# range of PyCodeCache.modules it loaded.  A sandbox child runs a correctness job before the micro job of the same
# kernel and shape, and torch.compile reuses the first job's compiled code in the second, which then loads nothing.
_COMPILED: dict[Any, tuple[int, int]] = {}


def _code_cache():
    if "torch._inductor.codecache" not in sys.modules:  # nothing compiled yet; don't import Inductor for it
        return None
    return sys.modules["torch._inductor.codecache"].PyCodeCache


def mark() -> int:
    """The number of modules Inductor has loaded in this process so far."""
    cache = _code_cache()
    return len(cache.modules) if cache is not None else 0


def _fx_counts() -> dict[str, int]:
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return {}
    c = utils.counters.get("inductor", {})
    return {k: int(c.get(f"fxgraph_cache_{k}", 0)) for k in ("hit", "miss", "bypass")}


@contextlib.contextmanager
def compiling(fresh: bool = False, key: Any = None) -> Iterator[dict[str, Any]]:
    """Around an implementation's make() and first call: yields a dict that ``record`` reads afterwards.
    ``fresh``: Inductor's caches are neither read nor written (a new autotune).  ``key`` (kernel, impl, shape,
    dtype): when nothing is compiled now because this process compiled the same earlier, that compilation is
    the one recorded (``fx_cache`` "in process")."""
    state: dict[str, Any] = {"start": mark(), "fx": _fx_counts(), "fresh": fresh}
    if fresh:  # an empty cache directory for this compilation; the node's own cache stays as it is
        before = os.environ.get(CACHE_ENV)
        os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="kernelfleet-fresh-autotune-")
        try:
            yield state
        finally:
            if before is None:
                os.environ.pop(CACHE_ENV, None)
            else:
                os.environ[CACHE_ENV] = before
    else:
        yield state
    state["end"] = mark()
    after = _fx_counts()
    state["fx"] = {k: after.get(k, 0) - state["fx"].get(k, 0) for k in after}
    if key is not None:
        if state["end"] > state["start"]:
            _COMPILED[key] = (state["start"], state["end"])
        elif key in _COMPILED and not fresh:
            state["start"], state["end"] = _COMPILED[key]
            state["fx"] = {"in process": 1}


def job_key(spec: Any, impl: str) -> tuple:
    """The key under which an implementation's compilation is remembered in this process (see ``compiling``)."""
    return (spec.kernel, impl, tuple(spec.shape), spec.dtype)


def _config_text(cfg: Any) -> str:
    kwargs = getattr(cfg, "kwargs", None) or {}
    parts = [f"{k}={v}" for k, v in sorted(kwargs.items())]
    for attr in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        v = getattr(cfg, attr, None)
        if v is not None and not (attr == "num_ctas" and v == 1):
            parts.append(f"{attr}={v}")
    return ",".join(parts)


# Inductor's generated kernels: pointwise, reduction, persistent reduction, template, foreach; C++ on a CPU
_KERNEL_NAME = re.compile(r"^(triton_(poi|red|per|tem|for)_|cpp_fused)")


def _kernels(module: Any, configs: dict[str, str]) -> list[str]:
    """The module's generated kernels' names; their chosen configs go into ``configs`` (one launcher left: the
    pick; several: not tuned down to one yet, kept only when nothing better is known)."""
    names = []
    for name, obj in sorted(vars(module).items()):
        if not _KERNEL_NAME.match(name):
            continue
        names.append(name)
        cfgs = sorted(
            {
                _config_text(launcher.config)
                for launcher in getattr(obj, "launchers", None) or ()
                if hasattr(launcher, "config")
            }
        )
        if len(cfgs) == 1 or (cfgs and name not in configs):
            configs[name] = "|".join(cfgs)
    return names


def record(state: dict[str, Any]) -> dict[str, Any] | None:
    """What this implementation compiled (the module doc); None when Inductor generated nothing for it."""
    cache = _code_cache()
    if cache is None or state.get("end", 0) <= state.get("start", 0):
        return None
    modules = cache.modules[state["start"] : state["end"]]
    names: list[str] = []
    configs: dict[str, str] = {}
    digest = hashlib.sha256()
    for m in modules:
        names += _kernels(m, configs)
        path = getattr(m, "__file__", None)
        if path and hasattr(m, "call"):  # the output code (kernels inline their source in it)
            try:
                with open(path, "rb") as f:
                    digest.update(f.read())
            except OSError:
                pass
    code_hash = digest.hexdigest()[:16]
    fx = next((k for k in ("hit", "miss", "bypass", "in process") if state.get("fx", {}).get(k)), None)
    pick = "; ".join(f"{k}:{v}" for k, v in sorted(configs.items())) if configs else f"code:{code_hash}"
    return {
        "kernels": sorted(set(names)),
        "configs": configs,
        "code_hash": code_hash,
        "fx_cache": fx,
        "fresh": bool(state.get("fresh")),
        "pick": pick,
    }
