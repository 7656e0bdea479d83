"""How we reach an MCP server: a stdio process we can account for, or Streamable HTTP.

The SDK's `stdio_client` spawns the server well (own session, tree kill on exit) but hides the
process. We need it: its pid and process group (so that nothing outlives a run, even when the
owning task is torn down abruptly), its exit status (so the model reads *why* a call failed) and
its stderr in a file of its own (so a failed start shows the server's last words). So we spawn the
server ourselves with `anyio.open_process` and hand the SDK's `Client` the same pair of message
streams `stdio_client` would; the SDK does the protocol, we own the process.

Shutdown follows the MCP lifecycle: close stdin, wait a grace period, SIGTERM the group, wait,
SIGKILL the group. Every wait is bounded and shielded, so a cancelled caller cannot leak a server
and a server that ignores signals cannot hang the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from cardrunner.config.secrets import redact
from cardrunner.processes.groups import ProcessGroups, follow_priority_of

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream, ByteSendStream, Process
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.client._transport import TransportStreams
    from mcp.shared.message import SessionMessage

GRACE_SECONDS = 2.0
"""How long a server may take to exit by itself after its stdin closes."""

TERM_SECONDS = 2.0
"""How long the process group gets between SIGTERM and SIGKILL."""

_POLL = 0.02
_TAIL_CHARS = 2000
_TAIL_LINES = 20
_BODY_CHARS = 500


@dataclass(frozen=True)
class Launch:
    """How to reach a server: argv + environment + cwd (stdio) or url + headers (HTTP)."""

    argv: list[str] | None
    env: dict[str, str]
    cwd: Path
    stderr_path: Path
    groups: ProcessGroups
    """The run's ledger of process groups, which a stdio server joins."""
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


class StdioProcess:
    """One spawn of a stdio server: argv, environment, cwd and the file its stderr goes to."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        stderr_path: Path,
        groups: ProcessGroups,
    ) -> None:
        self.argv = argv
        self.groups = groups
        self.env = env
        self.cwd = cwd
        self.stderr_path = stderr_path
        self._process: Process | None = None
        self._stderr_start = 0
        self._stopped = False

    @property
    def pid(self) -> int | None:
        """The server's pid, which is also its process group id (it leads a new session)."""
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        """The exit status once the server has exited (negative: killed by that signal)."""
        return self._process.returncode if self._process is not None else None

    def stderr_tail(self) -> str:
        """The end of what this spawn wrote to stderr (empty if nothing)."""
        try:
            with self.stderr_path.open("rb") as f:
                f.seek(self._stderr_start)
                data = f.read()
        except OSError:
            return ""
        lines = data.decode("utf-8", "replace").strip().splitlines()[-_TAIL_LINES:]
        return "\n".join(lines)[-_TAIL_CHARS:]

    async def wait_exit(self, seconds: float) -> int | None:
        """The exit status, waiting at most `seconds` for the process to end.

        Polls: `Process.wait()` also waits for pipe EOF, which a child holding the pipe delays.
        """
        with anyio.move_on_after(seconds):
            while self.returncode is None:  # noqa: ASYNC110
                await anyio.sleep(_POLL)
        return self.returncode

    def kill_group(self) -> None:
        """SIGKILL the whole process group now (synchronous: usable in `finally` and at exit)."""
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)

    def group_alive(self) -> bool:
        """Whether any process of the server's group still exists."""
        if self._process is None:
            return False
        try:
            os.killpg(self._process.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[TransportStreams]:
        """Spawn the server and yield the (read, write) message streams the SDK's Client takes."""
        from mcp.shared.message import SessionMessage

        self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
        with self.stderr_path.open("ab") as err:
            self._stderr_start = err.tell()
            self._process = await anyio.open_process(
                self.argv,
                env=self.env,
                cwd=self.cwd,
                stderr=err,
                start_new_session=True,
            )
        self.groups.note(self._process.pid)  # so a sweep finds it if this process dies
        follow_priority_of(self._process.pid)  # its session must not outrank the editor
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pump_out, process.stdout, read_send)
                tg.start_soon(_pump_in, write_recv, process.stdin)
                try:
                    yield read_recv, write_send
                finally:
                    with anyio.CancelScope(shield=True):
                        await write_send.aclose()
                        await read_recv.aclose()
                        await self._stop(process)
                    tg.cancel_scope.cancel()
        finally:
            if not self._stopped:  # the shielded stop was cut short (e.g. native task cancel)
                self.kill_group()

    async def _stop(self, process: Process) -> None:
        assert process.stdin is not None
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        await self.wait_exit(GRACE_SECONDS)
        if self.group_alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
            with anyio.move_on_after(TERM_SECONDS):
                while self.group_alive():  # noqa: ASYNC110 (a group's end cannot be awaited)
                    await anyio.sleep(_POLL)
            if self.group_alive():
                self.kill_group()
        await self.wait_exit(TERM_SECONDS)
        self._stopped = self.returncode is not None and not self.group_alive()
        if self.returncode is not None:  # aclose() waits for the exit: only once there is one
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.aclose()


@dataclass
class HttpTrail:
    """What an HTTP server last answered with an error status, and how many such answers came.

    The SDK turns every 4xx/5xx into "Server returned an error response"; the user needs the
    status and the body (a host check's refusal, a missing token) to act, so we keep them."""

    last: str = ""
    count: int = 0

    async def note(self, response: Any) -> None:
        """httpx's response hook: keep an error answer to a message (a POST)."""
        if response.status_code < 400 or response.request.method != "POST":
            return
        await response.aread()  # kept by the response: the SDK's own read gets the same body
        body = redact(" ".join(response.text.split())[:_BODY_CHARS])
        said = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        self.last = f"{said}: {body}" if body else f"{said} (empty body)"
        self.count += 1


@contextlib.asynccontextmanager
async def http_streams(launch: Launch, trail: HttpTrail) -> AsyncIterator[Any]:
    """Streamable HTTP streams over our own HTTP client: the configured headers, and `trail`
    hears every answer."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    assert launch.url is not None
    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults for its own client
    hooks = {"response": [trail.note]}
    async with (
        httpx2.AsyncClient(headers=launch.headers, timeout=timeout, event_hooks=hooks) as http,
        streamable_http_client(launch.url, http_client=http) as streams,
    ):
        yield streams


async def _pump_out(
    stdout: ByteReceiveStream, sink: MemoryObjectSendStream[SessionMessage | Exception]
) -> None:
    """Server stdout → messages, one JSON-RPC message per line; a bad line becomes an error item."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    buffer = b""
    async with sink:
        with contextlib.suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
        ):
            async for chunk in stdout:
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    item: SessionMessage | Exception
                    try:
                        item = SessionMessage(
                            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        )
                    except ValueError as exc:
                        item = exc
                    await sink.send(item)


async def _pump_in(
    source: MemoryObjectReceiveStream[SessionMessage], stdin: ByteSendStream
) -> None:
    """Messages → server stdin, one line each."""
    async with source:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stdin.send(data.encode("utf-8") + b"\n")
