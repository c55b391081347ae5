"""What runs on a GPU node: device detection, timing, the sandbox and the job kinds.

==================  ===================================================================================================
module              holds
==================  ===================================================================================================
``spec``            the plain data that crosses process and machine boundaries: JobSpec, JobResult, DeviceInfo, the
                    statuses
``kinds``           the job kinds, one declaration module each (package: its own table)
``runner``          runs a list of JobSpecs through the sandbox; the plan and results files (JSON lines)
``file_formats``    the versions of those files and the chain that upgrades an older one as it is read
``__main__``        ``python -m workers run PLAN --out RESULTS`` (no Ray) and ``python -m workers upgrade PATH``
``sandbox``         the sandbox child process: started, fed jobs, replaced when it dies, memory-watched
``child``           the sandbox child itself: imports torch once, runs one job at a time, streams results
``correctness``     the ``correctness`` job: every implementation against a float64 reference
``input_cases``     the input cases every correctness job checks (large, near-max, zero rows, NaN/inf, widths...)
``micro``           the ``micro`` job: every implementation of one (kernel, shape, dtype) timed side by side
``profile``         the ``profile`` job: where each implementation's time goes, kernel by kernel
``profile_target``  the program rocprofv3 runs for a profile job on ROCm
``e2e``             the ``e2e`` job: LTX-Video's denoising loop in several modes
``e2e_spec``        what an ``e2e`` JobSpec may say (plain data, shared with the planner)
``e2e_ltx``         LTX-Video in the e2e job: the model, its inputs, one timed call of its denoising loop
``e2e_image``       FLUX.1 and SD3/SD3.5 in the e2e job: the transformer, its inputs, one timed denoising call
``e2e_llm``         a Llama-family decoder in the e2e job: the model, its prompt, one timed ``generate``
``e2e_steps``       one timed call of an e2e job: a mark at every step's end, the host's time per step
``e2e_size``        how much work an e2e job is before it runs (parameters on the meta device, tokens a step)
``model_configs``   the model configurations e2e jobs build with random weights (``conf/models/``)
``e2e_profile``     where one denoising step's device time goes, per mode
``isa``             the ``isa`` job: a kernel compiled for a target architecture, its machine code read
``isa_targets``     the architectures ``isa`` jobs compile for and their published bandwidth
``tune``            the ``tune`` job: every candidate launch of one (kernel, shape, dtype), checked, then timed
``tune_filter``     the tune sweep's compile filter: candidates that cannot win are dropped before they run
``autotune_pick``   what torch.compile built and its autotuner picked, for one implementation
``timing``          timing one callable: device events on a GPU, the host clock on the CPU; the copy ceiling
``metrics``         the catalogue of metrics: name, unit, which way is better (the kinds that emit it: theirs)
``keys``            a job's key: a hash of what determines its result (spec, job code, software)
``job_code``        the code a job can run: the modules its process imports for it, hashed into its key
``device``          device detection (torch, nvidia-smi, rocminfo, amd-smi) and the Ray node labels
``gpu_types``       the fleet's short GPU type names and how a detected part maps to one
``gpu_libs``        NVML and amdsmi, in-process
``gpu_clocks``      the GPU's SM clock and power draw while work runs
``rehearsal``       rehearsal nodes (a GPU-type label overridden at ``node join``)
``stack``           the software stack, as ``python -m orchestrator --version`` prints it
``errors``          user errors at the command line: one line, exit 2
``parsers/``        parsers for what GPU tools print, one module per tool
==================  ===================================================================================================
"""
