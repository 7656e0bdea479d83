"""The editor's stdin and stdout on the event loop itself, not on threads.

pygls reads stdio through a thread pool: every header line and every body is one `readline` or
`read` handed to a thread, whose result comes back to the loop through its self-pipe — three
hand-offs between two threads per message, each a wake-up the kernel must schedule. On a machine
whose cores are busy with runs (eight workers on two cores) every wake-up waits for a time
slice, and a request's answer waits for all of them. Replies are written with a blocking
`write` + `flush` on the loop, which stalls everything else whenever the editor reads slowly.

Here both ends are asyncio pipe transports: the loop reads when epoll says stdin is readable (a
request costs one wake-up, the loop's own) and writes are queued and flushed when stdout is
writable, so a slow editor never blocks the server. What one turn of the loop sends (an answer,
the progress of eight runs, their diagnostics) leaves in one `write` at the end of that turn:
every `write` to the editor's pipe wakes the editor, which on a busy machine takes the core
from the server mid-turn — one wake-up a turn, not one a message (bench/RESULTS.md, issue 29). What cannot be a pipe transport (a regular
file redirected to stdin, Windows) falls back to pygls' own reader and writer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import BinaryIO, Protocol

from pygls.io_ import StdinAsyncReader

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


class LoopReader:
    """pygls' reader interface on an asyncio `StreamReader`: b"" at the end of input."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream

    async def readline(self) -> bytes:
        try:
            return await self._stream.readline()
        except ValueError:  # a header line longer than the stream's limit: not LSP
            log.warning("a header line too long to be LSP; treating it as the end of input")
            return b""

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self._stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


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
    """The reader and writer for the editor's two streams, on the loop where they can be."""
    loop = asyncio.get_running_loop()
    reader: Reader
    writer: Writer
    try:
        stream = asyncio.StreamReader(limit=1 << 16, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin)
        reader = LoopReader(stream)
    except (ValueError, OSError, NotImplementedError) as exc:
        log.info("stdin is not a pipe (%s); reading it on a thread", exc)
        reader = StdinAsyncReader(stdin)
    try:
        transport, protocol = await loop.connect_write_pipe(_Drained, stdout)
        writer = LoopWriter(transport, protocol, loop)
    except (ValueError, OSError, NotImplementedError) as exc:
        log.info("stdout is not a pipe (%s); writing it from the loop, blocking", exc)
        writer = ThreadWriter(stdout)
    return reader, writer
