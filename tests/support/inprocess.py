"""The language server in this process, spoken to as an editor would, without a subprocess.

`InProcessEditor` gives the real server (`build_server()`: the handlers, the `CardApp` and all
its features) a writer in place of stdout: every message the server sends is parsed and kept,
each server→client request is answered the way a configured editor answers it, and the editor's
own messages go in through the protocol's `handle_message`, as if read from stdin. What a test
sees is what an editor sees — the JSON on the wire — while the features run on the test's loop,
where a test can also reach them (`editor.app`) to play a part no editor plays, such as the run
that asks for a review.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cardrunner.lsp.app import CardApp
from cardrunner.lsp.server import CardServer, build_server

WAIT = 10.0
"""Seconds any wait for the server gives it: in-process answers take milliseconds."""

VSCODE_LIKE: dict[str, Any] = {
    "window": {"showDocument": {"support": True}, "workDoneProgress": True},
    "workspace": {"codeLens": {"refreshSupport": True}, "configuration": True},
    "textDocument": {"codeLens": {}, "hover": {}, "publishDiagnostics": {}, "codeAction": {}},
}


@dataclass
class InProcessEditor:
    """An editor attached to an in-process server: what it was sent, and how it answers."""

    root: Path
    capabilities: dict[str, Any] = field(default_factory=lambda: dict(VSCODE_LIKE))
    own_options: dict[str, Any] | None = field(default_factory=lambda: {"notifications": True})
    answers: list[str | None] = field(default_factory=list)
    """Titles picked for `window/showMessageRequest`, in order; None (dismiss) when empty."""
    received: list[dict[str, Any]] = field(default_factory=list)
    """Every message from the server, in order (requests, notifications, responses)."""
    server: CardServer = field(default_factory=build_server)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _waiting: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    # --- the wire ---------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """The server's writer: one JSON body per call (no headers)."""
        message = json.loads(data)
        self.received.append(message)
        self._changed.set()
        if "method" in message and "id" in message:
            result = self._answer(message["method"], message.get("params"))
            loop = asyncio.get_running_loop()
            loop.call_soon(self._send, {"id": message["id"], "result": result})
        elif "method" not in message and message.get("id") in self._waiting:
            future = self._waiting.pop(message["id"])
            if "error" in message:
                future.set_exception(RuntimeError(message["error"].get("message")))
            else:
                future.set_result(message.get("result"))

    def close(self) -> None:
        """The writer's other half (the server never closes a writer it did not open)."""

    def _send(self, message: dict[str, Any]) -> None:
        protocol = self.server.protocol
        protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", **message}))

    def _answer(self, method: str, params: Any) -> Any:
        """How this editor answers what the server asks."""
        if method == "window/showMessageRequest":
            title = self.answers.pop(0) if self.answers else None
            return {"title": title} if title else None
        if method == "window/showDocument":
            return {"success": True}
        if method == "workspace/configuration":
            return [None for _ in params.get("items", [])]
        if method == "workspace/applyEdit":
            return {"applied": False, "failureReason": "this editor applies no edits"}
        return None  # workDoneProgress/create, codeLens/refresh and the like

    # --- what a test does -------------------------------------------------------------------

    async def request(self, method: str, params: Any) -> Any:
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        self._send({"id": msg_id, "method": method, "params": params})
        async with asyncio.timeout(WAIT):
            return await future

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.request(
            "workspace/executeCommand", {"command": name, "arguments": list(arguments)}
        )

    async def start(self) -> None:
        """`initialize` with this editor's capabilities, then `initialized`; returns once the
        server's start-up work is over (the first scan of the cards folder, the past runs)."""
        self.server.protocol.set_writer(self, include_headers=False)
        options = None if self.own_options is None else {"client": self.own_options}
        await self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": self.root.as_uri(),
                "workspaceFolders": [{"uri": self.root.as_uri(), "name": "ws"}],
                "capabilities": self.capabilities,
                "initializationOptions": options,
            },
        )
        self.notify("initialized", {})
        async with asyncio.timeout(WAIT):
            await self.app.started.wait()

    async def stop(self) -> None:
        """`shutdown`: the runs stop and the watcher ends (the process itself goes on)."""
        await self.request("shutdown", None)

    @property
    def app(self) -> CardApp:
        return self.server.app

    def open(self, path: Path) -> str:
        uri = path.as_uri()
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "markdown",
                    "version": 1,
                    "text": path.read_text(encoding="utf-8"),
                }
            },
        )
        return uri

    def sent(self, method: str) -> list[Any]:
        """The params of every request or notification `method` the server sent so far."""
        return [m.get("params") for m in self.received if m.get("method") == method]

    async def wait_for(self, what: str, found: Callable[[], Any]) -> Any:
        """`found()` once it is truthy (checked after every message), within `WAIT` seconds."""

        async def poll() -> Any:
            while not (value := found()):
                self._changed.clear()
                await self._changed.wait()
            return value

        try:
            async with asyncio.timeout(WAIT):
                return await poll()
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None

    def diagnostics(self, uri: str) -> list[dict[str, Any]]:
        """The newest diagnostics published for `uri`."""
        published = [p for p in self.sent("textDocument/publishDiagnostics") if p["uri"] == uri]
        return list(published[-1]["diagnostics"]) if published else []


async def started(editor: InProcessEditor) -> AsyncIterator[InProcessEditor]:
    """`editor` started for a fixture to yield, and stopped after the test whatever happened."""
    await editor.start()
    try:
        yield editor
    finally:
        await editor.stop()
