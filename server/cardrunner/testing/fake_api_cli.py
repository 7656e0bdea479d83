"""`python -m cardrunner.testing.fake_api_cli`: serve a transcript to other processes.

The VS Code end-to-end test and the benchmarks run cardrunner as a separate process; they start
this server, wait for the `READY <base_url>` line on stdout, point `ANTHROPIC_BASE_URL` at it and,
at the end, read the violations file (rewritten after every request, so it is current even if
the server is killed). Exit status: 0, or 1 when any violation was recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

from cardrunner.testing.fake_api import FakeMessagesAPI
from cardrunner.testing.fake_script import load_transcript


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cardrunner.testing.fake_api_cli",
        description="Serve a scripted Anthropic Messages API on 127.0.0.1.",
    )
    parser.add_argument(
        "--transcript",
        required=True,
        type=Path,
        help='JSON file: {"responses": [{"content": [...], "stop_reason": ...}]}',
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: a free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--violations-file",
        type=Path,
        help="JSON list of every violation, rewritten after each request",
    )
    parser.add_argument(
        "--requests-file",
        type=Path,
        help="JSON lines: every request received (path, index, headers, body)",
    )
    parser.add_argument("--min-cacheable-tokens", type=int, default=512)
    parser.add_argument(
        "--no-check-history",
        action="store_true",
        help="accept assistant turns this server did not return",
    )
    return parser


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class _Recorder:
    """Keeps the output files current after every request."""

    def __init__(self, violations: Path | None, requests: Path | None) -> None:
        self._violations, self._requests, self._written = violations, requests, 0
        if violations is not None:
            _write_atomically(violations, "[]\n")
        if requests is not None:
            requests.write_text("", encoding="utf-8")

    def __call__(self, api: FakeMessagesAPI) -> None:
        if self._violations is not None:
            _write_atomically(self._violations, json.dumps(api.violations, indent=1) + "\n")
        if self._requests is not None:
            with self._requests.open("a", encoding="utf-8") as out:
                for r in api.requests[self._written :]:
                    line = {"path": r.path, "index": r.index, "headers": r.headers, "body": r.body}
                    out.write(json.dumps(line) + "\n")
            self._written = len(api.requests)


async def serve(args: argparse.Namespace) -> int:
    """Run until SIGINT/SIGTERM; the exit status."""
    api = FakeMessagesAPI(
        load_transcript(args.transcript),
        min_cacheable_tokens=args.min_cacheable_tokens,
        check_history=not args.no_check_history,
        host=args.host,
        port=args.port,
        on_record=_Recorder(args.violations_file, args.requests_file),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    async with api:
        sys.stdout.write(f"READY {api.base_url}\n")
        sys.stdout.flush()
        await stop.wait()
    for violation in api.violations:
        print(f"violation: {violation}", file=sys.stderr)
    return 1 if api.violations else 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m cardrunner.testing.fake_api_cli`."""
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(serve(args))
    except (OSError, ValueError) as exc:
        print(f"fake_api: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
