"""The model configurations an end-to-end job builds with random weights: JSON data in ``conf/models/``.

A configuration is named (``flux.1-dev``, ``sd3.5-medium``, ``sd3.5-large``, ``tinyllama-1.1b``, ``llama-3-8b``:
``conf/models/<name>.json``) or given as a path to a JSON file.  A file of ``conf/models/`` says its family and
holds the published configuration of the model: ``transformer`` and ``scheduler`` (the diffusers folders'
``config.json`` and ``scheduler_config.json``) for FLUX and SD3, ``config`` (the model's ``config.json``) for a
Llama-family decoder.  A model's own ``config.json`` (a top-level ``model_type``) is taken as a decoder's
configuration as it is, so any LlamaForCausalLM-compatible configuration runs by its path.  Plain data (no torch):
the planner checks a name with :func:`load` before anything runs, the job builds the model from what it returns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONF_DIR = Path(__file__).resolve().parents[3] / "conf" / "models"
FAMILIES = ("flux", "sd3", "llama")


def names() -> list[str]:
    """The configurations of ``conf/models/`` by name."""
    return sorted(p.stem for p in CONF_DIR.glob("*.json"))


def _path(name: str) -> Path:
    if name.endswith(".json") or "/" in name:
        return Path(name).expanduser()
    return CONF_DIR / f"{name}.json"


def load(name: str, family: str) -> dict[str, Any]:
    """The configuration ``name`` of ``family``: ``{"family", "source", ...}`` with ``transformer`` and
    ``scheduler`` (flux, sd3) or ``config`` (llama).  ValueError (one line) for an unknown name, a file that is not
    JSON, or a configuration of another family."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; allowed: {', '.join(FAMILIES)}")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"config must be a name in conf/models ({', '.join(names())}) or a path to a JSON file")
    path = _path(name)
    if not path.is_file():
        raise ValueError(
            f"config {name!r}: no such configuration; known: {', '.join(names())} (or a path to a JSON file)"
        )
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"config {name!r}: {path} is not a JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"config {name!r}: {path} holds {type(data).__name__}, not a JSON object")
    if "family" not in data and "model_type" in data:  # a model's own config.json: a decoder's configuration
        data = {"family": "llama", "source": str(path), "config": data}
    if data.get("family") != family:
        raise ValueError(f"config {name!r} is a {data.get('family')!r} configuration, not {family!r}")
    needed = ("config",) if family == "llama" else ("transformer", "scheduler")
    for key in needed:
        if not isinstance(data.get(key), dict):
            raise ValueError(f"config {name!r}: {path} has no {key!r} object")
    return data
