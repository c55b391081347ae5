"""The profile job under Nsight Compute (``profiler=ncu``, workers.jobs.profile): choosing it, reducing its raw page to
the timed calls between the fence kernels (on the H200's recorded ``ncu --csv --page raw`` output), and the job's
run of the profile target under an ``ncu`` stand-in on the CPU (the real tool has not run this job on a GPU)."""

from __future__ import annotations

import csv
import io
import stat
from pathlib import Path

import pytest
import torch

from tests.workers.test_profile import PLUGIN, spec
from workers.jobs import profile, profile_target

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"
RAW = (FIXTURES / "ncu_csv_raw_h200_ncu2025.3.1_3kernels.csv").read_text()


def _with_names(text: str, names: dict[int, str]) -> str:
    """The raw page with the kernels of the given IDs renamed (the tool's preamble lines kept)."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith('"'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[first:]))))
    col, ident = rows[0].index("Kernel Name"), rows[0].index("ID")
    for row in rows[1:]:
        if row[ident].strip() and int(row[ident]) in names:
            row[col] = names[int(row[ident])]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return "\n".join(lines[:first]) + "\n" + out.getvalue()


def test_choose_ncu_on_nvidia_only(monkeypatch):
    cuda = torch.device("cuda", 0)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(profile, "find_tool", lambda name: f"/usr/local/cuda/bin/{name}")
    assert profile.choose_profiler(cuda, "ncu") == ("ncu", "/usr/local/cuda/bin/ncu", None)
    assert profile.choose_profiler(cuda, "auto") == ("torch", None, None)  # ncu only when asked for
    monkeypatch.setattr(profile, "find_tool", lambda name: None)
    assert profile.choose_profiler(cuda, "ncu") == (
        "torch",
        None,
        "ncu not found on this node; used torch.profiler instead",
    )
    which, _, note = profile.choose_profiler(torch.device("cpu"), "ncu")
    assert which == "torch" and "NVIDIA devices only" in note
    monkeypatch.setattr(torch.version, "hip", "7.0.51831")
    assert "NVIDIA devices only" in profile.choose_profiler(cuda, "ncu")[2]


def test_the_kernels_between_the_fences_are_the_timed_call():
    fence = profile_target.FENCE_KERNEL + "_0d"
    text = _with_names(RAW, {0: fence, 2: fence})
    prof = profile.summarize_ncu("triton", text, {"iters": 1, "warmup": 0, "fence": profile_target.FENCE_KERNEL})
    assert prof.source == "ncu raw page: kernels between the fence kernels"
    assert prof.kernels_total == 1 and prof.kernel_ns_total == 6016.0 and prof.per_call_ns == [6016.0]
    assert [r.name[:40] for r in prof.rows] == ["void at::<unnamed>::distribution_element"]
    assert profile.artifact_bytes(prof.artifacts[0]).decode() == text


def test_without_fences_the_whole_run():
    prof = profile.summarize_ncu("eager", RAW, {"iters": 2, "warmup": 1, "fence": None})
    assert prof.source == "ncu raw page: whole run" and prof.iters == 3 and prof.kernels_total == 3
    assert prof.kernel_ns_total == 6112.0 + 6016.0 + 61568.0 and "divided by 3" in prof.notes[0]
    with pytest.raises(ValueError, match="not an ncu raw CSV"):
        profile.summarize_ncu("eager", '"a","b"\n"1","2"\n', {"iters": 1})


def test_the_job_runs_the_target_under_ncu(tmp_path, monkeypatch):
    """An ``ncu`` stand-in that records its arguments, runs the profile target after them and prints the recorded
    raw page: the job gets the target's manifest and reduces the page."""
    page = tmp_path / "page.csv"
    page.write_text(RAW)
    exe = tmp_path / "ncu"
    exe.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$@" > "{tmp_path}/args"\n'
        'while [ "$#" -gt 0 ]; do a="$1"; shift; [ "$a" = all ] && break; done\n'  # ncu's own options end there
        '"$@" || exit $?\n'
        f'cat "{page}"\n'
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("KERNELFLEET_PLUGINS", PLUGIN)
    prof = profile.profile_with_ncu(spec(), "fused", torch.device("cpu"), str(exe), 300)
    args = (tmp_path / "args").read_text().split()
    assert args[:7] == ["--csv", "--page", "raw", "--metrics", "gpu__time_duration.sum", "--target-processes", "all"]
    assert args[8:10] == ["-m", "workers.jobs.profile_target"] and args[args.index("--impl") + 1] == "fused"
    assert prof.source == "ncu raw page: whole run" and prof.iters == 4 + 2 and prof.kernels_total == 3
