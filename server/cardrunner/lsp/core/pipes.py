"""The editor's stdin read on a thread, a whole message a trip; its stdout written by the loop.

**Reading**: a blocking `read` on a thread is woken by the editor's write itself, on the
editor's core, the moment it writes; the loop's epoll wake-up is not, and on a machine whose
cores other programs keep busy it waits for the running task's time slice — measured side by
side under four outside CPU-bound processes (bench/RESULTS.md, issue 29, 2026-12-06), an idle
server reading on the loop answered 7× slower than bare pygls at p95 (5 against 0.7 ms). pygls'
own thread reader pays the other way: each header line and the body is a trip to its thread
and back, so a message waits three or four times for whatever the loop is doing (while eight
runs were served, codeLens p99 0.96–2.41× bare pygls', twice the context switches). So
`run_async`'s one trip to the thread brings a whole message back (`MessageReader`): 0.64–0.68×
bare pooled over three runs with no outside load, 0.37–0.46× under four or eight outside
CPU-bound processes.

The thread reads only when the loop asks. One that read ahead and handed each message to the
loop on its own (`call_soon_threadsafe`) was as quick with no outside load, but serving runs
under four outside CPU-bound processes it answered at p95 in 16–26 ms (four arms) against
3.8–5.4 ms for the two readers the loop asks (six arms); why is not known.

**Writing**: the writes are asyncio pipe transports: queued and flushed when stdout is
writable, so a slow editor never blocks the server, and what one turn of the loop sends (an
answer, the progress of eight runs, their diagnostics) leaves in one `write` at the end of that
turn: every `write` to the editor's pipe wakes the editor, which on a busy machine takes the
core from the server mid-turn — one wake-up a turn, not one a message (bench/RESULTS.md, issue
29). A stdout that cannot be a pipe transport (a regular file, Windows) falls back to pygls'
blocking writer.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO, Protocol

log = logging.getLogger("cardrunner.lsp.pipes")

FLUSH_SECONDS = 2.0
"""How long the last messages (the `shutdown` answer, final diagnostics) may take to leave."""


class Reader(Protocol):
    """What pygls' `run_async` reads messages with."""

    def readline(self) -> Awaitable[bytes]: ...

    def readexactly(self, n: int) -> Awaitable[bytes]: ...


class Writer(Protocol):
    """What a pygls protocol writes messages with, and a way to wait until they have left."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...

    async def flush(self) -> None: ...


CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")
"""The header pygls' `run_async` takes a message's length from (the same pattern)."""


class MessageReader:
    """pygls' reader interface, one whole message per trip to the reading thread.

    When `run_async` asks for a header line and none is left, one thread reads the next whole
    message — split exactly as `run_async` asks for it: header lines up to the blank line after
    a `Content-Length`, then the body — and the loop gets its pieces back in one wake-up;
    `readline` and `readexactly` answer from them without waiting. b"" at the end of input.
    """

    def __init__(self, stdin: BinaryIO) -> None:
        self._stdin = stdin
        self._pieces: deque[bytes] = deque()
        self._ended = False
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="lsp-stdin")

    async def readline(self) -> bytes:
        return await self._next()

    async def readexactly(self, n: int) -> bytes:
        return await self._next()

    async def _next(self) -> bytes:
        while not self._pieces:
            if self._ended:
                return b""
            loop = asyncio.get_running_loop()
            pieces, self._ended = await loop.run_in_executor(self._thread, self._read_message)
            self._pieces.extend(pieces)
        return self._pieces.popleft()

    def _read_message(self) -> tuple[list[bytes], bool]:
        """One message's header lines and body, and whether the input ended with them."""
        pieces: list[bytes] = []
        length = 0
        try:
            while line := self._stdin.readline():
                pieces.append(line)
                if not length and (match := CONTENT_LENGTH.fullmatch(line)):
                    length = int(match.group(1))
                if length and not line.strip():
                    body = self._stdin.read(length)
                    pieces.append(body)
                    return pieces, not body
        except Exception as exc:  # a closed stdin, or a length no memory holds: input ends
            log.warning("stdin could not be read (%r); treating it as the end of input", exc)
        return pieces, True


class _Drained(asyncio.Protocol):
    """Tells when the transport's queue has emptied (or the editor closed its end)."""

    def __init__(self) -> None:
        self.drained = asyncio.Event()
        self.drained.set()

    def pause_writing(self) -> None:
        self.drained.clear()

    def resume_writing(self) -> None:
        self.drained.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.drained.set()


class LoopWriter:
    """Writes gathered over one turn of the loop, then queued on an asyncio pipe transport in
    one piece; `flush` waits until they have left."""

    def __init__(
        self,
        transport: asyncio.WriteTransport,
        protocol: _Drained,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._transport = transport
        self._protocol = protocol
        self._loop = loop
        self._turn: list[bytes] = []
        """What this turn of the loop has written so far (in order)."""

    def write(self, data: bytes) -> None:
        if self._transport.is_closing():
            return
        if not self._turn:
            self._loop.call_soon(self._send_turn)  # after what is already due this turn
        self._turn.append(data)

    def _send_turn(self) -> None:
        data, self._turn = b"".join(self._turn), []
        if data and not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self._send_turn()
        self._transport.close()

    async def flush(self) -> None:
        self._send_turn()
        # from now on any queued byte counts as "paused": resumed means the queue is empty
        self._transport.set_write_buffer_limits(high=0)
        try:
            async with asyncio.timeout(FLUSH_SECONDS):
                await self._protocol.drained.wait()
        except TimeoutError:
            log.info("the editor did not read the last messages in time")


class ThreadWriter:
    """pygls' blocking writer, for streams that are not pipes; every write is flushed."""

    def __init__(self, stdout: BinaryIO) -> None:
        self._stdout = stdout

    def write(self, data: bytes) -> None:
        self._stdout.write(data)
        self._stdout.flush()

    def close(self) -> None:
        self._stdout.close()

    async def flush(self) -> None:
        return None


async def open_stdio(stdin: BinaryIO, stdout: BinaryIO) -> tuple[Reader, Writer]:
    """The reader (on its own thread) and the writer (on the loop where it can be) for the
    editor's two streams."""
    loop = asyncio.get_running_loop()
    reader = MessageReader(stdin)
    writer: Writer
    try:
        transport, protocol = await loop.connect_write_pipe(_Drained, stdout)
        writer = LoopWriter(transport, protocol, loop)
    except (ValueError, OSError, NotImplementedError) as exc:
        log.info("stdout is not a pipe (%s); writing it from the loop, blocking", exc)
        writer = ThreadWriter(stdout)
    return reader, writer
