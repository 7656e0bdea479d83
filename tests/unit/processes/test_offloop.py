"""A child started off the loop: its pipes, its end learnt with and without a pidfd, a kill,
and a cancel that comes while it is being started."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from cardrunner.processes import offloop
from cardrunner.processes.offloop import start_off_loop

ECHO = "import sys\nfor line in sys.stdin: print(line.strip().upper(), flush=True)\nsys.exit(3)"
LIMIT = 1 << 16


def _argv(script: str) -> list[str]:
    return [sys.executable, "-c", script]


@pytest.fixture(params=["pidfd", "thread"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of learning of the end: the pidfd, and the waiting thread where there is none."""
    if request.param == "thread":
        monkeypatch.delattr(os, "pidfd_open")
    return str(request.param)


async def test_the_pipes_carry_lines_and_the_end_brings_the_status(
    tmp_path: Path, way: str
) -> None:
    proc = await start_off_loop(_argv(ECHO), tmp_path, limit=LIMIT)
    assert proc.returncode is None
    proc.stdin.write(b"hello\n")
    await proc.stdin.drain()
    async with asyncio.timeout(20):
        assert await proc.stdout.readline() == b"HELLO\n"
        proc.stdin.close()
        assert await proc.wait() == 3
        assert await proc.stdout.readline() == b""
    assert proc.returncode == 3
    with pytest.raises(ProcessLookupError):
        proc.kill()


async def test_a_kill_ends_it(tmp_path: Path, way: str) -> None:
    proc = await start_off_loop(_argv("import time; time.sleep(60)"), tmp_path, limit=LIMIT)
    proc.kill()
    async with asyncio.timeout(20):
        assert await proc.wait() == -signal.SIGKILL
    with pytest.raises(ChildProcessError):  # reaped already, not left a zombie
        os.waitpid(proc.pid, os.WNOHANG)  # noqa: ASYNC222 (WNOHANG: it never waits)


async def test_a_program_that_cannot_start_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await start_off_loop(["/nonexistent/worker"], tmp_path, limit=LIMIT)


async def test_a_cancel_while_it_starts_ends_it_once_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, began, made = threading.Event(), threading.Event(), []
    real = offloop._popen

    def held(*args: object) -> object:
        began.set()
        release.wait(10)
        popen = real(*args)  # type: ignore[arg-type]
        made.append(popen)
        return popen

    monkeypatch.setattr(offloop, "_popen", held)
    task = asyncio.ensure_future(
        start_off_loop(_argv("import time; time.sleep(60)"), tmp_path, limit=LIMIT)
    )
    async with asyncio.timeout(10):
        while not began.is_set():  # noqa: ASYNC110 (a thread sets it)
            await asyncio.sleep(0.01)
    asyncio.get_running_loop().call_soon(task.cancel)  # the loop runs while the start is held
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    async with asyncio.timeout(20):
        while not made or made[0].poll() is None:  # noqa: ASYNC110 (reaped on a thread)
            await asyncio.sleep(0.01)
    assert made[0].returncode == -signal.SIGKILL
