"""kernelfleet's dashboard (Plotly Dash): speed-ups, trends, bandwidth, end to end, profiles, runs and the fleet.

It reads the store only through the query modules of :mod:`orchestrator.store.query`, read-only.
``python -m dashboard --help``.
"""
