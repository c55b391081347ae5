"""benchmarks/launch_paths.py: the cases it times (each kernel's smallest and LTX-Video grid shapes), and a run on the
CPU through Triton's interpreter writing its JSON lines."""

from __future__ import annotations

import json

from benchmarks import launch_paths
from tests.support.devices import ON_GPU


def test_each_kernel_at_its_smallest_and_its_ltx_video_shape():
    cases = launch_paths.registry_cases(["rmsnorm", "rope_rotate_half", "geglu", "qk_norm_rope"])
    assert cases == [
        ("rmsnorm", "smallest", [1, 1024, 2048]),
        ("rmsnorm", "ltx-video", [2, 6336, 2048]),
        ("rope_rotate_half", "smallest", [1, 1024, 16, 64]),
        ("rope_rotate_half", "ltx-video", [2, 6336, 32, 64]),
        ("geglu", "smallest", [1, 1024, 2048]),  # no LTX-Video shape in its grid
        ("qk_norm_rope", "smallest", [2, 1320, 2048]),
        ("qk_norm_rope", "ltx-video", [2, 6336, 2048]),
    ]


def test_a_run_writes_one_line_per_case_and_path(tmp_path, capsys):
    out = tmp_path / "lp.jsonl"
    assert launch_paths.main(["--out", str(out), "--case", "gated_residual:1x4x64", "--repeats", "2"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["requested"] for r in rows] == ["fast", "triton"]
    # on a GPU each path runs as requested and is also replayed from a graph; without one the interpreter takes the
    # Triton path for both and there is no graph
    paths = ["fast", "triton"] if ON_GPU else ["triton", "triton"]
    assert [r["path"] for r in rows] == paths
    for r in rows:
        assert r["kernel"] == "gated_residual" and r["shape"] == [1, 4, 64] and len(r["event_us_samples"]) == 2
        assert (r["graph_us"] is not None) == ON_GPU and (r["device"] == "cpu") != ON_GPU
        assert r["triton_distribution"] == "triton" and r["torch"] and r["commit"]
    assert f"| gated_residual | 1x4x64 | given | fast | {paths[0]} |" in capsys.readouterr().out
