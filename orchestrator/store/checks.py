"""What the store accepts: a JobSpec, JobResult or DeviceInfo dict whose values have the types, ranges and
lengths the tables hold, on SQLite and PostgreSQL alike (SQLite would store a string in an integer column or an
over-long name that PostgreSQL refuses; PostgreSQL refuses a NUL byte in text that SQLite keeps).

Each check raises :class:`Invalid` (a ValueError) naming the field, e.g. ``result.measurements[2].value:
expected a number, got 'fast'``.  ``strict`` (results files) also requires every field the writers write and
refuses NUL bytes and lone surrogates anywhere; the driver's own results go through the lenient form.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import math
import numbers
from typing import Any

from orchestrator.store.models import Artifact, Device, Job, JobAttempt
from orchestrator.store.models import Measurement as MeasurementRow
from workers import kinds
from workers.spec import ALL_STATUSES, DeviceInfo, JobResult, JobSpec

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
UNIX_MAX = 253402300799.0  # 9999-12-31T23:59:59Z, the last second a datetime holds


class Invalid(ValueError):
    """A value the store does not accept; the message starts with the field."""


def _length(column) -> int | None:
    return getattr(column.type, "length", None)


def _text(where: str, value: Any, column=None, optional: bool = False, nonempty: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise Invalid(f"{where}: expected a string, got {_show(value)}")
    if nonempty and not value:
        raise Invalid(f"{where}: must not be empty")
    limit = _length(column) if column is not None else None
    if limit is not None and len(value) > limit:
        raise Invalid(f"{where}: {len(value)} characters, the store holds at most {limit}")
    return value


def _int(where: str, value: Any, low: int = 0, high: int = INT64_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise Invalid(f"{where}: expected an integer, got {_show(value)}")
    if not low <= value <= high:
        raise Invalid(f"{where}: {value} is outside {low}..{high}")
    return value


def _number(where: str, value: Any, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise Invalid(f"{where}: expected a number, got {_show(value)}")
    try:
        return float(value)
    except OverflowError:
        raise Invalid(f"{where}: {str(value)[:20]}... is too large for a number") from None


def _dict(where: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise Invalid(f"{where}: expected an object, got {_show(value)}")
    return value


def _list(where: str, value: Any) -> list:
    if not isinstance(value, list):
        raise Invalid(f"{where}: expected a list, got {_show(value)}")
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fields(where: str, d: dict, cls: type, strict: bool, optional: tuple[str, ...] = ()) -> None:
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - names - set(optional))
    if unknown:
        raise Invalid(f"{where}: unknown field(s) {', '.join(unknown)}")
    if strict:
        missing = [name for name in sorted(names) if name not in d]
        if missing:
            raise Invalid(f"{where}: missing field(s) {', '.join(missing)}")


def _storable(at: str, text: str) -> None:
    if "\x00" in text:
        raise Invalid(f"{at}: contains a NUL byte, which the store cannot hold")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Invalid(f"{at}: not valid Unicode text (a lone surrogate)") from None


_TEXT_OR_CONTAINER = (str, dict, list)


def plain_text(where: str, value: Any) -> None:
    """Refuse, in any string (key or value) of a JSON-like value, what a database cannot store as text: a NUL byte
    (PostgreSQL) or a lone surrogate (neither)."""
    stack = [(where, value)]
    while stack:
        at, v = stack.pop()
        if isinstance(v, str):
            _storable(at, v)
        elif isinstance(v, dict):
            for k, x in v.items():
                if isinstance(k, str):
                    _storable(f"{at} (a key)", k)
                if isinstance(x, _TEXT_OR_CONTAINER):
                    stack.append((f"{at}.{k}", x))
        elif isinstance(v, list):
            # only what can hold text is visited (a list of many thousands of samples is skipped quickly)
            stack.extend((f"{at}[{i}]", x) for i, x in enumerate(v) if isinstance(x, _TEXT_OR_CONTAINER))


def check_spec(d: Any, strict: bool = True, where: str = "spec") -> JobSpec:
    d = _dict(where, d)
    _fields(where, d, JobSpec, strict)
    c = Job.__table__.c
    kind = _text(f"{where}.kind", d.get("kind"), c.kind)
    if kind not in kinds.names():
        raise Invalid(f"{where}.kind: {kind!r} is not one of {', '.join(kinds.names())}")
    _text(f"{where}.kernel", d.get("kernel"), c.kernel, optional=True)
    _text(f"{where}.model", d.get("model"), c.model, optional=True)
    shape = _list(f"{where}.shape", d.get("shape", []))
    for i, n in enumerate(shape):
        _int(f"{where}.shape[{i}]", n)
    if len("x".join(str(n) for n in shape)) > _length(c.shape_key):
        raise Invalid(f"{where}.shape: too many dimensions for the store")
    _text(f"{where}.dtype", d.get("dtype", "bf16"), c.dtype)
    for i, impl in enumerate(_list(f"{where}.impls", d.get("impls", []))):
        _text(f"{where}.impls[{i}]", impl, MeasurementRow.__table__.c.impl)
    _text(f"{where}.target", d.get("target", "any"), c.target)
    _dict(f"{where}.params", d.get("params", {}))
    _text(f"{where}.key", d.get("key"), c.key, nonempty=True)
    _text(f"{where}.sweep", d.get("sweep", ""))
    if strict:
        plain_text(where, d)
    return JobSpec.from_dict(d)


def check_device(d: Any, strict: bool = True, where: str = "device") -> DeviceInfo:
    d = _dict(where, d)
    _fields(where, d, DeviceInfo, strict, optional=("hardware_key",))
    c = Device.__table__.c
    for name in ("vendor", "name", "arch"):
        _text(f"{where}.{name}", d.get(name), getattr(c, name))
    for name in ("driver", "runtime", "torch", "triton", "gpu_type"):
        _text(f"{where}.{name}", d.get(name, ""), getattr(c, name))
    for name, high in (
        ("warp_size", INT32_MAX),
        ("compute_units", INT32_MAX),
        ("memory_bytes", INT64_MAX),
        ("index", INT32_MAX),
    ):
        _int(f"{where}.{name}", d.get(name, 0), high=high)
    _dict(f"{where}.extra", d.get("extra", {}))
    info = DeviceInfo.from_dict(d)
    if len(info.hardware_key) > _length(c.hardware_key):
        raise Invalid(f"{where}: its hardware key is longer than the store holds ({_length(c.hardware_key)})")
    given = d.get("hardware_key")
    if given is not None and given != info.hardware_key:
        raise Invalid(
            f"{where}.hardware_key: {_show(given)} is not the key of the device's fields ({info.hardware_key!r})"
        )
    return info


def parse_artifacts(key: str, details: dict[str, Any]) -> list[dict[str, Any]]:
    """details["artifacts"] -> [{kind, name, path, blob, size}], base64 decoded."""
    raw = details.get("artifacts") or []
    if not isinstance(raw, list):
        raise Invalid(f"result {key}: details.artifacts must be a list, got {type(raw).__name__}")
    c = Artifact.__table__.c
    parsed = []
    for i, a in enumerate(raw):
        if not isinstance(a, dict) or not a.get("kind") or not a.get("name"):
            raise Invalid(f"result {key}: artifact #{i} needs a kind and a name: {a!r:.200}")
        _text(f"result {key}: artifact #{i} kind", a["kind"], c.kind)
        _text(f"result {key}: artifact #{i} name", a["name"], c.name)
        _text(f"result {key}: artifact #{i} path", a.get("path"), optional=True)
        blob = None
        if a.get("data_b64") is not None:
            try:
                blob = base64.b64decode(a["data_b64"], validate=True)
            except (binascii.Error, ValueError, TypeError) as exc:
                raise Invalid(f"result {key}: artifact {a['name']!r} has invalid base64 data: {exc}") from None
        path = a.get("path")
        if blob is None and not path:
            raise Invalid(f"result {key}: artifact {a['name']!r} has neither data_b64 nor path")
        size = len(blob) if blob is not None else a.get("size")
        if size is not None:
            _int(f"result {key}: artifact {a['name']!r} size", size)
        parsed.append({"kind": a["kind"], "name": a["name"], "path": path, "blob": blob, "size": size})
    return parsed


def check_result(d: Any, strict: bool = True, where: str = "result") -> JobResult:
    """A JobResult dict the store accepts (see the module doc), parsed."""
    d = _dict(where, d)
    _fields(where, d, JobResult, strict)
    if strict:
        plain_text(where, d)
    c = JobAttempt.__table__.c
    key = _text(f"{where}.key", d.get("key"), Job.__table__.c.key, nonempty=True)
    status = _text(f"{where}.status", d.get("status"), c.status)
    if status not in ALL_STATUSES:
        raise Invalid(f"{where}.status: {status!r} is not one of {', '.join(ALL_STATUSES)}")
    m = MeasurementRow.__table__.c
    seen: set[tuple[str, str]] = set()
    measurements = d.get("measurements", []) if strict else d.get("measurements") or []
    for i, raw in enumerate(_list(f"{where}.measurements", measurements)):
        at = f"{where}.measurements[{i}]"
        raw = _dict(at, raw)
        unknown = sorted(set(raw) - {"impl", "metric", "value", "unit", "samples"})
        missing = [f for f in ("impl", "metric", "value") + (("unit", "samples") if strict else ()) if f not in raw]
        if unknown or missing:
            raise Invalid(
                f"{at}: "
                + "; ".join(
                    filter(
                        None,
                        (
                            unknown and f"unknown field(s) {', '.join(unknown)}",
                            missing and f"missing {', '.join(missing)}",
                        ),
                    )
                )
            )
        pair = (_text(f"{at}.impl", raw["impl"], m.impl), _text(f"{at}.metric", raw["metric"], m.metric))
        if pair in seen:
            raise Invalid(f"{at}: measurement {pair[0]}/{pair[1]} appears twice")
        seen.add(pair)
        _number(f"{at}.value", raw["value"])
        _text(f"{at}.unit", raw.get("unit", ""), m.unit, optional=not strict)
        samples = raw.get("samples")
        if samples is not None:
            for j, x in enumerate(_list(f"{at}.samples", samples)):
                if type(x) is not float:  # a float always passes; results hold many thousands of them
                    _number(f"{at}.samples[{j}]", x)
    _text(f"{where}.error", d.get("error"), optional=True)
    if d.get("device") is not None:
        check_device(d["device"], strict, f"{where}.device")
    _text(f"{where}.node_id", d.get("node_id"), c.node_id, optional=True)
    started = _number(f"{where}.started_at", d.get("started_at"))
    if started is not None and not (math.isfinite(started) and 0 <= started <= UNIX_MAX):
        raise Invalid(f"{where}.started_at: {started} is not a time (unix seconds)")
    duration = _number(f"{where}.duration_s", d.get("duration_s"))
    if strict and duration is not None and not (math.isfinite(duration) and 0 <= duration <= UNIX_MAX):
        raise Invalid(f"{where}.duration_s: {duration} is not a duration (seconds, from 0 to {UNIX_MAX:.0f})")
    if strict and started is not None and duration is not None and started + duration > UNIX_MAX:
        raise Invalid(f"{where}.duration_s: {duration} s from started_at {started} ends past the year 9999")
    _int(f"{where}.attempt", d.get("attempt", 1), low=1, high=INT32_MAX)
    details = _dict(f"{where}.details", d.get("details", {}) if strict else d.get("details") or {})
    parse_artifacts(key, details)
    gbs = details.get("copy_gbs")
    if strict and gbs is not None:
        value = _number(f"{where}.details.copy_gbs", gbs)
        if not (math.isfinite(value) and value > 0):
            raise Invalid(f"{where}.details.copy_gbs: must be a positive number of GB/s, got {gbs}")
    return JobResult.from_dict(d)
