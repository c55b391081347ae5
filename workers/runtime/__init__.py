"""Running jobs on a node: the sandbox and its child process, the runner and its files, timing and keys.

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``runner``          a list of JobSpecs run through the sandbox; the plan and results files (``python -m workers run``)
``sandbox``         jobs in a child process that is replaced after a crash or a timeout
``child``           the sandbox child: imports torch once, runs each job by its kind's module
``timing``          timing one callable: device events on a GPU, the host clock on the CPU; the copy ceiling
``keys``            a job's key: a hash of what determines its result (spec, job code, software)
``job_code``        the code a job can run: the modules its process imports for it, hashed into its key
``file_formats``    the versions of the plan and results files and the chain that upgrades older ones
==================  ==================================================================================================
"""
