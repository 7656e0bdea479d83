"""The cards the server knows: their current text (editor buffer first, else disk) and parse.

Every view of a card — lenses, actions, diagnostics — needs the card as the user sees it now:
the open buffer when there is one (with unsaved edits, including the runner's own applyEdits),
the file on disk otherwise. `CardIndex` keeps that text and its parse per card path, and what
the file looked like when it was read (`Seen`). It also lets a writer wait until the editor has
echoed an edit back.

A big board must not cost the editor's loop: the first scan reads and parses in a child process
when there are many cards (`cardscan`), and hands them over a batch at a time; a request for a
card the scan has not reached reads that one card itself. Whatever is read later — the
watcher's events, the catch-up pass after a watch starts (`sync`) — is parsed only when its
text changed, and `sync` does not even read a file whose `Seen` still matches. Every entry
carries a stamp, so a result that was read before a newer one was installed (an edit in the
editor, the watcher) never replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import unquote

from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path

from cardrunner.card.card import Card, parse_card
from cardrunner.card.parse import CardProblem
from cardrunner.lsp.core.cardscan import (
    CHILD_MIN,
    RACY_NS,
    Loaded,
    Seen,
    chunks,
    list_card_files,
    load,
    load_in_child,
    load_many,
    may_differ,
    stat_many,
)
from cardrunner.lsp.core.client import uri_to_path

CARD_SUFFIXES = (".md", ".markdown")


READ_CHUNK = 32
"""Cards read per thread hop when they are read here (the hop costs more than a read)."""
COMPARE_CHUNK = 500
"""Files compared with their entries per loop turn in a catch-up pass (~1 ms)."""

OnBatch = Callable[[list[Path]], None]
"""Told which cards changed (or went) after each batch a scan or pass installed."""


@dataclass(frozen=True)
class CardEntry:
    """One card's text as last seen, and what the parser made of it."""

    path: Path
    text: str
    card: Card | None
    problems: list[CardProblem]
    seen: Seen | None = None
    """The file when `text` was read from it; None when the text came from a buffer."""


@dataclass
class IndexStats:
    """What the index has done, for `cardrunner.debug.index` (tests count parses with it)."""

    parses: int = 0
    """Cards parsed in this process."""
    scanner_parses: int = 0
    """Cards parsed by the scanner process and installed here."""
    unchanged: int = 0
    """Texts read again (disk or buffer) that had not changed: no parse."""
    reads: int = 0
    """Card files read in this process."""
    scans: int = 0
    syncs: int = 0
    """Catch-up passes (after a watch started, or its folder went) that compared the files."""
    scanning: bool = False

    def as_json(self) -> dict[str, int | bool]:
        return {
            "parses": self.parses,
            "scannerParses": self.scanner_parses,
            "unchanged": self.unchanged,
            "reads": self.reads,
            "scans": self.scans,
            "syncs": self.syncs,
            "scanning": self.scanning,
        }


class CardIndex:
    """Card texts and parses by resolved path; `folder()` says where cards live."""

    def __init__(
        self,
        server: LanguageServer,
        root: Callable[[], Path],
        folder: Callable[[], str],
        racy_ns: int = RACY_NS,
    ) -> None:
        self._ls = server
        self._followers: list[Callable[[Path], None]] = []
        """Told of every card whose text changed or that went, whoever read it (`follow`)."""
        self._racy_ns = racy_ns
        self._root = root
        self._folder = folder
        self._entries: dict[Path, CardEntry] = {}
        self._uris: dict[Path, str] = {}  # as the client spelled them
        self._made_uris: dict[Path, str] = {}
        self._resolved: dict[str, Path] = {}  # URI → its resolved path (`remember_uri`)
        self._stamps: dict[Path, int] = {}
        """When each path's entry was last installed or removed (`_clock` then)."""
        self._clock = 0
        self._passes = asyncio.Lock()  # one scan or catch-up pass at a time
        self._changed = asyncio.Condition()
        self._waiters = 0
        self._scanned = asyncio.Event()
        self._cards_dir: tuple[tuple[Path, str], Path] | None = None
        self.stats = IndexStats()

    def follow(self, on_change: Callable[[Path], None]) -> None:
        """Tell `on_change` of every card whose text changes or that goes, whoever read it (a
        subscription: `CardDiagnostics` follows the cards from its own constructor)."""
        self._followers.append(on_change)

    def cards_dir(self) -> Path:
        """The resolved cards folder (cached: it is asked on every request and event).

        One leading outside the workspace (a linked `backlog/tasks`) is replaced by a folder
        that never exists: nothing there is read, shown, run or written (`paths.escapes`)."""
        key = (self._root(), self._folder())
        if self._cards_dir is None or self._cards_dir[0] != key:
            folder = (key[0] / key[1]).resolve()
            if not folder.is_relative_to(key[0].resolve()):
                folder = key[0].resolve() / ".cardrunner" / "no cards outside the workspace"
            self._cards_dir = (key, folder)
        return self._cards_dir[1]

    def is_card(self, path: Path) -> bool:
        """A Markdown file under the cards folder that is not hidden or an editor temp file."""
        name = path.name
        if not name.lower().endswith(CARD_SUFFIXES) or name.startswith((".", "#", "~")):
            return False
        try:
            relative = path.relative_to(self.cards_dir())  # paths here are resolved already
        except ValueError:
            return False
        return not any(part.startswith(".") for part in relative.parts[:-1])

    def uri(self, path: Path) -> str:
        """The URI the client uses for this file (the one it opened it with, if it did).
        Made once per path: every diagnostics refresh asks, 10,000 times in a scan."""
        uri = self._uris.get(path) or self._made_uris.get(path)
        if uri is None:
            uri = self._made_uris[path] = from_fs_path(str(path)) or path.as_uri()
        return uri

    def remember_uri(self, uri: str) -> Path | None:
        """The resolved path of `uri`, remembered with the client's spelling of it; resolved
        once until the folder changes: a `realpath` (an `lstat` a folder) was a third of a lens
        answer's time, and every lens and hover asks."""
        path = self._resolved.get(uri)
        if path is None:
            path = uri_to_path(uri)
            if path is None:
                return None
            self._resolved[uri] = path
        self._uris[path] = uri
        return path

    def forget_resolved(self, uri: str | None = None) -> None:
        """Resolve `uri` (every URI, when None) again at its next use: a link may have moved."""
        if uri is None:
            self._resolved.clear()
        else:
            self._resolved.pop(uri, None)

    def open_document(self, path: Path) -> tuple[str, str, int | None] | None:
        """`(uri, text, version)` of the open buffer for `path`, or None when it is not open."""
        uri = self._uris.get(path)
        # pygls keys its documents by the unquoted URI: a card named `task-1 - x.md` (every
        # Backlog.md task) is open under `…/task-1 - x.md`, not `…/task-1%20-%20x.md`
        if uri is None or unquote(uri) not in self._ls.workspace.text_documents:
            return None
        doc = self._ls.workspace.get_text_document(uri)
        return uri, doc.source, doc.version

    def open_text(self, path: Path) -> str | None:
        """The open buffer of any file (the review's `.diff` too), None when it is not open."""
        for uri, doc in list(self._ls.workspace.text_documents.items()):
            if uri_to_path(uri) == path:
                return str(doc.source)
        return None

    def get(self, path: Path) -> CardEntry | None:
        return self._entries.get(path)

    def paths(self) -> list[Path]:
        return list(self._entries)

    @property
    def scanned(self) -> bool:
        return self._scanned.is_set()

    def update(self, path: Path, text: str, seen: Seen | None = None) -> CardEntry:
        """The card now reads `text` (from a buffer, or from disk as `seen`); parsed only
        when the text differs from the one the index has."""
        old = self._entries.get(path)
        if old is not None and old.text == text:
            self.stats.unchanged += 1
            entry = old if old.seen == seen else replace(old, seen=seen)
            self._put(path, entry, changed=False)
            return entry
        card, problems = parse_card(text, path)
        self.stats.parses += 1
        entry = CardEntry(path, text, card, problems, seen)
        self._put(path, entry, changed=True)
        return entry

    def remove(self, path: Path) -> None:
        self._put(path, None, changed=path in self._entries)

    def _put(self, path: Path, entry: CardEntry | None, changed: bool) -> None:
        if entry is None:
            self._entries.pop(path, None)
        else:
            self._entries[path] = entry
        self._stamps[path] = self._clock
        self._clock += 1
        self._notify()
        if changed:
            for on_change in self._followers:
                on_change(path)

    def _install(self, item: Loaded, since: int) -> bool:
        """Take what was read from disk, unless the card is open (the buffer wins) or was
        installed anew after `since` (then that is newer). True when its text changed (or
        it appeared, or went)."""
        path = item.path
        if self._stamps.get(path, -1) >= since or self.open_document(path) is not None:
            return False
        old = self._entries.get(path)
        if item.seen is None or item.text is None:
            self.remove(path)
            return old is not None
        if old is not None and old.text == item.text:
            self.update(path, item.text, item.seen)  # no parse: only its `Seen` is new
            return False
        if item.parsed is not None:
            card, problems = item.parsed
            self.stats.scanner_parses += 1
            self._put(path, CardEntry(path, item.text, card, problems, item.seen), changed=True)
        else:
            self.update(path, item.text, item.seen)
        return True

    async def read(self, path: Path) -> CardEntry | None:
        """Refresh from the open buffer, else from disk; None (and forgotten) when it is gone."""
        doc = self.open_document(path)
        if doc is not None:
            return self.update(path, doc[1])
        since = self._clock
        item = await asyncio.to_thread(load, path, False)
        self.stats.reads += 1
        self._install(item, since)
        return self._entries.get(path)

    async def scan(self, loaded: OnBatch) -> list[Path]:
        """Read every card under the cards folder; forget cards that are gone. `loaded` hears
        of each batch as it is installed. Many cards are read in a child process."""
        async with self._passes:
            self.stats.scans += 1
            self.stats.scanning = True
            try:
                found = await self._list()
                self._forget_missing(found, loaded)
                await self._load(found, loaded)
            finally:
                self.stats.scanning = False
            self._scanned.set()
            return found

    async def sync(self, loaded: OnBatch) -> list[Path]:
        """Catch up with the folder without a full scan: new cards are read, gone ones
        forgotten, and a known card only when its file no longer looks as it did when it was
        read (or was read too soon after a write to tell). Returns the cards that changed."""
        async with self._passes:
            self.stats.syncs += 1
            found = await self._list()
            changed = self._forget_missing(found, loaded)
            stats = await asyncio.to_thread(stat_many, found)
            stale = []
            for start in range(0, len(found), COMPARE_CHUNK):
                end = start + COMPARE_CHUNK
                for path, st in zip(found[start:end], stats[start:end], strict=True):
                    entry = self._entries.get(path)
                    seen = entry.seen if entry else None
                    if self.open_document(path) is None and may_differ(seen, st, self._racy_ns):
                        stale.append(path)
                await asyncio.sleep(0)  # 10,000 comparisons are ~20 ms: requests go between
            return changed + await self.refresh(stale, loaded)

    async def refresh(self, paths: Sequence[Path], loaded: OnBatch) -> list[Path]:
        """Read `paths` again (the watcher says they changed, or `sync` could not tell); a card
        is parsed only when its text did change. Many (a checkout of another branch, a fresh
        clone's catch-up) are read in the child, which costs the loop ~6 µs a card instead of
        ~25 µs of reading here. Returns the cards that changed."""
        self.forget_resolved()  # as in `_list`
        return await self._load([p for p in paths if self.open_document(p) is None], loaded)

    async def _list(self) -> list[Path]:
        self.forget_resolved()  # a pass over the folder: a link in it may point elsewhere now
        found = await asyncio.to_thread(list_card_files, folder := self.cards_dir())
        return [p for p in found if p.is_relative_to(folder)]  # not a linked card leading away

    def _forget_missing(self, found: list[Path], loaded: OnBatch) -> list[Path]:
        """Forget the cards that are no longer in the folder (unless a buffer holds them)."""
        gone = [p for p in set(self._entries) - set(found) if self.open_document(p) is None]
        for path in gone:
            self.remove(path)
        loaded(gone)
        return gone

    async def _load(self, paths: Sequence[Path], loaded: OnBatch) -> list[Path]:
        """Read `paths` (in the child when there are many), a batch at a time, and install
        them; parsed here only what is read here and changed."""
        changed: list[Path] = []
        left = list(paths)
        if len(left) > CHILD_MIN:
            since, done = self._clock, set[Path]()
            async with contextlib.aclosing(load_in_child(left)) as batches:
                async for batch in batches:
                    mine = [item.path for item in batch if self._install(item, since)]
                    done.update(item.path for item in batch)
                    changed += mine
                    loaded(mine)
            left = [p for p in left if p not in done]  # the child died: the rest read here
        for chunk in chunks(left, READ_CHUNK):
            since = self._clock
            items = await asyncio.to_thread(load_many, chunk, False)
            self.stats.reads += len(items)
            mine = []
            for item in items:
                if self._install(item, since):
                    mine.append(item.path)
                await asyncio.sleep(0)  # one parse at a time between requests
            changed += mine
            loaded(mine)
        return changed

    async def wait_scanned(self, seconds: float) -> bool:
        """Wait (at most `seconds`) for the first scan: a list of every card asked for right
        after start-up must not miss the cards not read yet."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._scanned.wait()
        return self._scanned.is_set()

    async def wait_for_text(self, path: Path, text: str, seconds: float) -> bool:
        """Wait until the open buffer of `path` reads `text` (the editor applied our edit)."""

        def matches() -> bool:
            doc = self.open_document(path)
            return doc is not None and doc[1] == text

        self._waiters += 1
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds), self._changed:
                    await self._changed.wait_for(matches)
        finally:
            self._waiters -= 1
        return matches()

    def _notify(self) -> None:
        """Wake the writers waiting for a text (none, almost always: then this costs nothing —
        a scan installs thousands of entries)."""
        if not self._waiters:
            return

        async def wake() -> None:
            async with self._changed:
                self._changed.notify_all()

        with contextlib.suppress(RuntimeError):
            task = asyncio.get_running_loop().create_task(wake())
            _wakers.add(task)
            task.add_done_callback(_wakers.discard)


_wakers: set[asyncio.Task[None]] = set()
