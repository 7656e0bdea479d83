"""`workers/program.py`'s `relay`: a cancel that meets the worker while it sends an event ends
the run inside the session, as one that meets the session does — cause, cleanup and result."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from cardrunner.run.liveness import interrupted_by, interruption
from cardrunner.workers.program import relay


async def session(seen: list[str]) -> AsyncGenerator[str, None]:
    """Shaped like `RunSession.events`: rounds until a cancel, which it takes back (`uncancel`)
    and records; a cleanup that awaits (the card is written), then the result."""
    try:
        for n in range(1000):
            yield f"round {n}"
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        assert task is not None
        task.uncancel()
        seen.append(f"interrupted: {interrupted_by(exc)}")
    finally:
        await asyncio.sleep(0.01)
        seen.append("card written")
    yield "result"


async def test_a_cancel_during_a_send_reaches_the_session_and_its_result_is_sent() -> None:
    seen: list[str] = []
    sent: list[str] = []
    sending = asyncio.Event()
    never = asyncio.Event()

    async def send(event: str) -> None:
        sent.append(event)
        if event == "round 2":  # the pipe is full: the worker waits in the middle of a send
            sending.set()
            await never.wait()

    task = asyncio.create_task(relay(session(seen), send))
    async with asyncio.timeout(10):
        await sending.wait()
    task.cancel(interruption("the language server went away"))
    async with asyncio.timeout(10):
        await task  # ends by itself, not cancelled
    assert seen == ["interrupted: the language server went away", "card written"]
    assert sent == ["round 0", "round 1", "round 2", "result"]


async def test_a_cancel_inside_the_session_is_the_sessions_own() -> None:
    seen: list[str] = []
    sent: list[str] = []
    rounds = asyncio.Event()

    async def send(event: str) -> None:
        sent.append(event)
        if event == "round 5":
            rounds.set()
        await asyncio.sleep(0)

    task = asyncio.create_task(relay(session(seen), send))
    async with asyncio.timeout(10):
        await rounds.wait()
    task.cancel()  # the user's cancel: no cause
    async with asyncio.timeout(10):
        await task
    assert seen == ["interrupted: None", "card written"]
    assert sent[-1] == "result"
