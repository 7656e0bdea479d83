"""Command line: run the UI automation MCP server over stdio, or Streamable HTTP with --http.

    python -m cardrunner.uiserver --app invoice.app:InvoiceApp --cwd . [--http PORT]

Whatever way the server ends (stdin EOF, SIGTERM, Ctrl-C, an error), the app's driver process is
killed; and should the server itself be killed, the driver sees EOF on its stdin and exits.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from types import FrameType

from cardrunner.uiserver.server import UiSession, build_server


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m cardrunner.uiserver",
        description="MCP server that drives a Textual app headless by widget id.",
    )
    add = parser.add_argument
    add("--app", required=True, help="the app as module:Class, e.g. invoice.app:InvoiceApp")
    add("--cwd", default=".", help="the app's folder (first on sys.path); default: here")
    add("--http", type=int, metavar="PORT", help="serve Streamable HTTP on PORT (path /mcp)")
    add("--host", default="127.0.0.1", help="host for --http (default 127.0.0.1)")
    add("--timeout", type=float, default=30.0, help="seconds to wait for each action")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    cwd = Path(args.cwd).resolve()
    if not cwd.is_dir():
        print(f"--cwd {cwd} is not a folder", file=sys.stderr)
        return 2
    session = UiSession(args.app, cwd, args.timeout)
    server = build_server(session)

    def on_term(signum: int, frame: FrameType | None) -> None:
        session.kill_now()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    try:
        if args.http is None:
            signal.signal(signal.SIGTERM, on_term)
            server.run()
        else:
            server.run("streamable-http", host=args.host, port=args.http)
    except KeyboardInterrupt:
        pass
    finally:
        session.kill_now()
    return 0


if __name__ == "__main__":
    sys.exit(main())
