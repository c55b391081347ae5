"""What each job kind runs (its declaration, with the module named here, is in workers/kinds/).

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``correctness``     the ``correctness`` job: every implementation against a float64 reference
``input_cases``     the input cases every kernel's correctness job checks
``micro``           the ``micro`` job: every implementation of one (kernel, shape, dtype), timed side by side
``autotune_pick``   what torch.compile built and its autotuner picked, for one implementation
``profile``         the ``profile`` job: where each implementation's time goes, kernel by kernel
``profile_target``  the program rocprofv3 (or ncu) runs for a profile job
``isa``             the ``isa`` job: a kernel compiled for a target architecture, its machine code read
``isa_targets``     the architectures ``isa`` jobs compile for and their published bandwidth
``tune``            the ``tune`` job: every candidate launch of one (kernel, shape, dtype), checked, then timed
``tune_filter``     the tune sweep's compile filter: candidates that cannot win are dropped before they run
``e2e``             the ``e2e`` job and the models it runs
==================  ==================================================================================================
"""
