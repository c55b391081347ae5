"""The isa job (workers/jobs/isa.py) on every registered Triton kernel, compiled for gfx950 (MI355X) and gfx1201
(R9700).
Every kernel is compiled at every launch configuration its launch tables pick: its default grid with the sequence shrunk
to 48 positions (the launch tables key on row widths, heads and batch, never on the sequence length), plus the shapes
its registry entry's contract names to reach the tables' other rows (rows packed per program below 2048, one row up to
4096, wider: ``Contract.launch_shapes``).  The jobs run as a sweep runs them: through workers.runtime.runner, in a
compile-only sandbox, once per test session.

Checks: every launch compiles; none spills or uses scratch (cross_attention's larger tiles included, which AMD's launch
table takes in steps of key blocks); the compiled wave size is the launch table's (wave64 on CDNA, wave32 on RDNA); on
gfx950, every global/buffer store and every load of 16-bit rows (16-byte aligned, widths a multiple of 8 elements) is
128 bits wide (dwordx4), but the broadcast vectors of a program that packs several rows (see PACKING) and a kernel's
loads its contract allows narrower (``Contract.narrowest_load_bits``).  A failure names the kernel, shape, architecture
and the offending instruction or count.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernels import registry
from kernels.arch import _TABLE
from orchestrator.config.compose import kernel_grid
from orchestrator.plan.jobs import code_version, job_key
from workers.device.parsers import amdgcn, sass
from workers.jobs import isa
from workers.runtime import runner
from workers.spec import STATUS_OK, JobSpec

ARCHS = ("gfx950", "gfx1201")
REPO = Path(__file__).resolve().parents[2]
# Constexprs that pack several rows (or heads, or positions) into one program.  Such a program loads its broadcast
# vectors (weight, scale/shift rows, cos/sin rows) once, spread over more lanes than they have 8-element groups, so
# those loads may be narrower than 128 bits; the rows themselves must still load 128 bits and every store is a row.
PACKING = ("ROWS", "BLOCK_R", "BLOCK_S", "BLOCK_H")
CODE = code_version()
# What a failure of the 128-bit rule asks of the kernel (the README's "Add a kernel" says the same)
WIDTH_HINT = (
    "\nEach lane must move 8 16-bit elements (128 bits) on gfx950's wave64: an elementwise kernel takes "
    "kernels.arch.arch_launch(x.device).elementwise_block elements a program with .elementwise_warps warps, a row "
    "kernel its block and warps from kernels/rows.py; a kernel whose loads are narrower by design declares "
    "Contract(narrowest_load_bits=...).  The shapes are the kernel's grid with 48 positions and its contract's "
    "launch_shapes."
)


def registered_kernels() -> list[str]:
    """The project's kernels (the registry's own entry modules; test plugins are not kernels of the project)."""
    return sorted(registry.builtin())


def shapes_for(kernel: str) -> list[list[int]]:
    """The kernel's default grid with 48 tokens, and its contract's shapes that reach its launch tables' other rows."""
    grid = kernel_grid(kernel)["shapes"]
    shapes = [[s[0], 48, *s[2:]] for s in grid] + [list(s) for s in registry.get(kernel).contract.launch_shapes]
    return [list(s) for s in dict.fromkeys(tuple(s) for s in shapes)]


def _specs() -> list[JobSpec]:
    specs = []
    for kernel in registered_kernels():
        for shape in shapes_for(kernel):
            for arch in ARCHS:
                spec = JobSpec(
                    kind="isa",
                    kernel=kernel,
                    shape=shape,
                    dtype="bf16",
                    impls=["triton"],
                    params={"arch": arch, "seed": 0, "timeout_s": 300},
                )
                spec.key = job_key(spec, CODE)
                specs.append(spec)
    return specs


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """{(kernel, shape tuple, arch): (spec, result)} for every job, compiled once by ``python -m workers run`` in two
    processes side by side (one kernel's jobs stay in one, where its repeated specialisations compile once)."""
    specs = _specs()
    halves: list[list[JobSpec]] = [[], []]
    for kernel in registered_kernels():
        min(halves, key=len).extend(s for s in specs if s.kernel == kernel)
    where = tmp_path_factory.mktemp("isa")
    t0 = time.perf_counter()
    procs = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    for i, half in enumerate(halves):
        runner.write_plan(where / f"plan-{i}.jsonl", {"sweep": "test_isa", **CODE.to_dict()}, half)
        with open(where / f"log-{i}.txt", "w") as log:
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "workers",
                        "run",
                        str(where / f"plan-{i}.jsonl"),
                        "--out",
                        str(where / f"results-{i}.jsonl"),
                    ],
                    cwd=REPO,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
    for i, proc in enumerate(procs):
        proc.wait(timeout=1200)
        assert proc.returncode in (0, 1), (where / f"log-{i}.txt").read_text()[-2000:]
    results = {r.key: r for i in range(2) for _, r in runner.read_results(where / f"results-{i}.jsonl")[1]}
    print(f"\nisa: {len(specs)} jobs compiled in {time.perf_counter() - t0:.1f} s")
    return {(s.kernel, tuple(s.shape), s.params["arch"]): (s, results[s.key]) for s in specs}


def _where(spec: JobSpec) -> str:
    return f"{spec.kernel} {list(spec.shape)} bf16 on {spec.params['arch']}"


def test_every_registered_kernel_has_a_default_grid_to_compile():
    names = registered_kernels()
    assert len(names) >= 11
    missing = [n for n in names if kernel_grid(n) is None]
    assert not missing, f"kernels without a default grid (their entry's, or conf/kernel/<name>.yaml): {missing}"


@pytest.mark.parametrize("arch", ARCHS)
def test_every_launch_configuration_compiles(compiled, arch):
    failed = [
        f"{_where(s)}: {r.status}: {(r.error or '')[:300]}"
        for (k, sh, a), (s, r) in compiled.items()
        if a == arch and r.status != STATUS_OK
    ]
    assert not failed, "\n".join(failed)
    # every warps setting of the launch table's rows is reached by some compiled launch
    warps = {
        launch["num_warps"] for (k, sh, a), (s, r) in compiled.items() if a == arch for launch in r.details["launches"]
    }
    assert {w for _, w in _TABLE[arch].row_warps} <= warps, (
        f"{arch}: table warps {_TABLE[arch].row_warps}, compiled {sorted(warps)}"
    )


@pytest.mark.parametrize("arch", ARCHS)
def test_nothing_spills(compiled, arch):
    bad, key_steps = [], 0
    for (k, _sh, a), (s, r) in compiled.items():
        if a != arch or r.status != STATUS_OK:
            continue
        for launch in r.details["launches"]:
            spilled = [f"{f} = {launch[f]}" for f in ("vgpr_spills", "sgpr_spills", "scratch_bytes") if launch.get(f)]
            if spilled:
                bad.append(
                    f"{_where(s)}: {launch['kernel']} {', '.join(spilled)} "
                    f"({launch['vgprs']} VGPRs, {launch['num_warps']} warps)"
                )
            c = launch["constexprs"]
            key_steps += k == "cross_attention" and c["BLOCK_K"] < c["BLOCK_N"]
    assert not bad, "\n".join(bad)
    # head dim 128 and 256 keys (its contract's launch shapes) reach cross_attention's loop over key blocks, which
    # spilled as one pass
    assert key_steps == 2, f"{arch}: {key_steps} cross_attention launches in steps of key blocks; expected 2"


@pytest.mark.parametrize("arch", ARCHS)
def test_wave_size_is_the_launch_tables(compiled, arch):
    want = _TABLE[arch].warp_size
    assert want == (64 if arch.startswith("gfx9") else 32)  # CDNA wave64, RDNA wave32
    bad = [
        f"{_where(s)}: {launch['kernel']} compiled for wave{launch['wavefront_size']}, the launch table says wave{want}"
        for (k, sh, a), (s, r) in compiled.items()
        if a == arch and r.status == STATUS_OK
        for launch in r.details["launches"]
        if launch["wavefront_size"] != want
    ]
    assert not bad, "\n".join(bad)


def test_16bit_rows_load_and_store_128_bits_on_gfx950(compiled):
    bad = []
    for (k, _sh, a), (s, r) in compiled.items():
        if a != "gfx950" or r.status != STATUS_OK:
            continue
        for launch in r.details["launches"]:
            packed = any(launch["constexprs"].get(name, 1) > 1 for name in PACKING)
            for mnemonic, n in launch["memory_instructions"].items():
                direction, bits = amdgcn.memory_width(mnemonic)
                narrowest = registry.get(k).contract.narrowest_load_bits
                allowed = 128 if direction == "store" else 16 if packed else narrowest
                if bits < allowed:
                    bad.append(
                        f"{_where(s)}: {launch['kernel']}: {n} x {mnemonic} ({bits}-bit {direction}s; "
                        f"expected {allowed}-bit, {launch['num_warps']} warps)"
                    )
            if not launch["loads_b128"]:
                bad.append(f"{_where(s)}: {launch['kernel']}: no 128-bit load at all")
    assert not bad, "\n".join(bad) + WIDTH_HINT


def test_results_carry_the_target_and_an_estimate_not_a_timing(compiled):
    spec, r = compiled[("rmsnorm", (1, 48, 2048), "gfx950")]
    assert r.device.arch == "gfx950" and r.device.gpu_type == "mi355x" and r.device.runtime == isa.RUNTIME
    assert r.device.extra["compile_target"] is True and r.device.extra["measured"] is False
    assert r.details.get("copy_gbs") is None  # a compile-only sandbox measures no copy ceiling
    m = {x.metric: x for x in r.measurements}
    nbytes = (2 * 48 * 2048 + 2048) * 2
    assert m["est_min_time_us"].value == pytest.approx(nbytes / 8000e9 * 1e6)
    assert "estimate" in r.details["estimate"]["est_min_time_us"]
    assert not any(name in m for name in ("time_us", "gbs", "kernel_time_us"))  # nothing was timed
    kinds = {a["kind"] for a in r.details["artifacts"]}
    assert kinds == {"amdgcn"}
    launch = r.details["launches"][0]
    assert launch["divisibility"]["x_ptr"] == [["tt.divisibility", 16], ["tt.pointer_range", 32]]


# ------------------------------------------------------------------------------------------------ the parsers


def test_memory_widths_in_both_amd_spellings():
    cases = {
        "global_load_dwordx4": ("load", 128),
        "buffer_load_dwordx2": ("load", 64),
        "buffer_store_short": ("store", 16),
        "global_load_b128": ("load", 128),
        "buffer_store_b16": ("store", 16),
        "global_load_dwordx3": ("load", 96),
        "buffer_load_dword": ("load", 32),
        "global_load_u16": ("load", 16),
        "global_store_byte": ("store", 8),
    }
    for mnemonic, want in cases.items():
        assert amdgcn.memory_width(mnemonic) == want, mnemonic
    assert amdgcn.memory_width("s_load_dwordx2") is None
    assert amdgcn.memory_width("ds_read_b128") is None
    assert amdgcn.memory_width("global_load_lds_dwordx4") is None  # straight into LDS: no register width


def test_sass_and_ptxas_log():
    log = (
        "ptxas info    : Compiling entry function 'k' for 'sm_90a'\nptxas info    : Function properties for k\n"
        "    0 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers\n"
    )
    (r,) = sass.parse_ptxas_log(log)
    assert (r.name, r.registers, r.spill_store_bytes, r.spill_load_bytes, r.stack_bytes) == ("k", 40, 8, 12, 0)
    listing = sass.parse_sass(
        textwrap.dedent("""\
        /*0080*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0090*/              @!P1 LDG.E.U16 R6, desc[UR4][R2.64] ;
        /*00a0*/                   MUFU.RSQ R0, R0 ;
        /*00b0*/                   F2FP.BF16.F32.PACK_AB R0, R1, R0 ;
        /*00c0*/                   STG.E.64 desc[UR4][R2.64], R4 ;
    """)
    )
    assert listing.memory_ops() == {"load": {128: 1, 16: 1}, "store": {64: 1}}
    assert (listing.transcendentals(), listing.conversions()) == (1, 1)
