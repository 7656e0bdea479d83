"""Does the editor stay responsive while cards run? codeLens (and hover) latency, busy vs idle.

One `cardrunner lsp` over stdio on a board of cards; one card is open in the "editor". Idle: its
`textDocument/codeLens` (and `textDocument/hover`, when the server offers it) are requested back
to back and timed at the client. Busy: the same, while eight other cards run at once — replayed
transcripts (the scripted model) with instant tools, so the server is as busy as runs can make
it (every round: progress, diagnostics, status). Only requests answered while all eight runs are
still going count. Phases alternate (idle, busy, idle, busy) and the figures pool the phases.

    .venv/bin/python bench/editor_latency.py [--samples 200] [--cycles 2] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _board import make_board
from _common import VENV_BIN, header, median, percentile, verdict
from _lsp import LspProcess, Received, did_open, doc, position

TARGET = 1.5
RUNS = 8


async def sample(
    server: LspProcess, uri: str, methods: list[str], count: int, until: Any = None
) -> dict[str, list[float]]:
    """Back-to-back requests, alternating methods, until `count` each or `until()` is true."""
    out: dict[str, list[float]] = {m: [] for m in methods}
    params = {"textDocument/codeLens": doc(uri), "textDocument/hover": position(uri, 1, 3)}
    for _ in range(count):
        for method in methods:
            if until is not None and until():
                return out
            took, _ = await server.timed(method, params[method])
            if until is None or not until():  # answered while the runs were still going
                out[method].append(took)
    return out


def ended_runs(server: LspProcess, tokens: set[Any], since: int) -> int:
    return sum(
        1
        for r in server.received[since:]
        if r.method == "$/progress"
        and r.params.get("token") in tokens
        and r.params.get("value", {}).get("kind") == "end"
    )


async def busy_phase(
    server: LspProcess, uri: str, runs: list[str], methods: list[str], count: int
) -> dict[str, list[float]]:
    since = len(server.received)
    tokens = set()
    for card in runs:
        result = await server.request(
            "workspace/executeCommand", {"command": "cardrunner.runCard", "arguments": [card]}
        )
        tokens.add(result["token"])
    samples = await sample(
        server, uri, methods, count, until=lambda: ended_runs(server, tokens, since) > 0
    )
    # let every run end before the next phase (a run's end is its progress `end`)
    await server.wait_for(lambda r: ended_runs(server, tokens, since) >= len(tokens), 300, since)
    return samples


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200, help="per method and phase")
    parser.add_argument("--cycles", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=200, help="rounds of each replayed run")
    parser.add_argument(
        "--profile", action="store_true", help="run the server under cProfile, print its hot spots"
    )
    args = parser.parse_args()
    header(f"editor latency: {RUNS} runs going vs idle, {args.cycles} cycles")
    with tempfile.TemporaryDirectory(prefix="bench-editor-") as tmp:
        root = Path(tmp) / "board"
        cards = make_board(root, RUNS + 1, runnable=RUNS + 1, rounds=args.rounds)
        watched, runs = cards[-1].as_uri(), [c.as_uri() for c in cards[:RUNS]]
        argv = [str(VENV_BIN / "cardrunner"), "lsp"]
        profile = Path(tmp) / "server.prof"
        if args.profile:
            argv = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "cardrunner", "lsp"]
        server = LspProcess(argv, root)
        await server.spawn()
        try:
            init = await server.initialize(root)
            caps = init.get("capabilities", {})
            methods = ["textDocument/codeLens"]
            if caps.get("hoverProvider"):
                methods.append("textDocument/hover")
            server.notify("textDocument/didOpen", did_open(watched, cards[-1].read_text()))
            await server.wait_for(
                lambda r: (
                    r.method == "textDocument/publishDiagnostics" and r.params["uri"] == watched
                ),
                30,
            )
            if not await server.warmed_up():
                print("   (the server never said it had warmed up; measuring anyway)")
            await sample(server, watched, methods, 30)  # warm-up
            idle: dict[str, list[float]] = {m: [] for m in methods}
            busy: dict[str, list[float]] = {m: [] for m in methods}
            started = time.perf_counter()
            for _ in range(args.cycles):
                for m, v in (await sample(server, watched, methods, args.samples)).items():
                    idle[m] += v
                got = await busy_phase(server, watched, runs, methods, args.samples)
                for m, v in got.items():
                    busy[m] += v
            print(f"   measured in {time.perf_counter() - started:.0f} s")
            warnings = [r for r in server.received if _is_error(r)]
            if warnings:
                print(
                    f"   server reported {len(warnings)} error message(s), first: "
                    f"{warnings[0].params.get('message', '')[:200]}"
                )
        finally:
            await server.close()
        if args.profile:
            hot_spots(profile)
    ratios = {}
    for m in methods:
        i, b = idle[m], busy[m]
        ratios[m] = percentile(b, 99) / percentile(i, 99)
        print(
            f"   {m:<22} idle p50 {median(i) * 1000:6.2f} ms  p99 {percentile(i, 99) * 1000:6.2f}"
            f" ms (n={len(i)})   busy p50 {median(b) * 1000:6.2f} ms  p99 "
            f"{percentile(b, 99) * 1000:6.2f} ms (n={len(b)})"
        )
    if "textDocument/hover" not in methods:
        print("   textDocument/hover: not implemented by the server (no hoverProvider)")
    if max(ratios.values()) > TARGET and not args.profile:
        print(
            "   why: the runs share the server's event loop; run with --profile to see where it "
            "spends its time (bench/RESULTS.md has one such profile)."
        )
    for m, ratio in ratios.items():
        print(
            f"RATIO {m} p99 busy/idle = {ratio:.2f}×  (target ≤ {TARGET}×): "
            f"{verdict(ratio, TARGET)}"
        )
    return 0


def hot_spots(profile: Path) -> None:
    """Where the server spent its time (whole session, idle phases included)."""
    import io
    import pstats

    out = io.StringIO()
    pstats.Stats(str(profile), stream=out).sort_stats("tottime").print_stats(15)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    print("   server profile, by own time:")
    for line in lines[start : start + 16]:
        print(f"     {line[:150]}")
    out = io.StringIO()
    pstats.Stats(str(profile), stream=out).sort_stats("cumulative").print_stats("cardrunner", 12)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    print("   server profile, cardrunner functions by cumulative time:")
    for line in lines[start : start + 13]:
        print(f"     {line[:150]}")


def _is_error(r: Received) -> bool:
    return r.method in ("window/showMessage", "window/logMessage") and r.params.get("type") == 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
