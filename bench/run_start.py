"""How soon a run started from the editor shows progress: in the warm spare vs a cold worker.

One `cardrunner lsp` over stdio, runs through the SDK against a fake Messages API in another
process (the production path: the SDK's import is what a spare pays ahead). Two figures, from
sending `cardrunner.runCard`: to the run's first `$/progress` report (the editor's first sign
the run is going: the run has prepared and started, its card is In Work), and to the first
report that counts tokens (the model's first answer has arrived — the SDK is imported and its
first request answered, which a cold worker does only then). After one run to start with (the server keeps no spare before
its first run), samples alternate: **spare** — the run is asked for once the server's spare is
ready (`cardrunner.debug.modules`); **cold** — the same, but the ready spare is killed first and
the server has noticed, so the run spawns a fresh worker. Each run plays two instant rounds and
ends before the next sample. Ratios: median spare ÷ median cold (target ≤ 0.3×). Also printed:
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


def progress_of(run_id: str, kind: str, answered: bool = False) -> Any:
    """Matches the run's progress of `kind`; `answered`: a report after the first answer (its
    line counts tokens: `round 1/1000 · 1.2k tok · …`)."""
    token = f"cardrunner/run/{run_id}"

    def match(item: Received) -> bool:
        params = item.params or {}
        value = params.get("value", {})
        message = str(value.get("message", ""))
        return (
            item.method == "$/progress"
            and str(params.get("token", "")).startswith(token)
            and value.get("kind") == kind
            and (not answered or (" tok" in message and " 0 tok" not in message))
        )

    return match


async def one_run(server: LspProcess, card: Path) -> tuple[float, float]:
    """Seconds from `runCard` to the run's first progress report and to its first report
    after the model's first answer; waits for the run's end."""
    since = len(server.received)
    started = time.perf_counter()
    params = {"command": "cardrunner.runCard", "arguments": [card.as_uri()]}
    answer = await server.request("workspace/executeCommand", params)
    run_id = answer["runId"]
    first = await server.wait_for(progress_of(run_id, "report"), 120, since)
    tool = await server.wait_for(progress_of(run_id, "report", answered=True), 120, since)
    await server.wait_for(progress_of(run_id, "end"), 120, since)
    return first.time - started, tool.time - started


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=6, help="samples of each kind")
    args = parser.parse_args()
    header(f"run start: runCard → first progress report, spare vs cold, {args.samples} each")
    fake, base_url = await start_fake_api(ROUNDS)
    env = dict(os.environ) | {"ANTHROPIC_API_KEY": "sk-bench", "ANTHROPIC_BASE_URL": base_url}
    times: dict[str, list[float]] = {"spare": [], "cold": []}
    tools: dict[str, list[float]] = {"spare": [], "cold": []}
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
                    seconds, tool = await one_run(server, card)
                    times[kind].append(seconds)
                    tools[kind].append(tool)
                    print(
                        f"   {kind:5}  first report {seconds * 1000:6.0f} ms"
                        f"  first answer {tool * 1000:6.0f} ms",
                        flush=True,
                    )
            finally:
                await server.close()
    finally:
        await stop_fake_api(fake)
    for title, figures in (("first report", times), ("first answer", tools)):
        for kind, values in figures.items():
            ms = [v * 1000 for v in values]
            print(
                f"   {title}, {kind:5}: min {min(ms):6.0f}  median {median(ms):6.0f}"
                f"  max {max(ms):6.0f} ms  (n={len(ms)})"
            )
    print(f"   the spare's RSS when ready: median {median(memory):.0f} MiB")
    for title, figures in (("first progress report", times), ("first answer", tools)):
        ratio = median(figures["spare"]) / median(figures["cold"])
        print(f"RATIO {title}, spare/cold = {ratio:.2f}×  (target ≤ {TARGET}×): ", end="")
        print(verdict(ratio, TARGET))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
