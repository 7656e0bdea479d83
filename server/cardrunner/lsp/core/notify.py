"""What changed in a folder, from the kernel's own notifications: nothing runs while nothing changes.

`watchfiles` polls: its loop wakes every `step` milliseconds to look for events and for its stop
signal, so an idle server woke ~100 times a second with `step=10` (bare pygls: never) — on a
laptop, battery. On Linux the folder is watched with inotify instead (`asyncinotify`): the
descriptor sits in the event loop's selector like the editor's pipe, and the server wakes only
when a file changes. A burst of events (a rename-over save, a `git pull`) is gathered for
`SETTLE_SECONDS` after its first event, so only a change arms a timer. Elsewhere (macOS,
Windows) `watchfiles` keeps its own default step; it (and anyio beneath it, ~2.5 MiB of an idle
server's memory) is imported only there.

Watches are set before `changes` yields anything, so a caller can read the folder right after
the first (empty) batch and miss nothing: what was written before has no event, what comes
after has one. Symbolic links to folders are not followed (a link loop must not recurse
forever), and a kernel queue overflow is reported as "anything may have changed".
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asyncinotify import Event, Inotify

SETTLE_SECONDS = 0.03
"""After a first event, how long more events join the same batch."""


class Change(IntEnum):
    """What happened to a path; the values are `watchfiles.Change`'s, so its events map 1:1."""

    added = 1
    modified = 2
    deleted = 3


Batch = set[tuple[Change, Path]]
"""One batch of changes: what happened (added, modified, deleted) to which absolute path. An
empty batch means "anything may have changed" (the watch started, or events were lost)."""


def _inotify_available() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import asyncinotify  # noqa: F401
    except (ImportError, OSError):  # no library, or a libc without inotify
        return False
    return True


async def changes(folder: Path, stop: asyncio.Event, recursive: bool) -> AsyncIterator[Batch]:
    """Batches of changes below `folder` until `stop` is set or the folder itself goes.

    The first batch is empty and comes once the watch is in place."""
    if not _inotify_available():
        async for batch in _polled(folder, stop, recursive):
            yield batch
        return
    from asyncinotify import Inotify

    with Inotify() as inotify:
        tree = _Tree(inotify, recursive)
        tree.add(folder)
        yield set()
        async for batch in _batches(inotify, tree, folder, stop):
            yield batch


async def _polled(folder: Path, stop: asyncio.Event, recursive: bool) -> AsyncIterator[Batch]:
    """watchfiles' watch, where there is no inotify. It sets its watch when its iterator first
    runs, so that is started and given the loop's turn before the first (empty) batch: what is
    written after that batch has an event here too."""
    from watchfiles import awatch

    found = awatch(folder, stop_event=stop, recursive=recursive).__aiter__()
    pending = asyncio.ensure_future(found.__anext__())
    await asyncio.sleep(0)  # the iterator runs up to its first wait, its watch in place
    try:
        yield set()
        while True:
            try:
                raw = await pending
            except StopAsyncIteration:
                return
            yield {(Change(change), Path(name)) for change, name in raw}
            pending = asyncio.ensure_future(found.__anext__())
    finally:
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
            await pending


async def appeared(folder: Path, stop: asyncio.Event) -> None:
    """Return once `folder` exists (or `stop` is set), watching the nearest existing parent."""
    parent = folder.parent
    while not parent.is_dir():
        parent = parent.parent
    async for _ in changes(parent, stop, recursive=False):
        if await asyncio.to_thread(folder.is_dir):
            return


class _Tree:
    """The inotify watches of one folder tree, added as folders appear."""

    def __init__(self, inotify: Inotify, recursive: bool) -> None:
        from asyncinotify import Mask

        self._inotify = inotify
        self.recursive = recursive
        self._mask = (
            Mask.CREATE
            | Mask.CLOSE_WRITE
            | Mask.MODIFY
            | Mask.ATTRIB
            | Mask.MOVED_TO
            | Mask.MOVED_FROM
            | Mask.DELETE
            | Mask.DELETE_SELF
            | Mask.MOVE_SELF
            | Mask.ONLYDIR
            | Mask.DONT_FOLLOW
        )

    def add(self, folder: Path) -> None:
        """Watch `folder` and, when recursive, every folder below it."""
        self._add(folder)

    def arrived(self, folder: Path) -> list[Path]:
        """Watch a folder that appeared, and return what is in it: those files were written
        before their watch, so they have no event of their own."""
        return self._add(folder, listing=True) if self.recursive else []

    def _add(self, folder: Path, listing: bool = False) -> list[Path]:
        found: list[Path] = []
        pending = [folder]
        while pending:
            current = pending.pop()
            try:
                self._inotify.add_watch(current, self._mask)
                entries = list(current.iterdir())
            except OSError:
                continue  # gone again, or unreadable: nothing to watch there
            if listing:
                found += entries
            if self.recursive:
                pending += [e for e in entries if e.is_dir() and not e.is_symlink()]
        return found


async def _batches(
    inotify: Inotify, tree: _Tree, root: Path, stop: asyncio.Event
) -> AsyncIterator[Batch]:
    stopping = asyncio.ensure_future(stop.wait())
    try:
        while True:
            first = asyncio.ensure_future(inotify.get())
            await asyncio.wait({first, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not first.done():
                first.cancel()
                return
            events = [first.result(), *await _settle(inotify)]
            batch, root_gone = _fold(events, tree, root)
            yield batch
            if root_gone:
                return
    finally:
        stopping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stopping


async def _settle(inotify: Inotify) -> list[Event]:
    """The events that follow a first one within `SETTLE_SECONDS`."""
    more: list[Event] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(SETTLE_SECONDS):
            while True:
                more.append(await inotify.get())
    return more


def _fold(events: list[Event], tree: _Tree, root: Path) -> tuple[Batch, bool]:
    """Events as (change, path) pairs; True as well when the watched folder itself went."""
    from asyncinotify import Mask

    batch: Batch = set()
    lost = root_gone = False
    for event in events:
        if Mask.Q_OVERFLOW in event.mask:
            lost = True
            continue
        path = event.path
        if path is None:
            continue
        if event.mask & (Mask.DELETE_SELF | Mask.MOVE_SELF) and path == root:
            root_gone = True
        elif event.mask & (Mask.DELETE | Mask.MOVED_FROM):
            batch.add((Change.deleted, path))
        elif event.mask & (Mask.CREATE | Mask.MOVED_TO) and Mask.ISDIR in event.mask:
            batch |= {(Change.added, p) for p in tree.arrived(path)}
        elif event.mask & (Mask.CREATE | Mask.MOVED_TO):
            batch.add((Change.added, path))
        elif event.mask & (Mask.CLOSE_WRITE | Mask.MODIFY | Mask.ATTRIB):
            batch.add((Change.modified, path))
    return (set() if lost else batch), root_gone
