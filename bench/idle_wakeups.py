"""Idle wake-ups per second of `cardrunner lsp` against a minimal pygls server.

An editor keeps its language server for hours, mostly idle; a server that wakes up on a timer
costs a laptop battery for nothing. Each server is spawned, initialized with a project of a few
cards, given time to finish its start-up work (the card scan, the watcher, the sweep), and then
left alone while the context switches of all its threads (`/proc/<pid>/task/*/status`,
voluntary and involuntary) are counted over a window: every wake-up of a thread is one switch.
Spawns of the two servers interleave; the figures are medians over the rounds.

    .venv/bin/python bench/idle_wakeups.py [--rounds 3] [--window 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from pathlib import Path

from _common import VENV_BIN, header, median, verdict
from _lsp import initialized

SETTLE_SECONDS = 3.0
"""Start-up work to let pass before counting (the scan and the watcher start in the first)."""
TARGET = 1.0
"""At most this many wake-ups per second above the minimal server's."""
HERE = Path(__file__).resolve().parent


def switches(pid: int) -> int:
    """Context switches of every thread of `pid` so far."""
    total = 0
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        with contextlib.suppress(OSError):
            for line in status.read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
    return total


async def one(argv: list[str], root: Path, window: float) -> float:
    """Wake-ups per second of one idle server."""
    async with initialized(argv, root) as (server, _):
        await asyncio.sleep(SETTLE_SECONDS)  # the settling time itself, not a wait for a result
        assert server.proc is not None
        pid = server.proc.pid
        before, start = switches(pid), time.perf_counter()
        await asyncio.sleep(window)  # the window being measured
        return (switches(pid) - before) / (time.perf_counter() - start)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=float, default=5.0, help="seconds counted, each spawn")
    args = parser.parse_args()
    header(f"idle wake-ups: cardrunner lsp vs a minimal pygls server, {args.rounds} rounds")
    from tests.support.project import make_project

    servers = {
        "minimal": [sys.executable, str(HERE / "minimal_server.py")],
        "cardrunner": [str(VENV_BIN / "cardrunner"), "lsp"],
    }
    rates: dict[str, list[float]] = {k: [] for k in servers}
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        root = Path(tmp) / "project"
        make_project(root)
        for _ in range(args.rounds):
            for name, argv in servers.items():
                rates[name].append(await one(argv, root, args.window))
    for name, rows in rates.items():
        shown = ", ".join(f"{r:.1f}" for r in rows)
        print(f"   {name:<11} {median(rows):6.1f} wake-ups/s   (rounds: {shown})")
    ours, bare = median(rates["cardrunner"]), median(rates["minimal"])
    print(
        f"RATIO idle wake-ups above bare = {ours - bare:+.1f}/s  (target ≤ +{TARGET:g}/s): "
        f"{verdict(ours - bare, TARGET)}   (ours ÷ bare = {ours / max(bare, 0.1):.2f}×)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
