"""Every LSP method and command the server answers, each handed to the features in one line.

pygls builds the capabilities it answers `initialize` with from what is registered, so all of
it is registered here, before `initialize` — and that answer must not wait for the features
(server.py), so this module imports nothing but pygls, lsprotocol and the protocol names. A
handler reaches the features through `host.app`, which exists by the time any other message is
read. The server is known here only as the `Host` it is (server.py registers itself), so this
module and server.py do not import each other. `exit` is the protocol's (core/protocol.py,
core/lifeline.py).

Commands are synchronous on purpose: pygls cannot cancel a running `executeCommand` coroutine
and leaks a future per async command, so each decides at once and spawns any longer work
(features/commands.py). pygls passes the server as `ls` and reads the annotations at runtime,
hence `ls: Any` on the handlers and the closure's `host` instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cardrunner.lsp.core import protocolnames as names

if TYPE_CHECKING:
    from cardrunner.lsp.app import CardApp
    from cardrunner.lsp.core.lifeline import Lifeline


class Host(Protocol):
    """What the handlers need of the server process (`CardServer`, server.py)."""

    lifeline: Lifeline

    @property
    def app(self) -> CardApp: ...

    @property
    def loaded(self) -> bool: ...

    def initialize(self, params: types.InitializeParams) -> None: ...

    def debug_modules(self) -> dict[str, Any]: ...


def register(server: LanguageServer, host: Host) -> None:
    """Register every handler on `server` for `host` (the same process, seen as what the
    handlers need of it); the order of the commands is the capabilities' order."""
    register_life_cycle(server, host)
    register_documents(server, host)
    register_views(server, host)
    register_commands(server, host)


def register_life_cycle(server: LanguageServer, host: Host) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: Any, params: types.InitializeParams) -> None:
        host.initialize(params)

    @server.feature(types.INITIALIZED)
    def initialized(ls: Any, params: types.InitializedParams) -> None:
        host.app.initialized()

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: Any, params: Any) -> None:
        host.lifeline.shutdown_requested = True
        if host.loaded:
            await host.app.stop_all("the editor shut the server down")

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: Any, params: types.DidChangeConfigurationParams) -> None:
        host.app.settings_changed()


def register_documents(server: LanguageServer, host: Host) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: Any, params: types.DidOpenTextDocumentParams) -> None:
        host.app.document_opened(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: Any, params: types.DidChangeTextDocumentParams) -> None:
        host.app.document_changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: Any, params: types.DidCloseTextDocumentParams) -> None:
        host.app.document_closed(params.text_document.uri)


def register_views(server: LanguageServer, host: Host) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: Any, params: types.CodeLensParams) -> list[types.CodeLens]:
        return await host.app.views.code_lens(params)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
    async def code_action(ls: Any, params: types.CodeActionParams) -> list[types.CodeAction]:
        return await host.app.views.code_action(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: Any, params: types.HoverParams) -> types.Hover | None:
        return host.app.views.hover(params)

    @server.feature(names.BOARD)
    async def on_board(ls: Any, params: Any) -> dict[str, Any]:
        return await host.app.views.board_request()

    @server.feature(names.RUN_SUMMARY)
    async def on_run_summary(ls: Any, params: Any) -> dict[str, Any]:
        return await host.app.views.run_account_request(params)

    @server.feature(types.WORKSPACE_SYMBOL)
    async def on_symbol(
        ls: Any, params: types.WorkspaceSymbolParams
    ) -> list[types.SymbolInformation]:
        return await host.app.views.symbols(params)


def register_commands(server: LanguageServer, host: Host) -> None:
    """Every command goes to the features but `DEBUG_MODULES`, which the server answers
    itself: it reports on the seam, so it must not be the one to load the features."""
    for name in names.COMMANDS:
        debug = name == names.DEBUG_MODULES
        server.command(name)(_debug_modules(host) if debug else _command(host, name))


def _command(host: Host, name: str) -> Any:
    def handler(ls: Any, *args: Any) -> Any:
        return host.app.commands.execute(name, args)

    return handler


def _debug_modules(host: Host) -> Any:
    def handler(ls: Any, *args: Any) -> dict[str, Any]:
        return host.debug_modules()

    return handler
