"""Parsers for what GPU tools print, one module per tool.

Each parser takes the tool's text (never a path; the rocpd database aside) and returns plain dataclasses/dicts:

* ``rocminfo`` - HSA agents (gfx target, chip id, CUs, wave size, memory pools, ISAs)
* ``amdsmi`` - ``amd-smi`` JSON (with and without ``gpu_data``), text blocks, ``amd-smi version``
* ``nvidia_smi`` - ``nvidia-smi --query-gpu --format=csv`` with or without header/units
* ``rocprofv3`` - rocprofv3 kernel traces (all three layouts), stats, API/counter/agent CSVs, summary tables
* ``rocpd`` - rocprofv3's rocpd SQLite database (its default output since ROCm 7.0; takes a path)
* ``ncu`` - Nsight Compute ``--csv`` details and raw pages
* ``torch_profiler`` - PyTorch profiler chrome traces and ``key_averages().table()``
* ``amdgcn`` - AMDGCN assembly (Triton's ``amdgcn`` stage): resources and instruction mix (``isa`` jobs)
* ``sass`` - NVIDIA machine code: ``ptxas -v`` resource lines and ``cuobjdump -sass`` listings (``isa`` jobs)
* ``kernel_row`` - the one per-kernel row (:class:`KernelRow`) every profiler adapter produces
* ``text_values`` - turning the text GPU tools print into numbers and rows (the other parsers' shared pieces)

Profiler parsers all produce :class:`KernelRow` lists, so a profile looks the same whichever tool measured it.
"""

from workers.device.parsers.kernel_row import KernelRow, rows_from_durations

__all__ = ["KernelRow", "rows_from_durations"]
