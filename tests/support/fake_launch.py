"""A stand-in for Triton's compile and launch, so that the fast launch path (``kernels.fast_launch``: its cache, and
the launch plans of ``kernels.launch_plans``) runs on the CPU as it does on a GPU, up to the compiled kernel's C
launch function, which here logs its arguments instead of launching."""

from __future__ import annotations

from kernels import fast_launch


class _FakeRun:
    """A compiled kernel's launcher: no scratch memory, and a C-style ``launch`` that logs its arguments.  Shaped as
    Triton 3.6's ``CudaLauncher``, or with ``packed`` as 3.7's (its ``arg_annotations`` and ``kernel_signature``,
    the kernel's arguments passed to ``launch`` as one sequence)."""

    global_scratch_size = profile_scratch_size = 0
    launch_cooperative_grid = launch_pdl = False

    def __init__(self, name: str, log: list, packed: bool = False):
        def launch(*args):  # named "launch", as Triton's C launch function is
            log.append((name,) + args)

        self.launch = launch
        if packed:
            self.arg_annotations = ["annotations of " + name]
            self.kernel_signature = b"signature of " + name.encode()


class _FakeKernel:
    """A compiled kernel (and Triton's own launch path, which returns it without launching: a first launch does
    not reach the log, a cached one does)."""

    packed_metadata = None

    def __init__(self, fn, log: list, packed: bool = False):
        self.arg_names = fn.arg_names
        self.function = fn.__name__
        self.run = _FakeRun(fn.__name__, log, packed)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self


def install(setattr_, packed: bool = False) -> list:
    """Patch (through ``setattr_``: pytest's ``monkeypatch.setattr``, or plain ``setattr``) the fast launch path to
    run on the CPU with fake kernels (launchers shaped as Triton 3.6's, or 3.7's with ``packed``); returns the log
    of C launch calls.  The kernels get new launchers (empty
    caches, holding the fakes), which go when pytest's patches are undone."""
    log: list = []
    real = fast_launch.DirectLauncher._launch

    def fake_launch(self, grid, *args, **kwargs):
        if not isinstance(self.fn, _FakeKernel):
            self.fn = _FakeKernel(self.fn, log, packed)
        return real(self, grid, *args, **kwargs)

    setattr_(fast_launch, "_DIRECT", {})
    setattr_(fast_launch.DirectLauncher, "_launch", fake_launch)
    setattr_(fast_launch, "fast_launch_active", lambda: True)  # the kernels' device checks still see the interpreter
    setattr_(fast_launch, "current_device", lambda: 0)
    setattr_(fast_launch, "current_stream", lambda device: 0)
    return log
