"""python -m dashboard [--db URL] [--host 127.0.0.1] [--port 8050]: serve the dashboard of a store.
python -m dashboard build --out DIR [--db URL]: write its pages as self-contained static HTML.

The store: --db, else $KERNELFLEET_DB, else the default SQLite file (the same as a sweep's).  It is opened
read-only: nothing is written, no migration runs.  Exit 2 (one line on stderr) when the store cannot be opened or
is on another schema revision (`python -m orchestrator db upgrade` brings it up to date).
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

EXIT_USAGE = 2
LOOPBACK = "127.0.0.1"
# waitress's worker threads: each page view holds one while it reads the store (a Trends or Compare view can take a
# second or more on a large store), so several people and the CSV downloads do not queue behind one view
SERVER_THREADS = 8


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m dashboard", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--db", help="store URL or SQLite path (default: $KERNELFLEET_DB, else the default SQLite file)")
    ap.add_argument("--host", default=LOOPBACK, help=f"address to bind (default {LOOPBACK}: this machine only)")
    ap.add_argument("--port", type=int, default=8050, help="port (default 8050)")
    ap.add_argument(
        "--debug", action="store_true", help="Dash's debug mode on Werkzeug's development server (reloader off)"
    )
    sub = ap.add_subparsers(dest="cmd")
    build = sub.add_parser("build", help="write every page as self-contained static HTML")
    build.add_argument("--out", required=True, help="folder to write (created)")
    build.add_argument("--db", dest="build_db", help="store URL or SQLite path")
    return ap


def open_store(db: str | None):
    """(read-only engine, url), or a one-line error and SystemExit(2)."""
    from orchestrator.store.query import access

    try:
        url = access.store_url(db)
        return access.open_read_only(url), url
    except access.SchemaOutOfDate as exc:
        _die(str(exc))
    except Exception as exc:  # bad URL, unknown driver, unreachable server, not a database
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        _die(f"cannot open the store {access.display_store_url(db) if db else '(default)'}: {first}")


def _die(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def _check_listen(host: str, port: int) -> None:
    """A one-line error, before anything is loaded, when the dashboard could not listen on ``host``:``port`` (a
    host that is no address of this machine, a port another program holds)."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        _die(f"--host {host}: not a host name or address ({getattr(exc, 'strerror', None) or exc})")
    probe = socket.socket(family, kind, proto)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server itself binds
        probe.bind(address)
    except OSError as exc:
        _die(f"cannot listen on {host}:{port}: {exc.strerror or exc} (another --port, or --host of this machine)")
    finally:
        probe.close()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _quiet_dev_server_banner() -> None:
    """Drop Werkzeug's multi-line "development server" warning (the note printed instead says what is served)."""
    import logging

    class _NoBanner(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return "development server" not in record.getMessage()

    logging.getLogger("werkzeug").addFilter(_NoBanner())


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "build":
        from dashboard.static import build_site
        from dashboard.view import UNREADABLE_STORE, unreadable_store_line

        engine, url = open_store(args.build_db or args.db)
        try:
            written = build_site(engine, url, args.out)
        except UNREADABLE_STORE as exc:
            _die(unreadable_store_line(exc))
        except OSError as exc:
            _die(f"--out {args.out}: {exc.strerror or exc}")
        for path in written:
            print(path)
        return 0
    if not 0 < args.port < 65536:
        _die(f"--port {args.port}: not a port number (1-65535)")
    _check_listen(args.host, args.port)
    engine, url = open_store(args.db)
    from dashboard.app import create_app
    from orchestrator.store.query import access

    app = create_app(engine, url)
    import scipy.stats  # noqa: F401  the regression rule's test, loaded now rather than by the first trend page

    if not _is_loopback(args.host):
        print("!" * 78, file=sys.stderr)
        print(
            f"WARNING: the dashboard binds {args.host}: anyone who can reach this machine on port {args.port} "
            "can read every result in the store (no authentication). Use --host 127.0.0.1 unless you mean it.",
            file=sys.stderr,
        )
        print("!" * 78, file=sys.stderr)
    print(
        f"kernelfleet dashboard of {access.display_store_url(url)} (read-only) on http://{args.host}:{args.port}/",
        flush=True,
    )
    if args.debug:  # Dash's debug mode needs its own (Werkzeug's) server
        _quiet_dev_server_banner()
        print("note: --debug: served by Werkzeug's development server, with Dash's debug tools", flush=True)
        app.run(host=args.host, port=args.port, debug=True, use_reloader=False)
        return 0
    from waitress import serve

    print(f"served by waitress ({SERVER_THREADS} threads); Ctrl-C stops it", flush=True)
    serve(app.server, host=args.host, port=args.port, threads=SERVER_THREADS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
