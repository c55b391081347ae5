"""Legacy rocprof (v1) results.stats.csv / results.csv (gunrock on gfx942)."""

from pathlib import Path

import pytest

from workers.parsers import rocprof_legacy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_stats():
    rows = rocprof_legacy.parse_stats(read("rocprof-v1_rocm7.1.1_gfx942_gunrock_results.stats.csv"))
    assert len(rows) == 8
    first = rows[0]
    assert first.name.startswith("void gunrock::operators::advance::merge_path::merge_path_kernel<256, 11,")
    assert not first.name.endswith(".kd") and not first.name.endswith("]")
    assert (first.calls, first.total_ns, first.avg_ns) == (11, 7603945, 691267)
    assert first.pct == pytest.approx(84.2509335367898)
    assert rows[2].name == "__amd_rocclr_copyBuffer" and rows[2].calls == 19 and rows[2].total_ns == 580607
    raw = rocprof_legacy.parse_stats(read("rocprof-v1_rocm7.1.1_gfx942_gunrock_results.stats.csv"), strip_kd=False)
    assert raw[0].name.endswith(" [clone .kd]") and raw[2].name == "__amd_rocclr_copyBuffer.kd"
    assert sum(r.pct for r in rows) == pytest.approx(100.0, abs=1e-6)


def test_results_per_dispatch():
    ds = rocprof_legacy.parse_results(read("rocprof-v1_rocm7.1.1_gfx942_gunrock_results.csv"))
    assert len(ds) == 12 and [d.index for d in ds] == list(range(12))
    d0 = ds[0]
    assert d0.name == "__amd_rocclr_copyBuffer" and d0.gpu_id == 2 and d0.wave_size == 64
    assert d0.grid_work_items == 155648 and d0.workgroup == 512 and d0.sgpr == 32
    assert d0.duration_ns == 5573 == d0.end_ns - d0.begin_ns
    assert ds[10].lds_bytes == 21504 and ds[10].accum_vgpr == 92
    rows = {r.name: r for r in rocprof_legacy.kernel_rows_from_results(ds)}
    copy = rows["__amd_rocclr_copyBuffer"]
    assert copy.calls == 5 and copy.total_ns == 5573 + 197130 + 231369 + 6174 + 7497
