"""Cards changed outside the editor (git pull, another tool, the CLI) show up within ~100 ms.

The cards folder is watched (`core/notify.py`: inotify on Linux, so an idle server never wakes)
from `initialized` until shutdown. Editors and
`write_card` save atomically (write a temp file, rename), which arrives as `added` rather than
`modified`, so added and modified are treated alike and temp names are ignored. When the cards
folder does not exist yet, its parent is watched until it appears.

Whenever a watch starts (or ends) it reports "anything may have changed" — empty sets — once,
because what was written before the watch was in place has no event; the server answers that
with a catch-up pass that compares files, not with a second scan. `caught_up` says when the
first such pass of the current watch is over (start-up waits for it before it calls itself
settled).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from cardrunner.lsp.core.notify import Change, appeared, changes

log = logging.getLogger("cardrunner.lsp.watcher")

OnChanges = Callable[[set[Path], set[Path]], Awaitable[None]]
"""Called with (changed or added card paths, deleted card paths)."""


class CardWatcher:
    """Watches the cards folder and reports changed and deleted cards."""

    def __init__(
        self, cards_dir: Callable[[], Path], is_card: Callable[[Path], bool], on_changes: OnChanges
    ) -> None:
        self._cards_dir = cards_dir
        self._is_card = is_card
        self._on_changes = on_changes
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._caught_up = asyncio.Event()

    def start(self) -> None:
        """(Re)start watching the current cards folder."""
        self.stop()
        self._stop = asyncio.Event()
        self._caught_up = asyncio.Event()
        self._task = asyncio.create_task(self._run(self._stop), name="card watcher")

    def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def aclose(self) -> None:
        task = self._task
        self.stop()
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            folder = self._cards_dir()
            try:
                if folder.is_dir():
                    await self._watch(folder, stop)
                else:
                    await self._changed_safely(set(), set())  # the folder went before we looked
                    await appeared(folder, stop)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("watching %s failed: %r; retrying", folder, exc)
                await asyncio.sleep(1)  # back off before watching again
            if not stop.is_set():  # however the watch ended, the folder may differ: read it
                await self._changed_safely(set(), set())

    async def caught_up(self, seconds: float) -> bool:
        """Wait (at most `seconds`) until the current watch has had its first catch-up pass."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._caught_up.wait()
        return self._caught_up.is_set()

    async def _changed_safely(self, changed: set[Path], deleted: set[Path]) -> None:
        try:
            await self._on_changes(changed, deleted)
        except Exception:
            log.exception("handling card changes failed")
        finally:
            if not changed and not deleted:
                self._caught_up.set()

    async def _watch(self, folder: Path, stop: asyncio.Event) -> None:
        # The first batch is empty and comes once the watch is in place: cards written before
        # it (at start, or while it is set up again) have no event, so it means "read them".
        async for batch in changes(folder, stop, recursive=True):
            changed: set[Path] = set()
            deleted: set[Path] = set()
            for change, path in batch:
                if not self._is_card(path):
                    continue
                if change == Change.deleted:
                    deleted.add(path)
                else:
                    changed.add(path)
            if not batch or changed or deleted:
                await self._changed_safely(changed, deleted - changed)
            if not await asyncio.to_thread(folder.is_dir):
                return  # the folder itself went away: go back to waiting for it
