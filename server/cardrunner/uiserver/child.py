"""The server's handle on one driver process: start it, send it commands, stop it for sure.

Every wait is bounded: the start-up greeting, each reply, and the exit after stdin is closed. A
driver that misses a deadline is killed, and the error says so, with the tail of what the app
wrote to stderr (Textual prints crash reports there). `kill_now` is synchronous so a signal
handler or an exit path without an event loop can still make sure no app is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import deque
from pathlib import Path

from cardrunner.uiserver.protocol import Reply, Request, decode_hello, decode_reply, encode

STDERR_LINES = 40
EXIT_GRACE_SECONDS = 5.0


class ChildError(Exception):
    """The app could not be started or stopped answering; the message is for the model."""


class AppChild:
    """A running driver process for one Textual app."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._drain = asyncio.create_task(self._drain_stderr())
        self._next_id = 0

    @classmethod
    async def start(cls, app: str, cwd: Path, seconds: float) -> tuple[AppChild, str]:
        """Spawn the driver and wait for its greeting; returns the child and the summary."""
        process = await asyncio.create_subprocess_exec(
            # -P: the driver's own imports come from the install, not the app's folder (which
            # `--cwd` puts on the path itself, once those are loaded)
            sys.executable, "-P", "-m", "cardrunner.uiserver.driver", "--app", app, "--cwd", str(cwd),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(cwd),
        )  # fmt: skip
        child = cls(process)
        line = await child._read_line(seconds, "start")
        hello = decode_hello(line)
        if not hello.ok:
            await child.stop()
            raise ChildError(f"The app failed to start:\n{hello.text}")
        return child, hello.text

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    @property
    def pid(self) -> int:
        return self.process.pid

    async def request(self, request: Request, seconds: float) -> Reply:
        """Send one command and wait for its reply."""
        assert self.process.stdin is not None
        self._next_id += 1
        request = request.model_copy(update={"id": self._next_id})
        try:
            self.process.stdin.write(encode(request))
            await self.process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise ChildError(await self._gone_text()) from None
        reply = decode_reply(await self._read_line(seconds, request.command))
        if reply.ended:
            await self.stop()
        return reply

    async def _read_line(self, seconds: float, what: str) -> bytes:
        assert self.process.stdout is not None
        try:
            async with asyncio.timeout(seconds):
                line = await self.process.stdout.readline()
        except TimeoutError:
            self.kill_now()  # it is stuck: asking it to shut down would only cost more time
            await self.process.wait()
            await self._finish_drain()
            raise ChildError(
                f"The app did not answer '{what}' within {seconds:g} s (a hang or a blocking "
                f"call in the app?); it was stopped.{self._stderr_note()}"
            ) from None
        if not line:
            raise ChildError(await self._gone_text())
        return line

    async def _gone_text(self) -> str:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(EXIT_GRACE_SECONDS):
                await self.process.wait()
        await self._finish_drain()
        code = self.process.returncode
        return f"The app process ended unexpectedly (exit code {code}).{self._stderr_note()}"

    def _stderr_note(self) -> str:
        if not self.stderr:
            return ""
        return "\nLast lines of its stderr:\n" + "\n".join(self.stderr)

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.stderr.append(line.decode(errors="replace").rstrip())

    async def _finish_drain(self) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):
                await asyncio.shield(self._drain)  # on time-out the drain goes on

    async def stop(self) -> int | None:
        """Close stdin so the driver shuts the app down; kill it if it does not exit in time."""
        if self.alive and self.process.stdin is not None:
            with contextlib.suppress(OSError, RuntimeError):
                self.process.stdin.close()
        try:
            async with asyncio.timeout(EXIT_GRACE_SECONDS):
                await self.process.wait()
        except TimeoutError:
            self.kill_now()
            await self.process.wait()
        await self._finish_drain()
        return self.process.returncode

    def kill_now(self) -> None:
        """SIGKILL the driver without an event loop (signal handlers, interpreter exit)."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
