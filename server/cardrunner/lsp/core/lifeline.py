"""How the server's life ends, whoever ends it: `exit`, the end of its input, or its editor dying.

An editor can go away in three ways: it says `exit` (after `shutdown`, or without it when it is
in a hurry), it closes our stdin (killed, crashed, `:qa!`), or it dies while the pipe stays open
(a wrapper process keeps it). Each must end the server the same way — runs stopped and written
down, then the process gone at once — so `serve_stdio` runs pygls' read loop as one task and
waits for whichever comes first: the loop ending (end of input), `exit`, or the death of the
`processId` the client gave in `initialize`. The exit status is the spec's: 0 after `shutdown`,
1 otherwise.

The parent is watched with a pidfd (the kernel wakes us when it exits: no polling at all) and,
where pidfds are unavailable, by a check every `POLL_SECONDS` on the event loop — a syscall a
second, off every request's path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import BinaryIO, NoReturn

from pygls.io_ import run_async
from pygls.protocol import LanguageServerProtocol

from cardrunner.lsp.core.pipes import open_stdio
from cardrunner.processes.groups import process_alive

log = logging.getLogger("cardrunner.lsp.lifeline")

POLL_SECONDS = 1.0
"""How often the parent is checked when there is no pidfd."""


@dataclass(frozen=True)
class Ending:
    """Why the server ends, and the exit status it ends with."""

    why: str
    code: int


class Lifeline:
    """The one place that decides the server ends; the first reason given wins."""

    def __init__(self) -> None:
        self._ending: asyncio.Future[Ending] | None = None
        self._pidfd: int | None = None
        self._poll: asyncio.TimerHandle | None = None
        self.shutdown_requested = False

    def _future(self) -> asyncio.Future[Ending]:
        if self._ending is None:
            self._ending = asyncio.get_running_loop().create_future()
        return self._ending

    def end(self, why: str, code: int) -> None:
        """Ask the server to end (idempotent: a later reason does not replace the first)."""
        ending = self._future()
        if not ending.done():
            log.info("ending: %s (exit status %d)", why, code)
            ending.set_result(Ending(why, code))

    async def wait(self) -> Ending:
        return await self._future()

    def watch_parent(self, pid: int | None) -> None:
        """End when process `pid` (the editor) exits. A pid that is not visible from here
        (another PID namespace, e.g. a container) is not watched: it would look dead at once."""
        if pid is None or pid <= 0 or pid == os.getpid():
            return
        if not process_alive(pid):
            log.info("the client's process %d is not visible here; not watching it", pid)
            return
        loop = asyncio.get_running_loop()
        try:
            self._pidfd = os.pidfd_open(pid)
            loop.add_reader(self._pidfd, self._parent_died, pid)
        except (AttributeError, OSError, NotImplementedError):
            self._pidfd = None
            self._poll = loop.call_later(POLL_SECONDS, self._check, pid)

    def _check(self, pid: int) -> None:
        if process_alive(pid):
            self._poll = asyncio.get_running_loop().call_later(POLL_SECONDS, self._check, pid)
        else:
            self._parent_died(pid)

    def _parent_died(self, pid: int) -> None:
        self.close()
        self.end(f"the editor (process {pid}) exited", 0 if self.shutdown_requested else 1)

    def close(self) -> None:
        """Stop watching the parent."""
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None
        if self._pidfd is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._pidfd)
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = None


async def serve_stdio(
    protocol: LanguageServerProtocol,
    lifeline: Lifeline,
    wind_down: Callable[[Ending], Awaitable[None]],
    stdin: BinaryIO,
    stdout: BinaryIO,
    report: Callable[..., object],
) -> Ending:
    """Read and answer messages until the server must end; wind down; return why."""
    reader, writer = await open_stdio(stdin, stdout)
    protocol.set_writer(writer)
    io = asyncio.create_task(
        run_async(
            stop_event=threading.Event(),
            reader=reader,
            protocol=protocol,
            logger=log,
            error_handler=report,
        ),
        name="lsp-io",
    )
    ending = asyncio.ensure_future(lifeline.wait())
    await asyncio.wait({io, ending}, return_when=asyncio.FIRST_COMPLETED)
    if io.done() and not ending.done():
        failure = None if io.cancelled() else io.exception()
        why = f"the connection failed: {failure!r}" if failure else "end of input"
        lifeline.end(why, 0 if lifeline.shutdown_requested else 1)
    end = await ending
    io.cancel()  # the reader may still block in its thread on stdin; the process ends anyway
    await wind_down(end)
    await writer.flush()  # the `shutdown` answer and the last diagnostics, before os._exit
    return end


def serve_stdio_and_exit(
    protocol: LanguageServerProtocol,
    lifeline: Lifeline,
    wind_down: Callable[[Ending], Awaitable[None]],
    report: Callable[..., object],
) -> NoReturn:
    """`serve_stdio` on this process's stdin/stdout, then end the process at once with the
    spec's status. `os._exit` on purpose: a thread still blocks on stdin, and `asyncio.run`
    would wait for it for as the pipe stays open (seconds, or forever)."""

    async def main() -> NoReturn:
        code = 1
        try:
            end = await serve_stdio(
                protocol, lifeline, wind_down, sys.stdin.buffer, sys.stdout.buffer, report
            )
            code = end.code
        finally:
            logging.shutdown()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)

    try:
        asyncio.run(main())
    finally:
        os._exit(1)  # only reached on KeyboardInterrupt before the loop ran
