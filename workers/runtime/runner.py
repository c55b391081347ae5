"""Run a list of JobSpecs on this machine's device through the sandbox, and the JSON-lines files around it.

The same runner serves a Ray task on a fleet node and ``python -m workers run PLAN.jsonl`` on a machine outside
the cluster.  A plan file is a header line (``{"kernelfleet": "plan", ...}``: sweep, composed config, plan key,
code version) followed by one JobSpec per line; a results file is a header (``{"kernelfleet": "results",
"format": 1, "plan": <plan header>}``; a header without ``format`` is format 1) followed by one
``{"spec": ..., "result": ...}`` line per job, written as each job ends.  Both are read in any format from 1 to the
current one, upgraded as they are read (workers/runtime/file_formats.py); docs/json.md documents them line by line.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import math
import os
import re
import zlib
from pathlib import Path
from typing import Iterable, Iterator

from workers import kinds
from workers.errors import UserError
from workers.runtime import file_formats
from workers.runtime.child import COMPILE_ONLY_ENV
from workers.runtime.sandbox import ChildInfo, run_jobs
from workers.spec import JobResult, JobSpec

# The formats this code writes (and reads, with every older one: workers/runtime/file_formats.py)
PLAN_FORMAT = file_formats.PLAN.current
RESULTS_FORMAT = file_formats.RESULTS.current


def run(
    specs: Iterable[JobSpec],
    node_id: str | None = None,
    env: dict[str, str] | None = None,
    info: ChildInfo | None = None,
) -> Iterator[JobResult]:
    """Results of ``specs``: the jobs that run kernels first, in one sandbox, then the compile-only jobs (``isa``)
    in a sandbox of their own, which compiles the kernels instead of interpreting them and measures nothing."""
    specs = list(specs)
    compile_only = [s for s in specs if kinds.kind_of(s.kind).compile_only]
    measured = [s for s in specs if not kinds.kind_of(s.kind).compile_only]
    groups = [(measured, env, info)]
    if compile_only:
        base = dict(os.environ if env is None else env)
        groups.append((compile_only, {**base, COMPILE_ONLY_ENV: "1", "KERNELFLEET_MEASURE_CEILING": "0"}, None))
    for group, group_env, group_info in groups:
        if not group:
            continue
        for result in run_jobs(group, env=group_env, info=group_info):
            result.node_id = node_id
            yield result


def _open(path: str | Path, mode: str = "r"):
    """A plan or results file, read decompressed when its name ends in ``.gz`` (results kept in results/)."""
    if not str(path).endswith(".gz"):
        return open(path, mode)
    return _Gunzip(path) if mode == "rb" else gzip.open(path, mode + "t" if mode == "r" else mode)


class _Gunzip:
    """A ``.gz`` file's decompressed bytes through zlib, a compressed chunk at a time and never more output than asked
    for, so ``consumed`` (the compressed bytes used so far) is exact.  GzipFile reads ahead by a buffer whose size
    depends on the Python version (8 KiB, 128 KiB from 3.12): a bomb's ratio judged on its position was judged late
    on 3.12.  Members one after another are read as one stream, as GzipFile reads them."""

    CHUNK = 64 * 1024

    def __init__(self, path: str | Path):
        self._raw = open(path, "rb")
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._pending = b""  # compressed bytes read from the file, not yet given to the decompressor
        self._read = 0  # compressed bytes read from the file
        self._started = False  # a member's header was seen: a file that ends inside it is truncated

    @property
    def consumed(self) -> int:
        return self._read - len(self._pending) - len(self._d.unconsumed_tail)

    def read(self, n: int) -> bytes:
        out: list[bytes] = []
        want = n
        while want > 0:
            if self._d.eof:
                rest = self._d.unused_data + self._pending
                self._pending = b""
                if not rest.strip(b"\0"):  # end of the last member (trailing zeros are padding)
                    more = self._raw.read(self.CHUNK)
                    if not more:
                        break
                    self._read += len(more)
                    rest += more
                    if not rest.strip(b"\0"):
                        continue
                self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._pending = rest
            if self._d.unconsumed_tail:  # input the last call left for want of room in its output
                data = self._d.unconsumed_tail
            else:
                data, self._pending = self._pending, b""
            if not data:
                data = self._raw.read(self.CHUNK)
                self._read += len(data)
                if not data:
                    if self._started and not self._d.eof:
                        raise EOFError("Compressed file ended before the end-of-stream marker was reached")
                    break
            self._started = True
            block = self._d.decompress(data, want)
            out.append(block)
            want -= len(block)
        return b"".join(out)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> _Gunzip:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def results_header(plan_header: dict) -> str:
    """The first line of a results file (with its newline)."""
    header = {"kernelfleet": "results", "format": file_formats.RESULTS.current, "plan": plan_header}
    return json.dumps(header, sort_keys=True) + "\n"


@contextlib.contextmanager
def _readable(path: str | Path) -> Iterator[None]:
    """A truncated or damaged ``.gz`` becomes a UserError naming the file (gzip raises EOFError or BadGzipFile)."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise UserError(f"{path}: the compressed file is truncated or damaged ({exc}); copy it again") from None


# What a plan or results file may hold, decompressed: a bigger file or a longer line (a damaged file, or a gzip bomb
# of a few MB that expands to gigabytes) is refused with FILE:LINE before it fills memory or runs for minutes.  The
# largest real lines carry a profile's raw capture (base64) and stay well under the line limit.
MAX_FILE_BYTES = 8 * 2**30
MAX_LINE_BYTES = 256 * 2**20
MAX_JSON_DEPTH = 64  # the deepest legitimate line (a result's details) nests a few levels
# A compressed file that expands more than MAX_RATIO times is a bomb, judged once RATIO_FROM_BYTES are out (the
# project's results compress about 10 times; gzip's most is about 1000): it is stopped in its first megabytes, not
# after gigabytes at MAX_FILE_BYTES.
MAX_RATIO = 200
RATIO_FROM_BYTES = 64 * 2**20
_BLOCK = 1 << 20
_NONBLANK = re.compile(rb"\S")


def _blocks(f, path: str | Path) -> Iterator[bytes]:
    """The file's (decompressed) bytes a block at a time; ValueError past MAX_FILE_BYTES, or past MAX_RATIO times
    the compressed bytes read so far."""
    total = 0
    packed = f if isinstance(f, _Gunzip) else None  # a .gz file: the compressed bytes the blocks came from
    while True:
        block = f.read(_BLOCK)
        if not block:
            return
        total += len(block)
        if total > MAX_FILE_BYTES:
            raise ValueError(
                f"{path}: more than {MAX_FILE_BYTES} bytes (decompressed); not a plan or results file of this project"
            )
        if packed is not None and total > RATIO_FROM_BYTES and total > MAX_RATIO * packed.consumed:
            raise ValueError(
                f"{path}: {packed.consumed} compressed bytes expand to more than {total} (over {MAX_RATIO} times): "
                "a compression bomb, not a plan or results file of this project"
            )
        yield block


def digest(path: str | Path) -> str:
    """The sha256 of a plan's or results file's bytes (decompressed), read a block at a time."""
    h = hashlib.sha256()
    with _readable(path):
        with _open(path, "rb") as f:
            for block in _blocks(f, path):
                h.update(block)
    return h.hexdigest()


def content(path: str | Path) -> bytes:
    """A plan's or results file's bytes (decompressed), within MAX_FILE_BYTES."""
    with _readable(path):
        with _open(path, "rb") as f:
            return b"".join(_blocks(f, path))


def _too_long(path: str | Path, n: int) -> ValueError:
    return ValueError(f"{path}:{n}: a line longer than {MAX_LINE_BYTES} bytes; not a line this project writes")


def _raw_lines(f, path: str | Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes with the newline) of each line that is not blank; the last line has no newline when its
    writer was cut off.  Blank runs are skipped a block at a time (a file of nothing but newlines costs no Python
    loop per line); a line past MAX_LINE_BYTES is refused before it is read whole."""
    n = 0  # newlines consumed so far: the next line is line n + 1
    pending: list[bytes] = []  # the pieces of a line not yet ended
    size = 0
    blank = 0  # whitespace since the last newline: a run of spaces without a newline is a line too long as well
    for block in _blocks(f, path):
        pos = 0
        if pending:
            end = block.find(b"\n")
            if end < 0:
                pending.append(block)
                size += len(block)
                if size > MAX_LINE_BYTES:
                    raise _too_long(path, n + 1)
                continue
            pending.append(block[: end + 1])
            if size + end + 1 > MAX_LINE_BYTES:
                raise _too_long(path, n + 1)
            yield n + 1, b"".join(pending)
            pending, n, pos = [], n + 1, end + 1
        while True:
            m = _NONBLANK.search(block, pos)
            if m is None:
                n += block.count(b"\n", pos)
                last = block.rfind(b"\n", pos)
                blank = len(block) - last - 1 if last >= 0 else blank + len(block) - pos
                if blank > MAX_LINE_BYTES:
                    raise _too_long(path, n + 1)
                break
            blank = 0
            start = m.start()
            n += block.count(b"\n", pos, start)
            end = block.find(b"\n", start)
            if end < 0:
                pending, size = [block[start:]], len(block) - start
                if size > MAX_LINE_BYTES:
                    raise _too_long(path, n + 1)
                break
            if end + 1 - start > MAX_LINE_BYTES:
                raise _too_long(path, n + 1)
            yield n + 1, block[start : end + 1]
            n, pos = n + 1, end + 1
    if pending:
        yield n + 1, b"".join(pending)


def _depth_over(obj: object, limit: int) -> bool:
    """Whether ``obj`` nests lists and objects deeper than ``limit`` (walked without recursion)."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        elif not isinstance(value, list):
            continue
        if depth > limit:
            return True
        stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))
    return False


def json_lines(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-empty line, read decompressed when the name ends in ``.gz``.

    ValueError names ``path:line`` for a line that is not UTF-8, not JSON, not an object, nested deeper than
    MAX_JSON_DEPTH or longer than MAX_LINE_BYTES, and for a last line cut short by an interrupted writer
    (``python -m workers run --resume`` removes such a line, see :func:`cut_partial_line`); a truncated ``.gz`` and a
    file past MAX_FILE_BYTES are ValueErrors too."""
    n = 0
    try:
        with _open(path, "rb") as f:
            for n, raw in _raw_lines(f, path):
                try:
                    obj = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    raise ValueError(f"{path}:{n}: not UTF-8 text") from None
                except (ValueError, RecursionError) as exc:
                    if not raw.endswith(b"\n"):
                        raise ValueError(
                            f"{path}:{n}: the last line is cut off (its writer stopped mid-line); "
                            "finish it with `python -m workers run PLAN --out FILE --resume`"
                        ) from None
                    reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
                    raise ValueError(f"{path}:{n}: not JSON ({reason})") from None
                if not isinstance(obj, dict):
                    raise ValueError(f"{path}:{n}: expected a JSON object, got {type(obj).__name__}")
                if _depth_over(obj, MAX_JSON_DEPTH):
                    raise ValueError(f"{path}:{n}: nested deeper than {MAX_JSON_DEPTH} levels")
                yield n, obj
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ValueError(f"{path}: the compressed file is truncated or damaged after line {n} ({exc})") from None


def cut_partial_line(path: str | Path) -> int:
    """Remove a last line that its writer did not finish (no newline at the end of the file); returns how many
    bytes were removed (0: the file ends with a complete line)."""
    with open(path, "rb+") as f:
        size = f.seek(0, 2)
        if size == 0:
            return 0
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        keep, step = 0, 1 << 16
        end = size
        while end > 0:  # the last newline, read backwards a block at a time
            start = max(0, end - step)
            f.seek(start)
            block = f.read(end - start)
            i = block.rfind(b"\n")
            if i >= 0:
                keep = start + i + 1
                break
            end = start
        f.truncate(keep)
        return size - keep


def read_plan(path: str | Path) -> tuple[dict, list[JobSpec]]:
    """The plan's header and its JobSpecs, in the current plan format (an older file upgraded as it is read);
    UserError (one line) for a line that is no JobSpec and for a format newer than this code reads."""
    header: dict | None = None
    specs: list[JobSpec] = []
    upgrade = None
    for n, obj in json_lines(path):
        if n == 1 and obj.get("kernelfleet") == "plan":
            try:
                header, upgrade = file_formats.PLAN.reader(path, obj)
            except file_formats.FormatError as exc:
                raise UserError(str(exc)) from None
            continue
        try:
            spec = JobSpec.from_dict(upgrade(obj) if upgrade else obj)
            check_params(spec.params)
        except (TypeError, ValueError, AttributeError) as exc:
            raise UserError(f"{path}:{n}: not a JobSpec: {exc}") from None
        specs.append(spec)
    if header is None:
        raise ValueError(f"{path}: no plan header; write plans with `python -m orchestrator +sweep=NAME dry_run=true`")
    return header, specs


# Job parameters the runner and the job kinds read as numbers: (name, smallest allowed, integer)
NUMERIC_PARAMS = (
    ("timeout_s", 0.0, False),
    ("warmup_ms", 0.0, False),
    ("rep_ms", 0.0, False),
    ("rounds", 1, True),
    ("seed", 0, True),
)


def check_params(params: dict) -> None:
    """ValueError naming the parameter when a numeric job parameter is not a finite number in range."""
    if not isinstance(params, dict):
        raise ValueError(f"params: expected an object, got {type(params).__name__}")
    for name, low, integer in NUMERIC_PARAMS:
        if name not in params or (name == "seed" and params[name] is None):
            continue
        v = params[name]
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if ok and integer:
            ok = float(v).is_integer() and v >= low
        elif ok:
            ok = v > low
        if not ok:
            want = f"an integer >= {low}" if integer else f"a finite number > {low:g}"
            raise ValueError(f"params.{name}: {v!r} is not {want}")


def write_plan(path: str | Path, header: dict, specs: list[JobSpec]) -> None:
    with open(path, "w") as f:
        f.write(
            json.dumps({"kernelfleet": "plan", "format": file_formats.PLAN.current, **header}, sort_keys=True) + "\n"
        )
        for s in specs:
            f.write(s.to_json() + "\n")


def read_results(path: str | Path) -> tuple[dict, list[tuple[JobSpec, JobResult]]]:
    """The results file's header and its (spec, result) rows, in the current results format (an older file upgraded
    as it is read); ValueError naming the file (and line) for what it cannot read (file_formats.FormatError for a
    newer format)."""
    header: dict | None = None
    rows: list[tuple[JobSpec, JobResult]] = []
    upgrade = None
    for n, obj in json_lines(path):
        if obj.get("kernelfleet") == "results":
            header, upgrade = file_formats.RESULTS.reader(path, obj)
            continue
        if upgrade:
            obj = upgrade(obj)
        if "spec" not in obj or "result" not in obj:
            raise ValueError(f"{path}:{n}: expected a {{'spec', 'result'}} line")
        try:
            rows.append((JobSpec.from_dict(obj["spec"]), JobResult.from_dict(obj["result"])))
        except (TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{path}:{n}: not a spec and result: {exc}") from None
    if header is None:
        raise ValueError(f"{path}: no results header; results files come from `python -m workers run`")
    return header, rows


def upgrade_file(path: str | Path) -> tuple[str, int, int]:
    """Rewrite the plan or results file ``path`` in the current format of its kind, in place (written beside it, then
    renamed over it; a ``.gz`` stays compressed), unless it is in that format already.  Returns (kind, the format it
    was in, the format it is in now); ValueError naming the file for one that is neither kind or of a newer format
    (nothing is written then)."""
    path = Path(path)
    lines = json_lines(path)
    first = next(lines, None)
    kind = file_formats.of_header(first[1]) if first else None
    if kind is None:
        raise ValueError(f"{path}: no plan or results header; not a file of `python -m workers run` or a dry run")
    was = kind.version(path, first[1])
    if was == kind.current:
        return kind.kind, was, was
    header, upgrade = kind.reader(path, first[1])
    tmp = path.with_name(f".upgrading-{path.name}")  # the same ending: compressed as the file is
    try:
        with _open(tmp, "wt") as f:
            f.write(json.dumps(header, sort_keys=True) + "\n")
            for _, obj in lines:
                f.write(json.dumps(upgrade(obj), sort_keys=True) + "\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return kind.kind, was, kind.current
