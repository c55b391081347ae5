"""kernelfleet's dashboard (Plotly Dash): speed-ups, trends, bandwidth, end to end, profiles, runs and the fleet.

It reads the store only through :mod:`orchestrator.store.queries`, read-only.  ``python -m dashboard --help``.
"""
