"""Start-up time and idle memory of `cardrunner lsp` against a minimal pygls server.

For each spawn: the time from spawning the process to the `initialize` answer, then (after
`initialized` and one more round trip) the resident set size from `/proc/<pid>/status` — once
right away ("early") and once it has stopped growing for 1.5 s ("settled": what the editor's
server holds while idle, after its start-up work — the sweep, the settings, the first card scan,
the watcher; runs, and the SDKs they import, live in worker processes and are not counted; it
is taken on the first `--settle` spawns only, as it takes seconds). Spawns of the two servers interleave; the
figures are medians, the ratios are cardrunner / minimal. When the memory target is missed, the
minimal server is spawned again with the layers an idle cardrunner cannot do without loaded one
after another (`layered_server.py`: the settings model, the parsed cards, the watcher), so the
output says what the settled memory above a bare pygls server is made of.

    .venv/bin/python bench/startup.py [--spawns 12]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import VENV_BIN, header, median, verdict
from _lsp import initialized

TIME_TARGET, MEMORY_TARGET = 1.10, 1.25
LAYERS = [
    (["settings"], "the settings model (pydantic)"),
    (["settings", "cards"], "the cards parsed (yaml)"),
    (["settings", "cards", "watch"], "the cards folder watched (watchfiles)"),
]
SETTLE_SECONDS, SETTLE_MAX = 1.5, 30.0
HERE = Path(__file__).resolve().parent


async def one(argv: list[str], root: Path, settle: bool) -> tuple[float, int, int]:
    """(seconds to the initialize answer, early RSS KiB, settled RSS KiB or 0)."""
    async with initialized(argv, root) as (server, took):
        early = server.rss_kib()
        if not settle:
            return took, early, 0
        readings = [(time.perf_counter(), early)]
        while time.perf_counter() - readings[0][0] < SETTLE_MAX:
            await asyncio.sleep(0.1)  # sampling interval of the RSS poll, not a wait for a result
            now, rss = time.perf_counter(), server.rss_kib()
            readings.append((now, rss))
            window = [r for t, r in readings if t >= now - SETTLE_SECONDS]
            if now - readings[0][0] >= SETTLE_SECONDS and max(window) - min(window) <= 256:
                break
        return took, early, readings[-1][1]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=12)
    parser.add_argument("--settle", type=int, default=3, help="spawns that wait for settled RSS")
    args = parser.parse_args()
    header(f"start-up: cardrunner lsp vs a minimal pygls server, {args.spawns} spawns each")
    from tests.support.project import make_project

    servers = {
        "minimal": [sys.executable, str(HERE / "minimal_server.py")],
        "cardrunner": [str(VENV_BIN / "cardrunner"), "lsp"],
    }
    results: dict[str, list[tuple[float, int, int]]] = {k: [] for k in servers}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        root = Path(tmp) / "project"
        make_project(root)
        for argv in servers.values():  # warm the page cache for both before measuring
            await one(argv, root, settle=False)
        for n in range(args.spawns):
            for name, argv in servers.items():
                results[name].append(await one(argv, root, settle=n < args.settle))
    figures = {}
    for name, rows in results.items():
        t = median([r[0] for r in rows])
        early = median([r[1] for r in rows]) / 1024
        settled = median([r[2] for r in rows if r[2]]) / 1024
        figures[name] = (t, early, settled)
        spread = f"{min(r[0] for r in rows) * 1000:.0f}–{max(r[0] for r in rows) * 1000:.0f}"
        print(
            f"   {name:<11} initialize answered {t * 1000:6.0f} ms (min–max {spread} ms)   "
            f"RSS early {early:6.1f} MiB   settled {settled:6.1f} MiB"
        )
    (t_c, e_c, s_c), (t_m, e_m, s_m) = figures["cardrunner"], figures["minimal"]
    print(
        f"   (time and early RSS: {args.spawns} spawns each; settled RSS: the first {args.settle})"
    )
    print(
        f"RATIO time     = {t_c / t_m:.2f}×  (target ≤ {TIME_TARGET}×): "
        f"{verdict(t_c / t_m, TIME_TARGET)}"
    )
    print(
        f"RATIO memory (settled, idle) = {s_c / s_m:.2f}×  (target ≤ {MEMORY_TARGET}×): "
        f"{verdict(s_c / s_m, MEMORY_TARGET)}"
    )
    print(
        f"      memory (right after initialized) = {e_c / e_m:.2f}×  "
        "(the features load right after `initialize` is answered)"
    )
    if s_c / s_m > MEMORY_TARGET:
        print("   why (memory): settled RSS of the minimal server with what an idle cardrunner")
        print(f"   cannot do without, layer upon layer ({args.settle} spawns each, medians):")
        with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
            root = Path(tmp) / "project"
            make_project(root)
            for layers, what in LAYERS:
                argv = [sys.executable, str(HERE / "layered_server.py"), *layers]
                rows = [await one(argv, root, settle=True) for _ in range(args.settle)]
                rss = median([r[2] for r in rows]) / 1024
                print(f"     + {what:<34} {rss:6.1f} MiB  {rss / s_m:.2f}×")
        print(f"     = cardrunner lsp (all its features)  {s_c:6.1f} MiB  {s_c / s_m:.2f}×")
    if t_c / t_m > TIME_TARGET:
        print("   why (time): what `cardrunner lsp` imports before it answers,")
        print("   largest first (python -X importtime, cumulative ms, one import):")
        for name, ms in import_costs("cardrunner.lsp.server")[:8]:
            print(f"     {ms:7.0f} ms  {name}")
    return 0


def import_costs(module: str) -> list[tuple[str, float]]:
    """The direct imports of `module` by cumulative import time (one cold-ish import)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        name = name[1:]  # the separator's space; then two spaces per level of nesting
        if name.startswith("   ") or not name.startswith("  "):
            continue  # deeper than one level below the top, or the top itself
        try:
            rows.append((name.strip(), int(cumulative) / 1000))
        except ValueError:
            continue
    return sorted(rows, key=lambda r: -r[1])


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
