"""Does the language server stay as fast with 10,000 cards as with 10?

For boards of 10, 1,000 and 10,000 cards (a git repository each), one `cardrunner lsp`:
- code lens during the first scan: from `initialized` until the scan is over, `codeLens` on
  one open card back to back; only requests whose neighbours on both sides heard
  `cardrunner.debug.index` say "scanning" count. Its p99 over the same board's idle p99 says
  whether the scan keeps off the editor's loop (a board too small to be caught scanning has none);
- code lens, idle: after the server said its start-up work is over (the scan and the watcher's
  catch-up pass: the "serving" log line), `textDocument/codeLens` on the open card; p50 and p99;
- watcher → refresh: a new card file is written outside the editor (as `git pull` or another
  tool would); the time until the server publishes diagnostics for it (the card carries a
  deliberate problem, so there are some to publish) and until it sends
  `workspace/codeLens/refresh`.
The servers run side by side and take turns request by request (and write by write), so
each board meets the same moments of a shared machine; two passes with fresh servers, pooled.
Targets: flat in the board size — the idle ratios 1000/10 and 10000/10 ≤ 1.5×. A p99 is the
20th-slowest of 2,000 lens requests (1,000 a pass): of 400, one hiccup of a shared machine
moved it by 3×.

    .venv/bin/python bench/board_size.py [--passes 2] [--lens 1000] [--writes 12]
                                         [--sizes 10,1000,10000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from _board import card_text, make_board
from _common import VENV_BIN, header, median, percentile
from _lsp import LspProcess, Received, did_open, doc

SIZES = (10, 1000, 10000)
FLAT = 1.5
"""A ratio at most this is reported as flat (timings on a shared 2-core machine scatter)."""


@dataclass
class Board:
    size: int
    root: Path
    server: LspProcess
    uri: str = ""
    figures: dict[str, list[float]] = field(
        default_factory=lambda: {
            "lens": [],
            "diagnostics": [],
            "refresh": [],
            "scan": [],
            "scan_base": [],
            "scan_s": [],
        }
    )


async def open_board(size: int, root: Path, baseline: Board | None) -> Board:
    """Start a server on the board, time lenses while its first scan runs (taking turns with
    the `baseline` board's settled server, if any), wait until its start-up work is over,
    warm up."""
    server = LspProcess([str(VENV_BIN / "cardrunner"), "lsp"], root)
    await server.spawn()
    await server.initialize(root)
    card = root / "cards" / "card-0000.md"
    board = Board(size, root, server, card.resolve().as_uri())
    server.notify("textDocument/didOpen", did_open(board.uri, card.read_text()))
    started = time.perf_counter()
    await lenses_while_scanning(board, baseline)
    board.figures["scan_s"] = [time.perf_counter() - started]
    if not await server.settled(300):
        print("   (the server never said its start-up had settled; measuring anyway)")
    for _ in range(20):  # warm-up
        await server.timed("textDocument/codeLens", doc(board.uri))
    return board


async def lenses_while_scanning(board: Board, baseline: Board | None, group: int = 10) -> None:
    """Lens times from the moments the server's first scan ran: groups of `group` requests
    between two `cardrunner.debug.index` answers that both said it was scanning; each
    request is followed by one to the baseline's server, which meets the same moments."""
    before = await scan_state(board.server)
    while before != "scanned":
        times, base = [], []
        for _ in range(group):
            times.append((await board.server.timed("textDocument/codeLens", doc(board.uri)))[0])
            if baseline is not None:
                took, _ = await baseline.server.timed("textDocument/codeLens", doc(baseline.uri))
                base.append(took)
        after = await scan_state(board.server)
        if before == after == "scanning":
            board.figures["scan"] += times
            board.figures["scan_base"] += base
        before = after


async def scan_state(server: LspProcess) -> str:
    stats = await server.request(
        "workspace/executeCommand", {"command": "cardrunner.debug.index", "arguments": []}
    )
    return "scanned" if stats["scanned"] else "scanning" if stats["scanning"] else "before"


async def lens(board: Board) -> None:
    took, lenses = await board.server.timed("textDocument/codeLens", doc(board.uri))
    assert lenses, "the open card has no code lens"
    board.figures["lens"].append(took)


async def write_card(board: Board, name: str) -> None:
    """Write a new card outside the editor; time its diagnostics and the lens refresh."""
    server = board.server
    path = (board.root / "cards" / f"{name}.md").resolve()
    new_uri = path.as_uri()
    since = len(server.received)
    written = time.perf_counter()
    path.write_text(card_text(9000, state="Bogus"))

    def diagnostics_for(r: Received) -> bool:
        return r.method == "textDocument/publishDiagnostics" and r.params["uri"] == new_uri

    diag = await server.wait_for(diagnostics_for, 30, since)
    assert diag.params["diagnostics"], "the card's problem was not reported"
    refresh = await server.wait_for(lambda r: r.method == "workspace/codeLens/refresh", 30, since)
    board.figures["diagnostics"].append(diag.time - written)
    board.figures["refresh"].append(refresh.time - written)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument(
        "--lens", type=int, default=1000, help="code lens requests per board and pass"
    )
    parser.add_argument("--writes", type=int, default=12, help="card writes per board")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="board sizes, smallest first"
    )
    args = parser.parse_args()
    sizes = tuple(int(n) for n in args.sizes.split(","))
    header(f"board size: {', '.join(map(str, sizes))} cards, {args.passes} interleaved passes")
    results: dict[int, dict[str, list[float]]] = {
        n: {k: [] for k in ("lens", "diagnostics", "refresh", "scan", "scan_base", "scan_s")}
        for n in sizes
    }
    with tempfile.TemporaryDirectory(prefix="bench-board-") as tmp:
        roots = {}
        for n in sizes:
            roots[n] = Path(tmp) / f"board-{n}"
            make_board(roots[n], n)
        # This client must add microseconds, not its own collector's pauses: a full collection
        # here lands on whichever board's request is in flight, and a p99 is 20 samples.
        gc.collect()
        gc.freeze()
        gc.disable()
        for p in range(args.passes):
            # the three servers run side by side and take turns request by request, so every
            # board meets the same moments of a busy machine
            boards: list[Board] = []
            for n in sizes:  # the smallest first: the others' scans take turns with it
                boards.append(await open_board(n, roots[n], boards[0] if boards else None))
            try:
                for _ in range(args.lens):
                    for board in boards:
                        await lens(board)
                for k in range(args.writes):
                    for board in boards:
                        await write_card(board, f"new-{p}-{k:02d}")
            finally:
                for board in boards:
                    await board.server.close()
            for board in boards:
                for key, values in board.figures.items():
                    results[board.size][key] += values
        gc.enable()
    rows: dict[str, Callable[[int], float]] = {
        "code lens p99": lambda n: percentile(results[n]["lens"], 99),
        "code lens p95": lambda n: percentile(results[n]["lens"], 95),
        "code lens p50": lambda n: median(results[n]["lens"]),
        "watcher → diagnostics p50": lambda n: median(results[n]["diagnostics"]),
        "watcher → diagnostics p99": lambda n: percentile(results[n]["diagnostics"], 99),
        "watcher → codeLens/refresh p50": lambda n: median(results[n]["refresh"]),
    }
    over = "".join(f"{f'{n}/{sizes[0]}':>9}" for n in sizes[1:])
    print(f"   {'':<32}" + "".join(f"{n:>10} cards" for n in sizes) + "  " + over)
    for name, figure in rows.items():
        values = [figure(n) for n in sizes]
        ratios = [v / values[0] for v in values[1:]]
        print(
            f"   {name:<32}"
            + "".join(f"{v * 1000:>13.2f} ms"[-16:] for v in values)
            + "".join(f"{r:>8.2f}×" for r in ratios)
        )
    print(
        f"   (samples per board: {args.passes * args.lens} lens, {args.passes * args.writes} writes)"
    )
    scans = ", ".join(f"{n}: {max(results[n]['scan_s']):.2f} s" for n in sizes)
    print(f"   first scan over after `initialized` (slowest pass): {scans}")
    for n in sizes:
        during = results[n]["scan"]
        if not during:
            print(f"   code lens during the first scan, {n} cards: none (the scan was too short)")
            continue
        p99, idle = percentile(during, 99), percentile(results[n]["lens"], 99)
        base = percentile(results[n]["scan_base"], 99)
        print(
            f"RATIO code lens p99 during the first scan of {n} cards / that server idle:"
            f" {p99 / idle:.2f}×  ({p99 * 1000:.2f} vs {idle * 1000:.2f} ms;"
            f" p50 {median(during) * 1000:.2f} ms; {len(during)} samples)"
        )
        print(
            f"RATIO code lens p99 during the first scan of {n} cards / {sizes[0]} cards at the"
            f" same moments: {p99 / base:.2f}×  ({base * 1000:.2f} ms)"
        )
    for name in ("code lens p99", "watcher → diagnostics p50"):
        values = [rows[name](n) for n in sizes]
        ratios = [v / values[0] for v in values[1:]]
        flat = "flat" if max(ratios) <= FLAT else "NOT FLAT"
        said = ", ".join(
            f"{n}/{sizes[0]} = {r:.2f}×" for n, r in zip(sizes[1:], ratios, strict=True)
        )
        print(f"RATIO {name}: {said}  ({flat}, ≤ {FLAT}×)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
