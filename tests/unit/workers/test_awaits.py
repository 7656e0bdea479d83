"""`workers/awaits.py`: the report of a stuck run names the frame that really waits."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

from cardrunner.workers.awaits import chain
from tests.support.lsp import wait_for


async def _cleanup(gate: threading.Event) -> None:
    await asyncio.to_thread(gate.wait)  # the bottom: a thread's future


async def _events(gate: threading.Event) -> AsyncIterator[int]:
    try:
        yield 1
    finally:
        await _cleanup(gate)


async def _outer(inner: asyncio.Task[None]) -> None:
    await inner


async def test_the_chain_goes_through_generators_and_tasks_down_to_the_future() -> None:
    gate = threading.Event()

    async def play() -> None:
        events = _events(gate)
        await events.__anext__()
        await events.aclose()  # waits in the generator's finally, in _cleanup

    inner = asyncio.create_task(play())
    outer = asyncio.create_task(_outer(inner))

    def in_cleanup() -> list[str] | None:
        lines = list(chain(outer))
        return lines if any("_cleanup" in line for line in lines) else None

    try:
        lines = await wait_for(in_cleanup, 5, "the chain to reach the generator's cleanup")
        names = [line.rsplit(" in ", 1)[-1] for line in lines if " in " in line]
        assert names[0] == "_outer", lines
        assert names[-3:] == ["_events", "_cleanup", "to_thread"], lines
        assert "waits on <Future pending" in lines[-1], lines
    finally:
        gate.set()
        await outer


async def test_a_finished_task_has_no_chain() -> None:
    async def nothing() -> None:
        return None

    task = asyncio.create_task(nothing())
    await task
    assert list(chain(task)) == []
