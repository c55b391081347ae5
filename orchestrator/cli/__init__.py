"""The command line: the subcommand list and each subcommand's module (``python -m orchestrator NAME``).

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``commands``        the list of subcommand modules, the parser and ``--help`` built from them, the error policy
``subcommand``      what a subcommand declares (``COMMAND``): name, help, arguments, run
``errors``          the orchestrator's user errors (``UsageError``...): one line, exit 2; anything else a bug
``arg_types``       integer arguments of the store commands, checked where argparse reads them
``export``          ``export``: the command line of interchange/export.py (csv, parquet, jsonl, liger, tritonbench)
``db``              ``db upgrade|current``: the store's schema
``import_results``  ``import``: the command line of interchange/importer.py
``runs``            ``runs``: the runs of the store
``report``          ``report``: a run's summary again (table, Markdown, JSON)
``regressions``     ``regressions``: changes beyond the between-run spread
``compare``         ``compare``: two sets of runs side by side
``compare_refs``    what a REF of ``compare`` names (run ids, a commit, a branch)
``bisect``          ``bisect``: the first commit where a series changed, judged by the regression rule
``explain``         ``explain``: why a series changed, for two sets of runs (text, JSON, Markdown)
``tune``            ``tune table``: the command line of reports/tune_table.py
``fleet``           ``node join|list|leave`` and ``cluster up``
==================  ==================================================================================================
"""
