"""A long-lived child with pipes, started on a thread, so the event loop never waits for it.

asyncio starts a subprocess on the loop, and a start blocks until the child has called `exec`
(Python waits for it, to report a failed `exec` as an exception): on the language server's loop
every run's worker start was a pause of every request in flight — 0.7 ms on a quiet machine,
5–30 ms when the cores are taken (bench/RESULTS.md, issue 29). Here the start happens on a
thread; the loop gets the child's pipes as asyncio streams once it runs, and learns of its end
from a pidfd (Linux) or, elsewhere, from a thread that waits for it — the loop never blocks.

`OffLoopProcess` offers what `asyncio.subprocess.Process` offers its users here: `pid`,
`returncode`, `stdin` (a `StreamWriter`), `stdout` (a `StreamReader`), `wait`, `kill`,
`send_signal`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path


class OffLoopProcess:
    """A child started by `start_off_loop`; its stdin and stdout are the loop's streams."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        exited: asyncio.Future[int],
    ) -> None:
        self._popen, self.stdin, self.stdout, self._exited = popen, stdin, stdout, exited

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the loop has learnt of the end (as asyncio's, not before)."""
        return self._exited.result() if self._exited.done() else None

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def send_signal(self, signum: int) -> None:
        """Signal the child; ProcessLookupError once it has been reaped, as asyncio's does."""
        if self._exited.done():
            raise ProcessLookupError(self.pid)
        self._popen.send_signal(signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


async def start_off_loop(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, *, limit: int
) -> OffLoopProcess:
    """Start `argv` in `cwd` with its stdin and stdout as pipes (stderr inherited); `limit` is
    the longest line its stdout reader takes. OSError when it cannot start."""
    loop = asyncio.get_running_loop()
    started = loop.run_in_executor(None, _popen, argv, cwd, env)
    try:
        popen = await asyncio.shield(started)
    except asyncio.CancelledError:  # it still starts, on its thread: end it once it has
        started.add_done_callback(lambda done: _end_started(done, loop))
        raise
    assert popen.stdin is not None and popen.stdout is not None
    try:
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), popen.stdout)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, popen.stdin
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    except BaseException:
        _end(popen, loop)
        raise
    return OffLoopProcess(popen, writer, reader, _exit_future(popen, loop))


def _popen(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
    )


def _end_started(
    started: asyncio.Future[subprocess.Popen[bytes]], loop: asyncio.AbstractEventLoop
) -> None:
    if not started.cancelled() and started.exception() is None:
        _end(started.result(), loop)


def _end(popen: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop) -> None:
    """Kill a child nobody will use and reap it (its pipes close with the Popen)."""
    with contextlib.suppress(ProcessLookupError):
        popen.kill()
    for pipe in (popen.stdin, popen.stdout):
        if pipe is not None:
            pipe.close()
    _reap_on_thread(popen, loop)


def _exit_future(
    popen: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop
) -> asyncio.Future[int]:
    """A future that gets the child's exit status, reaped as soon as the child ends."""
    exited: asyncio.Future[int] = loop.create_future()
    try:
        pidfd = os.pidfd_open(popen.pid)
    except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
        _reap_on_thread(popen, loop, exited)
        return exited

    def ended() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        exited.set_result(popen.wait())  # it has ended: this reaps without waiting

    loop.add_reader(pidfd, ended)
    return exited


def _reap_on_thread(
    popen: subprocess.Popen[bytes],
    loop: asyncio.AbstractEventLoop,
    exited: asyncio.Future[int] | None = None,
) -> None:
    """Wait for the child on a thread of its own (as asyncio's own child watcher does: the
    shared executor's few threads must not be held by children that live for minutes)."""

    def wait() -> None:
        code = popen.wait()
        if exited is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                loop.call_soon_threadsafe(_settle, exited, code)

    threading.Thread(target=wait, name=f"wait-{popen.pid}", daemon=True).start()


def _settle(exited: asyncio.Future[int], code: int) -> None:
    if not exited.done():
        exited.set_result(code)
