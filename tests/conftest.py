"""Suite-wide settings: without a GPU, kernels run through Triton's interpreter; test-only kernels are plugins.

On a GPU machine the kernels are compiled as usual and the GPU-only tests (marked `gpu`) run; set
TRITON_INTERPRET=1 yourself to run the CPU path there.
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("KERNELFLEET_PLUGINS", "tests.support.fault_kernels")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
