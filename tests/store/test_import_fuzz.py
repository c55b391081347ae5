"""Fuzzing `python -m orchestrator import` with corrupted results files, on SQLite and PostgreSQL: after each
import either every line is stored, or the exit code is 2 with one line and the store's row counts are unchanged.
No exception may escape the CLI's main function (that would be a traceback)."""

from __future__ import annotations

import json
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.store import results_files as rf

# what a corrupted value may become: another type, a huge or odd number, text with NUL bytes, deep nesting
ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63, max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.just("x\x00y"),
    st.just("9" * 5000),
    st.just([[[[[]]]]]),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.lists(st.integers(), max_size=3),
)


def _paths(obj, prefix=()):
    """Every (path, value) inside a JSON object, containers included."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


@st.composite
def corrupted(draw) -> tuple[bytes, int]:
    """(file bytes, number of job lines) of a results file with one random corruption."""
    objs = rf.lines(uuid.uuid4().hex + "0" * 8)  # a commit of its own: keys unseen by the store
    how = draw(st.sampled_from(["value", "drop_field", "cut", "bad_json", "nul_text", "huge_text", "none"]))
    if how in ("value", "drop_field", "nul_text"):
        n = draw(st.integers(0, len(objs) - 1))
        places = [p for p, _ in _paths(objs[n]) if p]
        path = draw(st.sampled_from(places))
        parent = objs[n]
        for part in path[:-1]:
            parent = parent[part]
        if how == "value":
            parent[path[-1]] = draw(ODD_VALUES)
        elif how == "nul_text":
            parent[path[-1]] = f"{parent[path[-1]]}\x00"
        elif isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
    elif how == "huge_text":
        objs[-1]["result"]["error"] = "e" * draw(st.integers(10**5, 3 * 10**6))
    data = "".join(json.dumps(o, sort_keys=True) + "\n" for o in objs).encode()
    if how == "cut":
        data = data[: draw(st.integers(1, len(data) - 1))]
    elif how == "bad_json":
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + draw(st.sampled_from([b"{", b"}", b'"', b",", b"\xff", b"\n\n[1]\n", b"NaN"])) + data[at:]
    return data, len(objs) - 1


def _check(url: str, tmp_path, case: tuple[bytes, int]) -> None:
    data, jobs = case
    path = tmp_path / f"results-{uuid.uuid4().hex[:8]}.jsonl"
    path.write_bytes(data)
    before = rf.counts(url)
    rc, out, err = rf.run_import(str(path), "--url", url)
    after = rf.counts(url)
    if rc == 0:  # stored completely: every job line of the file is a job with its attempt in one new run
        stored = sum(1 for line in data.splitlines()[1:] if line.strip())
        assert after["runs"] == before["runs"] + 1, out + err
        assert after["jobs"] - before["jobs"] == stored == after["job_attempts"] - before["job_attempts"], out
        assert stored == jobs or data.endswith(b"\n"), "a cut-off line was dropped silently"
    else:
        assert rc == 2, out + err
        assert after == before, f"a failed import changed the store: {err}"
        assert err.startswith("error: ") and err.count("\n") == 1, err


FUZZ = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(case=corrupted())
def test_fuzzed_import_is_all_or_nothing(empty_url, tmp_path, case):
    """On each backend (SQLite, PostgreSQL): max_examples corrupted files into one store."""
    from orchestrator.store import migrate

    if migrate.current(empty_url) is None:
        migrate.upgrade(empty_url)
    _check(empty_url, tmp_path, case)
