"""The minimal server plus what an idle `cardrunner lsp` cannot do without, layer by layer.

`bench/startup.py` spawns it to say what the idle memory above a bare pygls server is made of:
after `initialized` (as cardrunner loads its features after `initialize`) it loads the layers
named on the command line, in this order, with cardrunner's own code —

    settings   the workspace's `Settings` (pydantic: the one typed settings model)
    cards      every card of the workspace read and parsed (yaml)
    watch      the cards folder watched (watchfiles), as the server's watcher does

and logs "layers loaded: …" when it is done. Everything else `cardrunner lsp` holds (the card
index, diagnostics, lenses, runs and their event models, reviews, the board) is what the real
server adds on top.

    .venv/bin/python bench/layered_server.py settings cards watch    # speaks LSP on stdio
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from minimal_server import server
from pygls.lsp.server import LanguageServer

LAYERS = ("settings", "cards", "watch")
_kept: list[Any] = []  # what each layer made stays alive, as in the real server


@server.feature(types.INITIALIZED)
def initialized(ls: LanguageServer, params: types.InitializedParams) -> None:
    root = Path.cwd()
    wanted = set(sys.argv[1:])
    parsed = 0
    if "settings" in wanted:
        from cardrunner.config.loading import load_settings

        _kept.append(load_settings(root, None))
    if "cards" in wanted:
        from cardrunner.card.card import find_cards, parse_card

        cards = [parse_card(p.read_text(), p) for p in find_cards(root)]
        parsed = sum(card is not None for card, _ in cards)
        _kept.extend(cards)
    if "watch" in wanted:
        from watchfiles import awatch

        async def watch() -> None:
            async for _ in awatch(root / "cards"):
                pass

        _kept.append(asyncio.ensure_future(watch()))
    done = ", ".join(layer for layer in LAYERS if layer in wanted) or "none"
    message = f"layers loaded: {done}; {parsed} cards parsed"
    ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))


if __name__ == "__main__":
    unknown = set(sys.argv[1:]) - set(LAYERS)
    if unknown:
        sys.exit(f"unknown layers: {', '.join(sorted(unknown))} (known: {', '.join(LAYERS)})")
    server.start_io()
