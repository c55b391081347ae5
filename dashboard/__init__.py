"""kernelfleet's dashboard (Plotly Dash): speed-ups, trends, bandwidth, end to end, profiles, runs and the fleet.

It reads the store only through the query modules of :mod:`orchestrator.store.query`, read-only.
``python -m dashboard --help``.

============  =========================================================================================================
module        holds
============  =========================================================================================================
``__main__``  ``python -m dashboard`` (serve a store) and ``python -m dashboard build`` (static HTML)
``app``       the Dash app: a page per URL path, filters in the query string, each table's CSV, artifacts
``static``    every page with its default filters as one self-contained HTML file
``view``      what a page shows, independent of how: filters, figures, tables, notes (:class:`PageView`)
``pages/``    one module per page, and ``PAGES`` (URL path -> page)
``metrics``   metric names, units and directions as the pages show them (the catalogue of workers/metrics.py)
``colors``    one colour per implementation and end-to-end mode
============  =========================================================================================================
"""
