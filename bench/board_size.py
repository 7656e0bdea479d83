"""Does the language server stay as fast with 1,000 cards as with 10?

For boards of 10, 100 and 1,000 cards (a git repository each), one `cardrunner lsp`:
- code lens: `textDocument/codeLens` on one open card, back to back; p50 and p99;
- watcher → refresh: a new card file is written outside the editor (as `git pull` or another
  tool would); the time until the server publishes diagnostics for it (the card carries a
  deliberate problem, so there are some to publish) and until it sends
  `workspace/codeLens/refresh`.
The three servers run side by side and take turns request by request (and write by write), so
each board meets the same moments of a shared machine; two passes with fresh servers, pooled. Targets: flat in the board size — the ratios 100/10 and 1000/10.

    .venv/bin/python bench/board_size.py [--passes 2] [--lens 200] [--writes 12]
                                         [--sizes 10,100,1000]   (e.g. 10,1000,10000)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from _board import card_text, make_board
from _common import VENV_BIN, header, median, percentile
from _lsp import LspProcess, Received, did_open, doc

SIZES = (10, 100, 1000)
FLAT = 1.5
"""A ratio at most this is reported as flat (timings on a shared 2-core machine scatter)."""


@dataclass
class Board:
    size: int
    root: Path
    server: LspProcess
    uri: str = ""
    figures: dict[str, list[float]] = field(
        default_factory=lambda: {"lens": [], "diagnostics": [], "refresh": []}
    )


async def open_board(size: int, root: Path) -> Board:
    """Start a server on the board, wait for its scan and warm-up, open card 0."""
    server = LspProcess([str(VENV_BIN / "cardrunner"), "lsp"], root)
    await server.spawn()
    await server.initialize(root)
    # the start-up scan ends with a lens refresh
    await server.wait_for(lambda r: r.method == "workspace/codeLens/refresh", 120)
    if not await server.settled():
        print("   (the server never said its start-up had settled; measuring anyway)")
    card = root / "cards" / "card-0000.md"
    board = Board(size, root, server, card.resolve().as_uri())
    server.notify("textDocument/didOpen", did_open(board.uri, card.read_text()))
    for _ in range(20):  # warm-up
        await server.timed("textDocument/codeLens", doc(board.uri))
    return board


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
    parser.add_argument("--lens", type=int, default=200, help="code lens requests per board")
    parser.add_argument("--writes", type=int, default=12, help="card writes per board")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="board sizes, smallest first"
    )
    args = parser.parse_args()
    sizes = tuple(int(n) for n in args.sizes.split(","))
    header(f"board size: {', '.join(map(str, sizes))} cards, {args.passes} interleaved passes")
    results: dict[int, dict[str, list[float]]] = {
        n: {"lens": [], "diagnostics": [], "refresh": []} for n in sizes
    }
    with tempfile.TemporaryDirectory(prefix="bench-board-") as tmp:
        roots = {}
        for n in sizes:
            roots[n] = Path(tmp) / f"board-{n}"
            make_board(roots[n], n)
        for p in range(args.passes):
            # the three servers run side by side and take turns request by request, so every
            # board meets the same moments of a busy machine
            boards = [await open_board(n, roots[n]) for n in sizes]
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
    rows: dict[str, Callable[[int], float]] = {
        "code lens p99": lambda n: percentile(results[n]["lens"], 99),
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
