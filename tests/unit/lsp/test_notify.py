"""The folder watch: every change arrives, and while nothing changes nothing runs (no timer)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cardrunner.lsp.core import notify
from cardrunner.lsp.core.notify import Batch, Change, changes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


class Watch:
    """A running `changes` watch, read batch by batch with a time-out."""

    def __init__(self, folder: Path, recursive: bool = True) -> None:
        self.stop = asyncio.Event()
        self._it: AsyncIterator[Batch] = changes(folder, self.stop, recursive).__aiter__()

    async def next(self, seconds: float = 5.0) -> Batch:
        async with asyncio.timeout(seconds):
            return await self._it.__anext__()

    async def until(self, want: tuple[Change, Path], seconds: float = 5.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while want not in await self.next(deadline - loop.time()):
            pass

    async def close(self) -> None:
        self.stop.set()
        with pytest.raises(StopAsyncIteration):
            await self.next()


async def test_added_modified_and_deleted_files_arrive(tmp_path: Path) -> None:
    watch = Watch(tmp_path)
    assert await watch.next() == set()  # the watch is in place
    card = tmp_path / "a.md"
    card.write_text("one")
    await watch.until((Change.added, card))
    with card.open("a") as f:
        f.write("two")
    await watch.until((Change.modified, card))
    card.unlink()
    await watch.until((Change.deleted, card))
    await watch.close()


async def test_a_folder_that_appears_is_watched_and_its_files_reported(tmp_path: Path) -> None:
    watch = Watch(tmp_path)
    await watch.next()
    staged = tmp_path.parent / f"{tmp_path.name}-staged"
    (staged / "deep").mkdir(parents=True)
    (staged / "deep" / "b.md").write_text("written before any watch")
    os.rename(staged, tmp_path / "sub")  # arrives whole, as a `git checkout` makes it
    await watch.until((Change.added, tmp_path / "sub" / "deep" / "b.md"))
    (tmp_path / "sub" / "deep" / "c.md").write_text("later")
    await watch.until((Change.added, tmp_path / "sub" / "deep" / "c.md"))
    await watch.close()


async def test_a_symlink_loop_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path, target_is_directory=True)
    watch = Watch(tmp_path)
    assert await watch.next() == set()
    (tmp_path / "x.md").write_text("x")
    await watch.until((Change.added, tmp_path / "x.md"))
    await watch.close()


async def test_the_watched_folder_going_ends_the_watch(tmp_path: Path) -> None:
    folder = tmp_path / "cards"
    folder.mkdir()
    watch = Watch(folder)
    await watch.next()
    folder.rmdir()
    with pytest.raises(StopAsyncIteration):
        while True:
            await watch.next()


async def test_an_idle_watch_arms_no_timer_and_starts_no_thread(tmp_path: Path) -> None:
    """What woke the server ~100 times a second: a polling step. Idle, nothing may be due."""
    loop = asyncio.get_running_loop()
    threads = threading.active_count()
    watch = Watch(tmp_path)
    await watch.next()
    pending = asyncio.ensure_future(watch.next(30.0))  # waits in the selector only
    await asyncio.sleep(0.2)  # a window to look in: a polling watch would be running by now
    due = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
    timers = [h for h in due if h.when() - loop.time() < 29.0]  # our own timeout is 30 s
    assert timers == [], f"timers armed while idle: {timers}"
    assert threading.active_count() == threads
    (tmp_path / "wake.md").write_text("w")
    assert (Change.added, tmp_path / "wake.md") in await pending
    await watch.close()


async def test_without_inotify_the_fallback_reports_the_same_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there is no inotify, watchfiles watches (loaded only then): its changes arrive
    as this module's own `Change`, so the watcher reads them alike."""
    monkeypatch.setattr(notify, "_inotify_available", lambda: False)
    watch = Watch(tmp_path)
    assert await watch.next() == set()
    card = tmp_path / "a.md"
    card.write_text("one")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10.0
    while not (batch := await watch.next(deadline - loop.time())):
        pass
    assert (Change.added, card) in batch
    assert {type(change) for change, _ in batch} == {Change}
    await watch.close()
