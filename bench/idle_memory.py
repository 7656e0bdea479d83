"""Idle memory of `cardrunner lsp` against a bare pygls server: RSS and PSS, pooled over starts.

An editor keeps its language server for hours, mostly idle, so what it holds then is what it
costs. Each start spawns the server on a project of a few cards, initializes it, waits until it
says its start-up work is over (cardrunner's "serving" log line) and its resident set has stopped
growing for 1.5 s, then reads `/proc/<pid>/smaps_rollup`: RSS (every page it has touched,
shared libraries whole) and PSS (shared pages divided among the processes that map them — the
fairer figure on a machine where other Python processes run). Starts of the two servers
interleave; the ratios are ours ÷ bare of the medians over every start, min–max beside them.

Then the same bare server with layers of cardrunner's own code (`layered_server.py`): the
`Settings` model read (the floor under any server that validates its settings in its own
process; cardrunner's validates them in a child, lsp/core/config.py); every card parsed, and
nothing else (yaml and the card layer, no pydantic since `RunRecord` is a dataclass); and
both — so "cards + Settings" less "cards" is what validating the settings in the server's own
process would put back. And which of the packages a run needs (the SDKs, MCP,
HTTP, git's and the workers' code) the idle server has loaded.

    .venv/bin/python bench/idle_memory.py [--starts 4]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from pathlib import Path

from _common import VENV_BIN, header, median, verdict
from _lsp import LspProcess, initialized

TARGET = 1.25
SETTLE_SECONDS, SETTLE_MAX = 1.5, 30.0
HERE = Path(__file__).resolve().parent
CARDS, CARDS_SETTINGS = "bare + cards (yaml)", "bare + cards + Settings"
RUN_ONLY = ("anthropic", "mcp", "httpx", "watchfiles", "anyio", "pydantic", "yaml")
"""Packages a run needs; the idle server should hold as few of them as it can."""


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of `pid` in KiB."""
    text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    rss = int(re.search(r"^Rss:\s+(\d+)", text, re.M).group(1))  # type: ignore[union-attr]
    pss = int(re.search(r"^Pss:\s+(\d+)", text, re.M).group(1))  # type: ignore[union-attr]
    return rss, pss


async def settled_memory(server: LspProcess, waits_for_log: bool) -> tuple[int, int]:
    """RSS and PSS once the server has settled: its "serving" line (cardrunner) and a
    resident set that moved less than 256 KiB over the last 1.5 s."""
    if waits_for_log:
        await server.settled()
    assert server.proc is not None
    pid = server.proc.pid
    readings = [(time.perf_counter(), memory_kib(pid))]
    while time.perf_counter() - readings[0][0] < SETTLE_MAX:
        await asyncio.sleep(0.1)  # the sampling interval of the poll, not a wait for a result
        now = time.perf_counter()
        readings.append((now, memory_kib(pid)))
        window = [rss for t, (rss, _) in readings if t >= now - SETTLE_SECONDS]
        if now - readings[0][0] >= SETTLE_SECONDS and max(window) - min(window) <= 256:
            break
    return readings[-1][1]


async def loaded(server: LspProcess) -> list[str]:
    info = await server.request(
        "workspace/executeCommand", {"command": "cardrunner.debug.modules", "arguments": []}
    )
    top = set(info["topLevel"])
    return [name for name in RUN_ONLY if name in top]


def line(name: str, rows: list[tuple[int, int]], bare: tuple[float, float] | None) -> str:
    rss, pss = median([r for r, _ in rows]) / 1024, median([p for _, p in rows]) / 1024
    spread = f"RSS {min(r for r, _ in rows) / 1024:.1f}–{max(r for r, _ in rows) / 1024:.1f}"
    shown = f"   {name:<30} RSS {rss:6.1f} MiB  PSS {pss:6.1f} MiB  ({spread})"
    if bare:
        shown += f"   {rss / bare[0]:.2f}× / {pss / bare[1]:.2f}× bare"
    return shown


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=4, help="starts of each server")
    args = parser.parse_args()
    header(f"idle memory: cardrunner lsp vs a bare pygls server, {args.starts} starts each")
    from tests.support.project import make_project

    servers = {
        "bare": [sys.executable, str(HERE / "minimal_server.py")],
        "cardrunner": [str(VENV_BIN / "cardrunner"), "lsp"],
        "bare + Settings (pydantic)": [sys.executable, str(HERE / "layered_server.py"), "settings"],
        CARDS: [sys.executable, str(HERE / "layered_server.py"), "cards"],
        CARDS_SETTINGS: [sys.executable, str(HERE / "layered_server.py"), "settings", "cards"],
    }
    rows: dict[str, list[tuple[int, int]]] = {k: [] for k in servers}
    holds: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        root = Path(tmp) / "project"
        make_project(root)
        for _ in range(args.starts):
            for name, argv in servers.items():
                async with initialized(argv, root) as (server, _):
                    rows[name].append(await settled_memory(server, name == "cardrunner"))
                    if name == "cardrunner":
                        holds = await loaded(server)
    bare = (median([r for r, _ in rows["bare"]]), median([p for _, p in rows["bare"]]))
    base = (bare[0] / 1024, bare[1] / 1024)
    for name, got in rows.items():
        print(line(name, got, None if name == "bare" else base))
    print(f"   the idle cardrunner holds, of what runs need: {', '.join(holds) or 'none'}")
    ours = rows["cardrunner"]
    rss = median([r for r, _ in ours]) / bare[0]
    pss = median([p for _, p in ours]) / bare[1]
    floor = median([r for r, _ in rows["bare + Settings (pydantic)"]]) / bare[0]
    print(f"RATIO idle RSS ours ÷ bare = {rss:.2f}×  (target ≤ {TARGET}×): {verdict(rss, TARGET)}")
    print(f"RATIO idle PSS ours ÷ bare = {pss:.2f}×  (target ≤ {TARGET}×): {verdict(pss, TARGET)}")
    print(f"      floor with the Settings model in the process: RSS {floor:.2f}× bare")
    cards = median([r for r, _ in rows[CARDS]])
    settings_on_cards = median([r for r, _ in rows[CARDS_SETTINGS]]) - cards
    print(f"      floor with the cards parsed (no settings): RSS {cards / bare[0]:.2f}× bare")
    print(f"      the Settings on top of the cards: RSS {settings_on_cards / 1024:+.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
