"""Run a command in its own process group and make sure nothing of it outlives its welcome.

Builds, test runners and apps spawn children (compilers, test workers, dev servers). Killing only
the process we started leaves those running, holding ports and files. So every command starts in
a new session (its own process group), and on time-out, cancellation or stop the WHOLE group gets
SIGTERM, then SIGKILL after a grace period. Every group started is noted in the run's
`ProcessGroups` (processes/groups.py), so the run and its tests can check that none is left or end
them all, and a later cardrunner can sweep them if this one dies.
No shell is involved anywhere: argv lists go straight to `exec`. A `Sandbox` (processes/sandbox.py)
given to `spawn` confines the command and chooses its environment from an allow-list.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cardrunner.processes.groups import ProcessGroups, follow_priority, group_alive
from cardrunner.processes.sandbox import filter_env

if TYPE_CHECKING:
    from cardrunner.processes.sandbox import Sandbox

KILL_GRACE_SECONDS = 2.0
EMIT_EVERY = 0.25
"""Seconds between two hand-overs of a running command's new output lines."""
"""How long a group may take to exit after SIGTERM before it gets SIGKILL."""


class CommandError(Exception):
    """A command could not start, or exited at once; the message says why, in words for the model."""


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child: the allow-listed part of ours (no secrets), plus `extra`."""
    env = filter_env(os.environ)
    env.update(extra or {})
    return env


def _signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False if it no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # pgid reused by someone else's process: not ours any more
        return False
    return True


class _ExitProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Signals the moment the process exits.

    On Python 3.11 `Process.wait()` also waits until the output pipe closes, which never
    happens while a grandchild still holds it; we must see the exit itself to kill the rest.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=2**16, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


@dataclass
class Child:
    """A started process: the leader of its own process group (its pid is the group id)."""

    proc: asyncio.subprocess.Process
    exited: asyncio.Event
    groups: ProcessGroups
    """Where the group was noted, and is forgotten once it is gone."""

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    @property
    def stdout(self) -> asyncio.StreamReader:
        assert self.proc.stdout is not None
        return self.proc.stdout

    async def wait(self) -> int | None:
        """Wait for the process itself to exit (not for its output pipe to close)."""
        await self.exited.wait()
        return self.proc.returncode


async def spawn(
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    *,
    groups: ProcessGroups,
    sandbox: Sandbox | None = None,
    keep_fds: tuple[int, ...] = (),
) -> Child:
    """Start `argv` in a new process group (noted in `groups`), stdout and stderr in one pipe;
    inside `sandbox` (with its environment) when given, with `keep_fds` open in it. A missing
    program raises OSError here."""
    full_env = sandbox.env(env) if sandbox else child_env(env)
    if sandbox is not None:
        argv = await asyncio.to_thread(sandbox.wrap, argv, cwd, full_env)
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _ExitProtocol(loop),
        *argv,
        cwd=cwd,
        env=full_env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=follow_priority(),
        pass_fds=keep_fds,
    )
    child = Child(asyncio.subprocess.Process(transport, protocol, loop), protocol.exited, groups)
    groups.note(child.pid)
    return child


async def _wait_group_gone(pgid: int, within: float) -> bool:
    """Wait (polling with a growing interval, at most `within` seconds) until the group is empty."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    delay = 0.01
    while group_alive(pgid):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
        delay = min(delay * 2, 0.2)
    return True


async def wait_within(seconds: float, task: asyncio.Task[Any]) -> None:
    """Wait up to `seconds` for `task`, leaving it running when the time is up."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await asyncio.shield(task)


async def kill_group(proc: Child, grace: float = KILL_GRACE_SECONDS) -> None:
    """SIGTERM the whole group of `proc`, SIGKILL whatever is left after `grace`, reap the leader.

    A second cancellation while waiting falls through to an immediate SIGKILL, so the group dies
    however impatient the caller is.
    """
    pgid = proc.pid
    try:
        if _signal_group(pgid, signal.SIGTERM) and not await _wait_group_gone(pgid, grace):
            _signal_group(pgid, signal.SIGKILL)
            await _wait_group_gone(pgid, 5.0)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):
                await proc.wait()
    except BaseException:
        _signal_group(pgid, signal.SIGKILL)
        raise
    finally:
        if not group_alive(pgid):
            proc.groups.forget(pgid)


@dataclass
class OutputPump:
    """Reads a child's merged output as it comes, keeping at most `limit` bytes (the newest)."""

    stream: asyncio.StreamReader
    limit: int = 4_000_000
    dropped: int = 0
    on_text: Callable[[str], None] | None = None
    """Called with complete new lines as they arrive, at most every `EMIT_EVERY` seconds."""

    def __post_init__(self) -> None:
        self._chunks = bytearray()
        self._pending = bytearray()
        self._emitted = 0.0

    async def run(self) -> None:
        """Read until EOF (every writer of the pipe has exited or closed it)."""
        try:
            while chunk := await self.stream.read(65536):
                self._chunks += chunk
                if len(self._chunks) > self.limit:
                    cut = len(self._chunks) - self.limit // 2
                    self.dropped += cut
                    del self._chunks[:cut]
                self._stream(chunk)
        finally:
            self._stream(b"", final=True)

    def _stream(self, chunk: bytes, final: bool = False) -> None:
        """Hand complete lines to `on_text`, coalesced so a chatty command costs few events."""
        if self.on_text is None:
            return
        self._pending += chunk
        if len(self._pending) > 65536:
            del self._pending[: len(self._pending) - 65536]
        now = time.monotonic()
        if not final and now - self._emitted < EMIT_EVERY:
            return
        end = len(self._pending) if final else self._pending.rfind(b"\n") + 1
        if end <= 0:
            return
        text = bytes(self._pending[:end]).decode("utf-8", errors="replace").replace("\r\n", "\n")
        del self._pending[:end]
        self._emitted = now
        if text.strip():
            self.on_text(text)

    def text(self) -> str:
        """Everything kept so far, decoded leniently, with a note if the start was dropped."""
        body = bytes(self._chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")
        if self.dropped:
            return f"[... first {self.dropped} bytes of output dropped ...]\n{body}"
        return body


@dataclass
class CommandResult:
    """What one finished command did. `output` is stdout and stderr interleaved as written."""

    argv: list[str]
    exit_code: int
    output: str
    timed_out: bool = False
    ms: int = 0
    spawn_error: str | None = None
    """Set when the command could not be started at all (missing program, missing folder)."""

    @property
    def ok(self) -> bool:
        """True if the command ran to the end and exited with 0."""
        return self.exit_code == 0 and not self.timed_out and self.spawn_error is None


def spawn_failure(argv: list[str], exc: OSError) -> tuple[int, str]:
    program = argv[0] if argv else ""
    if isinstance(exc, FileNotFoundError):
        return 127, f"cannot run {program!r}: no such program (is it installed and on PATH?)"
    if isinstance(exc, PermissionError):
        return 126, f"cannot run {program!r}: permission denied (is it executable?)"
    return 126, f"cannot run {program!r}: {exc.strerror or exc}"


async def run_command(
    argv: list[str],
    cwd: Path,
    timeout: float,  # noqa: ASYNC109 - the group must be killed, not just the await abandoned
    env: dict[str, str] | None = None,
    on_output: Callable[[str], None] | None = None,
    *,
    groups: ProcessGroups,
    sandbox: Sandbox | None = None,
) -> CommandResult:
    """Run `argv` (no shell) in `cwd`; kill its whole process group at `timeout` or on cancel.

    Never raises for a command that cannot start: that is a result with `spawn_error` set.
    """
    started = time.monotonic()

    def failed(code: int, message: str) -> CommandResult:
        ms = int((time.monotonic() - started) * 1000)
        return CommandResult(list(argv), code, message, ms=ms, spawn_error=message)

    if not argv:
        return failed(127, "cannot run an empty command")
    try:
        proc = await spawn(argv, cwd, env, groups=groups, sandbox=sandbox)
    except OSError as exc:
        if not await asyncio.to_thread(cwd.is_dir):
            return failed(127, f"cannot run {argv[0]!r}: working folder {cwd} does not exist")
        return failed(*spawn_failure(argv, exc))
    pump = OutputPump(proc.stdout, on_text=on_output)
    reader = asyncio.create_task(pump.run())
    timed_out = False
    try:
        try:
            async with asyncio.timeout(timeout):
                await proc.wait()
        except TimeoutError:
            timed_out = True
        if not timed_out:  # normally EOF is immediate; a lingering child may still hold the pipe
            await wait_within(1.0, reader)
        if timed_out or group_alive(proc.pid):
            await kill_group(proc)
        await wait_within(2.0, reader)
    except BaseException:
        await kill_group(proc)
        raise
    finally:
        reader.cancel()
    return CommandResult(
        argv=list(argv),
        exit_code=proc.returncode if proc.returncode is not None else -signal.SIGKILL,
        output=pump.text(),
        timed_out=timed_out,
        ms=int((time.monotonic() - started) * 1000),
    )
