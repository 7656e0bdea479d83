"""Does the language server stay as fast with 1,000 cards as with 10?

For boards of 10, 100 and 1,000 cards (a git repository each), one `cardrunner lsp`:
- code lens: `textDocument/codeLens` on one open card, back to back; p50 and p99;
- watcher → refresh: a new card file is written outside the editor (as `git pull` or another
  tool would); the time until the server publishes diagnostics for it (the card carries a
  deliberate problem, so there are some to publish) and until it sends
  `workspace/codeLens/refresh`.
Boards are measured in interleaved passes (10, 100, 1000, 10, 100, 1000 …); the figures pool
the passes. Targets: flat in the board size — the ratios 100/10 and 1000/10.

    .venv/bin/python bench/board_size.py [--passes 2] [--lens 200] [--writes 12]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _board import card_text, make_board
from _common import VENV_BIN, header, median, percentile
from _lsp import LspProcess, Received, did_open, doc

SIZES = (10, 100, 1000)
FLAT = 1.5
"""A ratio at most this is reported as flat (timings on a shared 2-core machine scatter)."""


async def measure(root: Path, lens_samples: int, writes: int, tag: str) -> dict[str, list[float]]:
    server = LspProcess([str(VENV_BIN / "cardrunner"), "lsp"], root)
    await server.spawn()
    out: dict[str, list[float]] = {"lens": [], "diagnostics": [], "refresh": []}
    try:
        await server.initialize(root)
        # the start-up scan ends with a lens refresh
        await server.wait_for(lambda r: r.method == "workspace/codeLens/refresh", 120)
        card = root / "cards" / "card-0000.md"
        uri = card.resolve().as_uri()
        server.notify("textDocument/didOpen", did_open(uri, card.read_text()))
        for _ in range(20):  # warm-up
            await server.timed("textDocument/codeLens", doc(uri))
        for _ in range(lens_samples):
            took, lenses = await server.timed("textDocument/codeLens", doc(uri))
            assert lenses, "the open card has no code lens"
            out["lens"].append(took)
        for k in range(writes):
            path = (root / "cards" / f"new-{tag}-{k:02d}.md").resolve()
            new_uri = path.as_uri()
            since = len(server.received)
            written = time.perf_counter()
            path.write_text(card_text(9000 + k, state="Bogus"))

            def diagnostics_for(r: Received, u: str = new_uri) -> bool:
                return r.method == "textDocument/publishDiagnostics" and r.params["uri"] == u

            diag = await server.wait_for(diagnostics_for, 30, since)
            assert diag.params["diagnostics"], "the card's problem was not reported"
            refresh = await server.wait_for(
                lambda r: r.method == "workspace/codeLens/refresh", 30, since
            )
            out["diagnostics"].append(diag.time - written)
            out["refresh"].append(refresh.time - written)
    finally:
        await server.close()
    return out


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--lens", type=int, default=200, help="code lens requests per board")
    parser.add_argument("--writes", type=int, default=12, help="card writes per board")
    args = parser.parse_args()
    header(f"board size: {', '.join(map(str, SIZES))} cards, {args.passes} interleaved passes")
    results: dict[int, dict[str, list[float]]] = {
        n: {"lens": [], "diagnostics": [], "refresh": []} for n in SIZES
    }
    with tempfile.TemporaryDirectory(prefix="bench-board-") as tmp:
        roots = {}
        for n in SIZES:
            roots[n] = Path(tmp) / f"board-{n}"
            make_board(roots[n], n)
        for p in range(args.passes):
            for n in SIZES:
                got = await measure(roots[n], args.lens, args.writes, f"p{p}")
                for key, values in got.items():
                    results[n][key] += values
    rows: dict[str, Callable[[int], float]] = {
        "code lens p99": lambda n: percentile(results[n]["lens"], 99),
        "code lens p50": lambda n: median(results[n]["lens"]),
        "watcher → diagnostics p50": lambda n: median(results[n]["diagnostics"]),
        "watcher → diagnostics p99": lambda n: percentile(results[n]["diagnostics"], 99),
        "watcher → codeLens/refresh p50": lambda n: median(results[n]["refresh"]),
    }
    print(f"   {'':<32}" + "".join(f"{n:>10} cards" for n in SIZES) + "   100/10  1000/10")
    for name, figure in rows.items():
        values = [figure(n) for n in SIZES]
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
        values = [rows[name](n) for n in SIZES]
        r100, r1000 = values[1] / values[0], values[2] / values[0]
        flat = "flat" if max(r100, r1000) <= FLAT else "NOT FLAT"
        print(f"RATIO {name}: 100/10 = {r100:.2f}×, 1000/10 = {r1000:.2f}×  ({flat}, ≤ {FLAT}×)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
