"""kernelfleet's driver: configuration, planning, Ray scheduling, the fleet and the store.

=====================  ===============================================================================================
module                 holds
=====================  ===============================================================================================
__main__               ``python -m orchestrator``: a sweep, or a subcommand (``cli/``); ``--help``
cli/                   the command line: the subcommand list and one module per subcommand, the error policy
config/                a sweep's configuration: composed with Hydra, typed by the schema, checked against the registry
plan/                  the configuration expanded into JobSpecs with their keys (pure), per kind; the CPU price
run/                   one sweep end to end: the run in the store, Ray scheduling, what the run is made under
fleet/                 GPU nodes joining the Ray cluster: their labels, ``ray start``, the node list
interchange/           results files imported, runs exported (csv, parquet, jsonl, other tools' formats, JSON)
reports/               what the user reads: a run's summary, the compare report, explanations, launch-table changes
bisect/                bisect over commits: the git side, one commit's run, the search, its report
store/                 the results store: models, sessions (the one place engines are made), migrations, the writer,
                       the read API (``store/query/``)
stats/                 statistics over stored results: the regression rule, end-to-end anchors
=====================  ===============================================================================================
"""
