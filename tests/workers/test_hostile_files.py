"""Plan and results files an attacker or a failing disk made: gzip bombs, huge lines, deep nesting, a results file
of another plan, an empty or cut header — each is one clear error (or a fresh start), never minutes of work, a
traceback or a file mixing two plans."""

from __future__ import annotations

import gzip
import hashlib
import io
import json

import pytest
from rich.console import Console

from workers import __main__ as workers_main
from workers.errors import UserError
from workers.runtime import runner


def naive_lines(data: bytes) -> list[tuple[int, bytes]]:
    return [(n, raw) for n, raw in enumerate(data.splitlines(keepends=True), 1) if raw.strip()]


@pytest.mark.parametrize("block", [3, 7, 64, 1 << 20])
def test_lines_and_their_numbers_across_blocks(tmp_path, monkeypatch, block):
    monkeypatch.setattr(runner, "_BLOCK", block)
    data = b'\n\n{"a": 1}\n  \n\n{"b": [1, 2, 3]}\n\t\n{"c": "x y"}\n\n\n{"d": '
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    with open(path, "rb") as f:
        assert list(runner._raw_lines(f, path)) == naive_lines(data)
    with pytest.raises(ValueError, match=r"f.jsonl:11: the last line is cut off"):
        list(runner.json_lines(path))


def test_a_gzip_bomb_of_blank_lines_is_refused_past_the_size_limit(tmp_path, monkeypatch):
    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb") as f:
        for _ in range(16):
            f.write(b"\n" * (1 << 20))
    assert path.stat().st_size < 64 * 1024  # a small file that expands to 16 MiB
    assert list(runner.json_lines(path)) == []  # under the limit: read whole, nothing in it
    monkeypatch.setattr(runner, "MAX_FILE_BYTES", 4 << 20)
    with pytest.raises(ValueError, match=r"bomb.jsonl.gz: more than 4194304 bytes \(decompressed\)"):
        list(runner.json_lines(path))
    with pytest.raises(ValueError, match="more than"):
        runner.digest(path)


def test_a_gzip_bomb_is_stopped_by_its_ratio_in_its_first_megabytes(tmp_path, monkeypatch, capsys):
    import re

    from orchestrator.__main__ import main as orchestrator_main
    from tests.store import results_files as rf

    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb") as f:
        f.write(json.dumps(rf.lines("b" * 40)[0]).encode() + b"\n")  # a good header, then 16 MiB of newlines
        for _ in range(16):
            f.write(b"\n" * (1 << 20))
    # the limits scaled down 64 times: judged past 1 MiB, the size limit (12 MiB) far away
    monkeypatch.setattr(runner, "RATIO_FROM_BYTES", 1 << 20)
    monkeypatch.setattr(runner, "MAX_FILE_BYTES", 12 << 20)
    for read in (lambda: list(runner.json_lines(path)), lambda: runner.digest(path)):
        with pytest.raises(ValueError, match=r"bomb.jsonl.gz: \d+ compressed bytes expand to more than") as err:
            read()
        assert "compression bomb" in str(err.value)
        expanded = int(re.search(r"more than (\d+) ", str(err.value)).group(1))
        assert expanded <= 2 << 20  # stopped at the first block past 1 MiB, not at 12 MiB
    assert orchestrator_main(["import", str(path), "--url", str(tmp_path / "kf.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "compression bomb" in err
    assert not (tmp_path / "kf.db").exists()


def test_real_results_pass_the_ratio_check(monkeypatch):
    from pathlib import Path

    monkeypatch.setattr(runner, "RATIO_FROM_BYTES", 1 << 20)
    real = Path(__file__).resolve().parents[2] / "results" / "h200" / "2026-11-30-1934-kernels-1.jsonl.gz"
    assert sum(1 for _ in runner.json_lines(real)) > 10


@pytest.mark.parametrize("gz", [False, True])
def test_a_run_of_spaces_without_a_newline_is_a_line_too_long(tmp_path, monkeypatch, gz):
    monkeypatch.setattr(runner, "MAX_LINE_BYTES", 1 << 20)
    monkeypatch.setattr(runner, "MAX_RATIO", 10**9)  # the line limit, not the ratio, is what this checks
    path = tmp_path / ("spaces.jsonl.gz" if gz else "spaces.jsonl")
    data = b'{"a": 1}\n\n' + b" " * (3 << 20)
    with gzip.open(path, "wb") if gz else open(path, "wb") as f:
        f.write(data)
    with pytest.raises(ValueError, match=r"spaces.jsonl(.gz)?:3: a line longer than 1048576 bytes"):
        list(runner.json_lines(path))
    with gzip.open(path, "wb") if gz else open(path, "wb") as f:  # blank lines, each short: nothing to refuse
        f.write(b'{"a": 1}\n' + (b" " * 1000 + b"\n") * 3000)
    assert [n for n, _ in runner.json_lines(path)] == [1]


def test_a_huge_line_is_refused_with_its_line_number(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "MAX_LINE_BYTES", 1 << 20)
    path = tmp_path / "big.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": "' + b"x" * (3 << 20) + b'"}\n')
    with pytest.raises(ValueError, match=r"big.jsonl:3: a line longer than 1048576 bytes"):
        list(runner.json_lines(path))
    path.write_bytes(b'{"a": 1}\n{"b": "' + b"x" * (3 << 20))  # unfinished, too
    with pytest.raises(ValueError, match=r"big.jsonl:2: a line longer"):
        list(runner.json_lines(path))


def test_deep_json_is_refused_with_its_line_number(tmp_path):
    path = tmp_path / "deep.jsonl"
    # over MAX_JSON_DEPTH (64) and far under the interpreter's recursion limit, whatever the caller's stack depth
    deep = "[" * (runner.MAX_JSON_DEPTH + 36) + "]" * (runner.MAX_JSON_DEPTH + 36)
    path.write_text('{"ok": 1}\n{"x": ' + deep + "}\n")
    with pytest.raises(ValueError, match=r"deep.jsonl:2: nested deeper than"):
        list(runner.json_lines(path))
    path.write_text('{"x": ' + "[" * 5000 + "]" * 5000 + "}\n")
    # Python 3.11's decoder gives up on 5000 levels itself; 3.12's decodes them and the depth check refuses them
    with pytest.raises(ValueError, match=r"deep.jsonl:1: (not JSON \(nested too deeply\)|nested deeper than 64)"):
        list(runner.json_lines(path))


def test_the_digest_streams_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "_BLOCK", 5)
    path = tmp_path / "r.jsonl.gz"
    data = b'{"a": 1}\n{"b": 2}\n'
    with gzip.open(path, "wb") as f:
        f.write(data)
    assert runner.digest(path) == hashlib.sha256(data).hexdigest()


PLAN = {"kernelfleet": "plan", "format": 1, "plan_key": "p1", "commit": "c1", "sweep": "s"}


def resume(path) -> tuple[set[str], str]:
    return workers_main.resume_point(str(path), PLAN, Console(file=io.StringIO()))


def test_resume_onto_an_empty_file_or_a_cut_header_starts_a_new_header(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"")  # a full disk: nothing was written
    assert resume(path) == (set(), "w")
    path.write_text(runner.results_header(PLAN)[:25])  # the header line cut off
    assert resume(path) == (set(), "w") and path.read_bytes() == b""
    assert resume(tmp_path / "missing.jsonl") == (set(), "w")


def test_resume_onto_another_plans_file_is_refused_and_appends_nothing(tmp_path):
    path = tmp_path / "r.jsonl"
    other = {**PLAN, "plan_key": "p2"}
    path.write_text(runner.results_header(other))
    before = path.read_bytes()
    with pytest.raises(UserError, match=r"holds results of another plan \(plan_key 'p2'"):
        resume(path)
    assert path.read_bytes() == before
    path.write_text(runner.results_header(PLAN))
    assert resume(path) == (set(), "a")
    path.write_text(runner.results_header(PLAN) + json.dumps([1]) + "\n")
    with pytest.raises(UserError, match=r"r.jsonl:2: expected a JSON object"):
        resume(path)
