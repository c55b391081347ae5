"""Answers of read queries kept per store revision: a page shown again, or by another reader of the same process,
costs one small statement (the revision) instead of decoding hundreds of stored repeats again.

The revision changes whenever a result is written (a new attempt and its measurements) or removed: the newest
measurement id, the newest attempt id and the number of attempts.  Answers are kept for the newest revision of each
store only, at most ``MAX_ENTRIES`` of them (least recently used first out).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from sqlalchemy import func, select

from orchestrator.store.models import JobAttempt, Measurement
from orchestrator.store.query.access import Source, read_session

T = TypeVar("T")
MAX_ENTRIES = 256

_entries: OrderedDict[tuple, Any] = OrderedDict()
_revisions: dict[Hashable, tuple] = {}
_lock = threading.Lock()


def store_revision(src: Source) -> tuple:
    """(newest measurement id, newest attempt id, number of attempts): changes with every result written."""
    with read_session(src) as s:
        return (
            s.scalar(select(func.max(Measurement.id))),  # the primary key's index: one lookup
            s.scalar(select(func.max(JobAttempt.id))),
            s.scalar(select(func.count(JobAttempt.id))),
        )


def _store_id(src: Source) -> Hashable:
    if isinstance(src, str):
        return src
    bind = getattr(src, "bind", None) or src  # a Session's engine, or the Engine itself
    return str(getattr(bind, "url", id(bind)))


def memo(src: Source, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(src, *args, **kwargs)``, computed once per store revision (arguments must be hashable)."""
    store = _store_id(src)
    revision = store_revision(src)
    key = (store, revision, fn.__module__, fn.__qualname__, args, tuple(sorted(kwargs.items())))
    with _lock:
        if _revisions.get(store) != revision:  # the store changed: its older answers are dropped
            for k in [k for k in _entries if k[0] == store]:
                del _entries[k]
            _revisions[store] = revision
        if key in _entries:
            _entries.move_to_end(key)
            return _entries[key]
    value = fn(src, *args, **kwargs)
    with _lock:
        _entries[key] = value
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return value


def clear() -> None:
    """Forget every kept answer (benchmarks time the first, uncached build with it)."""
    with _lock:
        _entries.clear()
        _revisions.clear()
