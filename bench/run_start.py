"""How soon a run started from the editor shows progress: in the warm spare vs a cold worker.

One `cardrunner lsp` over stdio, runs through the SDK against a fake Messages API in another
process (the production path: the SDK's import is what a spare pays ahead). The figure is the
time from sending `cardrunner.runCard` to the run's first `$/progress` report (the editor's
first sign the run is going). After one run to start with (the server keeps no spare before
its first run), samples alternate: **spare** — the run is asked for once the server's spare is
ready (`cardrunner.debug.modules`); **cold** — the same, but the ready spare is killed first and
the server has noticed, so the run spawns a fresh worker. Each run plays two instant rounds and
ends before the next sample. Ratio: median spare ÷ median cold (target ≤ 0.3×). Also printed:
the spare's resident memory once ready.

    .venv/bin/python bench/run_start.py [--samples 6]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _board import make_board
from _common import VENV_BIN, header, median, verdict
from _lsp import LspProcess, Received
from editor_latency import start_fake_api, stop_fake_api

TARGET = 0.3
ROUNDS = 2


async def spare(server: LspProcess) -> dict[str, Any] | None:
    params = {"command": "cardrunner.debug.modules", "arguments": []}
    found: dict[str, Any] | None = (await server.request("workspace/executeCommand", params))[
        "spare"
    ]
    return found


async def until_spare(server: LspProcess, ready: bool, within: float = 120.0) -> int | None:
    """Poll until the server holds a ready spare (its pid) or, `ready=False`, none at all."""
    deadline = time.perf_counter() + within
    while time.perf_counter() < deadline:
        found = await spare(server)
        if ready and found is not None and found["ready"]:
            return int(found["pid"])
        if not ready and found is None:
            return None
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the spare did not become {'ready' if ready else 'gone'}")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def progress_of(run_id: str, kind: str) -> Any:
    token = f"cardrunner/run/{run_id}"

    def match(item: Received) -> bool:
        params = item.params or {}
        return (
            item.method == "$/progress"
            and str(params.get("token", "")).startswith(token)
            and params.get("value", {}).get("kind") == kind
        )

    return match


async def one_run(server: LspProcess, card: Path) -> float:
    """Seconds from `runCard` to the run's first progress report; waits for the run's end."""
    since = len(server.received)
    started = time.perf_counter()
    params = {"command": "cardrunner.runCard", "arguments": [card.as_uri()]}
    answer = await server.request("workspace/executeCommand", params)
    first = await server.wait_for(progress_of(answer["runId"], "report"), 120, since)
    await server.wait_for(progress_of(answer["runId"], "end"), 120, since)
    return first.time - started


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=6, help="samples of each kind")
    args = parser.parse_args()
    header(f"run start: runCard → first progress report, spare vs cold, {args.samples} each")
    fake, base_url = await start_fake_api(ROUNDS)
    env = dict(os.environ) | {"ANTHROPIC_API_KEY": "sk-bench", "ANTHROPIC_BASE_URL": base_url}
    times: dict[str, list[float]] = {"spare": [], "cold": []}
    memory: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-run-start-") as tmp:
            root = Path(tmp) / "board"
            count = 2 * args.samples + 1
            cards = make_board(root, count, runnable=count, rounds=ROUNDS, replay=False)
            server = LspProcess([str(VENV_BIN / "cardrunner"), "lsp"], root, env)
            await server.spawn()
            try:
                await server.initialize(root)
                await server.settled()
                await one_run(server, cards[0])  # the first run starts cold, then the spare
                for n, card in enumerate(cards[1:]):
                    kind = "spare" if n % 2 == 0 else "cold"
                    pid = await until_spare(server, ready=True)
                    assert pid is not None
                    memory.append(rss_mib(pid))
                    if kind == "cold":
                        os.kill(pid, signal.SIGKILL)
                        await until_spare(server, ready=False)
                    seconds = await one_run(server, card)
                    times[kind].append(seconds)
                    print(f"   {kind:5}  {seconds * 1000:7.0f} ms", flush=True)
            finally:
                await server.close()
    finally:
        await stop_fake_api(fake)
    for kind, values in times.items():
        ms = [v * 1000 for v in values]
        print(
            f"   {kind:5} min {min(ms):6.0f}  median {median(ms):6.0f}  max {max(ms):6.0f} ms"
            f"  (n={len(ms)})"
        )
    print(f"   the spare's RSS when ready: median {median(memory):.0f} MiB")
    ratio = median(times["spare"]) / median(times["cold"])
    print(f"RATIO first progress, spare/cold = {ratio:.2f}×  (target ≤ {TARGET}×): ", end="")
    print(verdict(ratio, TARGET))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
