"""How long `python -m orchestrator compare` and the dashboard's Compare page take on a store: the comparison
query (orchestrator/store/query/compare_queries.compare), the whole command as a user runs it (a fresh process, --json
and --markdown with its plots), the page's server-side view, and (--browser) the page's full load in headless
Chromium.  The figures in docs/perf/dashboard.md ("Compare") come from this script.

  python -m benchmarks.compare_time --url URL --baseline 1,2 --current 3,4 [--repeats 3] [--browser] [--out F.jsonl]
  python -m benchmarks.compare_time --url URL --grow-to 1000000     (SQLite) then time as above

--grow-to N copies every run of the store (its jobs, attempts and measurements, with new ids and job keys, dated
k days earlier for the k-th copy, the copies' repeats left out) until the store holds N measurements or more: a
store the size of a long history around the runs compared, which stay the newest.  The copies are the store's own
results again; they measure nothing new.

Prints one JSON object (and appends it as a line to --out): the store's counts, the series compared, and the best
of --repeats seconds of each step.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import chromium  # noqa: E402
from benchmarks.wall import best_s  # noqa: E402
from orchestrator.store.query import access, compare_queries, run_queries  # noqa: E402
from orchestrator.store.session import dispose_engines  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _ids(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: run ids such as 1,2") from None


def _cli(url: str, base: list[int], cur: list[int], folder: str) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "compare",
            "--url",
            url,
            "--baseline",
            ",".join(map(str, base)),
            "--current",
            ",".join(map(str, cur)),
            "--json",
            "--markdown",
            os.path.join(folder, "compare.md"),
        ],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        check=False,
    )


def _browser(url: str, query: str, repeats: int) -> tuple[float, float]:
    """(the first load: a fresh server computes the comparison, the browser fetches Dash's JavaScript; the best
    later load: browser cache warm, the comparison kept by the server)"""
    # rendered: the page's title, no Dash callback pending, the series grid filled
    idle = (
        "return document.querySelector('#page h2') !== null && "
        "document.querySelector('[data-dash-is-loading=\"true\"]') === null && "
        "document.querySelector('#table-series .ag-row') !== null"
    )
    with chromium.dashboard_in_browser(url) as (driver, base):
        target = f"{base}/compare?{query}"
        # first: then the browser caches Dash's JavaScript as a returning user's has
        first = chromium.load_s(driver, target, idle, 300)
        best = min(chromium.load_s(driver, target, idle, 300) for _ in range(repeats)) if repeats else None
        return first, best


def _page_choice(engine, ids: list[int]) -> str | None:
    """How the Compare page selects these runs: ``run:ID`` for one run, ``commit:SHA`` when they are all the runs
    of one commit, else None (the page cannot select them)."""
    if len(ids) == 1:
        return f"run:{ids[0]}"
    commits = {r["commit"] for r in compare_queries.run_rows(engine, ids)}
    if len(commits) == 1:
        commit = commits.pop()
        if commit and sorted(compare_queries.runs_of_commit(engine, commit)[1]) == sorted(ids):
            return f"commit:{commit}"
    return None


def measure(url: str, base: list[int], cur: list[int], repeats: int, browser: bool) -> dict:
    from dashboard import pages

    engine = access.open_read_only(url)
    report = compare_queries.compare(engine, base, cur)
    sides = [_page_choice(engine, ids) for ids in (base, cur)]
    params = {"baseline": sides[0], "current": sides[1]} if all(sides) else None
    out = {
        "store_counts": run_queries.store_counts(engine),
        "baseline": base,
        "current": cur,
        "series": report["counts"]["series"],
        "series_rows": len(report["series"]),
        "compare_query_s": best_s(lambda: compare_queries.compare(engine, base, cur), repeats),
    }
    with tempfile.TemporaryDirectory() as tmp:
        out["compare_cli_s"] = best_s(lambda: _cli(url, base, cur, tmp), repeats)
    if params:
        from dashboard.pages import compare as compare_page

        def fresh():
            compare_page.clear_cache()  # the comparison computed again, as on a first request
            pages.build(engine, "/compare", params, url)

        out["page_view_s"] = best_s(fresh, repeats)
        out["page_view_cached_s"] = best_s(lambda: pages.build(engine, "/compare", params, url), repeats)
        if browser:
            out["page_browser_first_s"], out["page_browser_s"] = _browser(url, urllib.parse.urlencode(params), repeats)
    out["load_average"] = os.getloadavg()
    return out


def grow(url: str, target: int) -> dict:
    """Copy the store's runs (see the module doc) until it holds ``target`` measurements; SQLite only."""
    from sqlalchemy import create_engine, text

    if not url.startswith("sqlite"):
        raise SystemExit("--grow-to: SQLite stores only")
    engine = create_engine(url)
    with engine.begin() as c:
        top = {t: c.execute(text(f"SELECT max(id) FROM {t}")).scalar() or 0 for t in ("runs", "jobs", "job_attempts")}
        top["measurements"] = c.execute(text("SELECT max(id) FROM measurements")).scalar() or 0
        n = c.execute(text("SELECT count(*) FROM measurements")).scalar()
        per_copy = n
        k = 0
        while n < target:
            k += 1
            r, j, a, m = (top[t] * k for t in ("runs", "jobs", "job_attempts", "measurements"))
            c.execute(
                text(
                    f"""INSERT INTO runs (id, sweep, config, plan_key, "commit", code_hash, user, host, source,
                    source_digest, status, started_at, finished_at, counts)
                    SELECT id + {r}, sweep, config, plan_key || '-copy{k}', "commit", code_hash, user, host, source,
                    NULL, status, datetime(started_at, '-{k} days'), datetime(finished_at, '-{k} days'), counts
                    FROM runs WHERE id <= {top["runs"]}"""
                )
            )
            c.execute(
                text(
                    f"""INSERT INTO jobs (id, key, spec, kind, kernel, model, shape, shape_key, dtype, target,
                    status, attempts, node_id, hardware_key, error, started_at, duration_s, details,
                    created_run_id, last_run_id)
                    SELECT id + {j}, key || '-copy{k}', spec, kind, kernel, model, shape, shape_key, dtype, target,
                    status, attempts, node_id, hardware_key, error, datetime(started_at, '-{k} days'), duration_s,
                    details, created_run_id + {r}, last_run_id + {r} FROM jobs WHERE id <= {top["jobs"]}"""
                )
            )
            c.execute(
                text(
                    f"""INSERT INTO run_jobs (run_id, job_id) SELECT run_id + {r}, job_id + {j} FROM run_jobs
                    WHERE run_id <= {top["runs"]}"""
                )
            )
            c.execute(
                text(
                    f"""INSERT INTO job_attempts (id, job_id, attempt, run_id, status, error, node_id, hardware_key,
                    started_at, duration_s, details, recorded_at, result_digest)
                    SELECT id + {a}, job_id + {j}, attempt, run_id + {r}, status, error, node_id, hardware_key,
                    datetime(started_at, '-{k} days'), duration_s, details, datetime(recorded_at, '-{k} days'),
                    result_digest FROM job_attempts WHERE id <= {top["job_attempts"]}"""
                )
            )
            c.execute(
                text(
                    f"""INSERT INTO measurements (id, job_id, attempt, impl, metric, value, unit, samples)
                    SELECT id + {m}, job_id + {j}, attempt, impl, metric, value, unit, NULL FROM measurements
                    WHERE id <= {top["measurements"]}"""
                )
            )
            n += per_copy
    engine.dispose()
    return {"copies": k, "measurements": n}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.compare_time",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--url", required=True, help="the store")
    ap.add_argument("--baseline", type=_ids, help="baseline run ids, e.g. 1,2")
    ap.add_argument("--current", type=_ids, help="current run ids, e.g. 3,4")
    ap.add_argument("--grow-to", type=int, metavar="N", help="copy the store's runs until it holds N measurements")
    ap.add_argument("--repeats", type=int, default=3, help="best of how many (3)")
    ap.add_argument(
        "--browser",
        action="store_true",
        help="also the page's load in headless Chromium (each side one run, or all the runs of one commit)",
    )
    ap.add_argument("--out", help="append the result as a JSON line to this file")
    args = ap.parse_args(argv)
    if args.grow_to:
        print(json.dumps(grow(args.url, args.grow_to)))
        return 0
    if not args.baseline or not args.current:
        ap.error("--baseline and --current are required (or --grow-to)")
    if args.browser and chromium.missing():
        ap.error(chromium.missing())
    result = measure(args.url, args.baseline, args.current, max(args.repeats, 1), args.browser)
    dispose_engines()
    text = json.dumps(result, default=str)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
