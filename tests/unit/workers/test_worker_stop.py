"""`workers/program.py`'s `Worker.cancel`: a stop reaches the run once, and never its end.

The server told `exit` sends its `cancel`, waits a bounded while and ends; its end closes the
pipe, which the worker hears as the server gone. That second stop once landed in the run's end
(its app being stopped) and cut it short: the card stayed `In Work`. And a worker whose server
is gone bounds its own life (`ORPHAN_SECONDS`).
"""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from cardrunner.run.liveness import interrupted_by
from cardrunner.workers import program
from cardrunner.workers.program import Worker
from cardrunner.workers.wire import SERVER_GONE


class Session:
    """Shaped like `RunSession`: runs until a cancel, takes it back and records its cause, then
    its end awaits (the app stopped, the card written) until the test releases it."""

    def __init__(self, ending: bool = False) -> None:
        self.ending = ending
        self.seen: list[str | None] = []
        self.closing = asyncio.Event()
        self.release = asyncio.Event()

    async def play(self) -> None:
        try:
            if not self.ending:
                await asyncio.sleep(3600)  # mid-run: a tool call
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            assert task is not None
            task.uncancel()
            self.ending = True
            self.seen.append(interrupted_by(exc))
        finally:
            self.closing.set()
            await self.release.wait()
            self.seen.append("card written")


def playing(session: Session) -> Worker:
    """A worker whose run (`session`) has begun, as `Worker.serve` leaves it."""
    worker = Worker(asyncio.StreamReader(), None)  # type: ignore[arg-type]
    worker._session = session  # type: ignore[assignment]
    worker._task = asyncio.create_task(session.play())
    worker._started = True
    return worker


async def test_the_server_gone_after_its_cancel_does_not_cut_the_runs_end_short() -> None:
    session = Session()
    worker = playing(session)
    await asyncio.sleep(0)
    worker.cancel("the editor said exit")  # the server's cancel
    async with asyncio.timeout(10):
        await session.closing.wait()
    worker.cancel(SERVER_GONE)  # the server ended: its pipe closed
    worker.cancel(None)  # and a SIGTERM, for good measure
    session.release.set()
    assert worker._task is not None
    async with asyncio.timeout(10):
        await worker._task  # ends by itself, not cancelled
    assert session.seen == ["the editor said exit", "card written"]


async def test_a_run_ending_on_its_own_takes_no_stop() -> None:
    session = Session(ending=True)  # its result is decided: it writes its card
    worker = playing(session)
    async with asyncio.timeout(10):
        await session.closing.wait()
    worker.cancel(SERVER_GONE)
    session.release.set()
    assert worker._task is not None
    async with asyncio.timeout(10):
        await worker._task
    assert session.seen == ["card written"]


async def test_a_stop_before_the_run_began_keeps_the_first_reason() -> None:
    worker = Worker(asyncio.StreamReader(), None)  # type: ignore[arg-type]
    worker.cancel("the editor said exit")
    worker.cancel(SERVER_GONE)
    assert worker._cancel_early == ("the editor said exit",)


async def test_a_worker_whose_server_is_gone_ends_itself_in_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ended = threading.Event()
    codes: list[int] = []
    killed: list[bool] = []

    class Groups:
        def kill_all(self) -> None:
            killed.append(True)

    def exit_(code: int) -> None:
        codes.append(code)
        ended.set()

    monkeypatch.setattr(program, "ORPHAN_SECONDS", 0.05)
    monkeypatch.setattr(os, "_exit", exit_)
    worker = Worker(asyncio.StreamReader(), None)  # type: ignore[arg-type]
    worker._processes = Groups()  # type: ignore[assignment]
    worker._orphaned()
    assert await asyncio.to_thread(ended.wait, 10)
    assert (codes, killed) == ([1], [True])
