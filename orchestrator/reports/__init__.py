"""What the user reads: a run's summary, the compare report, explanations, launch-table changes.

====================  ================================================================================================
module                holds
====================  ================================================================================================
``summary``           a run's summary table (rich) and its Markdown
``run_json``        a run as the ``kernelfleet.report`` JSON document (``report --json``, a sweep's summary_json)
``e2e``               the end-to-end part of a run's summary
``compare_markdown``  the compare report as Markdown for a pull request
``compare_svg``       small SVG plots for the compare report
``tune_table``        ``tune table``: tune runs to a reviewed change of the launch tables
====================  ================================================================================================
"""
