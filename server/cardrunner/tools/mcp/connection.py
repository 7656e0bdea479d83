"""One MCP server of a run: a connection owned by one task, and the calls made through it.

The SDK's clients live in anyio task groups and cancel scopes, which must be entered and left by
the same task. A run starts its servers in one task and calls tools from another, so each server
gets a long-lived *owner task* that enters the client, lists the tools, then keeps the connection
open until told to stop. Calls run as child tasks of the owner's task group (handed their own
cancel scope), and the caller awaits a future: any task may call, only the owner opens and closes.

A server that dies is noticed at the next call (its exit status is reported to the model) and gets
one restart attempt on the call after that; a failed restart leaves it down for the rest of the run.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio

from cardrunner.tools.mcp.results import describe
from cardrunner.tools.mcp.transport import (
    GRACE_SECONDS,
    TERM_SECONDS,
    HttpTrail,
    Launch,
    StdioProcess,
    http_streams,
)

if TYPE_CHECKING:
    import mcp_types
    from anyio.abc import TaskGroup
    from mcp import Client

    from cardrunner.config.settingsfiles import McpServer

MAX_RESTARTS = 3
"""Restarts per server and run: a server that keeps crashing should not eat the run."""

CLOSE_SECONDS = GRACE_SECONDS + 2 * TERM_SECONDS + 2
"""Upper bound for closing one connection (the stdio stop is bounded by the same constants)."""


class ServerUnavailable(Exception):
    """The server cannot take calls (failed to start, crashed, or closed); the message says why."""


class CallTimeout(Exception):
    """The server did not answer within its timeout."""


class _Interrupted(Exception):
    """The connection ended (crash, lost HTTP session, close) while a call was running."""


@dataclass
class _Call:
    scope: anyio.CancelScope | None = None
    cancelled: bool = field(default=False)

    def cancel(self) -> None:
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()


class ServerConnection:
    """A configured server: start, call, notice a crash, restart once, close."""

    def __init__(self, name: str, spec: McpServer, launch: Launch) -> None:
        self.name = name
        self.spec = spec
        self._launch = launch
        self.http = HttpTrail()
        """What an HTTP server last answered with an error status."""
        self.process: StdioProcess | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._tg: TaskGroup | None = None
        self._client: Client | None = None
        self._state: Literal["new", "up", "down", "failed", "closed"] = "new"
        self._why = ""
        self._lost = ""  # why the owner's connection ended by itself (HTTP errors)
        self._generation = 0
        self._restarts = 0
        self._lock = asyncio.Lock()
        self._restart_note = ""
        """Set when a call restarted the server; the caller shows it once (`take_restart`)."""
        self._relisted: list[mcp_types.Tool] | None = None
        """The tools the server listed when it was restarted (None: not restarted since)."""

    def take_restart(self) -> tuple[str, list[mcp_types.Tool] | None]:
        """What the last restart leaves to tell, once: its note ("" when there was none since
        the last time) and the tools the server listed then (None: not restarted since)."""
        note, relisted = self._restart_note, self._relisted
        self._restart_note, self._relisted = "", None
        return note, relisted

    async def start(self) -> list[mcp_types.Tool]:
        """Connect, initialize and list tools within the server's timeout, or raise ServerUnavailable."""
        ready: asyncio.Future[list[mcp_types.Tool]] = asyncio.get_running_loop().create_future()
        self._stop, self._lost = asyncio.Event(), ""
        self._generation += 1
        if (ln := self._launch).argv is not None:
            self.process = StdioProcess(ln.argv, ln.env, ln.cwd, ln.stderr_path, ln.groups)
        self._owner = asyncio.create_task(self._own(ready), name=f"mcp-server:{self.name}")
        try:
            # The owner enforces the timeout itself; this bound only catches a wedged teardown.
            # The shield keeps `ready` (the owner's to settle) alive when the bound cancels us.
            async with asyncio.timeout(self.spec.start_seconds + CLOSE_SECONDS):
                tools = await asyncio.shield(ready)
        except TimeoutError:
            await self._finish_owner()
            raise ServerUnavailable(self._start_timeout()) from None
        except BaseException:
            if not ready.done():  # we were cancelled: take the half-started server down with us
                self._state, self._why = "down", "was interrupted while starting"
                await self._finish_owner()
            raise
        self._state = "up"
        return tools

    async def _own(self, ready: asyncio.Future[list[mcp_types.Tool]]) -> None:
        """The owner task: enters the client, serves calls in its task group, leaves on stop."""
        from mcp import Client

        scope = anyio.CancelScope(deadline=anyio.current_time() + self.spec.start_seconds)
        try:
            with scope:
                transport: Any = (
                    self.process.connect()
                    if self.process
                    else http_streams(self._launch, self.http)
                )
                async with Client(transport) as client:
                    tools = await _list_tools(client)
                    scope.deadline = math.inf
                    async with anyio.create_task_group() as tg:
                        self._tg, self._client = tg, client
                        ready.set_result(tools)
                        await self._stop.wait()
                        scope.deadline = anyio.current_time() + CLOSE_SECONDS
                        tg.cancel_scope.cancel()
            _settle(ready, error=ServerUnavailable(self._start_timeout()))
        except Exception as exc:
            if ready.done():
                self._lost = describe(exc)
            elif scope.cancel_called:  # the SDK turned our deadline into an error of its own
                _settle(ready, error=ServerUnavailable(self._start_timeout()))
            else:
                _settle(ready, error=ServerUnavailable(await self._start_failure(exc)))
        finally:
            self._tg = self._client = None
            _settle(ready, error=ServerUnavailable("start-up was interrupted"))

    def _start_timeout(self) -> str:
        said = f"did not start within {self.spec.start_seconds:g} s (start_timeout)"
        if self.process is not None and not self.process.stderr_tail():
            said += "; it printed nothing on stderr"
        if runner := self.spec.package_runner:
            said += (
                f". {runner} downloads a package the first time it runs it, and the sandbox "
                "has no network, so it can wait for a download that never comes: install the "
                "server first (e.g. `npm install -g PACKAGE`, then its program as `command`) or "
                "run it once outside so the package cache holds it"
            )
        return self._with_stderr(said)

    async def _start_failure(self, exc: BaseException) -> str:
        if self.http.last:
            return f"{self._launch.url} answered {self.http.last}"
        if self.process is not None and self.process.pid is not None:
            code = await self.process.wait_exit(1.0)
            if code is not None:
                return self._with_stderr(f"exited with status {code} during start-up")
        return self._with_stderr(describe(exc))

    def _with_stderr(self, message: str) -> str:
        tail = self.process.stderr_tail() if self.process is not None else ""
        return f"{message}\nstderr (last lines):\n{tail}" if tail else message

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call `tool`. Raises ServerUnavailable, CallTimeout or the SDK's MCPError."""
        await self._ensure_up()
        generation, tg = self._generation, self._tg
        future: asyncio.Future[mcp_types.CallToolResult] = (
            asyncio.get_running_loop().create_future()
        )
        handle = _Call()
        try:
            if tg is None:
                raise _Interrupted
            try:
                tg.start_soon(self._serve, tool, arguments, future, handle)
            except RuntimeError:  # the owner's task group ended between the check and now
                raise _Interrupted from None
            return await future
        except asyncio.CancelledError:
            handle.cancel()
            raise
        except _Interrupted:
            raise ServerUnavailable(await self._went_down(tool, generation)) from None
        except Exception as exc:
            if _is_connection_closed(exc):
                raise ServerUnavailable(await self._went_down(tool, generation)) from None
            raise

    async def _serve(
        self, tool: str, arguments: dict[str, Any], future: asyncio.Future[Any], handle: _Call
    ) -> None:
        client = self._client
        try:
            with anyio.CancelScope() as handle.scope:
                if handle.cancelled or client is None:
                    return
                try:
                    with anyio.fail_after(self.spec.timeout):
                        result = await client.call_tool(tool, arguments)
                except TimeoutError:
                    _settle(future, error=CallTimeout())
                except Exception as exc:
                    _settle(future, error=exc)
                else:
                    _settle(future, result=result)
        finally:
            _settle(future, error=_Interrupted())  # the connection went away under the call

    async def _went_down(self, tool: str, generation: int) -> str:
        """Take down a connection that died during a call to `tool`; say how it ended."""
        if self._state == "closed":
            return f"MCP server '{self.name}' was closed during the call to {tool}"
        if generation == self._generation and self._state == "up":
            self._state = "down"
            self._stop.set()
            code = await self.process.wait_exit(GRACE_SECONDS) if self.process else None
            if code is None and self._owner is not None:
                await asyncio.wait({self._owner}, timeout=CLOSE_SECONDS)
            how = f"exited with status {code}" if code is not None else "lost the connection"
            self._why = f"{how} during the call to {tool}" + (
                f" ({self._lost})" if self._lost else ""
            )
        again = "restarted" if self.process else "reconnected"
        return self._with_stderr(
            f"MCP server '{self.name}' {self._why}. It will be {again} on the next call to it."
        )

    async def _ensure_up(self) -> None:
        async with self._lock:
            if self._state == "up" and self._owner is not None and self._owner.done():
                self._state, self._why = "down", f"lost the connection ({self._lost or 'closed'})"
            if self._state == "up" and self.process and self.process.returncode is not None:
                self._state, self._why = "down", f"exited with status {self.process.returncode}"
            if self._state == "down":
                await self._restart()
            if self._state == "failed":
                raise ServerUnavailable(f"MCP server '{self.name}' is not available: {self._why}")
            if self._state != "up":
                raise ServerUnavailable(f"MCP server '{self.name}' is {self._state}")

    async def _restart(self) -> None:
        await self._finish_owner()
        if self._restarts >= MAX_RESTARTS:
            self._state = "failed"
            self._why = f"it {self._why}; not restarted again after {MAX_RESTARTS} restarts"
            return
        self._restarts += 1
        again = "restarted" if self.process else "reconnected"
        try:
            self._relisted = await self.start()
        except ServerUnavailable as exc:
            self._state = "failed"
            self._why = f"it {self._why} and could not be {again}: {exc}"
            return
        self._restart_note = f"[MCP server '{self.name}' {self._why} and was {again}.]"

    async def close(self) -> None:
        """Stop the server (bounded); afterwards calls raise ServerUnavailable."""
        self._state = "closed"
        await self._finish_owner()

    async def _finish_owner(self) -> None:
        self._stop.set()
        owner = self._owner
        if owner is not None and not owner.done():
            try:  # the shield lets the owner leave its client in its own task: only on
                # time-out is it cancelled, below
                async with asyncio.timeout(CLOSE_SECONDS + 1):
                    await asyncio.shield(owner)
            except TimeoutError:
                owner.cancel()
        self.kill_now()

    def kill_now(self) -> None:
        """Last resort, synchronous: SIGKILL the server's process group if any of it is alive."""
        if self.process is not None and self.process.group_alive():
            self.process.kill_group()


async def _list_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(100):  # a paginator that never ends must not hang the start
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _settle(
    future: asyncio.Future[Any], *, result: Any = None, error: BaseException | None = None
) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def _is_connection_closed(exc: BaseException) -> bool:
    import mcp_types
    from mcp.shared.exceptions import MCPError

    return isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED
