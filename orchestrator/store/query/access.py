"""How the read API opens the store: ``src`` is a URL (or bare SQLite path), an Engine or a Session.

URLs share one engine per URL and are checked once for an up-to-date schema: SchemaOutOfDate otherwise (named here
for readers to catch).  open_read_only gives an engine that cannot write."""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from orchestrator.store.migrate import SchemaOutOfDate, check_schema
from orchestrator.store.session import get_engine, normalize_url

Source = str | Engine | Session

__all__ = ["SchemaOutOfDate", "Source", "chunks", "display_store_url", "open_read_only", "read_session", "store_url"]

_schema_checked: "weakref.WeakKeyDictionary[Engine, bool]" = weakref.WeakKeyDictionary()


@contextmanager
def read_session(src: Source) -> Iterator[Session]:
    if isinstance(src, Session):
        yield src
        return
    if isinstance(src, Engine):
        engine, url = src, None
    else:
        url = normalize_url(src)
        engine = get_engine(url)
    if engine not in _schema_checked:
        check_schema(engine, url)
        _schema_checked[engine] = True
    with Session(engine) as session:
        yield session


def chunks(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def display_store_url(url: str) -> str:
    """The store URL for messages (password masked)."""
    from orchestrator.store.session import display_url

    try:
        return display_url(normalize_url(url))
    except ValueError:  # a URL that cannot be used is still named, without its password
        return display_url(url)


def open_read_only(url: str) -> Engine:
    """An engine that can only read the store at ``url`` (SQLite opened with ``mode=ro``, PostgreSQL sessions
    with ``default_transaction_read_only``), its schema checked: SchemaOutOfDate (naming ``python -m orchestrator
    db upgrade``) when it is not at this code's revision or does not exist.  Pass it as ``src`` to the queries
    of this package; nothing is created or migrated."""
    from orchestrator.store.session import is_sqlite, read_only_engine, sqlite_path

    url = normalize_url(url)
    if is_sqlite(url):
        path = sqlite_path(url)
        if path is not None and not path.exists():
            check_schema(get_engine(url), url)  # raises "does not exist yet", creating nothing
    engine = read_only_engine(url)
    check_schema(engine, url)
    _schema_checked[engine] = True
    return engine


def store_url(explicit: str | None = None) -> str:
    """The store a reader opens: ``explicit``, else $KERNELFLEET_DB, else the default SQLite file (as a sweep)."""
    from orchestrator.store.session import resolve_url

    return resolve_url(explicit)
