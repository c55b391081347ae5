"""The dashboard's pages: each module's ``build(src, params) -> PageView``; PAGES maps URL paths to them.

=============  ========================================================================================================
module         page
=============  ========================================================================================================
``overview``   ``/``: kernel x GPU type speed-ups against eager and the faster torch.compile
``trends``     ``/trends``: median and IQR per series over dates or commits, with the rule's verdicts
``bandwidth``  ``/bandwidth``: bytes moved against time per call, against each device's copy ceiling
``e2e``        ``/e2e``: LTX-Video ms per step per mode per device, the latents' error against eager
``profiles``   ``/profiles``: the top kernels of a profile job or an e2e job's profiled call
``isa``        ``/isa``: what each kernel compiled to per target architecture, over commits
``tune``       ``/tune``: one tune run's candidates per kernel and shape, the current choice and the winner
``runs``       ``/runs``: runs with their outcomes, failed attempts' errors, the fleet's nodes
``compare``    ``/compare``: two runs or two commits side by side
``regression`` ``/regression``: why one series changed between two sides: both sides' kernels, what changed
``_common``    helpers the page modules share (a URL parameter read against its allowed values)
=============  ========================================================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from dashboard.view import PageView
from orchestrator.store.query import access, run_queries

from . import bandwidth, compare, e2e, isa, overview, profiles, regression, runs, trends, tune

# path -> (page name, nav label, builder)
PAGES: dict[str, tuple[str, str, Callable[[str, Mapping[str, str]], PageView]]] = {
    "/": ("overview", "Overview", overview.build),
    "/trends": ("trends", "Trends", trends.build),
    "/bandwidth": ("bandwidth", "Bandwidth", bandwidth.build),
    "/e2e": ("e2e", "End to end", e2e.build),
    "/profiles": ("profiles", "Profiles", profiles.build),
    "/isa": ("isa", "ISA", isa.build),
    "/tune": ("tune", "Tune", tune.build),
    "/runs": ("runs", "Runs and fleet", runs.build),
    "/compare": ("compare", "Compare", compare.build),
    "/regression": ("regression", "Regression", regression.build),
}
PATH_OF = {name: path for path, (name, _, _) in PAGES.items()}


def fill_command(url: str) -> str:
    """The command that puts results into the store at ``url``."""
    return f"python -m orchestrator +sweep=smoke store.url='{access.display_store_url(url)}'"


def build(src, path: str, params: Mapping[str, str], url: str) -> PageView:
    """The view of the page at ``path`` (unknown paths: the overview) for the URL parameters ``params``, read
    from ``src`` (the store at ``url``)."""
    name, label, builder = PAGES.get(path or "/", PAGES["/"])
    if not run_queries.list_runs(src, limit=1):
        return PageView(page=name, title=label, empty=fill_command(url))
    view = builder(src, params)
    if (path or "/") not in PAGES:
        known = ", ".join(PAGES)
        view.notes.insert(0, f"No page at {path}: showing the overview (pages: {known}).")
    view.notes[:0] = unknown_filter_values(view, params)
    return view


def unknown_filter_values(view: PageView, params: Mapping[str, str]) -> list[str]:
    """A note per URL parameter the page did not take as given: a value its filter does not offer (the page shows
    another view then, and says which) or a parameter the page has no filter for."""
    notes = []
    filters = {f.name: f for f in view.filters}
    for name, value in params.items():
        f = filters.get(name)
        if f is None:
            if name not in view.params:
                notes.append(f"{name}={value}: this page has no such filter; ignored.")
            continue
        offered = {v for v, _ in f.options}
        if value not in offered:
            shown = dict(f.options).get(f.value, f.value) or "all"
            sample = ", ".join(v or "all" for v, _ in f.options[:8]) + (" …" if len(f.options) > 8 else "")
            notes.append(f"{name}={value}: not a value of the {f.label} filter ({sample}); showing {shown}.")
    return notes
