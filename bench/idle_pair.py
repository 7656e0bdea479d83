"""Idle servers side by side under CPU burners: each one's latency, and its CPU per answer.

No run goes anywhere: each server (`cr`: an idle `cardrunner lsp`; `bare`: `minimal_server.py`;
a digit makes another spawn of the same program, `bare2`) holds the same board of cards with
the same card open, and is asked codeLens and hover at the same moments, in one of all the
orders (shuffled anew each time all were used). `--burners N` starts N CPU-bound processes,
each in a session (an autogroup) of its own, for the whole measurement. It shows two things
`editor_latency.py` cannot separate from its runs:

- what one spawn of a program makes of the same load against another spawn of it (`bare` ÷
  `bare2`): a server can stay lucky, or unlucky, for its whole life;
- CPU milliseconds per answer (user + system of all its threads, over the requests), which
  is the server's own cost whatever the scheduler does.

Ratios are printed against the first `bare` in the list.

    .venv/bin/python bench/idle_pair.py [--servers cr,bare,bare2] [--burners 4] [--samples 800]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from _board import make_board
from _common import VENV_BIN, cpu_seconds, header, median, percentile
from _lsp import LspProcess, doc
from editor_latency import PARAMS, Trio, open_card, start_burner

HERE = Path(__file__).resolve().parent


def argv(name: str) -> list[str]:
    if name.rstrip("0123456789") == "cr":
        return [str(VENV_BIN / "cardrunner"), "lsp"]
    return [sys.executable, str(HERE / "minimal_server.py")]


async def measure(names: list[str], samples: int, tmp: Path) -> dict[str, Any]:
    env = dict(os.environ) | {"CARDRUNNER_TRUST": "1"}  # the bench's own boards
    servers, uris = {}, {}
    for name in names:
        root = tmp / name
        board = make_board(root, 9, runnable=9, rounds=60, replay=True)
        servers[name] = LspProcess(argv(name), root, env)
        await servers[name].spawn()
        await open_card(servers[name], root, board[-1])
        uris[name] = board[-1].as_uri()
    trio, methods = Trio(servers, uris), list(PARAMS)
    try:
        for name in names:
            if name.startswith("cr"):
                await servers[name].settled()
        for _ in range(30):  # warm-up
            for name in names:
                await servers[name].timed("textDocument/codeLens", doc(uris[name]))
        times: dict[str, dict[str, list[float]]] = {n: {m: [] for m in methods} for n in names}
        before = {n: cpu_seconds(s.proc.pid) for n, s in servers.items() if s.proc}
        for _ in range(samples):
            await trio.moment(methods, times)
        cpu = {
            n: (cpu_seconds(s.proc.pid) - before[n]) / (samples * len(methods))
            for n, s in servers.items()
            if s.proc
        }
    finally:
        for server in servers.values():
            await server.close()
    return {"times": times, "cpu": cpu}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="cr,bare,bare2", help="comma-separated")
    parser.add_argument("--burners", type=int, default=4)
    parser.add_argument("--samples", type=int, default=800, help="moments (each asks both)")
    args = parser.parse_args()
    names = args.servers.split(",")
    if "bare" not in names:
        raise SystemExit("--servers needs a bare server, the baseline")
    header(f"idle servers side by side: {', '.join(names)}, {args.burners} CPU burner(s)")
    burners = [start_burner() for _ in range(args.burners)]
    try:
        with tempfile.TemporaryDirectory(prefix="bench-pair-") as tmp:
            got = await measure(names, args.samples, Path(tmp))
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    times, cpu = got["times"], got["cpu"]
    for method in PARAMS:
        base = percentile(times["bare"][method], 99)
        for name in names:
            v = times[name][method]
            p99 = percentile(v, 99)
            print(
                f"   {method.split('/')[1]:<8} {name:<6} p50 {median(v) * 1000:5.2f} "
                f"p95 {percentile(v, 95) * 1000:5.2f} p99 {p99 * 1000:6.2f} ms"
                f" · p99 ÷ bare {p99 / base:.2f}×"
            )
    for name in names:
        print(
            f"RATIO CPU per answer {name} ÷ bare = {cpu[name] / cpu['bare']:.2f}× "
            f"({cpu[name] * 1000:.3f} vs {cpu['bare'] * 1000:.3f} ms)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
