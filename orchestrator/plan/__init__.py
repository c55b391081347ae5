"""Planning: a checked configuration expanded into JobSpecs with their keys (pure), and priced before it runs.

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``jobs``            a sweep's grid expanded into JobSpecs with their keys, each kind by its planner
``e2e``             ``sweep.e2e`` expanded into end-to-end JobSpecs, and checked
``tune``            ``tune`` jobs: every legal launch candidate, less those the target's compile drops
``user_cache``      files kept for the user between commands (the CPU price's calibration, the filter's verdicts)
``cpu_price``       what a sweep would cost on a CPU, priced before it starts
==================  ==================================================================================================
"""
