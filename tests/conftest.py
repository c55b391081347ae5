"""Suite-wide settings: the CPU runs kernels through Triton's interpreter; test-only kernels are plugins."""
import os

os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("KERNELFLEET_PLUGINS", "tests.support.fault_kernels")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
