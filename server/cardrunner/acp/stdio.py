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
import sys
from typing import cast

from acp import Agent, run_agent

from cardrunner.acp.agent import CardAgent, FindRoot

GONE = "the agent's client closed the connection"


async def protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin as a reader; the real stdout as a writer, descriptor 1 from now on stderr."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)  # images and big diffs: the SDK's limit
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), out
    )
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
