"""What each import adds to an idle `cardrunner lsp`'s memory, in the order the server loads it.

`idle_memory.py` says how far the idle server is above a bare pygls server; this says what the
difference is made of. One fresh interpreter imports pygls and lsprotocol (what a bare server
holds), then each step in turn, and reads its RSS from `/proc/self/smaps_rollup` after each (a
collection first): the RSS a step adds is what it costs on top of everything before it, so
the order matters — pydantic's first model is paid by whichever module defines one first.
`load_settings` reads the settings of the project given. Starts repeat (`--starts`); the
figures are medians, and RSS moves by a page or two between starts.

    .venv/bin/python bench/import_memory.py [--starts 3] [--root .] [module ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _common import header, median

STEPS = (
    "yaml",
    "cardrunner.card.parse",
    "cardrunner.card.card",
    "cardrunner.lsp.core.index",
    "cardrunner.lsp.core.config",
    "cardrunner.lsp.core.watcher",
    "cardrunner.lsp.features.codelens",
    "cardrunner.record.state",
    "cardrunner.lsp.features.review",
    "cardrunner.workers.manager",
    "cardrunner.lsp.app",
)
"""The server's idle imports, cards first (the card index is built before the settings are
read). No pydantic among them: the settings are validated in a child (config/child.py), and
the events', the run log's and the board's models load with a run or a board request; name
`pydantic`, `cardrunner.config.settings` or `load_settings` on the command line to see what
they would add."""

CHILD = """
import gc, importlib, json, re, sys
from pathlib import Path

def rss() -> int:
    text = Path("/proc/self/smaps_rollup").read_text()
    return int(re.search(r"^Rss:\\s+(\\d+)", text, re.M).group(1))

import lsprotocol.types, pygls.lsp.server
out = [("pygls + lsprotocol", rss())]
for step in sys.argv[2:]:
    if step == "load_settings":
        from cardrunner.config.loading import load_settings
        kept = load_settings(Path(sys.argv[1]), None)
    else:
        importlib.import_module(step)
    gc.collect()
    out.append((step, rss()))
print(json.dumps(out))
"""


def one_start(root: Path, steps: list[str]) -> list[tuple[str, int]]:
    """(step, RSS in KiB after it) of one fresh interpreter."""
    argv = [sys.executable, "-c", CHILD, str(root), *steps]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return [(name, kib) for name, kib in json.loads(done.stdout)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3, help="fresh interpreters")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="for load_settings")
    parser.add_argument("steps", nargs="*", default=list(STEPS), help="modules, in order")
    args = parser.parse_args()
    header(f"import memory: RSS each step adds, in order, {args.starts} starts")
    starts = [one_start(args.root.resolve(), args.steps) for _ in range(args.starts)]
    before = 0.0
    for i, (name, _) in enumerate(starts[0]):
        now = median([start[i][1] for start in starts]) / 1024
        added = f"{now - before:+6.1f}" if i else "      "
        print(f"   {name:<36} {added} MiB  = {now:6.1f} MiB")
        before = now
    return 0


if __name__ == "__main__":
    sys.exit(main())
