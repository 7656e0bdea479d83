"""Every LSP method and command the server answers, each handed to the features in one line.

pygls builds the capabilities it answers `initialize` with from what is registered, so all of
it is registered here, before `initialize` — and that answer must not wait for the features
(server.py), so this module imports nothing but lsprotocol and the command ids. A handler
reaches the features through `ls.app`, which exists by the time any other message is read.
`exit` is the protocol's (core/protocol.py, core/lifeline.py).

Commands are synchronous on purpose: pygls cannot cancel a running `executeCommand` coroutine
and leaks a future per async command, so each decides at once and spawns any longer work
(features/commands.py). pygls passes the server as `ls` and reads the annotations at runtime,
hence `ls: Any` on the commands and the closure's `server` instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from cardrunner.lsp.core import commandids as ids

if TYPE_CHECKING:
    from cardrunner.lsp.server import CardServer


def register(server: CardServer) -> None:
    """Register every handler (the order of the commands is the capabilities' order)."""
    register_life_cycle(server)
    register_documents(server)
    register_views(server)
    register_commands(server)


def register_life_cycle(server: CardServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: CardServer, params: types.InitializeParams) -> None:
        ls.initialize(params)

    @server.feature(types.INITIALIZED)
    def initialized(ls: CardServer, params: types.InitializedParams) -> None:
        ls.app.initialized()

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: CardServer, params: Any) -> None:
        ls.lifeline.shutdown_requested = True
        if ls.loaded:
            await ls.app.stop_all("the editor shut the server down")

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(
        ls: CardServer, params: types.DidChangeConfigurationParams
    ) -> None:
        ls.app.settings_changed()


def register_documents(server: CardServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: CardServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.app.document_opened(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: CardServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.app.document_changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CardServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.app.document_closed(params.text_document.uri)


def register_views(server: CardServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: CardServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        return await ls.app.views.code_lens(params)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
    async def code_action(ls: CardServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return await ls.app.views.code_action(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: CardServer, params: types.HoverParams) -> types.Hover | None:
        return ls.app.views.hover(params)

    @server.feature(ids.BOARD)
    async def on_board(ls: CardServer, params: Any) -> dict[str, Any]:
        return await ls.app.views.board_request()

    @server.feature(ids.RUN_SUMMARY)
    async def on_run_summary(ls: CardServer, params: Any) -> dict[str, Any]:
        return await ls.app.views.run_summary_request(params)

    @server.feature(types.WORKSPACE_SYMBOL)
    async def on_symbol(
        ls: CardServer, params: types.WorkspaceSymbolParams
    ) -> list[types.SymbolInformation]:
        return await ls.app.views.symbols(params)


def register_commands(server: CardServer) -> None:
    """Every command goes to the features but `DEBUG_MODULES`, which the server answers
    itself: it reports on the seam, so it must not be the one to load the features."""
    for name in ids.COMMANDS:
        debug = name == ids.DEBUG_MODULES
        server.command(name)(_debug_modules(server) if debug else _command(server, name))


def _command(server: CardServer, name: str) -> Any:
    def handler(ls: Any, *args: Any) -> Any:
        return server.app.commands.execute(name, args)

    return handler


def _debug_modules(server: CardServer) -> Any:
    def handler(ls: Any, *args: Any) -> dict[str, Any]:
        return server.debug_modules()

    return handler
