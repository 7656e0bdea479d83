"""The life-cycle and document handlers: thin, each delegates to the server or its index.

Life cycle: `initialize`, `initialized`, `shutdown` and settings changes (`exit` is the
protocol's: see core/protocol.py and core/lifeline.py). Documents: open, change and close keep
the card index in step with the editor's buffers. Apart from the composition root (server.py)
so that it only says what the server is made of.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from cardrunner.lsp.core.index import uri_to_path
from cardrunner.lsp.features import commands

if TYPE_CHECKING:
    from cardrunner.lsp.server import CardServer


def register_life_cycle(server: CardServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: CardServer, params: types.InitializeParams) -> None:
        ls.initialize(params)

    @server.feature(types.INITIALIZED)
    def initialized(ls: CardServer, params: types.InitializedParams) -> None:
        commands.spawn(ls.startup())

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: CardServer, params: Any) -> None:
        ls.lifeline.shutdown_requested = True
        await ls.stop_all("the editor shut the server down")

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(
        ls: CardServer, params: types.DidChangeConfigurationParams
    ) -> None:
        commands.spawn(ls.reload_settings())


def register_documents(server: CardServer) -> None:
    def refresh(ls: CardServer, uri: str) -> None:
        path = ls.index.remember_uri(uri)
        if path is not None and ls.index.is_card(path):
            doc = ls.index.open_document(path)
            if doc is not None:
                ls.index.update(path, doc[1])
                ls.diagnostics.refresh(path)
        ls.client.forget_finished_requests()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: CardServer, params: types.DidOpenTextDocumentParams) -> None:
        refresh(ls, params.text_document.uri)
        path = uri_to_path(params.text_document.uri)
        if path is not None and ls.index.is_card(path):
            ls.store.touch(ls.index.uri(path))  # an opened card always gets its (maybe empty) list

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: CardServer, params: types.DidChangeTextDocumentParams) -> None:
        refresh(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CardServer, params: types.DidCloseTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        if path is not None and ls.index.is_card(path):

            async def reread() -> None:
                await ls.index.read(path)
                ls.diagnostics.refresh(path)

            commands.spawn(reread())
