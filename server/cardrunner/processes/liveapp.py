"""The app under test: one instance the model starts and stops, its output kept in a ring.

`start_app` must tell the model whether the app came up (its first output) or died at once (its
exit code and what it said), and `stop_app` must end the app's whole process group, whatever it
spawned. The process itself is started like every command (`command.spawn`: its own session and
group, noted in the run's `ProcessGroups`, inside the sandbox when there is one).
"""

from __future__ import annotations

import asyncio
import shlex
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from cardrunner.processes.command import (
    Child,
    CommandError,
    kill_group,
    spawn,
    spawn_failure,
    wait_within,
)
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.sandbox import Sandbox


@dataclass
class AppProcess:
    """The app under test: at most one instance, in its own process group, output in a ring."""

    groups: ProcessGroups
    max_lines: int = 2000
    startup_seconds: float = 1.0
    """How long `start` watches a fresh process for dying at once."""
    _proc: Child | None = field(default=None, init=False)
    _reader: asyncio.Task[None] | None = field(default=None, init=False)
    _lines: deque[str] = field(init=False)

    def __post_init__(self) -> None:
        self._lines = deque(maxlen=self.max_lines)

    @property
    def running(self) -> bool:
        """True while the process we started has not exited."""
        return self._proc is not None and self._proc.returncode is None

    def output(self, last: int = 40) -> str:
        """The newest `last` lines the app wrote (stdout and stderr interleaved)."""
        lines = list(self._lines)[-last:]
        return "\n".join(lines) if lines else "(no output)"

    async def _pump(self, stream: asyncio.StreamReader) -> None:
        partial = b""
        while chunk := await stream.read(65536):
            *complete, partial = (partial + chunk).split(b"\n")
            if len(partial) > 65536:  # a "line" without end: show it in pieces
                complete, partial = [*complete, partial], b""
            for raw in complete:
                self._lines.append(raw.decode("utf-8", errors="replace").rstrip("\r"))
        if partial:
            self._lines.append(partial.decode("utf-8", errors="replace").rstrip("\r"))

    async def _finish(self) -> None:
        """Kill what is left of the group, let the reader drain, forget the process."""
        proc, reader = self._proc, self._reader
        self._proc = self._reader = None
        if proc is not None:
            await kill_group(proc)
        if reader is not None:
            await wait_within(1.0, reader)
            reader.cancel()

    async def start(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str] | None = None,
        sandbox: Sandbox | None = None,
    ) -> str:
        """Start the app; report its first output, or raise `CommandError` if it fails at once."""
        if self.running:
            assert self._proc is not None
            return f"The app is already running (pid {self._proc.pid}). Call stop_app first."
        await self._finish()
        self._lines.clear()
        try:
            extra = {"PYTHONUNBUFFERED": "1", **(env or {})}
            proc = await spawn(argv, cwd, extra, groups=self.groups, sandbox=sandbox)
        except OSError as exc:
            raise CommandError(spawn_failure(argv, exc)[1]) from exc
        self._proc, self._reader = proc, asyncio.create_task(self._pump(proc.stdout))
        try:
            async with asyncio.timeout(self.startup_seconds):
                await proc.wait()
        except TimeoutError:
            first = list(self._lines)[:30]
            shown = "\n".join(first) if first else "(no output yet)"
            return f"Started the app (pid {proc.pid}): {shlex.join(argv)}\nFirst output:\n{shown}"
        code = proc.returncode
        await self._finish()
        text = f"The app exited at once with exit code {code}. Its output:\n{self.output()}"
        if code != 0:
            raise CommandError(text)
        return text

    async def stop(self) -> str:
        """Stop the app's whole process group; report how it ended and its last output."""
        proc = self._proc
        if proc is None:
            return "The app is not running."
        if proc.returncode is not None:
            await self._finish()
            return (
                f"The app had already exited by itself with exit code {proc.returncode}. "
                f"Its last output:\n{self.output()}"
            )
        await self._finish()
        return f"Stopped the app (pid {proc.pid}). Its last output:\n{self.output()}"

    async def aclose(self) -> None:
        """Kill the app's group if it is running; safe to call any number of times."""
        await self._finish()
