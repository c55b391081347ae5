"""Measurements outside the product (``python -m benchmarks.<module> --help``): what a sweep does not measure of
itself, probes worth keeping, and plugin kernels for rehearsals.  The figures they produce live in docs/perf/.

=======================  ===========================================================================================
module                   measures or holds
=======================  ===========================================================================================
``aa_check``             how far identical runs land apart (A/A), and what the regression rule says of them
``call_probe``           where a per-call reading's time goes: event timing against the kernel's own device time
``chromium``             headless Chromium through selenium (the dashboard's browser tests and benchmarks)
``cli_args``             command-line value types the scripts share
``compare_time``         how long ``orchestrator compare`` and the Compare page take on a store
``copy_calibration``     the copy ceiling's own operation read the way the micro job reads a kernel
``dashboard_scale``      how the dashboard and ``orchestrator export`` scale with the store's size
``e2e_host_profile``     where the host's time goes in one LTX-Video denoising call, per e2e mode
``fault_kernels``        plugin kernels that fail on purpose (``KERNELFLEET_PLUGINS=benchmarks.fault_kernels``)
``fleet_bench``          the fleet's scheduling figures on a simulated cluster (docs/perf/fleet.md)
``fleet_real``           the fleet path on one real GPU host, through docs/fleet.md's commands
``grad_check_overhead``  host cost per call of the injected kernels' gradient check
``launch_paths``         per-call time of every kernel through the fast launch path and Triton's own
``norm_launch_knobs``    rms_norm and adaln_rms launch knobs read with the L2 flushed
``overhead``             the orchestration overhead per job (driver -> Ray -> sandbox -> store)
``sample_devices``       made-up devices of a two-type fleet for synthetic stores
``spin_kernel``          a kernel that never returns, for rehearsing a fleet's fault handling
``wall``                 wall-clock timing of host code
=======================  ===========================================================================================
"""
