"""A small JSON-RPC client for language servers on stdio, for timing them.

Deliberately raw (asyncio streams, `Content-Length` frames, plain dicts): the client adds
microseconds, not the milliseconds of decoding into lsprotocol types, so what is measured is the
server. It answers every server→client request like a plain editor would (`null`, or one `null`
per `workspace/configuration` item) and records everything the server sent, with arrival times,
so a benchmark can wait for a notification or a request by predicate (never by sleeping).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True},
    "workspace": {"codeLens": {"refreshSupport": True}, "configuration": True},
    "textDocument": {
        "codeLens": {},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "publishDiagnostics": {},
        "synchronization": {"didSave": True},
    },
}
"""A plain editor: progress and lens refresh yes, `applyEdit` no (cards are written on disk)."""


@dataclass
class Received:
    time: float
    method: str
    params: Any
    is_request: bool


async def read_frame(out: asyncio.StreamReader) -> bytes | None:
    """One message's body from a `Content-Length` framed stream; None at the end of it."""
    length = 0
    while (line := await out.readline()) not in (b"\r\n", b"\n"):
        if not line:
            return None
        name, _, value = line.decode().partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return await out.readexactly(length)


@dataclass
class LspProcess:
    argv: Sequence[str]
    cwd: Path
    env: dict[str, str] | None = None
    received: list[Received] = field(default_factory=list)
    proc: asyncio.subprocess.Process | None = None
    spawned_at: float = 0.0
    _pending: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    _answered: dict[int, float] = field(default_factory=dict)
    """When each answer was read (`perf_counter`), until `timed` takes it."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _reader: asyncio.Task[None] | None = None

    async def spawn(self) -> None:
        self.spawned_at = time.perf_counter()
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self.cwd,
            env=self.env if self.env is not None else dict(os.environ),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=64 * 1024 * 1024,
        )
        self._reader = asyncio.create_task(self._read())

    async def initialize(self, root: Path, process_id: int | None = None) -> dict[str, Any]:
        """`initialize` + `initialized`; `process_id` is the editor's pid the server watches
        (this process by default)."""
        result: dict[str, Any] = await self.request(
            "initialize",
            {
                "processId": os.getpid() if process_id is None else process_id,
                "rootUri": root.as_uri(),
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                "capabilities": CAPABILITIES,
                "initializationOptions": {"client": {"notifications": True}},
            },
        )
        self.notify("initialized", {})
        return result

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        data = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    async def request(self, method: str, params: Any, within: float = 60.0) -> Any:
        return (await self._request(method, params, within))[1]

    async def _request(self, method: str, params: Any, within: float) -> tuple[float, Any]:
        """(when its answer was read, its result); every answer's time is taken here, so none
        is left behind in `_answered`."""
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        self._send({"id": msg_id, "method": method, "params": params})
        try:
            async with asyncio.timeout(within):
                result = await future
        finally:
            answered = self._answered.pop(msg_id, None)
        assert answered is not None  # a result came, so its time was noted
        return answered, result

    async def timed(self, method: str, params: Any) -> tuple[float, Any]:
        """(seconds, result) of one request, until its answer was read: not until this
        coroutine resumed, which waits behind whatever else this process has to do then (the
        busy server's notifications), and so would time the client."""
        started = time.perf_counter()
        answered, result = await self._request(method, params, 60.0)
        return answered - started, result

    async def wait_for(
        self, match: Callable[[Received], bool], within: float, since: int = 0
    ) -> Received:
        """The first message from index `since` on that matches; TimeoutError after `within` s."""
        deadline = time.perf_counter() + within
        seen = since
        while True:
            for item in self.received[seen:]:
                if match(item):
                    return item
            seen = len(self.received)
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"nothing matched within {within} s")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._changed.wait()

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        out = self.proc.stdout
        try:
            while (raw := await read_frame(out)) is not None:
                self._received(raw)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("the server closed its output"))

    def _received(self, raw: bytes) -> None:
        """One message's body, as read (a subclass may look at it first)."""
        self._dispatch(json.loads(raw), time.perf_counter())

    def _dispatch(self, message: dict[str, Any], now: float) -> None:
        if "method" not in message:
            future = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if future is not None:
                self._answered[message["id"]] = now
            if future is not None and not future.done():
                if "error" in message:
                    future.set_exception(RuntimeError(f"LSP error {message['error']}"))
                else:
                    future.set_result(message.get("result"))
            return
        method, params = message["method"], message.get("params")
        is_request = "id" in message
        self.received.append(Received(now, method, params, is_request))
        self._changed.set()
        if is_request:
            result: Any = None
            if method == "workspace/configuration":
                result = [None for _ in (params or {}).get("items", [])]
            elif method == "window/showDocument":
                result = {"success": True}
            self._send({"id": message["id"], "result": result})

    async def settled(self, within: float = 90.0) -> bool:
        """Wait for `cardrunner lsp`'s start-up work (the sweep, the settings, the first card
        scan, the watcher) to end: it logs "cardrunner … serving …" then. Until then that
        work competes for the server's loop and skews any timing."""
        try:
            await self.wait_for(
                lambda r: (
                    r.method == "window/logMessage"
                    and " serving " in str(r.params.get("message", ""))
                ),
                within,
            )
        except TimeoutError:
            return False
        return True

    def rss_kib(self) -> int:
        """VmRSS of the server process, in KiB."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    async def close(self) -> None:
        """shutdown + exit, then wait; kill after 5 s."""
        if self.proc is None:
            return
        try:
            if self.proc.returncode is None:
                await self.request("shutdown", None, within=5)
                self.notify("exit", None)
        except (TimeoutError, ConnectionError, RuntimeError):
            pass
        try:
            async with asyncio.timeout(5):
                await self.proc.wait()
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()


def did_open(uri: str, text: str, language: str = "markdown") -> dict[str, Any]:
    return {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}


def doc(uri: str) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}}


def position(uri: str, line: int, character: int = 0) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


@contextlib.asynccontextmanager
async def initialized(argv: list[str], root: Path) -> AsyncIterator[tuple[LspProcess, float]]:
    """A server spawned and initialized, with `initialized` handled (one round trip after it,
    answered MethodNotFound), and the seconds from its spawn to the `initialize` answer; closed
    on leaving."""
    server = LspProcess(argv, root)
    await server.spawn()
    try:
        await server.initialize(root)
        took = time.perf_counter() - server.spawned_at
        with contextlib.suppress(RuntimeError):
            await server.request("bench/ping", None, within=30)
        yield server, took
    finally:
        await server.close()
