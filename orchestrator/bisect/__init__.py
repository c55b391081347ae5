"""Bisect over commits (``python -m orchestrator bisect``, its command line in cli/bisect.py).

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``bisector``        one bisect: commits planned into segments of equal keys, measured, judged, explained
``git``             the commits of a range, a worktree per distinct tree
``run``             one commit segment's plan and sweep, with that commit's own code
``search``          which segment is measured next, and the steps confirmed
``report``          the JSON document, the lines, the dry run's commands
==================  ==================================================================================================
"""
