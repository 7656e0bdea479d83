"""The agent on stdin and stdout, with stdout kept for JSON-RPC alone.

A stray `print`, a library's warning or a child process that inherited file descriptor 1 would
corrupt the protocol stream, and the client would drop the connection. So the protocol gets a
private copy of the real stdout, and descriptor 1 becomes stderr before anything else runs:
whatever writes to "stdout" from then on lands in the client's log of stderr. The agent ends
when stdin closes: every run still going is interrupted (resumable with `session/load`) and
waited for, so its commands and app are stopped before the process exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import stat
import sys
import threading
from typing import BinaryIO, cast

from acp import Agent, run_agent

from cardrunner.acp.agent import CardAgent, FindRoot

GONE = "the agent's client closed the connection"


def _streams_itself(fd: int) -> bool:
    """A pipe, socket or terminal: what asyncio can watch. A regular file (`< requests.jsonl`,
    `> replies.jsonl` when trying the agent by hand) it cannot."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class _FileTransport(asyncio.WriteTransport):
    """Writes to a regular file at once: a file never makes a writer wait."""

    def __init__(self, file: BinaryIO) -> None:
        super().__init__()
        self._file = file

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._file.write(data)

    def is_closing(self) -> bool:
        return self._file.closed

    def close(self) -> None:
        self._file.close()


def _feed_from_file(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    """stdin from a regular file: read it in a thread, line by line, then end the stream."""

    def read() -> None:
        for line in iter(sys.stdin.buffer.readline, b""):
            loop.call_soon_threadsafe(reader.feed_data, line)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=read, name="acp-stdin", daemon=True).start()


async def protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin as a reader; the real stdout as a writer, descriptor 1 from now on stderr."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)  # images and big diffs: the SDK's limit
    if _streams_itself(sys.stdin.fileno()):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    else:
        _feed_from_file(loop, reader)
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())
    if _streams_itself(out.fileno()):
        transport, _ = await loop.connect_write_pipe(lambda: protocol, out)
    else:
        transport = _FileTransport(out)
        protocol.connection_made(transport)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve(find_root: FindRoot) -> int:
    """Answer one client until stdin closes (or SIGTERM / SIGINT), then end every run."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    if task is not None:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    reader, writer = await protocol_streams()
    agent = CardAgent(find_root)
    try:
        # CardAgent has only the methods it answers: the SDK tells the client the rest are
        # not found, so it is a partial `Agent` by design (the Protocol lists every method)
        await run_agent(cast(Agent, agent), writer, reader)
    except asyncio.CancelledError:
        if task is not None:
            task.uncancel()
    finally:
        await agent.shutdown(GONE)
    return 0
