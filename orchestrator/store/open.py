"""Open the store for writing (a sweep, an import, bisect): an empty database gets the schema; an old one, or one
that cannot be opened, is a StoreError naming the store (engines themselves are made in session.py)."""

from __future__ import annotations

from rich.console import Console

from orchestrator.store.pg_database import ensure_database


def open_writer(explicit_url: str | None, console: Console):
    from orchestrator.store import migrate
    from orchestrator.store.session import display_url, resolve_url
    from orchestrator.store.writer import StoreError, StoreWriter

    url = resolve_url(explicit_url)
    shown = display_url(url)
    if ensure_database(url):
        console.print(f"created the database of {shown}", markup=False)
    try:
        current = migrate.current(url)
    except StoreError:  # already one line naming the store
        raise
    except Exception as exc:
        raise StoreError(f"store.url: cannot open {shown}: {str(exc).splitlines()[0]}", url) from None
    if current is None:
        migrate.upgrade(url)  # under the schema lock: a second process opening the new store waits, then reuses it
        console.print(f"created the store schema in {shown}", markup=False)
    return StoreWriter(url), url  # SchemaOutOfDate, a read-only store, ...: a StoreError naming the store
