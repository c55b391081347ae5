"""The dashboard's pages: each module's ``build(src, params) -> PageView``; PAGES maps URL paths to them."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from dashboard.view import PageView
from orchestrator.store import queries

from . import bandwidth, compare, e2e, overview, profiles, runs, trends

# path -> (page name, nav label, builder)
PAGES: dict[str, tuple[str, str, Callable[[str, Mapping[str, str]], PageView]]] = {
    "/": ("overview", "Overview", overview.build),
    "/trends": ("trends", "Trends", trends.build),
    "/bandwidth": ("bandwidth", "Bandwidth", bandwidth.build),
    "/e2e": ("e2e", "End to end", e2e.build),
    "/profiles": ("profiles", "Profiles", profiles.build),
    "/runs": ("runs", "Runs and fleet", runs.build),
    "/compare": ("compare", "Compare", compare.build),
}
PATH_OF = {name: path for path, (name, _, _) in PAGES.items()}


def fill_command(url: str) -> str:
    """The command that puts results into the store at ``url``."""
    return f"python -m orchestrator +sweep=smoke store.url='{queries.display_store_url(url)}'"


def build(src, path: str, params: Mapping[str, str], url: str) -> PageView:
    """The view of the page at ``path`` (unknown paths: the overview) for the URL parameters ``params``, read
    from ``src`` (the store at ``url``)."""
    name, label, builder = PAGES.get(path or "/", PAGES["/"])
    if not queries.list_runs(src, limit=1):
        return PageView(page=name, title=label, empty=fill_command(url))
    return builder(src, params)
