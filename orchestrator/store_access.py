"""Open the store for a sweep or an import: an empty database gets the schema; an old one is an error."""

from __future__ import annotations

from rich.console import Console

from orchestrator.config import ConfigError
from orchestrator.pg_database import ensure_database


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
    except StoreError as exc:
        raise ConfigError(str(exc)) from None
    except Exception as exc:
        raise ConfigError(f"store.url: cannot open {shown}: {str(exc).splitlines()[0]}") from None
    try:
        if current is None:
            migrate.upgrade(url)  # under the schema lock: a second process opening the new store waits, then reuses it
            console.print(f"created the store schema in {shown}", markup=False)
        return StoreWriter(url), url
    except StoreError as exc:  # SchemaOutOfDate, a read-only store, ...
        raise ConfigError(str(exc)) from None
