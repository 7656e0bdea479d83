"""`cardrunner lsp`: the language server (pygls 2, stdio) — what answers `initialize`.

The editor waits for the `initialize` answer before it shows anything, so `CardServer` answers
it with pygls and lsprotocol alone, like a bare pygls server: its protocol, its life line, the
client wrapper and the handlers (handlers.py: every LSP method and command, so the capabilities
are complete). The features — settings, the card index, diagnostics, runs, reviews, the board,
the watcher, with pydantic, yaml and watchfiles beneath them — are `CardApp` (app.py). It is
built on the loop's next turn after the answer is handed to stdout — before anything the
client sends once it has the answer (`CardProtocol.on_initialize_answered`) — or at the first
use, should a client not wait for the answer.
This is the one seam: nothing loaded before it may import the features' modules, which
`tests/e2e/test_lsp_startup.py` checks over the protocol. Nothing is written to stdout (the
JSON-RPC channel). Runs execute in worker processes: `anthropic` and `mcp` never load here.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cardrunner import __version__
from cardrunner.lsp.core.client import Client, setup_logging, split_client_options, uri_to_path
from cardrunner.lsp.core.lifeline import Ending, Lifeline, serve_stdio_and_exit
from cardrunner.lsp.core.protocol import CardProtocol
from cardrunner.lsp.handlers import register

if TYPE_CHECKING:
    from cardrunner.lsp.app import CardApp

log = logging.getLogger("cardrunner.lsp")

HEAVY_MODULES = ("anthropic", "mcp")

WIND_DOWN_SECONDS = 1.5
"""When the editor is gone (or said `exit`): the cap on stopping runs before the process ends.
It ends as they have stopped — about 0.3–0.8 s with a test command and an MCP server
on 2 busy cores (bench/editor_gone.py); the cap is only reached when stopping is slower (an app
slow to stop, a loaded machine), and then the server ends first: the run's worker, told to stop
already, ends the run on its own and writes its card on disk (`workers/program.py`: the
server's end is no second stop)."""

ANSWER_SECONDS = 0.5
"""After the runs have stopped: the most the `shutdown` answer may take to be handed over."""


class CardServer(LanguageServer):
    """The language server process: protocol, life line, client; its features load later."""

    def __init__(self) -> None:
        super().__init__("cardrunner", __version__, protocol_cls=CardProtocol)
        self.root = Path.cwd().resolve()
        self.lifeline = Lifeline()
        protocol = self.protocol
        assert isinstance(protocol, CardProtocol)
        protocol.on_exit = lambda code: self.lifeline.end("the editor said exit", code)
        protocol.on_initialize_answered = self._answered
        self.client = Client(self)
        self.log_handler = setup_logging(self)
        self.init_options: Any = None
        """initializationOptions without the client's own: the settings overrides."""
        self.modules_at_initialize: dict[str, bool] = {}
        self.imported_at_initialize: list[str] = []
        """Every module imported when the `initialize` answer was sent: what answering cost."""
        self._app: CardApp | None = None

    def initialize(self, params: types.InitializeParams) -> None:
        self.modules_at_initialize = {name: name in sys.modules for name in HEAVY_MODULES}
        self.log_handler.loop = asyncio.get_running_loop()  # records from other threads hop here
        folders = params.workspace_folders or []
        uri = folders[0].uri if folders else params.root_uri
        path = uri_to_path(uri) if uri else (Path(params.root_path) if params.root_path else None)
        self.root = (path or Path.cwd()).resolve()
        own, self.init_options = split_client_options(params.initialization_options)
        self.client.options = own
        self.lifeline.watch_parent(params.process_id)

    # --- the seam: the features load after `initialize` is answered -------------------------

    @property
    def loaded(self) -> bool:
        return self._app is not None

    @property
    def app(self) -> CardApp:
        """The features (built at the first use, if the answer's hook has not built them)."""
        if self._app is None:
            from cardrunner.lsp.app import CardApp

            self._app = CardApp(self, self.client, self.root, self.init_options)
        return self._app

    def _answered(self) -> None:
        """The `initialize` answer is written: note what it took, then build the features on
        the loop's next turn (not inside pygls' response callback, where an error would answer
        the request twice)."""
        self.imported_at_initialize = sorted(sys.modules)
        asyncio.get_running_loop().call_soon(lambda: self.app)

    # --- the end ----------------------------------------------------------------------------

    async def wind_down(self, end: Ending) -> None:
        """The server ends (`exit`, end of input, the editor died): the same as a shutdown,
        bounded so the process is gone within a second."""
        self.lifeline.close()
        if self._app is None:
            return  # it never got as loading its features: nothing runs
        try:
            async with asyncio.timeout(WIND_DOWN_SECONDS):
                await self._app.stop_all(end.why, WIND_DOWN_SECONDS)
        except TimeoutError:
            log.warning(
                "runs did not stop within %.1f s; their logs say interrupted", WIND_DOWN_SECONDS
            )
        protocol = self.protocol
        if isinstance(protocol, CardProtocol) and protocol.shutdown_received:
            with contextlib.suppress(TimeoutError):  # its handler waited for the same stop
                async with asyncio.timeout(ANSWER_SECONDS):
                    await protocol.shutdown_answered()

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Errors in the server are logged, never popped up: a malformed message from the
        client is not the user's business (and bad requests were already answered)."""
        log.warning("server error (%s): %r", getattr(source, "__name__", source), error)

    def debug_modules(self) -> dict[str, Any]:
        """What this process has imported: the SDKs (which only runs' workers may load) at
        `initialize` and now, every top-level package, and every module imported by the time
        the `initialize` answer was sent — for tests and bug reports; and the spare worker the
        next run takes (`workers/spare.py`), once the features run cards. Answered by the server
        itself, without the features."""
        return {
            "pid": os.getpid(),
            "spare": self._app.runs.manager.spare_state() if self._app is not None else None,
            "atInitialize": self.modules_at_initialize,
            "importedAtInitialize": self.imported_at_initialize,
            "loaded": self.loaded,
            "now": {name: name in sys.modules for name in HEAVY_MODULES},
            "topLevel": sorted({name.partition(".")[0] for name in list(sys.modules)}),
        }


def build_server() -> CardServer:
    """The server with every handler registered (tests may start it in-process)."""
    server = CardServer()
    register(server, server)
    return server


def serve() -> None:
    """Run the language server on stdin/stdout until the editor says exit or goes away."""
    if os.environ.get("CARDRUNNER_LSP_DEBUG"):
        logging.getLogger("pygls").setLevel(logging.DEBUG)
    server = build_server()
    # What start-up imported lives as the process: out of the collector's way. Without
    # this, the allocations of structuring the `initialize` params trigger a full collection
    # over all of lsprotocol and pygls (~15 ms, measured) before the answer is sent.
    gc.freeze()
    serve_stdio_and_exit(
        server.protocol, server.lifeline, server.wind_down, server._report_server_error
    )


__all__ = ["CardServer", "build_server", "serve"]
