"""The store's read API, by topic.  The CLI's readers and the dashboard import these modules directly (the dashboard
imports nothing else from the orchestrator: tests/test_import_graph.py).

  access.py              how a reader opens the store (``src``: URL, Engine or Session), read-only engines
  picked.py              which attempt a run shows for each job, and the row building blocks the others share
  run_queries.py         runs, one run's summary, outcomes, failed attempts, devices and nodes
  result_queries.py      history, latest results, ISA, end-to-end rows, profile rows, artifacts, export rows
  case_queries.py        the input cases a run's correctness jobs checked, and which failed where
  series_queries.py      micro series with their repeats; trend points
  regression_queries.py  the regression rule over the store's series (``python -m orchestrator regressions``)
  trend_queries.py       the rule's verdict at every point of a series (the Trends page)
  view_queries.py        the dashboard's views: newest micro results, speed-ups, choices, e2e and profile pages
  compare_queries.py     two sets of runs side by side (``compare``, the Compare page)
  bisect_queries.py      what bisect reads: a segment's measurements by job key, the rule's verdict between two
  explain_queries.py     both sides' profile, isa and autotune captures of a series (``explain``, Regression page)
  tune_queries.py        tune runs: which runs tuned what, each job's candidates with their timings
  timing_queries.py      micro timings with their repeats for the exports other tools read
  revision_cache.py      results kept per store revision
  csv_cells.py           CSV cells a spreadsheet shows as text

Every query takes the store as its first argument (``src``); nothing here writes.  Times are timezone-aware UTC
datetimes.  Metric names, units and directions: the catalogue in workers/metrics.py (``impl`` is the
implementation, or the mode for e2e).  A query given a metric the catalogue lacks raises ValueError.  The
statistics the readers apply (the regression rule, end-to-end anchors) are in orchestrator/stats/.
"""
