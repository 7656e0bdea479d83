"""`SpareWorker` and `WorkerRun` with real worker processes: a spare is closed, expires, is
discarded when it cannot serve the run, and a spare that died unnoticed never fails a run.

The language-server side of it (the second run in the spare, the spare ending with the server)
is in tests/e2e/test_lsp_spare.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cardrunner.agent import events as ev
from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.processes.groups import process_alive
from cardrunner.run.options import RunOptions
from cardrunner.workers import wire
from cardrunner.workers.handle import WorkerRun
from cardrunner.workers.spare import SpareWorker, spawn_worker
from tests.support.lsp import final, make_project
from tests.support.trust import TRUSTED

WARM = wire.WarmUp(api=False, mcp=False)


async def until(predicate: object, within: float = 30.0) -> None:
    """Poll `predicate()` until true; fail after `within` seconds."""
    assert callable(predicate)
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {predicate}"
        await asyncio.sleep(0.02)


async def ready(spares: SpareWorker) -> int:
    await until(lambda: (spares.describe() or {}).get("ready"))
    pid = spares.pid
    assert pid is not None and process_alive(pid)
    return pid


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def clean_environ() -> Iterator[None]:
    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)


async def test_close_kills_the_spare_and_no_spare_follows(root: Path) -> None:
    spares = SpareWorker()
    assert spares.pid is None  # nothing until asked for
    spares.refill(root, WARM)
    pid = await ready(spares)
    await spares.close()
    assert not process_alive(pid)
    spares.refill(root, WARM)  # closed: asking again starts nothing
    assert spares.pid is None and await spares.take(root) is None


async def test_an_idle_spare_expires(root: Path) -> None:
    spares = SpareWorker(idle_seconds=0.5)
    spares.refill(root, WARM)
    pid = await spares_pid(spares)
    await until(lambda: not process_alive(pid))
    assert spares.pid is None and await spares.take(root) is None
    await spares.close()


async def spares_pid(spares: SpareWorker) -> int:
    await until(lambda: spares.pid is not None)
    assert spares.pid is not None
    return spares.pid


async def test_a_spare_for_another_root_or_environment_is_discarded(
    root: Path, tmp_path_factory: pytest.TempPathFactory, clean_environ: None
) -> None:
    spares = SpareWorker()
    spares.refill(root, WARM)
    pid = await ready(spares)
    assert await spares.take(tmp_path_factory.mktemp("other")) is None
    assert not process_alive(pid)

    spares.refill(root, WARM)
    pid = await ready(spares)
    os.environ["CARDRUNNER_SPARE_TEST"] = "changed since the spare started"
    assert await spares.take(root) is None
    assert not process_alive(pid)

    spares.refill(root, WARM)
    pid = await ready(spares)
    taken = await spares.take(root)
    assert taken is not None and taken.pid == pid and spares.pid is None
    taken.kill()
    await taken.wait()
    await spares.close()


async def test_a_spare_killed_after_it_was_taken_never_fails_the_run(tmp_path: Path) -> None:
    """The race `take` cannot see: the spare dies after it was handed over, before it read
    the run's start. The run starts again in a fresh worker and ends as its transcript says."""
    project = make_project(tmp_path / "ws", "cardrunner-test-spare-race")
    card = project.write_card("quick")
    project.transcript("quick", [final("Nothing to do.\nRESULT: failed: nothing to do")])
    settings, problems = load_settings(project.root)
    assert not problems

    dead = await spawn_worker(project.root, "--spare")
    os.kill(dead.pid, signal.SIGKILL)  # the loop has not noticed: its returncode is None

    async def take(root: Path) -> asyncio.subprocess.Process | None:
        return dead

    events: list[ev.Event] = []
    options = RunOptions(
        root=project.root, card_path=card, settings=settings, approver=AutoApprover(), env=TRUSTED
    )
    run = WorkerRun(options, events.append, take)
    async with asyncio.timeout(60):
        await run.play()
    await run.exited()
    finished = events[-1]
    assert isinstance(finished, ev.RunFinished), events
    assert "worker process died" not in finished.detail, finished
    assert any(isinstance(e, ev.RunStarted) for e in events)
    assert run.pid is not None and run.pid != dead.pid
