"""The baseline language server of the benchmarks: pygls + lsprotocol and two features.

It is what "a Python language server" costs at the least — the interpreter, pygls, lsprotocol's
types — so the start-up, memory and latency of `cardrunner lsp` can be given as a ratio to it. It
answers hover and codeLens (one lens, as a card's "Run"), the two requests
`editor_latency.py` asks both servers at the same moments.

    .venv/bin/python bench/minimal_server.py      # speaks LSP on stdio
"""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("minimal-bench-server", "0.1")


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: LanguageServer, params: types.HoverParams) -> types.Hover:
    return types.Hover(contents=f"line {params.position.line}")


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: LanguageServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    start = types.Position(line=0, character=0)
    command = types.Command(
        title="▶ Run", command="minimal.run", arguments=[params.text_document.uri]
    )
    return [types.CodeLens(range=types.Range(start=start, end=start), command=command)]


if __name__ == "__main__":
    server.start_io()
