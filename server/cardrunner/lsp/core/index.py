"""The cards the server knows: their current text (editor buffer first, else disk) and parse.

Every view of a card — lenses, actions, diagnostics — needs the card as the user sees it now:
the open buffer when there is one (with unsaved edits, including the runner's own applyEdits),
the file on disk otherwise. `CardIndex` keeps that text and its parse per card path; disk reads
go to a thread. It also lets a writer wait until the editor has echoed an edit back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from cardrunner.card.card import MAX_CARD_BYTES, Card, CardProblem, find_cards, parse_card
from cardrunner.config.readfile import read_regular

CARD_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class CardEntry:
    """One card's text as last seen, and what the parser made of it."""

    path: Path
    text: str
    card: Card | None
    problems: list[CardProblem]


def uri_to_path(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(path).resolve() if path else None


class CardIndex:
    """Card texts and parses by resolved path; `folder()` says where cards live."""

    def __init__(self, server: LanguageServer, root: Callable[[], Path], folder: Callable[[], str]):
        self._ls = server
        self._root = root
        self._folder = folder
        self._entries: dict[Path, CardEntry] = {}
        self._uris: dict[Path, str] = {}
        self._changed = asyncio.Condition()
        self._scanned = asyncio.Event()
        self._cards_dir: tuple[tuple[Path, str], Path] | None = None

    def cards_dir(self) -> Path:
        """The resolved cards folder (cached: it is asked on every request and event)."""
        key = (self._root(), self._folder())
        if self._cards_dir is None or self._cards_dir[0] != key:
            self._cards_dir = (key, (key[0] / key[1]).resolve())
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
        """The URI the client uses for this file (the one it opened it with, if it did)."""
        return self._uris.get(path) or from_fs_path(str(path)) or path.as_uri()

    def remember_uri(self, uri: str) -> Path | None:
        path = uri_to_path(uri)
        if path is not None:
            self._uris[path] = uri
        return path

    def open_document(self, path: Path) -> tuple[str, str, int | None] | None:
        """`(uri, text, version)` of the open buffer for `path`, or None when it is not open."""
        uri = self._uris.get(path)
        if uri is None or uri not in self._ls.workspace.text_documents:
            return None
        doc = self._ls.workspace.get_text_document(uri)
        return uri, doc.source, doc.version

    def get(self, path: Path) -> CardEntry | None:
        return self._entries.get(path)

    def paths(self) -> list[Path]:
        return list(self._entries)

    def update(self, path: Path, text: str) -> CardEntry:
        card, problems = parse_card(text, path)
        entry = CardEntry(path, text, card, problems)
        self._entries[path] = entry
        self._notify()
        return entry

    def remove(self, path: Path) -> None:
        self._entries.pop(path, None)
        self._notify()

    async def read(self, path: Path) -> CardEntry | None:
        """Refresh from the open buffer, else from disk; None (and forgotten) when it is gone."""
        doc = self.open_document(path)
        if doc is not None:
            return self.update(path, doc[1])
        try:
            data = await asyncio.to_thread(read_regular, path, MAX_CARD_BYTES)
        except OSError:
            self.remove(path)
            return None
        return self.update(path, data.decode("utf-8", errors="replace"))

    async def scan(self) -> list[Path]:
        """Read every card under the cards folder; forget cards that are gone."""
        root, folder = self._root(), self._folder()
        found = await asyncio.to_thread(lambda: [p.resolve() for p in find_cards(root, folder)])
        for gone in set(self._entries) - set(found):
            self.remove(gone)
        for path in found:
            await self.read(path)
        self._scanned.set()
        return found

    async def wait_scanned(self, seconds: float) -> bool:
        """Wait (at most `seconds`) for the first scan: a list of every card asked for right
        after start-up must not miss the cards not read yet."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._scanned.wait(), seconds)
        return self._scanned.is_set()

    async def wait_for_text(self, path: Path, text: str, seconds: float) -> bool:
        """Wait until the open buffer of `path` reads `text` (the editor applied our edit)."""

        def matches() -> bool:
            doc = self.open_document(path)
            return doc is not None and doc[1] == text

        with contextlib.suppress(TimeoutError):
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(matches), seconds)
        return matches()

    def _notify(self) -> None:
        async def wake() -> None:
            async with self._changed:
                self._changed.notify_all()

        with contextlib.suppress(RuntimeError):
            task = asyncio.get_running_loop().create_task(wake())
            _wakers.add(task)
            task.add_done_callback(_wakers.discard)


_wakers: set[asyncio.Task[None]] = set()
