"""Which Triton this process runs: the distribution that provides the imported ``triton`` package, and its version.

Upstream wheels are the ``triton`` distribution; ROCm's PyTorch brings ``pytorch-triton-rocm`` and PyTorch's
nightlies ``pytorch-triton``, each providing the same ``triton`` package under its own name and version string.
Reading the ``triton`` distribution's metadata therefore says nothing on a ROCm node (there is none) and can name
the wrong one where two are installed; :func:`triton_distribution` looks at the module actually imported instead:
its ``__version__`` and the distribution whose files hold it (the ``*.dist-info`` beside the package, falling back
to :func:`importlib.metadata.packages_distributions`).  Job keys, device records, the launch gate
(:mod:`kernels.fast_launch`) and ``python -m orchestrator --version`` all use it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

UNKNOWN = "unknown"  # the distribution name when no installed distribution provides the imported package


@dataclass(frozen=True)
class TritonDist:
    name: str  # the distribution's name as its metadata spells it (``triton``, ``pytorch-triton-rocm``...)
    version: str  # ``triton.__version__`` of the imported module ("" when triton cannot be imported)

    def __str__(self) -> str:
        return f"{self.name} {self.version}" if self.version else "none"

    @property
    def recorded(self) -> str:
        """What job keys and device records hold: the bare version for upstream ``triton`` (as they always have,
        so its keys stay what they were), ``<distribution> <version>`` for any other, ``none`` without Triton."""
        if not self.version:
            return "none"
        return self.version if self.name == "triton" else f"{self.name} {self.version}"


NONE = TritonDist("none", "")


def _provides_triton(dist: metadata.Distribution) -> bool:
    top = dist.read_text("top_level.txt")
    if top is not None:
        return "triton" in top.split()
    return any(f.parts and f.parts[0] == "triton" for f in dist.files or ())


def _same_release(a: str, b: str) -> bool:
    """Whether two version strings name one release, a local part (``+git1234``) aside."""
    return a.split("+")[0] == b.split("+")[0]


def distribution_of(package_dir: Path, version: str) -> str:
    """The name of the distribution that installed the ``triton`` package at ``package_dir`` (whose module reports
    ``version``): one in the same directory whose files include ``triton/`` (preferring one of the same version
    where stale metadata of another lies beside it), else one that :func:`packages_distributions` names and whose
    files are that very package; :data:`UNKNOWN` when none is (a source tree on ``PYTHONPATH`` without its
    ``.dist-info``, while another Triton is installed elsewhere, is not taken for the installed one)."""
    beside = [d for d in metadata.distributions(path=[str(package_dir.parent)]) if _provides_triton(d)]
    if beside:
        same = [d for d in beside if _same_release(d.version, version)]
        return (same or beside)[0].metadata["Name"]
    here = (package_dir / "__init__.py").resolve()
    for name in dict.fromkeys(metadata.packages_distributions().get("triton") or ()):
        try:
            located = Path(metadata.distribution(name).locate_file("triton/__init__.py")).resolve()
        except (metadata.PackageNotFoundError, OSError):
            continue
        if located == here:
            return name
    return UNKNOWN


@functools.cache
def triton_distribution() -> TritonDist:
    """The imported Triton's distribution name and version (:data:`NONE` when ``import triton`` fails)."""
    try:
        import triton
    except Exception:  # noqa: BLE001 - a broken triton install must not break whoever asks
        return NONE
    version = str(getattr(triton, "__version__", "") or "")
    path = getattr(triton, "__file__", None)
    if not path:
        return TritonDist(UNKNOWN, version)
    return TritonDist(distribution_of(Path(path).parent, version), version)
