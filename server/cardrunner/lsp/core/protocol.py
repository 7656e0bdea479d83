"""The JSON-RPC layer, made strict where pygls is lenient: every request gets an answer.

pygls 2.1 drops three kinds of requests on the floor: one whose params do not fit the method's
type (`textDocument/codeLens` with `params: {}` — the structuring error escapes the read loop,
so no response is sent and the user sees an "Error in server" pop-up), any request after
`shutdown` (logged, never answered), and it ends the process on `exit` with `sys.exit`, which
its own read loop swallows (status 0 where the spec says 1, and runs left going). JSON-RPC
requires a response to every request, so `CardProtocol` answers the first two with proper
errors, and hands `exit` to the server's `Lifeline`, which winds the runs down first. It also
says when the `initialize` answer has been written (`on_initialize_answered`): the seam after
which the server loads its features (server.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

log = logging.getLogger("cardrunner.lsp.protocol")


class _Answered:
    """A request that was already answered with an error while it was read; nothing to do."""

    jsonrpc = "2.0"


class CardProtocol(LanguageServerProtocol):
    """`LanguageServerProtocol` that answers malformed requests and defers `exit`."""

    on_exit: Callable[[int], None] | None = None
    """Called with the exit status the spec gives (0 after `shutdown`, else 1)."""
    on_initialize_answered: Callable[[], None] | None = None
    """Called once the `initialize` result is handed to the writer (not on an error): on a
    pipe with room, as ours is at start-up, it is in the client's pipe by then."""

    shutdown_received = False
    """`shutdown` was read. pygls marks it only once our handler has stopped the runs, but the
    spec's exit status asks whether it was *received*: a client may send `exit` right behind
    it, before the answer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shutdown_id: Any = None
        self._shutdown_answered = asyncio.Event()

    async def shutdown_answered(self) -> None:
        """Return once the answer to `shutdown` is handed to the writer. A client that sends
        `exit` right behind `shutdown` still gets it: the process ends after `exit` as soon
        as the runs have stopped, and the handler's answer leaves a few loop turns later."""
        await self._shutdown_answered.wait()

    def _send_response(
        self, msg_id: Any, result: Any | None = None, error: Any | None = None
    ) -> None:
        super()._send_response(msg_id, result, error)
        if self.shutdown_received and msg_id == self._shutdown_id:
            self._shutdown_answered.set()
        answered = isinstance(result, types.InitializeResult) and error is None
        if answered and self.on_initialize_answered is not None:
            self.on_initialize_answered()

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            method = data.get("method")
            if "id" in data and isinstance(method, str):
                log.warning("request %s %r has invalid params: %s", data["id"], method, exc)
                self._send_response(data["id"], None, exc.to_response_error())
            else:  # a notification or a response: nobody waits for an answer
                log.warning("ignored a malformed message %r: %s", method, exc)
            return _Answered()

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Answered):
            return
        method = getattr(message, "method", None)
        is_request = method is not None and getattr(message, "id", None) is not None
        if is_request and method == types.SHUTDOWN:
            self.shutdown_received = True
            self._shutdown_id = message.id
        if self._shutdown and is_request and method != types.EXIT:
            error = JsonRpcInvalidRequest("the server is shutting down")
            self._send_response(message.id, None, error.to_response_error())
            return
        super().handle_message(message)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """The spec's status: 0 when `shutdown` came first, 1 otherwise (pygls exits itself,
        and its read loop then turns any status into 0)."""
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        code = 0 if self._shutdown or self.shutdown_received else 1
        if self.on_exit is not None:
            self.on_exit(code)
