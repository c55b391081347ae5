"""Files in and out of the store: results run elsewhere imported, runs exported for people and other tools.

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``importer``        ``import``: results files run elsewhere (``python -m workers run``) stored as runs
``export``          measurements in long format written as they stream (csv, parquet, jsonl)
``out_file``        an output file written beside its path and renamed into place (never half-written)
``tool_formats``    micro timings in the shapes other benchmark tools read
==================  ==================================================================================================
"""
