"""A git process started off the loop: its output, its failures, and a cancel that ends it."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path

import pytest

from cardrunner.git import process
from cardrunner.git.process import run_git

ENV = dict(os.environ)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


async def _until(check: object, within: float = 10.0) -> None:
    async with asyncio.timeout(within):
        while not check():  # type: ignore[operator]  # noqa: ASYNC110 (another process, a thread)
            await asyncio.sleep(0.01)


async def test_the_output_the_code_and_the_stdin_arrive() -> None:
    out = await run_git(["git", "hash-object", "--stdin"], ENV, b"hello\n")
    assert (out.code, out.text) == (0, "ce013625030ba8dba906f756967f9e9ca394464a")
    failed = await run_git(["git", "-C", "/", "rev-parse", "--verify", "nothing"], ENV, None)
    assert failed.code != 0 and failed.stderr


async def test_a_program_that_is_missing_raises_where_it_is_started() -> None:
    with pytest.raises(FileNotFoundError):
        await run_git(["/nonexistent/git"], ENV, None)


async def test_a_cancelled_caller_ends_its_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    task = asyncio.ensure_future(run_git([sys.executable, "-c", script], ENV, None))
    await _until(lambda: pid_file.exists() and pid_file.read_text())
    pid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _until(lambda: not _alive(pid))


async def test_a_cancel_while_it_starts_ends_it_once_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start is held on its thread until the caller has been cancelled; the process it then
    makes is killed, not left running."""
    release, began, made = threading.Event(), threading.Event(), []
    real_start = process._start

    def held_start(*args: object, **kwargs: object) -> object:
        began.set()
        release.wait(10)
        proc = real_start(*args, **kwargs)  # type: ignore[arg-type]
        made.append(proc)
        return proc

    monkeypatch.setattr(process, "_start", held_start)
    task = asyncio.ensure_future(
        run_git([sys.executable, "-c", "import time; time.sleep(60)"], ENV, None)
    )
    await _until(began.is_set)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    await _until(lambda: bool(made) and made[0].poll() is not None)


async def test_the_loop_keeps_running_while_a_process_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A start held on its thread does not hold the loop: a callback runs meanwhile."""
    release, began = threading.Event(), threading.Event()
    real_start = process._start
    loop_ran = asyncio.Event()

    def held_start(*args: object, **kwargs: object) -> object:
        began.set()
        release.wait(10)
        return real_start(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(process, "_start", held_start)
    task = asyncio.ensure_future(run_git(["git", "--version"], ENV, None))
    await _until(began.is_set)
    asyncio.get_running_loop().call_soon(loop_ran.set)
    async with asyncio.timeout(10):
        await loop_ran.wait()
    release.set()
    assert (await task).text.startswith("git version")
