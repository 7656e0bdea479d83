"""`workers/program.py`'s `Channel`: a round's events leave in one write, in order, and nothing
a request or the end of the worker depends on waits for the hold."""

from __future__ import annotations

import asyncio
import json
import os
import select
from collections.abc import AsyncIterator

import pytest

from cardrunner.workers.wire import HOLD_SECONDS, Channel


@pytest.fixture
async def pipe() -> AsyncIterator[tuple[Channel, int]]:
    """A channel writing into a real pipe, and the pipe's read end (non-blocking)."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    yield Channel(writer), read
    writer.close()
    os.close(read)


def _lines(read: int) -> list[dict[str, object]]:
    """Every whole line the pipe holds now."""
    data = b""
    while select.select([read], [], [], 0)[0]:
        chunk = os.read(read, 1 << 16)
        if not chunk:
            break
        data += chunk
    return [json.loads(line) for line in data.splitlines()]


async def _readable(read: int, within: float) -> None:
    loop, ready = asyncio.get_running_loop(), asyncio.Event()
    loop.add_reader(read, ready.set)
    try:
        async with asyncio.timeout(within):
            await ready.wait()
    finally:
        loop.remove_reader(read)


async def test_held_events_leave_together_after_the_hold(pipe: tuple[Channel, int]) -> None:
    channel, read = pipe
    for n in range(3):
        await channel.send({"kind": "event", "n": n}, hold=True)
    assert _lines(read) == []  # no turn of the loop has passed: nothing was written yet
    await _readable(read, within=HOLD_SECONDS + 10)
    assert [line["n"] for line in _lines(read)] == [0, 1, 2]


async def test_a_message_not_held_takes_the_held_ones_with_it_in_order(
    pipe: tuple[Channel, int],
) -> None:
    channel, read = pipe
    await channel.send({"kind": "event", "n": 0}, hold=True)
    await channel.send({"kind": "event", "n": 1}, hold=True)
    await channel.send({"kind": "started"})
    assert [line.get("n", line["kind"]) for line in _lines(read)] == [0, 1, "started"]


async def test_a_request_waits_for_no_hold(pipe: tuple[Channel, int]) -> None:
    channel, read = pipe
    await channel.send({"kind": "event", "n": 0}, hold=True)
    asking = asyncio.create_task(channel.request("trust", {"question": {}}))
    await _readable(read, within=10)
    lines = _lines(read)
    assert [line["kind"] for line in lines] == ["event", "request"]
    channel.answered({"id": lines[1]["id"], "result": True})
    assert await asking is True


async def test_flush_writes_what_is_held(pipe: tuple[Channel, int]) -> None:
    channel, read = pipe
    await channel.send({"kind": "event", "n": 0}, hold=True)
    await channel.flush()
    assert [line["n"] for line in _lines(read)] == [0]
