"""The device layer: what GPU a node has, its clocks and power, the vendors' libraries and tools' output.

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``detect``          device detection (torch, nvidia-smi, rocminfo, amd-smi) and the Ray node labels
``gpu_types``       the fleet's short GPU type names and how a detected part maps to one
``libs``            NVML and amdsmi, in-process
``clocks``          the GPU's SM clock and power draw while work runs
``rehearsal``       rehearsal nodes (a GPU-type label overridden at ``node join``)
``stack``           the software stack, as ``python -m orchestrator --version`` prints it
``parsers``         parsers for what GPU tools print, one module per tool
==================  ==================================================================================================
"""
