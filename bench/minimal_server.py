"""The baseline language server of `bench/startup.py`: pygls + lsprotocol and one feature.

It is what "a Python language server" costs at the least — the interpreter, pygls, lsprotocol's
types — so the start-up and memory of `cardrunner lsp` can be given as a ratio to it.

    .venv/bin/python bench/minimal_server.py      # speaks LSP on stdio
"""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("minimal-bench-server", "0.1")


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: LanguageServer, params: types.HoverParams) -> types.Hover:
    return types.Hover(contents=f"line {params.position.line}")


if __name__ == "__main__":
    server.start_io()
