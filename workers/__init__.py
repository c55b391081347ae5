"""What runs on a GPU node: device detection, timing, the sandbox and the job kinds.

==================  ===================================================================================================
module              holds
==================  ===================================================================================================
``__main__``        ``python -m workers run PLAN --out RESULTS`` (no Ray) and ``python -m workers upgrade PATH``
``spec``            the plain data that crosses process and machine boundaries: JobSpec, JobResult, DeviceInfo, the
                    statuses
``metrics``         the catalogue of metrics: name, unit, which way is better (the kinds that emit it: theirs)
``errors``          user errors at the command line: one line, exit 2
``kinds``           the job kinds, one declaration module each: what each kind is (package: its own table)
``jobs``            what each kind runs: correctness, micro, profile, isa, tune and the e2e job (package: its table)
``runtime``         running jobs on a node: the runner and its files, the sandbox and its child, timing, keys
``device``          the device layer: detection and node labels, GPU types, clocks and power, the vendors'
                    libraries, the software stack, parsers for what GPU tools print
==================  ===================================================================================================
"""
