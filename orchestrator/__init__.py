"""kernelfleet's driver: configuration, planning, Ray scheduling, the fleet and the store.

=====================  ================================================================================================
module                 holds
=====================  ================================================================================================
``__main__``           ``python -m orchestrator``: a sweep, or a subcommand (``cli``); ``--help``
``cli``                the list of subcommand modules, the parser and ``--help`` built from them, the error policy
``subcommand``         what a subcommand declares (``COMMAND``): name, help, arguments, run
``db_cli``             ``db upgrade|current``: the store's schema
``import_cli``         ``import``: the command line of ``importer``
``report_cli``         ``report``: a run's summary again (table, Markdown, JSON)
``tune_cli``           ``tune table``: the command line of ``tune_table``
``config``             composing one sweep's Hydra configuration, every way it can be wrong as one line
``schema``             the structured-config schema: every key a sweep may set
``validate``           a composed configuration checked against the kernel registry
``plan``               a sweep's grid expanded into JobSpecs with their keys (pure)
``plan_e2e``           ``sweep.e2e`` expanded into end-to-end JobSpecs
``tune_plan``          ``tune`` jobs: every legal launch candidate, less those the target's compile drops
``cpu_price``          what a sweep would cost on a CPU, priced before it starts
``sweep``              one sweep end to end: plan, open the run, skip what is done, schedule, summarise
``schedule``           Ray scheduling: batches of JobSpecs as Ray tasks on nodes of the job's GPU type
``store_access``       opening the store for a sweep or an import
``run_conditions``     what a sweep is made under (uncommitted changes, GPUs shared by nodes, a rehearsal node)
``importer``           ``import``: results files run elsewhere stored as runs
``export``             ``export``: measurements in long format (csv, parquet, jsonl, liger, tritonbench)
``out_file``           an output file written beside its path and renamed into place (never half-written)
``tool_formats``       micro timings in the shapes other benchmark tools read
``report``             a run's summary table (rich) and its Markdown
``report_e2e``         the end-to-end part of a run's summary
``run_json``           a run as the ``kernelfleet.report`` JSON document
``runs_cli``           ``runs``: the runs of the store
``regressions_cli``    ``regressions``: changes beyond the between-run spread
``compare_cli``        ``compare``: two sets of runs side by side
``compare_refs``       what a REF of ``compare`` names (run ids, a commit, a branch)
``compare_markdown``   the compare report as Markdown for a pull request
``compare_svg``        small SVG plots for the compare report
``tune_table``         ``tune table``: tune runs to a reviewed change of the launch tables
``bisect_cli``         ``bisect``: the first commit where a series changed, judged by the regression rule
``bisect_git``         bisect's git side: the commits of a range, a worktree per distinct tree
``bisect_run``         bisect's plans and sweeps, one per commit segment of equal job keys
``bisect_search``      which segment bisect measures next, and the steps it confirmed
``bisect_report``      bisect's report: the JSON document, the lines, the dry run's commands
``explain``            why a series changed: the two sides' captures compared, the change named
``explain_cli``        ``explain``: that comparison for two sets of runs (text, JSON, Markdown)
``fleet``              what a GPU node needs to join the cluster, its labels, the ``ray start`` it runs
``fleet_cli``          ``node join|list|leave`` and ``cluster up``
``pg_database``        a PostgreSQL store whose database does not exist yet
``arg_types``          integer arguments of the store commands, checked where argparse reads them
``user_cache``         files kept for the user between commands (~/.cache/kernelfleet)
``errors``             the orchestrator's user errors (``UsageError``...): one line, exit 2; anything else a bug
``store/``             the results store: models, sessions, migrations, the writer, the read API (``store/query/``)
``stats/``             statistics over stored results: the regression rule, end-to-end anchors
=====================  ================================================================================================
"""
